//===- CpuPipeline.h - from the mha dialect to the LLVM dialect -*- C++ -*-===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_COMPILER_PIPELINE_CPUPIPELINE_H
#define MHAC_COMPILER_PIPELINE_CPUPIPELINE_H

#include "compiler/schedules/Schedule.h"
#include "compiler/target/CpuTarget.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <functional>
#include <map>
#include <string>

namespace mlir {
class DialectRegistry;
class PassManager;
} // namespace mlir

namespace mhac {

/// Registers every dialect and interface the CPU pipeline creates or needs, so that a context
/// built with `registry` never loads anything mid-pass.
void registerCpuPipelineDialects(mlir::DialectRegistry &registry);

/// The schedule of each layer of a module, by layer name. A layer function @NAME and its
/// preparation function @mhac_prepare_NAME are lowered with NAME's schedule.
using LayerSchedules = std::map<std::string, Schedule>;

/// Sets up each pass manager of the pipeline before it runs. mhac's driver applies MLIR's
/// debugging options with it (IR printing, statistics, timing); empty runs the passes as built.
using PassManagerSetup = std::function<mlir::LogicalResult(mlir::PassManager &)>;

/// mha -> linalg on tensors (projections) and blocked loops (attention), for `target`.
mlir::LogicalResult lowerMhaToLinalg(mlir::ModuleOp module, const LayerSchedules &schedules,
                                     const CpuTarget &target, const PassManagerSetup &setup = {});

/// The first step of lowerLinalgToLLVMDialect: the schedules' tiling scripts (tiles, fusion and
/// vectorization on tensors), on their own for mhac-opt's tests of the schedule.
mlir::LogicalResult applyTilingSchedules(mlir::ModuleOp module, const LayerSchedules &schedules);

/// linalg -> LLVM dialect: applies the schedules' transform scripts, bufferizes (layer
/// functions then write their result into a last memref argument), lowers vectors and loops,
/// and converts everything to the LLVM dialect. Expects the output of `lowerMhaToLinalg`.
mlir::LogicalResult lowerLinalgToLLVMDialect(mlir::ModuleOp module, const LayerSchedules &schedules,
                                             const CpuTarget &target,
                                             const PassManagerSetup &setup = {});

} // namespace mhac

#endif // MHAC_COMPILER_PIPELINE_CPUPIPELINE_H
