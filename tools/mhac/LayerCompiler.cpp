//===- LayerCompiler.cpp - layers to one LLVM module, in parallel ---------===//
//
// Part of mhac. Units share nothing while they run: each builds its own MLIR context and its own
// LLVM context, and hands back bitcode, which the calling thread reads into the output's
// context and links in a fixed order, so the object does not depend on which unit finished
// first.
//
//===----------------------------------------------------------------------===//

#include "tools/mhac/LayerCompiler.h"

#include "compiler/frontend/MLIRGen.h"
#include "compiler/gpu/CudaHost.h"
#include "compiler/gpu/CudaKernels.h"
#include "compiler/schedules/ScheduleFile.h"
#include "compiler/target/CodeEmitter.h"
#include "compiler/target/EntryPoints.h"
#include "compiler/target/LoweredLayer.h"
#include "compiler/target/Target.h"
#include "compiler/target/VariantDispatch.h"
#include "tools/common/StageProgress.h"
#include "tools/mhac/HalideLayer.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Linker/Linker.h"
#include "llvm/Support/ThreadPool.h"
#include "llvm/Support/Threading.h"
#include "llvm/Target/TargetMachine.h"

#include <algorithm>
#include <functional>
#include <mutex>

using namespace llvm;

namespace mhac {
namespace {

/// One layer for one target, and what compiling it gave.
struct Unit {
  const LayerSpec *layer = nullptr;
  const TargetPlan *plan = nullptr;
  LayerABI abi;
  /// The step it is in, for the progress line (a string literal).
  const char *step = "starting";
  SmallVector<char, 0> bitcode;
  std::string error;
};

/// Compiles `unit` through the Halide backend (HalideLayer.h).
Error compileHalideUnit(Unit &unit, mlir::TimingScope &timing,
                        const std::function<void(const char *)> &enter) {
  const TargetPlan &plan = *unit.plan;
  auto machine = createTargetMachine(plan.target);
  if (!machine)
    return machine.takeError();
  enter("Halide");
  mlir::TimingScope scope = timing.nest("Halide's generator, entry points");
  LLVMContext llvmContext;
  auto module = compileHalideLayer(*unit.layer, plan.schedules.at(unit.layer->name), plan.target,
                                   **machine, unit.abi, llvmContext);
  if (!module)
    return module.takeError();
  raw_svector_ostream out(unit.bitcode);
  WriteBitcodeToFile(**module, out);
  return Error::success();
}

/// Compiles `unit` for its CUDA target: the kernels through MLIR's GPU pipeline to device code,
/// embedded in host code that launches them (CudaHost.h).
Error compileCudaUnit(Unit &unit, mlir::TimingScope &timing,
                      const std::function<void(const char *)> &enter) {
  const TargetPlan &plan = *unit.plan;
  const CudaDevice &device = *plan.target.cuda;
  mlir::DialectRegistry registry;
  registerCudaDialects(registry);
  mlir::MLIRContext context(registry, mlir::MLIRContext::Threading::DISABLED);
  context.loadAllAvailableDialects();
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::ModuleOp::create(mlir::UnknownLoc::get(&context));
  enter("kernels");
  mlir::TimingScope kernelScope = timing.nest("CUDA kernels, device code");
  auto kernels = addLayerKernels(*module, *unit.layer, plan.schedules.at(unit.layer->name));
  if (!kernels)
    return kernels.takeError();
  enter("device code");
  DeviceCodeFormat format =
      findCudaToolkit().empty() ? DeviceCodeFormat::Ptx : DeviceCodeFormat::Fatbin;
  if (Error error = lowerToDeviceCode(*module, device, format))
    return error;
  auto image = deviceImage(*module, deviceModuleName(*unit.layer));
  if (!image)
    return image.takeError();
  kernelScope.stop();

  enter("host code");
  mlir::TimingScope hostScope = timing.nest("CUDA host code, entry points");
  auto machine = createTargetMachine(plan.target);
  if (!machine)
    return machine.takeError();
  LLVMContext llvmContext;
  Module host(unit.layer->name, llvmContext);
  host.setTargetTriple((*machine)->getTargetTriple());
  host.setDataLayout((*machine)->createDataLayout());
  unit.abi.device = plan.target.name;
  for (TensorABI &tensor : unit.abi.tensors)
    if (tensor.isParameter)
      appendPrepared(unit.abi, tensor, tensor.shape, unit.abi.bf16 ? 2 : 4);
  if (Error error = addCudaHostCode(host, unit.abi, *kernels, *image))
    return error;
  if (Error error = addEntryPoints(host, ArrayRef(unit.abi), plan.target.features,
                                   KernelConvention::CudaLaunches))
    return error;
  std::string problems;
  raw_string_ostream problemStream(problems);
  if (verifyModule(host, &problemStream))
    return createStringError(inconvertibleErrorCode(), "invalid host code: %s", problems.c_str());
  optimizeModule(host, **machine);
  raw_svector_ostream out(unit.bitcode);
  WriteBitcodeToFile(host, out);
  return Error::success();
}

/// Compiles `unit`, calling `enter` with the name of each step it starts, timed under
/// `timing`, which the units share.
Error compileUnit(Unit &unit, const LayerCompilation &compilation, bool threadedContext,
                  mlir::TimingScope &timing, const std::function<void(const char *)> &enter) {
  mlir::DialectRegistry registry;
  registerCpuPipelineDialects(registry);
  mlir::registerAllToLLVMIRTranslations(registry);
  mlir::MLIRContext context(registry, threadedContext ? mlir::MLIRContext::Threading::ENABLED
                                                      : mlir::MLIRContext::Threading::DISABLED);
  auto module = buildVerifiedModule(context, ArrayRef(*unit.layer), compilation.sourceName);
  if (!module)
    return module.takeError();
  const TargetPlan &plan = *unit.plan;
  enter("to linalg");
  if (Error error = lowerToLinalg(**module, plan, compilation.setupPassManager, timing))
    return error;
  std::vector<LayerABI> abis{unit.abi};
  if (mlir::failed(readPreparedLayout(**module, abis)))
    return createStringError(inconvertibleErrorCode(),
                             "internal error: cannot read the layout of the prepared parameters");
  unit.abi = abis[0];
  enter("to the LLVM dialect");
  if (Error error = lowerToLLVMDialect(**module, plan, compilation.setupPassManager, timing))
    return error;
  auto machine = createTargetMachine(plan.target);
  if (!machine)
    return machine.takeError();
  enter("LLVM IR");
  mlir::TimingScope llvmScope = timing.nest("LLVM IR, optimized");
  LLVMContext llvmContext;
  auto llvmModule =
      translateAndOptimize(**module, abis, **machine, plan.target.tuneCpu, llvmContext);
  if (!llvmModule)
    return llvmModule.takeError();
  raw_svector_ostream out(unit.bitcode);
  WriteBitcodeToFile(**llvmModule, out);
  return Error::success();
}

/// Runs every unit, `jobs` at a time.
void runUnits(std::vector<Unit> &units, const LayerCompilation &compilation,
              StageProgress &progress, mlir::TimingScope &timing) {
  unsigned threads =
      compilation.jobs ? compilation.jobs : hardware_concurrency().compute_thread_count();
  threads = std::max(1u, std::min<unsigned>(threads, units.size()));
  // A single unit keeps MLIR's own threads (its functions' passes run side by side).
  bool threadedContext = units.size() == 1 && compilation.jobs != 1;
  // The units running now, for the progress line.
  std::mutex mutex;
  std::vector<const Unit *> active;
  int done = 0;
  auto report = [&] {
    std::string names;
    for (const Unit *unit : active)
      names += (names.empty() ? "" : ", ") + unit->layer->name +
               (compilation.plans.size() > 1 ? " for " + unit->plan->target.name : "") + ": " +
               unit->step;
    progress.parts(names, done, static_cast<int>(units.size()));
  };
  auto run = [&](Unit &unit) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      active.push_back(&unit);
      report();
    }
    auto enter = [&](const char *step) {
      std::lock_guard<std::mutex> lock(mutex);
      unit.step = step;
      report();
    };
    Error error = compilation.backend == Backend::Halide ? compileHalideUnit(unit, timing, enter)
                  : compilation.backend == Backend::Cuda
                      ? compileCudaUnit(unit, timing, enter)
                      : compileUnit(unit, compilation, threadedContext, timing, enter);
    if (error)
      unit.error = toString(std::move(error));
    std::lock_guard<std::mutex> lock(mutex);
    llvm::erase(active, &unit);
    ++done;
    report();
  };
  if (threads == 1) {
    for (Unit &unit : units)
      run(unit);
    return;
  }
  DefaultThreadPool pool(hardware_concurrency(threads));
  for (Unit &unit : units)
    pool.async([&run, &unit] { run(unit); });
  pool.wait();
}

/// Links the units of one target, in layer order, and adds the module's layer list.
Expected<std::unique_ptr<Module>> linkTarget(ArrayRef<Unit *> units, LLVMContext &context) {
  std::unique_ptr<Module> linked;
  std::vector<LayerABI> abis;
  for (Unit *unit : units) {
    auto module = parseBitcodeFile(
        MemoryBufferRef(StringRef(unit->bitcode.data(), unit->bitcode.size()), unit->layer->name),
        context);
    if (!module)
      return module.takeError();
    abis.push_back(unit->abi);
    if (!linked) {
      linked = std::move(*module);
      continue;
    }
    if (Linker::linkModules(*linked, std::move(*module)))
      return createStringError(inconvertibleErrorCode(),
                               "internal error: the code of layer '%s' does not link with the "
                               "others",
                               unit->layer->name.c_str());
  }
  if (Error error = addModuleLayerList(*linked, abis))
    return std::move(error);
  return linked;
}

/// The layers' ABI for the header, from the units of every target.
std::vector<LayerABI> headerABIs(const std::vector<Unit> &units, size_t numLayers,
                                 ArrayRef<TargetPlan> plans) {
  std::vector<LayerABI> abis;
  for (size_t layer = 0; layer < numLayers; ++layer) {
    LayerABI abi = units[layer].abi;
    if (plans.size() > 1) {
      abi.schedule.clear();
      for (size_t target = 0; target < plans.size(); ++target) {
        const LayerABI &variant = units[target * numLayers + layer].abi;
        abi.preparedBytes = std::max(abi.preparedBytes, variant.preparedBytes);
        abi.schedule += "# --target " + plans[target].target.name + "\n" + variant.schedule;
      }
    }
    abis.push_back(std::move(abi));
  }
  return abis;
}

/// `setup` with the pass manager's timing in `scope`.
PassManagerSetup timedSetup(const PassManagerSetup &setup, mlir::TimingScope &scope) {
  return [&setup, &scope](mlir::PassManager &pm) {
    pm.enableTiming(scope);
    return setup ? setup(pm) : mlir::success();
  };
}

} // namespace

Expected<mlir::OwningOpRef<mlir::ModuleOp>>
buildVerifiedModule(mlir::MLIRContext &context, ArrayRef<LayerSpec> layers, StringRef sourceName) {
  mlir::OwningOpRef<mlir::ModuleOp> module = buildModule(context, layers, sourceName);
  if (mlir::failed(mlir::verify(*module)))
    return createStringError(inconvertibleErrorCode(),
                             "internal error: the generated mha IR does not verify");
  return module;
}

Error lowerToLinalg(mlir::ModuleOp module, const TargetPlan &plan, const PassManagerSetup &setup,
                    mlir::TimingScope &timing) {
  mlir::TimingScope scope = timing.nest("mha to linalg");
  if (mlir::failed(lowerMhaToLinalg(module, plan.schedules, plan.target, timedSetup(setup, scope))))
    return createStringError(inconvertibleErrorCode(), "lowering to linalg failed");
  return Error::success();
}

Error lowerToLLVMDialect(mlir::ModuleOp module, const TargetPlan &plan,
                         const PassManagerSetup &setup, mlir::TimingScope &timing) {
  mlir::TimingScope scope = timing.nest("linalg to the LLVM dialect");
  if (mlir::failed(lowerLinalgToLLVMDialect(module, plan.schedules, plan.target,
                                                timedSetup(setup, scope))))
    return createStringError(inconvertibleErrorCode(), "lowering to the LLVM dialect failed");
  return Error::success();
}

Expected<CompiledLayers> compileLayers(const LayerCompilation &compilation, LLVMContext &context,
                                       StageProgress &progress, mlir::TimingScope &timing) {
  const std::vector<LayerSpec> &layers = *compilation.layers;
  std::vector<Unit> units;
  for (const TargetPlan &plan : compilation.plans)
    for (const LayerSpec &layer : layers) {
      Unit unit;
      unit.layer = &layer;
      unit.plan = &plan;
      unit.abi = describeLayer(layer);
      unit.abi.symbolPrefix = compilation.symbolPrefix;
      unit.abi.schedule = printScheduleBlock("layer", layer.name, plan.schedules.at(layer.name),
                                             nullptr, compilation.backend);
      units.push_back(std::move(unit));
    }

  progress.stage("compiling the layers");
  {
    mlir::TimingScope unitsScope = timing.nest("compiling the layers (summed over threads)");
    runUnits(units, compilation, progress, unitsScope);
  }
  progress.parts("", 0, 0);
  for (const Unit &unit : units)
    if (!unit.error.empty())
      return createStringError(inconvertibleErrorCode(), "%s", unit.error.c_str());

  mlir::TimingScope linkScope = timing.nest("linking");
  progress.stage("linking");
  CompiledLayers result;
  result.abis = headerABIs(units, layers.size(), compilation.plans);
  std::vector<CodeVariant> variants;
  std::vector<PublicFunction> publicFunctions;
  for (auto [index, plan] : llvm::enumerate(compilation.plans)) {
    std::vector<Unit *> targetUnits;
    for (size_t layer = 0; layer < layers.size(); ++layer)
      targetUnits.push_back(&units[index * layers.size() + layer]);
    auto module = linkTarget(targetUnits, context);
    if (!module)
      return module.takeError();
    if (compilation.plans.size() == 1) {
      result.module = std::move(*module);
      break;
    }
    CodeVariant variant{variantTag(plan.target.name), enabledCpuFeatures(plan.target.features)};
    auto functions = hideAsVariant(**module, variant.tag);
    if (!functions)
      return functions.takeError();
    publicFunctions = std::move(*functions);
    variants.push_back(std::move(variant));
    if (!result.module)
      result.module = std::move(*module);
    else if (Linker::linkModules(*result.module, std::move(*module)))
      return createStringError(inconvertibleErrorCode(),
                               "internal error: the variants for two targets do not link");
  }
  if (!variants.empty()) {
    // The best variant is tried first: the one with the most features (x86-64-v4 before
    // x86-64-v3); the order of --target decides between equals.
    auto count = [](const CodeVariant &v) { return llvm::count(v.cpuFeatures, ',') + 1; };
    std::stable_sort(
        variants.begin(), variants.end(),
        [&](const CodeVariant &a, const CodeVariant &b) { return count(a) > count(b); });
    if (Error error = addVariantDispatch(*result.module, variants, publicFunctions))
      return std::move(error);
  }
  std::string problems;
  raw_string_ostream problemStream(problems);
  if (verifyModule(*result.module, &problemStream))
    return createStringError(inconvertibleErrorCode(), "invalid LLVM IR: %s", problems.c_str());

  auto machine = createTargetMachine(compilation.plans.size() == 1 ? compilation.plans[0].target
                                                                   : baselineCpuTarget());
  if (!machine)
    return machine.takeError();
  result.machine = std::move(*machine);
  return result;
}

} // namespace mhac
