//===- StageProgress.cpp - the stage a long command is in -----------------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "tools/common/StageProgress.h"

#include <fmt/format.h>

namespace mhac {

/// How long a command runs silently, and how often its line is refreshed after that.
constexpr std::chrono::milliseconds kQuietTime(1000), kRefresh(250);

StageProgress::StageProgress(std::string what) : what_(std::move(what)) {
  if (line_.onTerminal())
    watcher_ = std::thread([this] { watch(); });
}

StageProgress::~StageProgress() {
  if (!watcher_.joinable())
    return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    done_ = true;
  }
  wake_.notify_one();
  watcher_.join();
}

void StageProgress::parts(std::string active, int done, int total) {
  std::lock_guard<std::mutex> lock(mutex_);
  activeParts_ = std::move(active);
  partsDone_ = done;
  partsTotal_ = total;
}

void StageProgress::watch() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (wake_.wait_for(lock, kQuietTime, [this] { return done_; }))
    return;
  do {
    auto seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    std::string parts;
    if (partsTotal_ > 0)
      parts = fmt::format(" {}({} of {} done)",
                          activeParts_.empty() ? "" : fmt::format("[{}] ", activeParts_),
                          partsDone_, partsTotal_);
    line_.update(fmt::format("{}: {}{} ({:.0f} s)", what_, stage_.load(), parts, seconds));
  } while (!wake_.wait_for(lock, kRefresh, [this] { return done_; }));
  // What follows (errors, the shell's prompt) starts at the line's beginning.
  line_.clear();
}

} // namespace mhac
