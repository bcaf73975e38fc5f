//===- Rope.h - rotary position embeddings, as Hugging Face computes them -*- C++ -*-===//
//
// Part of mhac. The parameters of a layer's rotary embedding and the frequencies they give,
// written from Hugging Face transformers' `modeling_rope_utils` (the default, `linear`,
// `llama3` and `yarn` rope types) and evaluated in float64. Plain data and one function, shared
// by the front end (the parameters are the language's rope keys), the compiler (which builds
// its tables from the frequencies) and the float64 reference; the test suite checks both against
// an implementation of its own (tests/lit/Inputs/decoder_reference.py).
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_RUNTIME_REFERENCE_ROPE_H
#define MHAC_RUNTIME_REFERENCE_ROPE_H

#include <cstdint>
#include <vector>

namespace mhac::reference {

/// Which features of a head a rotary embedding pairs: d with d + dim/2 (Hugging Face's
/// rotate_half, GPT-NeoX) or 2i with 2i + 1 (GPT-J, Meta's Llama, GGUF checkpoints).
enum class RopeKind { None, Half, Interleaved };
/// How the frequencies are rescaled for long contexts (Hugging Face's `rope_type`).
enum class RopeScaling { None, Linear, Llama3, Yarn };

/// The rotary embedding of a layer: the language's rope keys, resolved. Parameters a scaling
/// does not use are 0.
struct RopeParameters {
  RopeKind kind = RopeKind::None;
  double base = 10000;       ///< rope_base: theta
  int64_t dim = 0;           ///< rope_dim: rotated features per head (even)
  RopeScaling scaling = RopeScaling::None;
  double factor = 0;         ///< rope_factor (linear, llama3, yarn)
  double lowFreqFactor = 0;  ///< rope_low_freq_factor (llama3)
  double highFreqFactor = 0; ///< rope_high_freq_factor (llama3)
  int64_t originalMax = 0;   ///< rope_original_max (llama3, yarn)
  double betaFast = 0;       ///< rope_beta_fast (yarn; the language's default is 32)
  double betaSlow = 0;       ///< rope_beta_slow (yarn; default 1)
  bool truncate = true;      ///< rope_truncate (yarn): the correction range rounded outwards
  /// rope_attention_factor: what cos and sin are multiplied by; 0 = the scaling's own
  /// (yarn: 0.1 ln(factor) + 1 for a factor above 1; otherwise 1).
  double attentionFactor = 0;

  bool enabled() const { return kind != RopeKind::None; }
};

/// What the rotation of a position p uses: pair i turns by the angle p * inverse[i]
/// (i < dim / 2), and its cos and sin are multiplied by attentionFactor.
struct RopeFrequencies {
  std::vector<double> inverse;
  double attentionFactor = 1;
};

/// Hugging Face's inv_freq and attention factor for `rope`, in float64 (Hugging Face evaluates
/// inv_freq in float32; the formulas are the same).
RopeFrequencies ropeFrequencies(const RopeParameters &rope);

} // namespace mhac::reference

#endif // MHAC_RUNTIME_REFERENCE_ROPE_H
