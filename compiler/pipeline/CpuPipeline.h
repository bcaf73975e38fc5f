//===- CpuPipeline.h - from the mha dialect to the LLVM dialect -*- C++ -*-===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_COMPILER_PIPELINE_CPUPIPELINE_H
#define MHAC_COMPILER_PIPELINE_CPUPIPELINE_H

#include "compiler/schedules/Schedule.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace mhac {

/// Registers every dialect and interface the CPU pipeline creates or needs, so that a context
/// built with `registry` never loads anything mid-pass.
void registerCpuPipelineDialects(mlir::DialectRegistry &registry);

/// mha -> linalg on tensors (projections) and blocked loops (attention).
mlir::LogicalResult lowerMhaToLinalg(mlir::ModuleOp module, const Schedule &schedule);

/// The first step of lowerLinalgToLLVMDialect: the schedule's tiling script (tiles, fusion and
/// vectorization on tensors), on its own for mhac-opt's tests of the schedule.
mlir::LogicalResult applyTilingSchedule(mlir::ModuleOp module, const Schedule &schedule);

/// linalg -> LLVM dialect: applies the schedule's transform script, bufferizes (layer functions
/// then write their result into a last memref argument), lowers vectors and loops, and converts
/// everything to the LLVM dialect. Expects the output of `lowerMhaToLinalg`.
mlir::LogicalResult lowerLinalgToLLVMDialect(mlir::ModuleOp module, const Schedule &schedule);

} // namespace mhac

#endif // MHAC_COMPILER_PIPELINE_CPUPIPELINE_H
