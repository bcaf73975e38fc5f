//===- CommandLine.h - the options of mhac ----------------------*- C++ -*-===//
//
// Part of mhac. A hand-written parser, so that `mhac --help` lists mhac's options and nothing
// that LLVM's global option registry would add.
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
  bool shared = false; ///< write NAME.so instead of NAME.o
};

/// What the command line asks for.
struct Invocation {
  enum class Action { Help, Version, Compile };
  Action action = Action::Help;
  CompileOptions compile;
};

/// Parses `argv`. On a misuse prints one line to stderr and returns nothing.
std::optional<Invocation> parseCommandLine(int argc, char **argv);

/// The text of `mhac --help`.
const char *helpText();

} // namespace mhac

#endif // MHAC_TOOLS_MHAC_COMMANDLINE_H
