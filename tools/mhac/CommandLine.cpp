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
  mhac compile FILE.mha [options]   compile the layers of FILE.mha into NAME.o and NAME.h
  mhac --help                       print this help
  mhac --version                    print the version

FILE.mha may be '-' to read the layers from standard input.

options of 'compile':
  -o NAME          base name of the outputs (default: the stem of FILE.mha, or 'layers' for
                   standard input); a path, so 'build/bert' writes build/bert.o and build/bert.h;
                   with --emit, the file to write the stage to (default: standard output)
  --target=T       the CPU to generate code for: host (default), x86-64-v3 (AVX2),
                   x86-64-v4 (AVX-512), or an x86-64 CPU with AVX2 as LLVM names it
                   (znver4, sapphirerapids, ...)
  --schedule=FILE  compile with the schedules of FILE (knobs it leaves out, and layers it
                   has no block for, take the target's defaults); see docs/schedules.md
  --shared         write a shared library NAME.so (for mha-run or dlopen) instead of NAME.o
  --emit=STAGE     print STAGE on standard output instead of writing files:
                     ast        the syntax tree, as written, with source locations
                     schedule   every layer's schedule, as a schedule file
                     mha        the layers in the mha dialect (MLIR), after verification
                     linalg     projections as linalg matmuls, attention as blocked loops
                     llvm-mlir  the LLVM dialect, after the schedule, bufferization and
                                vector lowering
                     llvm       LLVM IR with the C entry points, optimized (O3)
                     asm        the target's assembly
                     obj        the object file (binary; redirect it)
  Options taking a value accept both '--opt=V' and '--opt V'.

Errors in FILE.mha are reported as FILE:LINE:COL: error: message, with the
source line and a caret; mhac then exits with status 1. Misuse of the command
line exits with status 2. The language is described in docs/language.md.
)";
}

static void usageError(const std::string &message) {
  fmt::print(stderr, "mhac: error: {}\nrun 'mhac --help' for usage\n", message);
}

static std::optional<EmitStage> parseEmitStage(std::string_view value) {
  static constexpr std::pair<std::string_view, EmitStage> kStages[] = {
      {"ast", EmitStage::AST},       {"schedule", EmitStage::Schedule}, {"mha", EmitStage::Mha},
      {"linalg", EmitStage::Linalg}, {"llvm-mlir", EmitStage::LLVMDialect},
      {"llvm", EmitStage::LLVMIR},   {"asm", EmitStage::Assembly},
      {"obj", EmitStage::Object},
  };
  for (const auto &[name, stage] : kStages)
    if (value == name)
      return stage;
  usageError(fmt::format(
      "unknown --emit stage '{}' (expected ast, schedule, mha, linalg, llvm-mlir, llvm, asm or "
      "obj)",
      value));
  return std::nullopt;
}

/// Matches `--name=value` or `--name value` at args[i]; advances i past a separate value.
/// Returns false if args[i] is not this option; reports a missing value through `missing`.
static bool matchValueOption(const std::vector<std::string_view> &args, size_t &i,
                             std::string_view name, std::optional<std::string_view> &value,
                             bool &missing) {
  std::string_view arg = args[i];
  if (arg.substr(0, name.size()) != name)
    return false;
  std::string_view rest = arg.substr(name.size());
  if (rest.empty()) {
    if (i + 1 == args.size()) {
      missing = true;
      return true;
    }
    value = args[++i];
    return true;
  }
  if (rest[0] != '=')
    return false;
  value = rest.substr(1);
  return true;
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
    if (arg == "--shared") {
      options.shared = true;
      continue;
    }
    std::optional<std::string_view> value;
    bool missing = false;
    if (matchValueOption(args, i, "--emit", value, missing)) {
      if (missing) {
        usageError("--emit needs a stage (ast, schedule, mha, linalg, llvm-mlir, llvm, asm or obj)");
        return std::nullopt;
      }
      options.emit = parseEmitStage(*value);
      if (!options.emit)
        return std::nullopt;
      continue;
    }
    if (matchValueOption(args, i, "-o", value, missing)) {
      if (missing || value->empty()) {
        usageError("-o needs an output name");
        return std::nullopt;
      }
      options.outputName = std::string(*value);
      continue;
    }
    if (matchValueOption(args, i, "--schedule", value, missing)) {
      if (missing || value->empty()) {
        usageError("--schedule needs a schedule file");
        return std::nullopt;
      }
      options.schedulePath = std::string(*value);
      continue;
    }
    if (matchValueOption(args, i, "--target", value, missing)) {
      if (missing) {
        usageError("--target needs a value (host, x86-64-v3, x86-64-v4 or an x86-64 CPU name)");
        return std::nullopt;
      }
      options.target = std::string(*value);
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
    usageError("no input file; usage: mhac compile FILE.mha [options]");
    return std::nullopt;
  }
  if (options.emit && options.shared) {
    usageError("--shared writes a library; it cannot be combined with --emit");
    return std::nullopt;
  }
  return invocation;
}

} // namespace mhac
