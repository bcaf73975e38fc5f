//===- LoweredLayer.h - what the pipeline leaves of a layer -----*- C++ -*-===//
//
// Part of mhac. After lowering, a layer is two internal functions: its kernel, and the
// preparation function that fills the prepared block, whose layout the schedule decided.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_COMPILER_TARGET_LOWEREDLAYER_H
#define MHAC_COMPILER_TARGET_LOWEREDLAYER_H

#include "compiler/target/LayerABI.h"

#include "mlir/IR/BuiltinOps.h"

namespace mhac {

/// The name the lowered layer function gets: internal, so only the entry points are exported.
std::string kernelSymbol(const LayerABI &layer);

/// The name of the lowered preparation function of `layer` (internal too).
std::string preparationSymbol(const LayerABI &layer);

/// Reads where each parameter lies in the prepared block, from the preparation functions that
/// mhac-split-weight-preparation made (after lowering to linalg).
mlir::LogicalResult readPreparedLayout(mlir::ModuleOp module, std::vector<LayerABI> &layers);

} // namespace mhac

#endif // MHAC_COMPILER_TARGET_LOWEREDLAYER_H
