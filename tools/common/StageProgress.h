//===- StageProgress.h - the stage a long command is in ---------*- C++ -*-===//
//
// Part of mhac. A command that takes more than a second says, on a terminal, which stage it is
// in (a layer of model_dim 65536 spends a minute in mhac's lowering to the LLVM dialect, a
// Llama-sized layer 17 s in mha-run's float64 reference); a short one stays silent, and so does
// any command whose stderr is no terminal.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_TOOLS_COMMON_STAGEPROGRESS_H
#define MHAC_TOOLS_COMMON_STAGEPROGRESS_H

#include "tools/common/ProgressLine.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace mhac {

class StageProgress {
public:
  /// `what` starts the line ("mhac: bert.mha, 4 layers").
  explicit StageProgress(std::string what);
  ~StageProgress();
  StageProgress(const StageProgress &) = delete;
  StageProgress &operator=(const StageProgress &) = delete;

  /// Enters stage `name` (a string literal: it is read from another thread).
  void stage(const char *name) { stage_.store(name); }
  /// Counts the stage's parts: `done` of `total` are finished (shown as "2 of 8 done").
  void count(int done, int total) {
    partsTotal_.store(total);
    partsDone_.store(done);
  }

private:
  void watch();

  std::string what_;
  ProgressLine line_;
  std::atomic<const char *> stage_{"starting"};
  std::atomic<int> partsDone_{0}, partsTotal_{0};
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::mutex mutex_;
  std::condition_variable wake_;
  bool done_ = false;
  std::thread watcher_;
};

} // namespace mhac

#endif // MHAC_TOOLS_COMMON_STAGEPROGRESS_H
