//===- LayerABI.h - the C interface of a compiled layer ---------*- C++ -*-===//
//
// Part of mhac. Derived from the checked layer (LayerSpec) alone: MLIRGen builds the layer
// function's arguments from it, and after lowering it drives the C entry points, the metadata
// and the header. The one description of the ABI that all of them share; plain data, no MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_COMPILER_TARGET_LAYERABI_H
#define MHAC_COMPILER_TARGET_LAYERABI_H

#include "compiler/frontend/LayerSpec.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mhac {

/// Which run-time size a dimension takes when it is dynamic.
enum class RuntimeSize { None, Batch, Seq, KvSeq };

/// One tensor argument of a layer's run function, in ABI order.
struct TensorABI {
  std::string name;                   ///< x, memory, wq, bq, ..., kv_lens, out
  std::vector<int64_t> shape;         ///< kDynamicSize for run-time sizes
  std::vector<RuntimeSize> dynamicAs; ///< for each dimension, the size it takes at run time
  bool isInt32 = false;               ///< kv_lens, cache_len; every other tensor has the layer's dtype
  bool isOutput = false;
  /// k_cache or v_cache: caller-owned memory the call reads and writes in place (the new
  /// tokens' rows), a memref argument of the layer function.
  bool isCache = false;
  /// A weight or a bias: part of the prepared parameters (see NAME_prepare).
  bool isParameter = false;
  /// For a parameter: its shape in the prepared block (static), and its byte offset there.
  std::vector<int64_t> preparedShape;
  int64_t preparedOffset = 0;
};

struct LayerABI {
  std::string name;
  /// Prepended to the C names of the layer's entry points, metadata getter and header macros
  /// (`mhac compile --prefix`), so that variants of a layer compiled separately (for AVX2 and
  /// AVX-512, say) link into one program. The layer's own name (in its metadata, for
  /// `mha-run --layer`) does not change.
  std::string symbolPrefix;

  /// The C name the layer's symbols start with: symbolPrefix + name.
  std::string cName() const { return symbolPrefix + name; }
  bool bf16 = false;
  int64_t modelDim = 0, heads = 0, headDim = 0, kvHeads = 0, kvDim = 0;
  int64_t batch = 0, seq = 0, kvSeq = 0; ///< kDynamicSize when given at run time
  bool cross = false, causal = false, kvLens = false, bias = false;
  float scale = 0;
  // Decoder layers, as LayerSpec has them.
  RopeSpec rope;
  int64_t kvCache = 0, window = 0;
  double softcap = 0;
  bool qkNorm = false;
  double qkNormEps = 0;
  bool sinks = false;
  std::vector<TensorABI> tensors; ///< inputs and weights in argument order, then `out`
  /// Bytes of the block NAME_prepare fills: every parameter in its kernel's layout.
  int64_t preparedBytes = 0;
  /// The schedule the layer is compiled with, as its block of a schedule file.
  std::string schedule;
  /// Empty for a CPU layer; for a CUDA layer its target ("cuda:sm_80"): its tensors are then
  /// device memory, and its entry points take a stream.
  std::string device;

  /// Whether the run functions take run-time sizes (batch, seq, a cross layer's kv_seq).
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

/// The ABI of `spec`: its tensors in argument order (x, memory for cross-attention, then each
/// projection's weight and bias for q, k, v and the output, q_norm and k_norm, sinks, kv_lens,
/// k_cache, v_cache and cache_len, and `out`). The prepared
/// block's layout is left empty: it depends on the schedule (see LoweredLayer.h).
LayerABI describeLayer(const LayerSpec &spec);

/// Places parameter `tensor` of `layer` at the end of its prepared block, on a cache line, with
/// `shape` (row-major, `elementBytes` each); grows `layer.preparedBytes`. Both backends lay their
/// prepared blocks out with it, starting from preparedBytes = 0.
void appendPrepared(LayerABI &layer, TensorABI &tensor, std::vector<int64_t> shape,
                    int64_t elementBytes);

/// The first tensor of `layer` named `name`, or null.
const TensorABI *findTensor(const LayerABI &layer, std::string_view name);

} // namespace mhac

#endif // MHAC_COMPILER_TARGET_LAYERABI_H
