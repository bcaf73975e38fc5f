//===- CpuPipeline.cpp - from the mha dialect to the LLVM dialect ---------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "compiler/pipeline/CpuPipeline.h"

#include "compiler/conversion/Passes.h"
#include "compiler/schedules/TransformScripts.h"
#include "dialects/mha/IR/MhaDialect.h"

#include "mlir/Dialect/Bufferization/Transforms/OneShotAnalysis.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotModuleBufferize.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Transform/IR/TransformOps.h"
#include "mlir/Dialect/Transform/Transforms/TransformInterpreterUtils.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

#include <mutex>

using namespace mlir;

namespace mhac {

void registerCpuPipelineDialects(DialectRegistry &registry) {
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registry.insert<mha::MhaDialect>();
}

/// Runs `pm` on `op` after `setup`.
static LogicalResult run(PassManager &pm, Operation *op, const PassManagerSetup &setup) {
  if (setup && failed(setup(pm)))
    return failure();
  return pm.run(op);
}

/// Runs a textual pass pipeline (without the outer `builtin.module(...)`: with it, the passes
/// are silently not run) on `module`.
static LogicalResult runPipeline(ModuleOp module, StringRef pipeline,
                                 const PassManagerSetup &setup) {
  // Textual pipelines name passes through the global registry.
  static std::once_flag registered;
  std::call_once(registered, [] {
    registerAllPasses();
    registerMhacConversionPasses();
  });
  PassManager pm(module.getContext());
  if (failed(parsePassPipeline(pipeline, pm, llvm::errs())))
    return failure();
  return run(pm, module, setup);
}

/// The schedule of a function of a lowered module: its layer's, or null for a function that
/// belongs to no scheduled layer.
static const Schedule *scheduleOf(func::FuncOp func, const LayerSchedules &schedules) {
  StringRef name = func.getSymName();
  name.consume_front(kPreparationPrefix);
  auto it = schedules.find(name.str());
  return it == schedules.end() ? nullptr : &it->second;
}

/// Calls `apply` on every scheduled function of `module` with its schedule, until one fails.
static LogicalResult
forEachScheduledFunction(ModuleOp module, const LayerSchedules &schedules,
                         function_ref<LogicalResult(func::FuncOp, const Schedule &)> apply) {
  for (auto func : llvm::make_early_inc_range(module.getOps<func::FuncOp>()))
    if (const Schedule *schedule = scheduleOf(func, schedules))
      if (failed(apply(func, *schedule)))
        return failure();
  return success();
}

/// Runs `build`'s passes on every scheduled function of `module`, with its schedule.
static LogicalResult
runOnEachFunction(ModuleOp module, const LayerSchedules &schedules, const PassManagerSetup &setup,
                  function_ref<void(OpPassManager &, const Schedule &)> build) {
  return forEachScheduledFunction(module, schedules, [&](func::FuncOp func, const Schedule &s) {
    PassManager pm(module.getContext(), func::FuncOp::getOperationName());
    build(pm, s);
    return run(pm, func, setup);
  });
}

LogicalResult lowerMhaToLinalg(ModuleOp module, const LayerSchedules &schedules,
                               const CpuTarget &target, const PassManagerSetup &setup) {
  if (failed(runOnEachFunction(module, schedules, setup, [&](OpPassManager &pm, const Schedule &s) {
        const ProjectionSchedule &p = s.projection;
        // Layers whose projections multiply bf16 pairs are widened too: only their
        // projections' operands are taken back in bf16.
        bool pairs = s.pairProducts();
        if (s.bf16Compute == Bf16Compute::F32 || pairs)
          pm.addPass(createWidenBf16Layer(
              WidenBf16LayerOptions{s.attention.compute != AttentionCompute::F32}));
        pm.addPass(createConvertMhaToLinalg(
            ConvertMhaToLinalgOptions{p.registerCols, p.splitLastCacheTile ? p.registerRows : 0,
                                      p.cacheRows, p.rowPadding, pairs, target.lanes()}));
      })))
    return failure();
  PassManager pm(module.getContext());
  pm.addPass(createSplitWeightPreparation());
  if (failed(run(pm, module, setup)))
    return failure();
  return runOnEachFunction(module, schedules, setup, [&](OpPassManager &pm, const Schedule &s) {
    const AttentionSchedule &a = s.attention;
    pm.addPass(createConvertMhaHeadsToLoops(ConvertMhaHeadsToLoopsOptions{target.lanes()}));
    pm.addPass(createConvertMhaAttentionToLoops(ConvertMhaAttentionToLoopsOptions{
        a.queryBlock, a.groupedQueryBlock, a.longKeys, a.longBlockGrowth, a.keyBlock, target.lanes(), a.scoreTileKeys,
        a.scoreTileVectors, a.valueTileRows, a.valueTileVectors,
        a.queryTranspose == QueryTranspose::Tiles, a.keyPrefetchDistance, a.prefetchValues,
        a.prefetchNextBlock, a.compute == AttentionCompute::Amx, target.emulateAmx,
        a.compute == AttentionCompute::Dot, a.decodePositions, a.decodeChunk,
        a.decodeKeyBlock}));
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createCSEPass());
  });
}

/// Applies a script of TransformScripts.h to every scheduled function, with its schedule.
static LogicalResult applyToEachFunction(ModuleOp module, const LayerSchedules &schedules,
                                         LogicalResult (*apply)(Operation *, const Schedule &)) {
  return forEachScheduledFunction(
      module, schedules, [&](func::FuncOp func, const Schedule &s) { return apply(func, s); });
}

/// One-shot bufferization of the whole module, functions' boundaries included (buffers there
/// have identity layouts, as the entry points build them).
static LogicalResult bufferize(ModuleOp module) {
  bufferization::OneShotBufferizationOptions options;
  options.bufferizeFunctionBoundaries = true;
  options.setFunctionBoundaryTypeConversion(bufferization::LayoutMapOption::IdentityLayoutMap);
  // Copies become linalg.copy, lowered to loops later: memref.copy between strided views would
  // call MLIR's runtime library (memrefCopy), which a compiled layer must not need.
  options.memCpyFn = [](OpBuilder &b, Location loc, Value from, Value to) {
    linalg::CopyOp::create(b, loc, from, to);
    return success();
  };
  bufferization::BufferizationState state;
  return bufferization::runOneShotModuleBufferize(module, options, state);
}

LogicalResult applyTilingSchedules(ModuleOp module, const LayerSchedules &schedules) {
  return applyToEachFunction(module, schedules, applyTilingScript);
}

LogicalResult lowerLinalgToLLVMDialect(ModuleOp module, const LayerSchedules &schedules,
                                       const CpuTarget &target, const PassManagerSetup &setup) {
  if (failed(applyTilingSchedules(module, schedules)) ||
      failed(runPipeline(module,
                         "func.func(mhac-fuse-roundings-into-tiles, mhac-vectorize-bf16-pairs),"
                         "canonicalize, cse,"
                         "mhac-layer-results-to-out-arguments, eliminate-empty-tensors",
                         setup)) ||
      failed(bufferize(module)) ||
      // Tiles written back where they were read leave self-copies until CSE merges views.
      failed(runPipeline(module, "canonicalize, cse, canonicalize", setup)) ||
      failed(runPipeline(module,
                         target.emulateAmx ? "func.func(mhac-amx-pair-tiles{emulate=true})"
                                           : "func.func(mhac-amx-pair-tiles)",
                         setup)) ||
      failed(runOnEachFunction(module, schedules, setup,
                               [](OpPassManager &pm, const Schedule &s) {
                                 if (s.projection.prefetchNextBlock)
                                   pm.addPass(createPrefetchWeightPanels());
                               })) ||
      failed(applyToEachFunction(module, schedules, applyVectorLoweringScript)) ||
      (target.avx512bf16 &&
       failed(runPipeline(module, "func.func(mhac-round-to-bf16-with-avx512)", setup))))
    return failure();
  return runPipeline(
      module,
      "func.func(lower-vector-mask, convert-vector-to-scf{full-unroll=true},"
      "          convert-linalg-to-loops),"
      // Ownership-based deallocation frees the intermediates; it cannot see into
      // vector.mask regions, so it runs after masks are lowered.
      "buffer-deallocation-pipeline, convert-parallel-to-mhac-runtime,"
      // expand-strided-metadata emits affine.apply: it must run before lower-affine.
      "expand-strided-metadata, lower-affine, convert-scf-to-cf,"
      "convert-vector-to-llvm{enable-x86vector enable-amx},"
      // Buffers come from the runtime's allocator (see CodeEmitter), which reuses freed blocks.
      "convert-math-to-llvm, finalize-memref-to-llvm{use-generic-functions},"
      // f32 -> bf16 rounding left (all of it without AVX512-BF16; else scalars and odd
      // vectors) becomes integer ops: without AVX512-BF16, LLVM would call
      // __truncsfbf2, which libgcc before GCC 13 lacks (layers would not load). The few
      // conversions per output element cost nothing next to the FMAs that produced them.
      "arith-expand{include-bf16=true}, convert-arith-to-llvm,"
      "convert-cf-to-llvm, convert-func-to-llvm, convert-index-to-llvm, convert-ub-to-llvm,"
      "reconcile-unrealized-casts, mhac-bf16-as-i16, canonicalize",
      setup);
}

} // namespace mhac
