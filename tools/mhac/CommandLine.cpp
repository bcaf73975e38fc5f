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
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringExtras.h"
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
  mhac tune FILE.mha [options]      search a faster schedule for a layer, on this machine

FILE.mha may be '-' to read the layers from standard input. Errors in FILE.mha or in a
schedule file are reported as FILE:LINE:COL: error: message, with the source line and a caret;
mhac then exits with status 1. Misuse of the command line exits with status 2. Options taking a
value accept both '--opt=V' and '--opt V'. The language is described in docs/language.md, the
schedules in docs/schedules.md.
)";

cl::OptionCategory compileCategory("Compile options");
cl::OptionCategory tuneCategory("Tune options");
cl::OptionCategory mlirCategory("MLIR debugging options, as in mlir-opt (MLIR 22)");

cl::SubCommand compileCommand("compile", "compile the layers of FILE.mha into NAME.o and NAME.h");
cl::SubCommand tuneCommand("tune", "search a faster schedule for a layer of FILE.mha, measured "
                                   "on this machine, and write it as a schedule file");

cl::list<std::string> inputs(cl::Positional, cl::desc("<FILE.mha>"), cl::sub(compileCommand),
                             cl::cat(compileCategory));

cl::opt<std::string>
    outputName("o", cl::value_desc("NAME"), cl::sub(compileCommand), cl::cat(compileCategory),
               cl::desc("base name of the outputs (default: the stem of FILE.mha, or 'layers' "
                        "for standard input); 'build/bert' writes build/bert.o and "
                        "build/bert.h; with --emit, the file to write the stage to (default: "
                        "standard output)"));

cl::opt<std::string> target("target", cl::value_desc("T[,T...]"), cl::init("host"),
                            cl::sub(compileCommand), cl::cat(compileCategory),
                            cl::desc("the CPU to generate code for: host (default), x86-64-v3 "
                                     "(AVX2), x86-64-v4 (AVX-512), or an x86-64 CPU with AVX2 "
                                     "as LLVM names it (znver4, sapphirerapids, ...); several, "
                                     "comma-separated, give one object whose functions run the "
                                     "best variant the running CPU supports; or a CUDA GPU, "
                                     "cuda:sm_80 or cuda:sm_90 (device pointers and a stream)"));

cl::opt<bool> emulateAmx("emulate-amx", cl::sub(compileCommand), cl::cat(compileCategory),
                         cl::Hidden,
                         cl::desc("testing aid: treat an AVX512-BF16 target as one with AMX, "
                                  "and write AMX's tile operations in vector operations"));

cl::opt<std::string> schedule("schedule", cl::value_desc("FILE[,FILE...]"), cl::sub(compileCommand),
                              cl::cat(compileCategory),
                              cl::desc("compile with the schedules of FILE (knobs it leaves out, "
                                       "and layers it has no block for, take the target's "
                                       "defaults); with several targets, one file per target, "
                                       "in --target's order"));

cl::opt<Backend> backend("backend", cl::value_desc("B"), cl::init(Backend::Mlir),
                         cl::sub(compileCommand), cl::cat(compileCategory),
                         cl::desc("what lowers the layers (same header, functions and results):"),
                         cl::values(clEnumValN(Backend::Mlir, "mlir",
                                               "the mha dialect, linalg and transform-dialect "
                                               "schedules (default)"),
                                    clEnumValN(Backend::Halide, "halide",
                                               "Halide 21 pipelines, through mhac-halide")));

cl::opt<unsigned> jobs("j", cl::value_desc("N"), cl::Prefix, cl::sub(compileCommand),
                       cl::cat(compileCategory),
                       cl::desc("compile up to N layers (and targets) at once (default: every "
                                "CPU the process may use)"));

cl::opt<std::string> prefix("prefix", cl::value_desc("P"), cl::sub(compileCommand),
                            cl::cat(compileCategory),
                            cl::desc("prepend P to the C names of the layers' functions "
                                     "(P_NAME_run, ...), so that variants of a layer compiled "
                                     "separately, for other targets, link into one program"));

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
        clEnumValN(EmitStage::Gpu, "gpu",
                   "CUDA targets: the layers' kernels in the gpu dialect, specialized"),
        clEnumValN(EmitStage::Nvvm, "nvvm", "CUDA targets: the kernels in the NVVM dialect"),
        clEnumValN(EmitStage::Ptx, "ptx", "CUDA targets: the kernels' PTX"),
        clEnumValN(EmitStage::LLVMIR, "llvm", "LLVM IR with the C entry points, optimized (O3)"),
        clEnumValN(EmitStage::Assembly, "asm", "the target's assembly"),
        clEnumValN(EmitStage::Object, "obj", "the object file (binary; redirect it)")));

// Options of `mhac tune`.
cl::list<std::string> tuneInputs(cl::Positional, cl::desc("<FILE.mha>"), cl::sub(tuneCommand),
                                 cl::cat(tuneCategory));
cl::opt<std::string> tuneLayer("layer", cl::value_desc("NAME"), cl::sub(tuneCommand),
                               cl::cat(tuneCategory),
                               cl::desc("the layer to tune (needed when FILE.mha has several)"));
cl::opt<std::string> tuneTarget("target", cl::value_desc("T"), cl::init("host"),
                                cl::sub(tuneCommand), cl::cat(tuneCategory),
                                cl::desc("the CPU to tune for, as 'mhac compile --target' takes "
                                         "it; the candidates run on this machine, so it must "
                                         "run its code (default: host)"));
cl::opt<std::string> tuneOutput("o", cl::value_desc("FILE.sched"), cl::sub(tuneCommand),
                                cl::cat(tuneCategory),
                                cl::desc("the schedule file to write (default: LAYER.sched); the "
                                         "report goes beside it, as FILE.tune.html and "
                                         "FILE.tune.json"));
cl::opt<int64_t> tuneThreads("threads", cl::value_desc("N"), cl::sub(tuneCommand),
                             cl::cat(tuneCategory),
                             cl::desc("threads to tune for (default: MHAC_NUM_THREADS, else "
                                      "every CPU the process may use)"));
cl::opt<double> tuneBudget("budget", cl::value_desc("SECONDS"), cl::init(300), cl::sub(tuneCommand),
                           cl::cat(tuneCategory),
                           cl::desc("the time the whole command may take (default: 300)"));
cl::opt<int64_t> tuneBatch("batch", cl::value_desc("N"), cl::sub(tuneCommand),
                           cl::cat(tuneCategory),
                           cl::desc("the batch to tune for, when the layer's is '?' (default 1)"));
cl::opt<int64_t> tuneSeq("seq", cl::value_desc("N"), cl::sub(tuneCommand), cl::cat(tuneCategory),
                         cl::desc("the sequence length to tune for, when the layer's is '?'"));
cl::opt<int64_t> tuneKvSeq("kv-seq", cl::value_desc("N"), cl::sub(tuneCommand),
                           cl::cat(tuneCategory),
                           cl::desc("the key/value length to tune for, when the layer's is '?'"));
cl::opt<int64_t> tuneCacheLen("cache-len", cl::value_desc("N"), cl::sub(tuneCommand),
                              cl::cat(tuneCategory),
                              cl::desc("the tokens already cached to tune a decoder layer's "
                                       "calls against (layers with kv_cache; default 0)"));
cl::opt<uint64_t> tuneSeed("seed", cl::value_desc("N"), cl::init(1), cl::sub(tuneCommand),
                           cl::cat(tuneCategory),
                           cl::desc("the seed of the search's random draws and of the data "
                                    "(default 1): the same seed gives the same candidates"));
cl::opt<std::string> tuneCacheDir("cache-dir", cl::value_desc("DIR"), cl::sub(tuneCommand),
                                  cl::cat(tuneCategory),
                                  cl::desc("the tuning database (default: $MHAC_TUNE_CACHE, else "
                                           "$XDG_CACHE_HOME/mhac/tune, else "
                                           "~/.cache/mhac/tune)"));
cl::opt<bool> tuneRetune("retune", cl::sub(tuneCommand), cl::cat(tuneCategory),
                         cl::desc("search even when the database holds this exact tuning"));
cl::opt<bool> tunePlan("plan", cl::sub(tuneCommand), cl::cat(tuneCategory),
                       cl::desc("print the candidates in the order the model ranks them, and "
                                "stop without compiling any"));

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
  if (name == "prefix")
    return "--prefix needs a value (a C identifier's start, such as avx2_)";
  if (name == "j")
    return "-j needs a number of threads";
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
    if (name.size() > 1 && name[0] == 'j' && llvm::all_of(name.drop_front(), llvm::isDigit))
      continue; // -jN
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

/// The entries of a comma-separated list.
std::vector<std::string> splitList(StringRef text) {
  llvm::SmallVector<StringRef> parts;
  text.split(parts, ',');
  return {parts.begin(), parts.end()};
}

/// The single input file of a subcommand, or a usage error.
std::optional<std::string> singleInput(const cl::list<std::string> &inputs, StringRef command) {
  if (inputs.empty()) {
    usageError(fmt::format("no input file; usage: mhac {} FILE.mha [options]", command.str()));
    return std::nullopt;
  }
  if (inputs.size() > 1) {
    usageError(fmt::format("more than one input file ('{}' and '{}')", inputs[0], inputs[1]));
    return std::nullopt;
  }
  return inputs[0];
}

std::optional<CompileOptions> compileOptions() {
  std::optional<std::string> input = singleInput(inputs, "compile");
  if (!input)
    return std::nullopt;
  if (outputName.getNumOccurrences() > 0 && outputName.empty()) {
    usageError(missingValueMessage("o"));
    return std::nullopt;
  }
  if (schedule.getNumOccurrences() > 0 && schedule.empty()) {
    usageError(missingValueMessage("schedule"));
    return std::nullopt;
  }
  if (!prefix.empty()) {
    StringRef text = prefix;
    bool identifier = (llvm::isAlpha(text.front()) || text.front() == '_') &&
                      llvm::all_of(text, [](char c) { return llvm::isAlnum(c) || c == '_'; });
    if (!identifier || text.starts_with("mhac_")) {
      usageError(fmt::format("--prefix '{}' must start a C identifier (letters, digits and '_', "
                             "not a digit first) and not be mhac's own 'mhac_'",
                             text.str()));
      return std::nullopt;
    }
  }
  if (emit.getNumOccurrences() > 0 && shared) {
    usageError("--shared writes a library; it cannot be combined with --emit");
    return std::nullopt;
  }
  CompileOptions options;
  options.inputPath = *input;
  if (emit.getNumOccurrences() > 0)
    options.emit = emit;
  options.outputName = outputName;
  options.emulateAmx = emulateAmx;
  options.targets = splitList(target);
  if (llvm::any_of(options.targets, [](const std::string &t) { return t.empty(); })) {
    usageError(fmt::format("--target '{}' has an empty entry", target.getValue()));
    return std::nullopt;
  }
  if (options.targets.size() > 1 && options.emit && *options.emit < EmitStage::LLVMIR) {
    usageError(fmt::format("--emit={} shows the code of one target; give one --target",
                           emit.getParser().getOption(static_cast<unsigned>(*options.emit))));
    return std::nullopt;
  }
  options.backend = backend;
  auto stageName = [&] {
    return emit.getParser().getOption(static_cast<unsigned>(*options.emit)).str();
  };
  bool cuda = llvm::any_of(options.targets,
                           [](const std::string &t) { return StringRef(t).starts_with("cuda:"); });
  if (cuda && options.targets.size() > 1) {
    usageError(fmt::format("--target '{}': a CUDA target is compiled on its own; give one "
                           "--target per object",
                           target.getValue()));
    return std::nullopt;
  }
  if (cuda && backend == Backend::Halide) {
    usageError("the Halide backend generates CPU code; --target cuda:* compiles through the "
               "MLIR backend");
    return std::nullopt;
  }
  if (cuda)
    options.backend = Backend::Cuda;
  bool cpuStage = options.emit &&
                  (*options.emit == EmitStage::Linalg || *options.emit == EmitStage::LLVMDialect);
  bool cudaStage =
      options.emit && *options.emit >= EmitStage::Gpu && *options.emit <= EmitStage::Ptx;
  if (cuda && cpuStage) {
    usageError(fmt::format("--emit={} is a stage of CPU targets; for --target {}, emit ast, "
                           "schedule, mha, gpu, nvvm, ptx, llvm, asm or obj",
                           stageName(), options.targets[0]));
    return std::nullopt;
  }
  if (!cuda && cudaStage) {
    usageError(fmt::format("--emit={} is a stage of CUDA targets (--target cuda:sm_80, ...)",
                           stageName()));
    return std::nullopt;
  }
  if (backend == Backend::Halide && options.emit && *options.emit > EmitStage::Schedule &&
      *options.emit < EmitStage::LLVMIR) {
    usageError(fmt::format("--emit={} is a stage of the MLIR backend; with --backend halide, "
                           "emit ast, schedule, llvm, asm or obj",
                           emit.getParser().getOption(static_cast<unsigned>(*options.emit))));
    return std::nullopt;
  }
  if (!schedule.empty()) {
    options.schedulePaths = splitList(schedule);
    if (options.schedulePaths.size() != options.targets.size()) {
      usageError(fmt::format("--schedule names {} file{} for {} target{}: give one per target, "
                             "in --target's order",
                             options.schedulePaths.size(),
                             options.schedulePaths.size() == 1 ? "" : "s", options.targets.size(),
                             options.targets.size() == 1 ? "" : "s"));
      return std::nullopt;
    }
  }
  if (jobs.getNumOccurrences() > 0 && jobs == 0) {
    usageError("-j needs a positive number of threads");
    return std::nullopt;
  }
  options.jobs = jobs;
  options.shared = shared;
  options.symbolPrefix = prefix;
  return options;
}

std::optional<TuneOptions> tuneOptions() {
  std::optional<std::string> input = singleInput(tuneInputs, "tune");
  if (!input)
    return std::nullopt;
  TuneOptions options;
  options.inputPath = *input;
  for (auto [option, into] :
       {std::pair{&tuneThreads, &options.threads}, std::pair{&tuneBatch, &options.batch},
        std::pair{&tuneSeq, &options.seq}, std::pair{&tuneKvSeq, &options.kvSeq}}) {
    if (option->getNumOccurrences() == 0)
      continue;
    if (*option < 1) {
      usageError(fmt::format("--{} needs a positive integer, got {}", option->ArgStr.str(),
                             static_cast<int64_t>(*option)));
      return std::nullopt;
    }
    *into = *option;
  }
  if (tuneCacheLen.getNumOccurrences() > 0) {
    if (tuneCacheLen < 0) {
      usageError(fmt::format("--cache-len needs a non-negative integer, got {}",
                             static_cast<int64_t>(tuneCacheLen)));
      return std::nullopt;
    }
    options.cacheLen = tuneCacheLen;
  }
  if (!(tuneBudget > 0)) {
    usageError(fmt::format("--budget needs a positive number of seconds, got {}",
                           static_cast<double>(tuneBudget)));
    return std::nullopt;
  }
  options.layer = tuneLayer;
  if (StringRef(tuneTarget).contains(',')) {
    usageError(fmt::format("--target '{}' names several targets; a schedule is tuned for one "
                           "(tune each, then give 'mhac compile' one file per target)",
                           tuneTarget.getValue()));
    return std::nullopt;
  }
  options.target = tuneTarget;
  options.outputPath = tuneOutput;
  options.budgetSeconds = tuneBudget;
  options.seed = tuneSeed;
  options.cacheDir = tuneCacheDir;
  options.retune = tuneRetune;
  options.plan = tunePlan;
  return options;
}

} // namespace

std::optional<Invocation> parseCommandLine(int argc, char **argv) {
  addMlirOptions(compileCommand);
  cl::HideUnrelatedOptions(llvm::ArrayRef<const cl::OptionCategory *>{},
                           cl::SubCommand::getTopLevel());
  cl::HideUnrelatedOptions({&compileCategory, &mlirCategory}, compileCommand);
  cl::HideUnrelatedOptions({&tuneCategory}, tuneCommand);
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
  cl::SubCommand *subcommand = command == compileCommand.getName() ? &compileCommand
                               : command == tuneCommand.getName()  ? &tuneCommand
                                                                   : nullptr;
  if (!subcommand && !generic) {
    usageError(fmt::format("unknown command '{}' (expected compile or tune)", command.str()));
    return std::nullopt;
  }
  if (subcommand && !checkArguments(llvm::ArrayRef(args).drop_front(2), *subcommand))
    return std::nullopt;

  std::string errors;
  llvm::raw_string_ostream errorStream(errors);
  if (!cl::ParseCommandLineOptions(static_cast<int>(args.size()), args.data(), kOverview,
                                   &errorStream, /*VFS=*/nullptr, /*EnvVar=*/nullptr,
                                   /*LongOptionsUseDoubleDash=*/true)) {
    // What checkArguments cannot see, such as a value of the wrong type. llvm::cl prints those
    // itself ("mhac: for the --budget option: 'soon' value invalid ..."); other messages go to
    // `errors`, shown as mhac's one line.
    StringRef message = StringRef(errors).split('\n').first;
    size_t colon = message.find(": ");
    if (message.empty())
      fmt::print(stderr, "run 'mhac --help' for usage\n");
    else
      usageError((colon == StringRef::npos ? message : message.substr(colon + 2)).str());
    return std::nullopt;
  }

  Invocation invocation;
  if (subcommand == &tuneCommand) {
    invocation.command = Invocation::Command::Tune;
    std::optional<TuneOptions> options = tuneOptions();
    if (!options)
      return std::nullopt;
    invocation.tune = std::move(*options);
    return invocation;
  }
  std::optional<CompileOptions> options = compileOptions();
  if (!options)
    return std::nullopt;
  invocation.compile = std::move(*options);
  return invocation;
}

} // namespace mhac
