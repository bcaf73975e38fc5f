//===- mhac.cpp - the mhac compiler driver --------------------------------===//
//
// Part of mhac. Runs the stages text -> AST -> LayerSpec -> mha dialect -> linalg -> LLVM
// dialect -> LLVM IR -> machine code, and either prints the stage `--emit` asks for or writes
// NAME.o (or NAME.so) and NAME.h.
//
//===----------------------------------------------------------------------===//

#include "compiler/frontend/AST.h"
#include "compiler/frontend/Parser.h"
#include "compiler/frontend/Sema.h"
#include "compiler/gpu/CudaKernels.h"
#include "compiler/pipeline/CpuPipeline.h"
#include "compiler/schedules/Knobs.h"
#include "compiler/schedules/ScheduleFile.h"
#include "compiler/target/BackendSupport.h"
#include "compiler/target/CodeEmitter.h"
#include "compiler/target/HeaderEmitter.h"
#include "compiler/target/LayerABI.h"
#include "compiler/target/SharedLibrary.h"
#include "compiler/target/Target.h"
#include "tools/common/StageProgress.h"
#include "tools/mhac/CommandLine.h"
#include "tools/mhac/LayerCompiler.h"
#include "tools/mhac/tune/Tuner.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/Timing.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"

#include <fmt/format.h>

#include <iostream>
#include <sstream>

using namespace mhac;

/// Exit statuses: 1 for errors in the input or in compiling it, 2 for misuse of the command line.
static constexpr int kFailure = 1;
static constexpr int kUsageError = 2;

static int fail(const std::string &message) {
  fmt::print(stderr, "mhac: error: {}\n", message);
  return kFailure;
}

/// Writes `contents` to `path` through a temporary file, so that a failed or interrupted
/// compilation never leaves a truncated output behind.
static bool writeFile(const std::string &path, llvm::function_ref<void(llvm::raw_ostream &)> write,
                      std::string &error) {
  std::error_code ec;
  llvm::ToolOutputFile file(path, ec, llvm::sys::fs::OF_None);
  if (ec) {
    error = fmt::format("cannot write '{}': {}", path, ec.message());
    return false;
  }
  write(file.os());
  file.os().flush();
  if (file.os().has_error()) {
    error = fmt::format("cannot write '{}': {}", path, file.os().error().message());
    file.os().clear_error();
    return false;
  }
  file.keep();
  return true;
}

/// The base name of the outputs: `-o NAME`, or the input's stem.
static std::string outputBase(const CompileOptions &options) {
  if (!options.outputName.empty())
    return options.outputName;
  if (options.inputPath == "-")
    return "layers";
  return llvm::sys::path::stem(options.inputPath).str();
}

/// `--schedule auto:NAME` runs one of Halide's autoschedulers on every layer.
static constexpr std::string_view kAutoschedulePrefix = "auto:";

/// The autoscheduler `--schedule auto:NAME` names, or nothing after an error.
static std::optional<HalideAutoscheduler> parseAutoscheduler(const std::string &name,
                                                             Backend backend) {
  const Knob &k = knob(KnobId::HalideAutoscheduler);
  std::vector<std::string> names(k.choices.begin() + 1, k.choices.end());
  if (backend != Backend::Halide) {
    fail(fmt::format("--schedule auto:{} runs one of Halide's autoschedulers; it needs "
                     "--backend halide",
                     name));
    return std::nullopt;
  }
  for (size_t i = 1; i < k.choices.size(); ++i) {
    if (k.choices[i] != name)
      continue;
    auto autoscheduler = static_cast<HalideAutoscheduler>(i);
    if (autoscheduler == HalideAutoscheduler::Anderson2021) {
      fail("--schedule auto:Anderson2021 schedules GPU pipelines, and the Halide backend "
           "compiles for CPUs (Mullapudi2016, Adams2019 and Li2018 schedule CPU pipelines)");
      return std::nullopt;
    }
    return autoscheduler;
  }
  fail(fmt::format("--schedule auto:{}: no such autoscheduler (Halide's are {})", name,
                   fmt::join(names, ", ")));
  return std::nullopt;
}

/// The schedule of every layer: from the file `--schedule` names where it has a block for the
/// layer, the target's defaults otherwise. Errors in the file are reported in it.
static std::optional<LayerSchedules> readSchedules(const std::string &schedulePath,
                                                   const std::vector<LayerSpec> &layers,
                                                   const CpuTarget &target, Backend backend) {
  std::optional<SourceFile> file;
  std::optional<DiagnosticEngine> diags;
  std::optional<ScheduleFile> schedules;
  if (!schedulePath.empty() && !llvm::StringRef(schedulePath).starts_with(kAutoschedulePrefix)) {
    auto buffer = llvm::MemoryBuffer::getFile(schedulePath, /*IsText=*/false,
                                              /*RequiresNullTerminator=*/false);
    if (std::error_code error = buffer.getError()) {
      fail(fmt::format("cannot read '{}': {}", schedulePath, error.message()));
      return std::nullopt;
    }
    file.emplace(schedulePath, (*buffer)->getBuffer().str());
    diags.emplace(*file, std::cerr);
    schedules = readScheduleFile(*file, *diags, target, "layer", backend);
    if (!schedules || !checkBlockNames(*schedules, layers, *diags))
      return std::nullopt;
  }
  LayerSchedules resolved;
  bool ok = true;
  std::optional<HalideAutoscheduler> autoscheduler;
  if (llvm::StringRef(schedulePath).starts_with(kAutoschedulePrefix)) {
    autoscheduler = parseAutoscheduler(schedulePath.substr(kAutoschedulePrefix.size()), backend);
    if (!autoscheduler)
      return std::nullopt;
  }
  for (const LayerSpec &layer : layers) {
    const ScheduleBlock *block = schedules ? schedules->find(layer.name) : nullptr;
    if (block)
      checkProvenance(*block, layer, target, *diags);
    ScheduleResolution resolution =
        resolveSchedule(layer, target, block, diags ? &*diags : nullptr);
    if (!resolution.error.empty())
      fail(resolution.error);
    if (resolution.schedule && autoscheduler)
      resolution.schedule->halide.autoscheduler = *autoscheduler;
    if (resolution.schedule)
      resolved.emplace(layer.name, *resolution.schedule);
    else
      ok = false;
  }
  if (!ok)
    return std::nullopt;
  return resolved;
}

/// Prints the stages `--emit` asks for: on standard output, or into the file `-o` names.
class EmitOutput {
public:
  explicit EmitOutput(const CompileOptions &options) {
    if (options.outputName.empty())
      return;
    std::error_code ec;
    file_.emplace(options.outputName, ec, llvm::sys::fs::OF_None);
    if (ec) {
      error_ = fmt::format("cannot write '{}': {}", options.outputName, ec.message());
      file_.reset();
    }
  }

  /// Empty unless the output file could not be opened.
  const std::string &error() const { return error_; }
  llvm::raw_pwrite_stream &os() { return file_ ? file_->os() : llvm::outs(); }
  /// Keeps the file (a failed compilation leaves none behind).
  int done() {
    if (file_)
      file_->keep();
    return 0;
  }

private:
  std::optional<llvm::ToolOutputFile> file_;
  std::string error_;
};

/// Prints a stage of the CUDA kernels of `layers`: specialized (gpu dialect), in NVVM, or PTX.
static int emitCudaStage(EmitStage stage, const std::vector<LayerSpec> &layers,
                         const TargetPlan &plan, EmitOutput &emitted, StageProgress &progress) {
  mlir::DialectRegistry registry;
  registerCudaDialects(registry);
  mlir::MLIRContext context(registry);
  context.loadAllAvailableDialects();
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::ModuleOp::create(mlir::UnknownLoc::get(&context));
  progress.stage("specializing the kernels");
  for (const LayerSpec &layer : layers)
    if (auto kernels = addLayerKernels(*module, layer, plan.schedules.at(layer.name)); !kernels)
      return fail(llvm::toString(kernels.takeError()));
  if (stage == EmitStage::Nvvm) {
    progress.stage("lowering the kernels to NVVM");
    if (llvm::Error error = lowerToNVVM(*module, *plan.target.cuda))
      return fail(llvm::toString(std::move(error)));
  }
  if (stage == EmitStage::Ptx) {
    progress.stage("compiling the kernels to PTX");
    if (llvm::Error error = lowerToDeviceCode(*module, *plan.target.cuda, DeviceCodeFormat::Ptx))
      return fail(llvm::toString(std::move(error)));
    for (const LayerSpec &layer : layers) {
      auto ptx = deviceImage(*module, deviceModuleName(layer));
      if (!ptx)
        return fail(llvm::toString(ptx.takeError()));
      emitted.os() << "// layer " << layer.name << "\n" << *ptx;
    }
    return emitted.done();
  }
  (*module)->print(emitted.os());
  return emitted.done();
}

/// Prints one of the stages before LLVM IR (the schedule file, or the module in the mha
/// dialect, after lowering to linalg, or in the LLVM dialect) for one target.
static int emitMlirStage(EmitStage stage, const std::vector<LayerSpec> &layers,
                         const TargetPlan &plan, Backend backend, const std::string &displayName,
                         EmitOutput &emitted, StageProgress &progress,
                         mlir::TimingScope &rootScope) {
  if (stage == EmitStage::Schedule) {
    std::vector<std::pair<std::string, Schedule>> ordered;
    for (const LayerSpec &layer : layers)
      ordered.emplace_back(layer.name, plan.schedules.at(layer.name));
    emitted.os() << printScheduleFile(ordered, displayName, plan.target, backend);
    return emitted.done();
  }
  if (stage >= EmitStage::Gpu)
    return emitCudaStage(stage, layers, plan, emitted, progress);
  mlir::DialectRegistry registry;
  registerCpuPipelineDialects(registry);
  mlir::MLIRContext context(registry);
  auto module = buildVerifiedModule(context, layers, displayName);
  if (!module)
    return fail(llvm::toString(module.takeError()));
  auto printFlags = mlir::OpPrintingFlags().printNameLocAsPrefix();
  if (stage == EmitStage::Mha) {
    (*module)->print(emitted.os(), printFlags);
    return emitted.done();
  }
  PassManagerSetup setup = [](mlir::PassManager &pm) {
    return mlir::applyPassManagerCLOptions(pm);
  };
  progress.stage("lowering mha to linalg");
  if (llvm::Error error = lowerToLinalg(**module, plan, setup, rootScope))
    return fail(llvm::toString(std::move(error)));
  if (stage == EmitStage::Linalg) {
    (*module)->print(emitted.os(), printFlags);
    return emitted.done();
  }
  progress.stage("applying the schedules, lowering to the LLVM dialect");
  if (llvm::Error error = lowerToLLVMDialect(**module, plan, setup, rootScope))
    return fail(llvm::toString(std::move(error)));
  (*module)->print(emitted.os());
  return emitted.done();
}

static int compile(const CompileOptions &options) {
  // --mlir-timing reports the whole compilation: each stage below is a scope of its own, and the
  // pass managers nest under the lowering stages.
  mlir::DefaultTimingManager timing;
  mlir::applyDefaultTimingManagerCLOptions(timing);
  mlir::TimingScope rootScope = timing.getRootScope();
  mlir::TimingScope frontendScope = rootScope.nest("front end (parse, check)");
  auto buffer = llvm::MemoryBuffer::getFileOrSTDIN(options.inputPath, /*IsText=*/false,
                                                   /*RequiresNullTerminator=*/false);
  if (std::error_code error = buffer.getError())
    return fail(fmt::format("cannot read '{}': {}", options.inputPath, error.message()));
  std::string displayName = options.inputPath == "-" ? "<stdin>" : options.inputPath;
  SourceFile file(displayName, (*buffer)->getBuffer().str());
  DiagnosticEngine diags(file, std::cerr);

  ModuleAST ast = Parser(file, diags).parseModule();
  std::optional<std::vector<LayerSpec>> layers =
      diags.hasErrors() ? std::nullopt : analyzeModule(ast, diags);
  if (!layers)
    return kFailure;
  frontendScope.stop();
  StageProgress progress(fmt::format("mhac: {}, {} layer{}", displayName, layers->size(),
                                     layers->size() == 1 ? "" : "s"));
  std::optional<EmitOutput> emitted;
  if (options.emit) {
    emitted.emplace(options);
    if (!emitted->error().empty())
      return fail(emitted->error());
  }
  if (options.emit == EmitStage::AST) {
    std::ostringstream text;
    dumpAST(ast, displayName, text);
    emitted->os() << text.str();
    return emitted->done();
  }

  // The targets are checked before any work, so that a typo fails fast.
  std::vector<TargetPlan> plans;
  for (size_t i = 0; i < options.targets.size(); ++i) {
    llvm::Expected<CpuTarget> target = resolveCpuTarget(options.targets[i]);
    if (!target)
      return fail(llvm::toString(target.takeError()));
    if (options.emulateAmx)
      if (llvm::Error error = emulateAmx(*target))
        return fail(llvm::toString(std::move(error)));
    std::optional<LayerSchedules> schedules =
        readSchedules(options.schedulePaths.empty() ? "" : options.schedulePaths[i], *layers,
                      *target, options.backend);
    if (!schedules)
      return kFailure;
    plans.push_back({std::move(*target), std::move(*schedules)});
  }
  // Keys a backend or target does not compile yet are refused at their lines.
  bool refused = options.backend == Backend::Halide &&
                 refuseDecoderKeys(*layers, "the Halide backend", "--backend mlir", diags);
  for (const TargetPlan &plan : plans)
    if (plan.target.cuda && !refused)
      refused = refuseDecoderKeys(*layers, "the CUDA target " + plan.target.name,
                                  "a CPU --target", diags);
  if (refused)
    return kFailure;
  if (plans[0].target.cuda && findCudaToolkit().empty() &&
      (!options.emit || *options.emit >= EmitStage::LLVMIR))
    std::cerr << "mhac: warning: no CUDA toolkit found (ptxas, at $CUDA_HOME, on PATH or in "
                 "/usr/local/cuda): the object holds PTX alone, which the driver compiles when "
                 "a layer first runs\n";
  if (options.emit && *options.emit < EmitStage::LLVMIR)
    return emitMlirStage(*options.emit, *layers, plans[0], options.backend, displayName, *emitted,
                         progress, rootScope);

  LayerCompilation compilation;
  compilation.layers = &*layers;
  compilation.plans = std::move(plans);
  compilation.symbolPrefix = options.symbolPrefix;
  compilation.sourceName = displayName;
  compilation.jobs = options.jobs;
  compilation.backend = options.backend;
  compilation.setupPassManager = [](mlir::PassManager &pm) {
    return mlir::applyPassManagerCLOptions(pm);
  };
  llvm::LLVMContext llvmContext;
  llvm::Expected<CompiledLayers> compiled =
      compileLayers(compilation, llvmContext, progress, rootScope);
  if (!compiled)
    return fail(llvm::toString(compiled.takeError()));
  llvm::Module &llvmModule = *compiled->module;
  llvm::TargetMachine &machine = *compiled->machine;
  const std::vector<LayerABI> &abis = compiled->abis;
  if (options.emit == EmitStage::LLVMIR) {
    llvmModule.print(emitted->os(), nullptr);
    return emitted->done();
  }
  mlir::TimingScope machineCodeScope = rootScope.nest("machine code");
  progress.stage("generating machine code");
  if (options.emit == EmitStage::Assembly || options.emit == EmitStage::Object) {
    auto kind = options.emit == EmitStage::Assembly ? llvm::CodeGenFileType::AssemblyFile
                                                    : llvm::CodeGenFileType::ObjectFile;
    if (llvm::Error error = emitMachineCode(llvmModule, machine, emitted->os(), kind))
      return fail(llvm::toString(std::move(error)));
    return emitted->done();
  }

  // Files: NAME.o (or NAME.so) and NAME.h.
  std::string base = outputBase(options);
  std::string objectPath = base + ".o";
  std::string libraryPath = base + ".so";
  std::string headerPath = base + ".h";
  if (options.shared) {
    llvm::SmallString<128> temporary;
    if (std::error_code ec = llvm::sys::fs::createTemporaryFile("mhac", "o", temporary))
      return fail(fmt::format("cannot create a temporary file: {}", ec.message()));
    objectPath = std::string(temporary);
  }
  std::string error;
  llvm::Error emitError = llvm::Error::success();
  bool written = writeFile(
      objectPath,
      [&](llvm::raw_ostream &os) {
        llvm::raw_pwrite_stream *stream = static_cast<llvm::raw_pwrite_stream *>(&os);
        emitError =
            emitMachineCode(llvmModule, machine, *stream, llvm::CodeGenFileType::ObjectFile);
      },
      error);
  if (emitError)
    return fail(llvm::toString(std::move(emitError)));
  if (!written)
    return fail(error);
  if (options.shared) {
    llvm::Error linkError = linkSharedLibrary(objectPath, libraryPath, runtimeLibraryDir());
    llvm::sys::fs::remove(objectPath);
    if (linkError)
      return fail(llvm::toString(std::move(linkError)));
  }
  std::string header = emitHeader(abis, llvm::sys::path::filename(base).str(), displayName);
  if (!writeFile(
          headerPath, [&](llvm::raw_ostream &os) { os << header; }, error))
    return fail(error);
  return 0;
}

int main(int argc, char **argv) {
  std::optional<Invocation> invocation = parseCommandLine(argc, argv);
  if (!invocation)
    return kUsageError;
  if (invocation->command == Invocation::Command::Tune)
    return tune(invocation->tune);
  return compile(invocation->compile);
}
