//===- StageProgress.cpp - the stage a long command is in -----------------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "tools/common/StageProgress.h"

#include <fmt/format.h>

#include <algorithm>

#include <unistd.h>

namespace mhac {

/// How long a command runs silently, and how often its line is refreshed after that.
constexpr std::chrono::milliseconds kQuietTime(1000), kRefresh(250);

StageProgress::StageProgress(std::string what) : what_(std::move(what)) {
  if (isatty(STDERR_FILENO))
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

void StageProgress::watch() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (wake_.wait_for(lock, kQuietTime, [this] { return done_; }))
    return;
  size_t width = 0;
  do {
    auto seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    std::string line = fmt::format("{}: {} ({:.0f} s)", what_, stage_.load(), seconds);
    fmt::print(stderr, "\r{:<{}}", line, std::max(line.size(), width));
    width = std::max(line.size(), width);
  } while (!wake_.wait_for(lock, kRefresh, [this] { return done_; }));
  // Clear the line: what follows (errors, the shell's prompt) starts at its beginning.
  fmt::print(stderr, "\r{:<{}}\r", "", width);
}

} // namespace mhac
