//===- Subprocess.h - child processes with a time limit ---------*- C++ -*-===//
//
// Part of mhac. The tuner compiles and measures each candidate in a child process, so that a
// crash, a SIGILL or a hang is a recorded failure and the search goes on; the Halide backend
// runs its generator in one, so that libHalide's LLVM never shares mhac's process.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_TOOLS_MHAC_SUBPROCESS_H
#define MHAC_TOOLS_MHAC_SUBPROCESS_H

#include <string>
#include <vector>

namespace mhac {

/// How a child process ended, and what it printed.
struct ProcessResult {
  enum class End { Exited, Signaled, TimedOut, NotStarted };
  End end = End::NotStarted;
  int code = 0; ///< the exit status, or the signal
  std::string out, err;
  double seconds = 0;

  bool succeeded() const { return end == End::Exited && code == 0; }
  /// "exit status 1", "killed by signal 11 (Segmentation fault)", "timed out after 30 s", ...
  std::string describe() const;
};

/// A command to run: its argv (argv[0] a path), and its time limit in seconds.
struct Command {
  std::vector<std::string> argv;
  double timeoutSeconds = 60;
};

/// Runs `commands`, at most `parallel` at a time, each in a process group of its own that is
/// killed whole when it outlives its limit. Returns their results in the same order.
std::vector<ProcessResult> runCommands(const std::vector<Command> &commands, size_t parallel);

/// The path of a tool installed beside the running executable (mha-run, mhac-halide).
std::string siblingTool(const std::string &name);

} // namespace mhac

#endif // MHAC_TOOLS_MHAC_SUBPROCESS_H
