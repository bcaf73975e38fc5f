//===- CommandLine.h - the options of mhac ----------------------*- C++ -*-===//
//
// Part of mhac. The command line is llvm::cl with one subcommand per action, as LLVM's tools
// have it, so that MLIR's own debugging options (--mlir-print-ir-after-all, --mlir-timing, ...)
// work in `mhac compile` as they do in mlir-opt.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_TOOLS_MHAC_COMMANDLINE_H
#define MHAC_TOOLS_MHAC_COMMANDLINE_H

#include <optional>
#include <string>

namespace mhac {

/// The stage `mhac compile --emit` prints, in pipeline order.
enum class EmitStage { AST, Schedule, Mha, Linalg, LLVMDialect, LLVMIR, Assembly, Object };

struct CompileOptions {
  std::string inputPath; ///< `-` reads standard input
  /// Print this stage on standard output instead of writing NAME.o and NAME.h.
  std::optional<EmitStage> emit;
  /// NAME of the outputs; defaults to the input's stem. With `emit`, the file to print to.
  std::string outputName;
  std::string target = "host";
  std::string schedulePath; ///< a schedule file; empty: the target's defaults
  bool shared = false;      ///< write NAME.so instead of NAME.o
};

/// Parses `argv`. `--help` and `--version` print and exit inside llvm::cl. On a misuse prints
/// one line and a pointer to `--help` to stderr and returns nothing.
std::optional<CompileOptions> parseCommandLine(int argc, char **argv);

} // namespace mhac

#endif // MHAC_TOOLS_MHAC_COMMANDLINE_H
