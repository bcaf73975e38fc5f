//===- CompileProgress.h - the stage a long compile is in -------*- C++ -*-===//
//
// Part of mhac. A compile that takes more than a second says, on a terminal, which stage it
// is in (a layer of model_dim 65536 spends a minute in the LLVM dialect's lowering); a short
// one stays silent, and so does any compile whose stderr is no terminal.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_TOOLS_MHAC_COMPILEPROGRESS_H
#define MHAC_TOOLS_MHAC_COMPILEPROGRESS_H

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace mhac {

class CompileProgress {
public:
  /// `what` names the compile in the line ("bert.mha, 4 layers").
  explicit CompileProgress(std::string what);
  ~CompileProgress();
  CompileProgress(const CompileProgress &) = delete;
  CompileProgress &operator=(const CompileProgress &) = delete;

  /// Enters stage `name` (a string literal: it is read from another thread).
  void stage(const char *name) { stage_.store(name); }

private:
  void watch();

  std::string what_;
  std::atomic<const char *> stage_{"starting"};
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::mutex mutex_;
  std::condition_variable wake_;
  bool done_ = false;
  std::thread watcher_;
};

} // namespace mhac

#endif // MHAC_TOOLS_MHAC_COMPILEPROGRESS_H
