//===- CommandLine.cpp - the options of mhac ------------------------------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "tools/mhac/CommandLine.h"

#include <fmt/format.h>

#include <string_view>
#include <vector>

namespace mhac {

const char *helpText() {
  return R"(mhac: an ahead-of-time compiler for multi-head attention layers

usage:
  mhac compile FILE.mha --emit=STAGE    print a stage of the compilation of FILE.mha
  mhac --help                           print this help
  mhac --version                        print the version

FILE.mha may be '-' to read the layers from standard input.

options of 'compile':
  --emit=STAGE   print STAGE on standard output instead of writing an object:
                   ast   the syntax tree, as written, with source locations
                   mha   the layers in the mha dialect (MLIR), after verification
                 ('--emit STAGE' works too)

Errors in FILE.mha are reported as FILE:LINE:COL: error: message, with the
source line and a caret; mhac then exits with status 1. Misuse of the command
line exits with status 2. The language is described in docs/language.md.
)";
}

static void usageError(const std::string &message) {
  fmt::print(stderr, "mhac: error: {}\nrun 'mhac --help' for usage\n", message);
}

static std::optional<EmitStage> parseEmitStage(std::string_view value) {
  if (value == "ast")
    return EmitStage::AST;
  if (value == "mha")
    return EmitStage::Mha;
  usageError(fmt::format("unknown --emit stage '{}' (expected ast or mha)", value));
  return std::nullopt;
}

std::optional<Invocation> parseCommandLine(int argc, char **argv) {
  std::vector<std::string_view> args(argv + 1, argv + argc);
  Invocation invocation;
  if (args.empty()) {
    usageError("no command given");
    return std::nullopt;
  }
  if (args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    invocation.action = Invocation::Action::Help;
    return invocation;
  }
  if (args[0] == "--version") {
    invocation.action = Invocation::Action::Version;
    return invocation;
  }
  if (args[0] != "compile") {
    usageError(fmt::format("unknown command '{}' (expected compile)", args[0]));
    return std::nullopt;
  }

  invocation.action = Invocation::Action::Compile;
  CompileOptions &options = invocation.compile;
  for (size_t i = 1; i < args.size(); ++i) {
    std::string_view arg = args[i];
    if (arg == "--help" || arg == "-h") {
      invocation.action = Invocation::Action::Help;
      return invocation;
    }
    if (arg.substr(0, 7) == "--emit=" || arg == "--emit") {
      std::string_view value;
      if (arg == "--emit") {
        if (i + 1 == args.size()) {
          usageError("--emit needs a stage (ast or mha)");
          return std::nullopt;
        }
        value = args[++i];
      } else {
        value = arg.substr(7);
      }
      options.emit = parseEmitStage(value);
      if (!options.emit)
        return std::nullopt;
      continue;
    }
    if (arg.size() > 1 && arg[0] == '-') {
      usageError(fmt::format("unknown option '{}'", arg));
      return std::nullopt;
    }
    if (!options.inputPath.empty()) {
      usageError(fmt::format("more than one input file ('{}' and '{}')", options.inputPath, arg));
      return std::nullopt;
    }
    options.inputPath = std::string(arg);
  }
  if (options.inputPath.empty()) {
    usageError("no input file; usage: mhac compile FILE.mha --emit=STAGE");
    return std::nullopt;
  }
  if (!options.emit) {
    usageError("object output is not available in this version; choose a stage to print with "
               "--emit=ast or --emit=mha");
    return std::nullopt;
  }
  return invocation;
}

} // namespace mhac
