//===- CommandLine.cpp - the options of mhac ------------------------------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "tools/mhac/CommandLine.h"

#include "compiler/frontend/Diagnostics.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/Timing.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

#include <fmt/format.h>

namespace cl = llvm::cl;
using llvm::StringRef;

namespace mhac {
namespace {

constexpr const char *kOverview =
    R"(mhac, an ahead-of-time compiler for multi-head attention layers

  mhac compile FILE.mha [options]   compile the layers of FILE.mha into NAME.o and NAME.h

FILE.mha may be '-' to read the layers from standard input. Errors in FILE.mha or in a
schedule file are reported as FILE:LINE:COL: error: message, with the source line and a caret;
mhac then exits with status 1. Misuse of the command line exits with status 2. Options taking a
value accept both '--opt=V' and '--opt V'. The language is described in docs/language.md, the
schedules in docs/schedules.md.
)";

cl::OptionCategory compileCategory("Compile options");
cl::OptionCategory mlirCategory("MLIR debugging options, as in mlir-opt (MLIR 22)");

cl::SubCommand compileCommand("compile", "compile the layers of FILE.mha into NAME.o and NAME.h");

cl::list<std::string> inputs(cl::Positional, cl::desc("<FILE.mha>"), cl::sub(compileCommand),
                             cl::cat(compileCategory));

cl::opt<std::string>
    outputName("o", cl::value_desc("NAME"), cl::sub(compileCommand), cl::cat(compileCategory),
               cl::desc("base name of the outputs (default: the stem of FILE.mha, or 'layers' "
                        "for standard input); 'build/bert' writes build/bert.o and "
                        "build/bert.h; with --emit, the file to write the stage to (default: "
                        "standard output)"));

cl::opt<std::string> target("target", cl::value_desc("T"), cl::init("host"),
                            cl::sub(compileCommand), cl::cat(compileCategory),
                            cl::desc("the CPU to generate code for: host (default), x86-64-v3 "
                                     "(AVX2), x86-64-v4 (AVX-512), or an x86-64 CPU with AVX2 "
                                     "as LLVM names it (znver4, sapphirerapids, ...)"));

cl::opt<std::string> schedule("schedule", cl::value_desc("FILE"), cl::sub(compileCommand),
                              cl::cat(compileCategory),
                              cl::desc("compile with the schedules of FILE (knobs it leaves out, "
                                       "and layers it has no block for, take the target's "
                                       "defaults)"));

cl::opt<bool> shared("shared", cl::sub(compileCommand), cl::cat(compileCategory),
                     cl::desc("write a shared library NAME.so (for mha-run or dlopen) instead "
                              "of NAME.o"));

cl::opt<EmitStage> emit(
    "emit", cl::value_desc("STAGE"), cl::sub(compileCommand), cl::cat(compileCategory),
    cl::desc("print STAGE instead of writing NAME.o and NAME.h:"),
    cl::values(
        clEnumValN(EmitStage::AST, "ast", "the syntax tree, as written, with source locations"),
        clEnumValN(EmitStage::Schedule, "schedule", "every layer's schedule, as a schedule file"),
        clEnumValN(EmitStage::Mha, "mha", "the layers in the mha dialect, after verification"),
        clEnumValN(EmitStage::Linalg, "linalg",
                   "projections as linalg matmuls, attention as blocked loops"),
        clEnumValN(EmitStage::LLVMDialect, "llvm-mlir",
                   "the LLVM dialect, after the schedule, bufferization and vector lowering"),
        clEnumValN(EmitStage::LLVMIR, "llvm", "LLVM IR with the C entry points, optimized (O3)"),
        clEnumValN(EmitStage::Assembly, "asm", "the target's assembly"),
        clEnumValN(EmitStage::Object, "obj", "the object file (binary; redirect it)")));

void usageError(const std::string &message) {
  fmt::print(stderr, "mhac: error: {}\nrun 'mhac --help' for usage\n", message);
}

/// "a, b or c" from the values `--emit` accepts, so the list has one source: the option.
std::string emitStageList() {
  const auto &parser = emit.getParser();
  std::string list;
  for (unsigned i = 0, e = parser.getNumOptions(); i < e; ++i) {
    if (i > 0)
      list += i + 1 == e ? " or " : ", ";
    list += parser.getOption(i).str();
  }
  return list;
}

/// What to say when an option of `mhac compile` is given without its value.
std::string missingValueMessage(StringRef name) {
  if (name == "emit")
    return fmt::format("--emit needs a stage ({})", emitStageList());
  if (name == "o")
    return "-o needs an output name";
  if (name == "target")
    return "--target needs a value (host, x86-64-v3, x86-64-v4 or an x86-64 CPU name)";
  if (name == "schedule")
    return "--schedule needs a schedule file";
  return fmt::format("--{} needs a value", name.str());
}

/// Checks a value given to `option`; only `--emit` has a closed set of values.
bool checkValue(const cl::Option *option, StringRef value) {
  if (option != &emit)
    return true;
  const auto &parser = emit.getParser();
  for (unsigned i = 0, e = parser.getNumOptions(); i < e; ++i)
    if (parser.getOption(i) == value)
      return true;
  usageError(fmt::format("unknown --emit stage '{}' (expected {})", value.str(), emitStageList()));
  return false;
}

/// Checks the arguments after the subcommand against `command`'s options before llvm::cl parses
/// them, so that each misuse gets one line of mhac's own, with a "did you mean" where it helps.
bool checkArguments(llvm::ArrayRef<const char *> args, cl::SubCommand &command) {
  auto &known = cl::getRegisteredOptions(command);
  for (size_t i = 0; i < args.size(); ++i) {
    StringRef arg = args[i];
    if (arg == "--")
      return true;
    if (arg.size() < 2 || arg[0] != '-')
      continue; // an input file, or '-' for standard input
    auto [name, value] = arg.ltrim('-').split('=');
    auto found = known.find(name);
    if (found == known.end()) {
      std::vector<std::string_view> candidates;
      for (const auto &[candidate, option] : known)
        if (option->getOptionHiddenFlag() == cl::NotHidden && !candidate.empty())
          candidates.push_back(candidate);
      std::string message = fmt::format("unknown option '{}'", arg.str());
      if (auto suggestion = closestName(std::string_view(name), candidates))
        message += fmt::format("; did you mean '{}{}'?", suggestion->size() == 1 ? "-" : "--",
                               *suggestion);
      usageError(message);
      return false;
    }
    cl::Option *option = found->second;
    if (arg.contains('=')) {
      if (!checkValue(option, value))
        return false;
      continue;
    }
    if (option->getValueExpectedFlag() != cl::ValueRequired)
      continue;
    if (i + 1 == args.size()) {
      usageError(missingValueMessage(name));
      return false;
    }
    if (!checkValue(option, args[++i]))
      return false;
  }
  return true;
}

/// Registers MLIR's debugging options and moves them into `command`: options registered at the
/// top level are not seen once a subcommand is named.
void addMlirOptions(cl::SubCommand &command) {
  mlir::registerMLIRContextCLOptions();
  mlir::registerPassManagerCLOptions();
  mlir::registerDefaultTimingManagerCLOptions();
  mlir::registerAsmPrinterCLOptions();
  llvm::SmallPtrSet<cl::Option *, 32> mlirOptions;
  for (const auto &[name, option] : cl::getRegisteredOptions(cl::SubCommand::getTopLevel()))
    if (name.starts_with("mlir-"))
      mlirOptions.insert(option);
  for (cl::Option *option : mlirOptions) {
    option->removeArgument();
    option->Subs.clear();
    option->addSubCommand(command);
    option->addCategory(mlirCategory);
    option->addArgument();
  }
}

void printVersion(llvm::raw_ostream &os) {
  os << fmt::format("mhac {} (LLVM/MLIR {})\n", MHAC_VERSION, LLVM_VERSION_STRING);
}

} // namespace

std::optional<CompileOptions> parseCommandLine(int argc, char **argv) {
  addMlirOptions(compileCommand);
  cl::HideUnrelatedOptions(llvm::ArrayRef<const cl::OptionCategory *>{},
                           cl::SubCommand::getTopLevel());
  cl::HideUnrelatedOptions({&compileCategory, &mlirCategory}, compileCommand);
  cl::SetVersionPrinter(printVersion);

  // `-h` and `help` are spelled as llvm::cl knows them.
  std::vector<const char *> args(argv, argv + argc);
  for (const char *&arg : args)
    if (StringRef(arg) == "-h")
      arg = "--help";
  if (args.size() > 1 && StringRef(args[1]) == "help")
    args[1] = "--help";

  if (args.size() < 2) {
    usageError("no command given");
    return std::nullopt;
  }
  StringRef command = args[1];
  bool generic = command == "--help" || command == "--help-hidden" || command == "--help-list" ||
                 command == "--version";
  if (command != compileCommand.getName() && !generic) {
    usageError(fmt::format("unknown command '{}' (expected compile)", command.str()));
    return std::nullopt;
  }
  if (!generic && !checkArguments(llvm::ArrayRef(args).drop_front(2), compileCommand))
    return std::nullopt;

  std::string errors;
  llvm::raw_string_ostream errorStream(errors);
  if (!cl::ParseCommandLineOptions(static_cast<int>(args.size()), args.data(), kOverview,
                                   &errorStream, /*VFS=*/nullptr, /*EnvVar=*/nullptr,
                                   /*LongOptionsUseDoubleDash=*/true)) {
    // What checkArguments cannot see, such as an option given twice: llvm::cl's message, as
    // mhac's one line.
    StringRef message = StringRef(errors).split('\n').first;
    message.consume_front(args[0]);
    message = message.ltrim(" compile").ltrim(": ");
    usageError(message.str());
    return std::nullopt;
  }

  CompileOptions options;
  if (inputs.empty()) {
    usageError("no input file; usage: mhac compile FILE.mha [options]");
    return std::nullopt;
  }
  if (inputs.size() > 1) {
    usageError(fmt::format("more than one input file ('{}' and '{}')", inputs[0], inputs[1]));
    return std::nullopt;
  }
  if (outputName.getNumOccurrences() > 0 && outputName.empty()) {
    usageError(missingValueMessage("o"));
    return std::nullopt;
  }
  if (schedule.getNumOccurrences() > 0 && schedule.empty()) {
    usageError(missingValueMessage("schedule"));
    return std::nullopt;
  }
  if (emit.getNumOccurrences() > 0 && shared) {
    usageError("--shared writes a library; it cannot be combined with --emit");
    return std::nullopt;
  }
  options.inputPath = inputs[0];
  if (emit.getNumOccurrences() > 0)
    options.emit = emit;
  options.outputName = outputName;
  options.target = target;
  options.schedulePath = schedule;
  options.shared = shared;
  return options;
}

} // namespace mhac
