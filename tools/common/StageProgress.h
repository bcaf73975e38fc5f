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
  /// The stage's parts: those running now (`active`, "wide, causal"), and `done` of `total`
  /// finished; a `total` of 0 shows none.
  void parts(std::string active, int done, int total);

private:
  void watch();

  std::string what_;
  ProgressLine line_;
  std::atomic<const char *> stage_{"starting"};
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::mutex mutex_;
  std::condition_variable wake_;
  bool done_ = false;
  std::string activeParts_; ///< guarded by mutex_, as are the counts
  int partsDone_ = 0, partsTotal_ = 0;
  std::thread watcher_;
};

} // namespace mhac

#endif // MHAC_TOOLS_COMMON_STAGEPROGRESS_H
