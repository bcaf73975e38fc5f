//===- ConvertElements.h - a tensor converted element by element -*- C++ -*-===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_COMPILER_CONVERSION_UTILS_CONVERTELEMENTS_H
#define MHAC_COMPILER_CONVERSION_UTILS_CONVERTELEMENTS_H

#include "mlir/IR/Builders.h"

namespace mhac {

/// `value` (a ranked tensor) converted element-wise to `element` by `convert`, into a new
/// tensor: a linalg.generic of one input (the bf16 widenings and roundings of bf16 layers).
mlir::Value convertElements(
    mlir::OpBuilder &b, mlir::Location loc, mlir::Value value, mlir::Type element,
    llvm::function_ref<mlir::Value(mlir::OpBuilder &, mlir::Location, mlir::Value)> convert);

/// The same, into `destination` (a tensor of `value`'s shape, of the converted elements).
mlir::Value convertElementsInto(
    mlir::OpBuilder &b, mlir::Location loc, mlir::Value value, mlir::Value destination,
    llvm::function_ref<mlir::Value(mlir::OpBuilder &, mlir::Location, mlir::Value)> convert);

} // namespace mhac

#endif // MHAC_COMPILER_CONVERSION_UTILS_CONVERTELEMENTS_H
