//===- LayerABI.h - the C interface of a compiled layer ---------*- C++ -*-===//
//
// Part of mhac. Read from a layer function in the mha dialect before it is lowered, and used
// after lowering to emit the C entry points, the metadata and the header: the one description
// of the ABI that all three share.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_COMPILER_TARGET_LAYERABI_H
#define MHAC_COMPILER_TARGET_LAYERABI_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mhac {

/// Which run-time size a dimension takes when it is dynamic.
enum class RuntimeSize { None, Batch, Seq, KvSeq };

/// One tensor argument of a layer's run function, in ABI order.
struct TensorABI {
  std::string name;                   ///< x, memory, wq, bq, ..., kv_lens, out
  std::vector<int64_t> shape;         ///< mlir::ShapedType::kDynamic for run-time sizes
  std::vector<RuntimeSize> dynamicAs; ///< for each dimension, the size it takes at run time
  bool isInt32 = false;               ///< kv_lens; every other tensor has the layer's dtype
  bool isOutput = false;
  /// A weight or a bias: part of the prepared parameters (see NAME_prepare).
  bool isParameter = false;
  /// For a parameter: its shape in the prepared block (static), and its byte offset there.
  std::vector<int64_t> preparedShape;
  int64_t preparedOffset = 0;
};

struct LayerABI {
  std::string name;
  bool bf16 = false;
  int64_t modelDim = 0, heads = 0, headDim = 0, kvHeads = 0, kvDim = 0;
  int64_t batch = 0, seq = 0, kvSeq = 0; ///< mlir::ShapedType::kDynamic when given at run time
  bool cross = false, causal = false, kvLens = false, bias = false;
  float scale = 0;
  std::vector<TensorABI> tensors; ///< inputs and weights in argument order, then `out`
  /// Bytes of the block NAME_prepare fills: every parameter in its kernel's layout.
  int64_t preparedBytes = 0;
  /// The schedule the layer is compiled with, as its block of a schedule file.
  std::string schedule;

  bool hasDynamicSizes() const;
};

/// The C entry points of a layer that take tensors by pointer.
enum class EntryKind { Run, Prepare, RunPrepared };

/// The marker for the prepared block among an entry point's pointer arguments.
constexpr int kPreparedBlock = -1;

/// The pointer arguments of an entry point, in order, as indices into `layer.tensors` or
/// kPreparedBlock: NAME_run takes every tensor; NAME_prepare the parameters, then the prepared
/// block; NAME_run_prepared the other tensors, with the prepared block where the parameters
/// would be.
std::vector<int> entryPointers(const LayerABI &layer, EntryKind kind);

/// Reads the ABI of every layer function of `module` (in the mha dialect, as MLIRGen builds
/// them). Fails with a diagnostic on a function that is not a layer.
mlir::FailureOr<std::vector<LayerABI>> readLayerABIs(mlir::ModuleOp module);

/// Reads where each parameter lies in the prepared block, from the preparation functions that
/// mhac-split-weight-preparation made (after lowering to linalg).
mlir::LogicalResult readPreparedLayout(mlir::ModuleOp module, std::vector<LayerABI> &layers);

/// The name the lowered layer function gets: internal, so only the entry points are exported.
std::string kernelSymbol(const LayerABI &layer);

/// The name of the lowered preparation function of `layer` (internal too).
std::string preparationSymbol(const LayerABI &layer);

} // namespace mhac

#endif // MHAC_COMPILER_TARGET_LAYERABI_H
