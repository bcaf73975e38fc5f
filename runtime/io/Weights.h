//===- Weights.h - a layer's projection weights by name --------*- C++ -*-===//
//
// Part of mhac. docs/running.md names a layer's weights `q_proj.weight`, `q_proj.bias`, ...,
// `o_proj.bias`, or, for self-attention whose projections are all [D, D], PyTorch's
// `nn.MultiheadAttention` names `in_proj_weight` [3D, D], `in_proj_bias` [3D], `out_proj.weight`
// and `out_proj.bias`; decoder layers add `q_norm.weight`, `k_norm.weight` and `sinks`, and
// Hugging Face's Phi (`dense` for o_proj) and Phi-3 (`qkv_proj`, q, k and v stacked by rows)
// names are taken too. Resolution checks the tensors against the shapes the compiled layer
// expects, so that a missing, misnamed, extra or misshaped tensor is an error naming it.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_RUNTIME_IO_WEIGHTS_H
#define MHAC_RUNTIME_IO_WEIGHTS_H

#include "runtime/io/Safetensors.h"
#include "runtime/io/Tensor.h"

#include <optional>
#include <string>
#include <string_view>

namespace mhac::io {

/// The shape of one linear map y = x·Wᵀ + b: W is [outFeatures, inFeatures], b is [outFeatures].
struct ProjectionShape {
  int64_t outFeatures = 0;
  int64_t inFeatures = 0;
};

/// What a compiled layer expects (docs/language.md): Wq [H·Dh, D], Wk and Wv [Hkv·Dh, kv_dim],
/// Wo [D, H·Dh].
struct WeightExpectation {
  ProjectionShape q, k, v, o;
  /// Whether the layer has biases (`bias = true`); without, bias tensors are errors.
  bool hasBias = true;
  /// Decoder layers: head_dim when the layer has qk_norm (q_norm.weight and k_norm.weight
  /// [head_dim]), else 0; heads when it has sinks (sinks [heads]), else 0.
  int64_t normWidth = 0;
  int64_t sinks = 0;
};

/// One projection's tensors, always F32 (BF16 weights widened exactly, so that rounding them
/// back to bf16 gives the file's bits).
struct Projection {
  HostTensor weight;
  std::optional<HostTensor> bias; ///< present exactly when the layer has biases
};

struct LayerWeights {
  Projection q, k, v, o;
  /// q_norm.weight, k_norm.weight and sinks, where the layer has them.
  std::optional<HostTensor> qNorm, kNorm, sinks;
  /// True when the file used PyTorch's in_proj/out_proj names.
  bool fromPyTorchNames = false;
};

/// Picks and checks the weights of a layer from `tensors`, read from the file `fileName` (used in
/// messages). Every tensor must be used: unknown names are errors, with a "did you mean" hint
/// when a name is a near miss (`q_proj.weigth`) or carries a prefix (`attn.q_proj.weight`).
/// Two exceptions for Hugging Face checkpoints: `rotary_emb.inv_freq`, a buffer some of them
/// store, is no weight and is skipped (the layer computes its frequencies from its rope keys);
/// and where some projections have biases and others none (Qwen2's o_proj), the missing ones
/// are zeros.
Expected<LayerWeights> resolveWeights(const TensorMap &tensors, const WeightExpectation &expected,
                                      std::string_view fileName);

/// Reads the `.safetensors` file at `path` and resolves its weights.
/// The tensors of `tensors` whose names start with `prefix`, with the prefix removed: one layer
/// of a checkpoint (`model.layers.0.self_attn.` in Hugging Face's names). Fails, listing a few
/// names the file has, when no tensor has the prefix.
Expected<TensorMap> selectPrefix(const TensorMap &tensors, std::string_view prefix,
                                 std::string_view fileName);

/// Reads the weights of a layer from the .safetensors file `path`, from the tensors under
/// `prefix` (empty: all of them).
Expected<LayerWeights> loadWeightsFile(const std::string &path, const WeightExpectation &expected,
                                       std::string_view prefix = "");

} // namespace mhac::io

#endif // MHAC_RUNTIME_IO_WEIGHTS_H
