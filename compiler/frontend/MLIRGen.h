//===- MLIRGen.h - from checked layers to the mha dialect -------*- C++ -*-===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_COMPILER_FRONTEND_MLIRGEN_H
#define MHAC_COMPILER_FRONTEND_MLIRGEN_H

#include "compiler/frontend/LayerSpec.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

namespace mlir {
class MLIRContext;
} // namespace mlir

namespace mhac {

/// Builds a module with one `func.func @NAME` per layer, in the order of the file.
///
/// A layer function takes its operands in the order of the C ABI:
///   x, [memory], wq, [bq], wk, [bk], wv, [bv], wo, [bo], [kv_lens]
/// (bracketed ones only when the layer has them) and returns `out`. Arguments and op results
/// carry their names as locations (`loc("wq")`), which the printer can use as SSA names. Loads the
/// dialects it uses into `context`.
mlir::OwningOpRef<mlir::ModuleOp>
buildModule(mlir::MLIRContext &context, llvm::ArrayRef<LayerSpec> layers, llvm::StringRef fileName);

} // namespace mhac

#endif // MHAC_COMPILER_FRONTEND_MLIRGEN_H
