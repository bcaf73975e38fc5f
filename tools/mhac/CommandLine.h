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

/// The stage `mhac compile --emit` prints.
enum class EmitStage { AST, Mha };

struct CompileOptions {
  std::string inputPath; ///< `-` reads standard input
  std::optional<EmitStage> emit;
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
