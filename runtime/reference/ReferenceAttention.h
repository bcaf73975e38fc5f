//===- ReferenceAttention.h - the float64 oracle of one layer ---*- C++ -*-===//
//
// Part of mhac. Computes what docs/language.md says a layer computes, in float64 and in the most
// direct form, so that generated code has something trustworthy to be compared against (the
// end-to-end tests, `mha-run --check`). It takes plain data and depends on nothing in the
// compiler, so that tools and tests can link it alone.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_RUNTIME_REFERENCE_REFERENCEATTENTION_H
#define MHAC_RUNTIME_REFERENCE_REFERENCEATTENTION_H

#include "runtime/reference/Rope.h"

#include <cstddef>
#include <cstdint>

namespace mhac::reference {

/// Sizes and options of one layer; names follow the language's keys, and every size must be known
/// (no `?`). Preconditions: all sizes are positive and `heads % kvHeads == 0`.
///
/// Self-attention takes keys and values from x itself, so unless `cross` the fields `kvSeq` and
/// `kvDim` are not read: Skv is `seq` and the key/value width is `modelDim`, as Sema resolves them.
struct LayerShape {
  int64_t batch = 0;    ///< B
  int64_t seq = 0;      ///< S, query length
  int64_t kvSeq = 0;    ///< Skv, key/value length (cross only)
  int64_t modelDim = 0; ///< D, width of x and of the output
  int64_t kvDim = 0;    ///< width of `memory` (cross only)
  int64_t heads = 0;    ///< H
  int64_t kvHeads = 0;  ///< Hkv, divides H
  int64_t headDim = 0;  ///< Dh, independent of D
  bool cross = false;   ///< keys and values are computed from `memory` instead of x
  bool causal = false;  ///< mask key j for query i when j > i + (Skv - S)
  bool bias = true;     ///< the four projections have biases
  /// Multiplier of the scores. No default is applied here: the language's `1/sqrt(head_dim)` is the
  /// caller's to pass, so that a layer with an explicit `scale` is checked as written.
  double scale = 1.0;

  // Decoder layers (docs/language.md, "Decoder keys"); zero or false: the key is absent.
  RopeParameters rope;   ///< rotary embedding of q and k
  int64_t kvCache = 0;   ///< N: the caches' positions; then kvSeq is not read
  int64_t window = 0;    ///< a query at position p sees keys j > p - window
  double softcap = 0;    ///< scores s become softcap * tanh(s / softcap)
  bool qkNorm = false;   ///< q and k heads RMS-normalized (with qNorm, kNorm and qkNormEps)
  double qkNormEps = 1e-6;
  bool sinks = false;    ///< a logit per query head joins each softmax denominator
};

/// Pointers to row-major float32 tensors with the shapes of the definition:
/// x [B, S, D], memory [B, Skv, kv_dim], wq [H*Dh, D], wk and wv [Hkv*Dh, kv_dim],
/// wo [D, H*Dh], bq [H*Dh], bk and bv [Hkv*Dh], bo [D], kvLens [B].
///
/// `memory` is ignored (x is used) unless `cross`; the biases are ignored unless `bias`, and may
/// then be null; `kvLens` may be null, which means the layer has no `kv_lens`. Decoder layers:
/// qNorm and kNorm [Dh] (with qkNorm), sinks [H] (with sinks), and with a cache kCache and vCache
/// [B, N, Hkv, Dh] (their rows below cacheLen[b] are row b's past keys and values, already
/// normalized and rotated) and cacheLen [B].
struct LayerTensors {
  const float *x = nullptr;
  const float *memory = nullptr;
  const float *wq = nullptr;
  const float *bq = nullptr;
  const float *wk = nullptr;
  const float *bk = nullptr;
  const float *wv = nullptr;
  const float *bv = nullptr;
  const float *wo = nullptr;
  const float *bo = nullptr;
  const int32_t *kvLens = nullptr;
  const float *qNorm = nullptr;
  const float *kNorm = nullptr;
  const float *sinks = nullptr;
  const float *kCache = nullptr;
  const float *vCache = nullptr;
  const int32_t *cacheLen = nullptr;
};

/// What a call of a layer with a cache writes there: the new tokens' keys (normalized and
/// rotated) and values, [B, S, Hkv * Dh] each; row (b, i) belongs at cache position
/// cacheLen[b] + i.
struct CacheRows {
  double *keys = nullptr;
  double *values = nullptr;
};

/// Computes out [B, S, D] of the definition in float64 (inputs and weights are widened exactly
/// from float32). `kv_lens` entries are clamped to [0, Skv]. A query row whose keys are all masked
/// (by `kv_lens`, or by `causal` when S > Skv) has a = 0, so its output row is exactly bo (or 0
/// without bias). The softmax subtracts the row maximum, so scores of any magnitude that float64
/// holds (the definition promises |s| up to 1e4) neither overflow nor underflow to 0/0.
///
/// With a cache, the new tokens of row b have positions cacheLen[b] + i and attend over cache
/// positions 0 .. cacheLen[b] + S - 1 (the past ones from kCache and vCache, the new ones as
/// computed); `cacheRows`, when given, receives the rows the call writes into the caches.
/// Preconditions: 0 <= cacheLen[b] and cacheLen[b] + S <= N.
void computeLayer(const LayerShape &shape, const LayerTensors &tensors, double *out,
                  const CacheRows &cacheRows = {});

/// The error measure of the definition: max |got - ref| / max |ref|, with a denominator of 1 when
/// every |ref| is 0 (the error is then absolute). Returns +inf if any entry of `got` (or of `ref`)
/// is NaN or infinite, so that NaN never passes a `<=` tolerance check; returns 0 when `count`
/// is 0.
double relativeError(const float *got, const double *ref, size_t count);

} // namespace mhac::reference

#endif // MHAC_RUNTIME_REFERENCE_REFERENCEATTENTION_H
