//===- CommandLine.h - the options of mhac ----------------------*- C++ -*-===//
//
// Part of mhac. The command line is llvm::cl with one subcommand per action, as LLVM's tools
// have it, so that MLIR's own debugging options (--mlir-print-ir-after-all, --mlir-timing, ...)
// work in `mhac compile` as they do in mlir-opt.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_TOOLS_MHAC_COMMANDLINE_H
#define MHAC_TOOLS_MHAC_COMMANDLINE_H

#include "compiler/schedules/Schedule.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mhac {

/// The stage `mhac compile --emit` prints, in pipeline order.
/// Linalg and LLVMDialect are stages of CPU targets; Gpu, Nvvm and Ptx of CUDA targets.
enum class EmitStage {
  AST,
  Schedule,
  Mha,
  Linalg,
  LLVMDialect,
  Gpu,
  Nvvm,
  Ptx,
  LLVMIR,
  Assembly,
  Object
};

struct CompileOptions {
  std::string inputPath; ///< `-` reads standard input
  /// Print this stage on standard output instead of writing NAME.o and NAME.h.
  std::optional<EmitStage> emit;
  /// NAME of the outputs; defaults to the input's stem. With `emit`, the file to print to.
  std::string outputName;
  /// The CPUs to generate code for; with several, one object holds a variant for each and
  /// picks one at run time (see VariantDispatch.h). Or one CUDA GPU (`cuda:sm_NN`).
  std::vector<std::string> targets = {"host"};
  /// A schedule file per target, in the order of `targets`; empty: the targets' defaults.
  std::vector<std::string> schedulePaths;
  bool shared = false; ///< write NAME.so instead of NAME.o
  Backend backend = Backend::Mlir;
  /// Threads that compile layers (and targets) side by side; 0: every CPU the process may use.
  unsigned jobs = 0;
  /// Prepended to the C names of every layer's functions (see LayerABI::symbolPrefix).
  std::string symbolPrefix;
  /// Testing aid: AMX's kernels written in vector operations (CpuTarget::emulateAmx).
  bool emulateAmx = false;
};

struct TuneOptions {
  std::string inputPath;
  std::string layer; ///< empty: the file's only layer
  std::string target = "host";
  std::string outputPath; ///< the schedule file to write; empty: LAYER.sched
  std::optional<int64_t> threads, batch, seq, kvSeq;
  /// The tokens already cached (layers with kv_cache).
  std::optional<int64_t> cacheLen;
  double budgetSeconds = 300;
  uint64_t seed = 1;
  std::string cacheDir; ///< the tuning database; empty: the user's cache directory
  bool retune = false;  ///< search even when the database has this exact tuning
  bool plan = false;    ///< print the ranked candidates and stop, without compiling any
};

/// What the command line asks for.
struct Invocation {
  enum class Command { Compile, Tune };
  Command command = Command::Compile;
  CompileOptions compile;
  TuneOptions tune;
};

/// Parses `argv`. `--help` and `--version` print and exit inside llvm::cl. On a misuse prints
/// one line and a pointer to `--help` to stderr and returns nothing.
std::optional<Invocation> parseCommandLine(int argc, char **argv);

} // namespace mhac

#endif // MHAC_TOOLS_MHAC_COMMANDLINE_H
