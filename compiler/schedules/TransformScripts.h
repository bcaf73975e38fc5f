//===- TransformScripts.h - a schedule's transform-dialect scripts -*- C++ -*-===//
//
// Part of mhac. The projections' tiles, fusion and vectorization, and the lowering of the
// vector code, are transform-dialect libraries in compiler/schedules/transforms, compiled in;
// a schedule's knobs reach them as !transform.param values and as the choice of entry point,
// never as text spliced into a script.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_COMPILER_SCHEDULES_TRANSFORMSCRIPTS_H
#define MHAC_COMPILER_SCHEDULES_TRANSFORMSCRIPTS_H

#include "compiler/schedules/Schedule.h"

#include "mlir/IR/Operation.h"
#include "mlir/Support/LLVM.h"

namespace mhac {

/// On the reduction loop of each full panel register tile (transforms/tiling.mlir writes it):
/// the loops unrolled by projection_reduction_unroll, and where mhac-prefetch-weight-panels
/// adds its prefetches.
constexpr llvm::StringLiteral kPanelReductionAttr = "mhac.panel_reduction";

/// Tiles and vectorizes the linalg form of a function (a layer or its preparation function),
/// on tensors before bufferization: transforms/tiling.mlir with the schedule's tiles.
mlir::LogicalResult applyTilingScript(mlir::Operation *function, const Schedule &schedule);

/// Finishes a function's vector code after bufferization: keeps the register tiles'
/// accumulators in registers across the reduction loop, lowers the vector ops to the forms
/// LLVM handles best (transforms/vector_lowering.mlir, the entry of the schedule's transpose
/// lowering) and unrolls the panel register tiles' reductions.
mlir::LogicalResult applyVectorLoweringScript(mlir::Operation *function, const Schedule &schedule);

} // namespace mhac

#endif // MHAC_COMPILER_SCHEDULES_TRANSFORMSCRIPTS_H
