//===- ReferenceAttention.cpp - the float64 oracle of one layer -----------===//
//
// Part of mhac. Written to be read against docs/language.md's definition line by line; speed matters only so far
// as the end-to-end tests run it on real sizes (B=2, S=197, D=768), hence the projections computed
// once into float64 buffers with a vectorizable inner loop.
//
//===----------------------------------------------------------------------===//

#include "runtime/reference/ReferenceAttention.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace mhac::reference {
namespace {

/// The sizes a layer computes with, self-attention's defaults applied.
struct Sizes {
  int64_t B, S, Skv, D, kvDim, H, Hkv, Dh;
};

Sizes resolveSizes(const LayerShape &shape) {
  Sizes sizes;
  sizes.B = shape.batch;
  sizes.S = shape.seq;
  sizes.Skv = shape.cross ? shape.kvSeq : shape.seq;
  if (shape.kvCache)
    sizes.Skv = shape.kvCache;
  sizes.D = shape.modelDim;
  sizes.kvDim = shape.cross ? shape.kvDim : shape.modelDim;
  sizes.H = shape.heads;
  sizes.Hkv = shape.kvHeads;
  sizes.Dh = shape.headDim;
  assert(sizes.B > 0 && sizes.S > 0 && sizes.Skv > 0 && sizes.D > 0 && sizes.kvDim > 0 &&
         sizes.H > 0 && sizes.Hkv > 0 && sizes.Dh > 0 && "layer sizes must be positive");
  assert(sizes.H % sizes.Hkv == 0 && "heads must be a multiple of kv_heads");
  return sizes;
}

/// y [rows, out] = x [rows, in] · Wᵀ + b for W [out, in] (PyTorch's linear); b may be null.
///
/// W is widened and transposed once so that the inner loop runs over contiguous outputs and
/// vectorizes without reassociating any sum: each y[r, o] is still accumulated in the order
/// c = 0, 1, ..., in - 1, exactly as the formula reads.
template <typename T>
std::vector<double> linear(const T *x, int64_t rows, int64_t in, const float *w, const float *b,
                           int64_t out) {
  std::vector<double> wt(static_cast<size_t>(in * out));
  for (int64_t o = 0; o < out; ++o)
    for (int64_t c = 0; c < in; ++c)
      wt[c * out + o] = w[o * in + c];

  std::vector<double> y(static_cast<size_t>(rows * out));
  for (int64_t r = 0; r < rows; ++r) {
    double *yRow = &y[r * out];
    for (int64_t o = 0; o < out; ++o)
      yRow[o] = b ? static_cast<double>(b[o]) : 0.0;
    for (int64_t c = 0; c < in; ++c) {
      const double xc = static_cast<double>(x[r * in + c]);
      const double *wRow = &wt[c * out];
      for (int64_t o = 0; o < out; ++o)
        yRow[o] += xc * wRow[o];
    }
  }
  return y;
}

/// RMS-normalizes each of the `heads` heads of every row of t [rows, heads * Dh] over its Dh
/// features, then multiplies by `weight` [Dh].
void normalizeHeads(std::vector<double> &t, int64_t heads, int64_t headDim, const float *weight,
                    double eps) {
  for (size_t at = 0; at < t.size(); at += static_cast<size_t>(headDim)) {
    double squares = 0.0;
    for (int64_t d = 0; d < headDim; ++d)
      squares += t[at + d] * t[at + d];
    double inverse = 1.0 / std::sqrt(squares / static_cast<double>(headDim) + eps);
    for (int64_t d = 0; d < headDim; ++d)
      t[at + d] = t[at + d] * inverse * weight[d];
  }
}

/// Rotates the first rope.dim features of one head (`head`, Dh values) to `position`.
void rotateHead(const RopeParameters &rope, const RopeFrequencies &frequencies, double position,
                double *head) {
  int64_t half = rope.dim / 2;
  for (int64_t i = 0; i < half; ++i) {
    double angle = position * frequencies.inverse[i];
    double c = std::cos(angle) * frequencies.attentionFactor;
    double s = std::sin(angle) * frequencies.attentionFactor;
    // The pair: features i and i + dim/2 (half), or 2i and 2i + 1 (interleaved).
    int64_t first = rope.kind == RopeKind::Half ? i : 2 * i;
    int64_t second = rope.kind == RopeKind::Half ? i + half : 2 * i + 1;
    double x = head[first], y = head[second];
    head[first] = x * c - y * s;
    head[second] = y * c + x * s;
  }
}

/// Which keys query row i of batch b sees: the positions j in [first, end).
struct KeyRange {
  int64_t first, end;
};

/// The keys of the definition: kv_lens (j < kv_lens[b]) and causal (j <= the query's
/// position) keep a prefix, the window (j > position - W) a suffix of it. Without a cache a
/// query at row i has position i, and causal aligns it to the bottom right (i + Skv - S); with a
/// cache its position is cache_len[b] + i and the keys are the cache's first cache_len[b] + S.
KeyRange visibleKeys(const Sizes &sizes, const LayerShape &shape, const LayerTensors &tensors,
                     int64_t b, int64_t i) {
  int64_t keys = sizes.Skv, position = i, causalLimit = i + (sizes.Skv - sizes.S);
  if (shape.kvCache) {
    keys = tensors.cacheLen[b] + sizes.S;
    position = causalLimit = tensors.cacheLen[b] + i;
  }
  int64_t end = keys;
  if (tensors.kvLens)
    end = std::clamp<int64_t>(tensors.kvLens[b], 0, sizes.Skv);
  if (shape.causal)
    end = std::min(end, causalLimit + 1);
  int64_t first = shape.window ? std::max<int64_t>(0, position - shape.window + 1) : 0;
  return {first, std::max(end, first)};
}

} // namespace

void computeLayer(const LayerShape &shape, const LayerTensors &tensors, double *out,
                  const CacheRows &cacheRows) {
  const Sizes z = resolveSizes(shape);
  const float *memory = shape.cross ? tensors.memory : tensors.x;
  const float *bq = shape.bias ? tensors.bq : nullptr;
  const float *bk = shape.bias ? tensors.bk : nullptr;
  const float *bv = shape.bias ? tensors.bv : nullptr;
  const float *bo = shape.bias ? tensors.bo : nullptr;
  const int64_t qWidth = z.H * z.Dh;
  const int64_t kvWidth = z.Hkv * z.Dh;

  // q [B*S, H*Dh], k and v [B*Skv, Hkv*Dh] (with a cache: the new tokens', [B*S, Hkv*Dh]).
  const int64_t newKeys = shape.kvCache ? z.S : z.Skv;
  std::vector<double> q = linear(tensors.x, z.B * z.S, z.D, tensors.wq, bq, qWidth);
  std::vector<double> k = linear(memory, z.B * newKeys, z.kvDim, tensors.wk, bk, kvWidth);
  const std::vector<double> v = linear(memory, z.B * newKeys, z.kvDim, tensors.wv, bv, kvWidth);

  // q/k norm, then the rotary embedding, at each row's position.
  if (shape.qkNorm) {
    normalizeHeads(q, z.H, z.Dh, tensors.qNorm, shape.qkNormEps);
    normalizeHeads(k, z.Hkv, z.Dh, tensors.kNorm, shape.qkNormEps);
  }
  if (shape.rope.enabled()) {
    const RopeFrequencies frequencies = ropeFrequencies(shape.rope);
    auto rotateRows = [&](std::vector<double> &t, int64_t rows, int64_t heads) {
      for (int64_t b = 0; b < z.B; ++b)
        for (int64_t i = 0; i < rows; ++i) {
          double position = static_cast<double>(i + (shape.kvCache ? tensors.cacheLen[b] : 0));
          for (int64_t h = 0; h < heads; ++h)
            rotateHead(shape.rope, frequencies, position, &t[((b * rows + i) * heads + h) * z.Dh]);
        }
    };
    rotateRows(q, z.S, z.H);
    rotateRows(k, newKeys, z.Hkv);
  }
  if (cacheRows.keys)
    std::copy(k.begin(), k.end(), cacheRows.keys);
  if (cacheRows.values)
    std::copy(v.begin(), v.end(), cacheRows.values);

  // Key j of batch b: a new one (computed above) or, with a cache, a past one read from it.
  auto keyRow = [&](const std::vector<double> &fresh, const float *cache, int64_t b, int64_t j,
                    int64_t g, std::vector<double> &row) -> const double * {
    if (!shape.kvCache)
      return &fresh[(b * z.Skv + j) * kvWidth + g * z.Dh];
    int64_t past = tensors.cacheLen[b];
    if (j >= past)
      return &fresh[(b * z.S + (j - past)) * kvWidth + g * z.Dh];
    const float *stored = &cache[((b * shape.kvCache + j) * z.Hkv + g) * z.Dh];
    row.assign(stored, stored + z.Dh);
    return row.data();
  };

  // a [B*S, H*Dh]; rows with every key masked keep their zeros.
  std::vector<double> a(static_cast<size_t>(z.B * z.S * qWidth), 0.0);
  std::vector<double> p, keyScratch, valueScratch;
  const int64_t groupSize = z.H / z.Hkv;
  for (int64_t b = 0; b < z.B; ++b) {
    for (int64_t i = 0; i < z.S; ++i) {
      const KeyRange keys = visibleKeys(z, shape, tensors, b, i);
      if (keys.end == keys.first)
        continue;
      p.assign(static_cast<size_t>(keys.end - keys.first), 0.0);
      for (int64_t h = 0; h < z.H; ++h) {
        const int64_t g = h / groupSize;
        const double *qRow = &q[(b * z.S + i) * qWidth + h * z.Dh];

        // s[j] = scale * q·k (softcap * tanh(s / softcap) with a softcap), then p = softmax(s)
        // with the maximum subtracted first; a sink joins the denominator as exp(sink).
        double maxScore = -std::numeric_limits<double>::infinity();
        if (shape.sinks)
          maxScore = tensors.sinks[h];
        for (int64_t j = keys.first; j < keys.end; ++j) {
          const double *kRow = keyRow(k, tensors.kCache, b, j, g, keyScratch);
          double dot = 0.0;
          for (int64_t d = 0; d < z.Dh; ++d)
            dot += qRow[d] * kRow[d];
          double score = shape.scale * dot;
          if (shape.softcap > 0)
            score = shape.softcap * std::tanh(score / shape.softcap);
          p[j - keys.first] = score;
          maxScore = std::max(maxScore, score);
        }
        double sum = shape.sinks ? std::exp(tensors.sinks[h] - maxScore) : 0.0;
        for (double &score : p) {
          score = std::exp(score - maxScore);
          sum += score;
        }

        double *aRow = &a[(b * z.S + i) * qWidth + h * z.Dh];
        for (int64_t j = keys.first; j < keys.end; ++j) {
          const double weight = p[j - keys.first] / sum;
          const double *vRow = keyRow(v, tensors.vCache, b, j, g, valueScratch);
          for (int64_t d = 0; d < z.Dh; ++d)
            aRow[d] += weight * vRow[d];
        }
      }
    }
  }

  const std::vector<double> o = linear(a.data(), z.B * z.S, qWidth, tensors.wo, bo, z.D);
  std::memcpy(out, o.data(), o.size() * sizeof(double));
}

double relativeError(const float *got, const double *ref, size_t count) {
  double maxError = 0.0;
  double maxRef = 0.0;
  for (size_t n = 0; n < count; ++n) {
    if (!std::isfinite(got[n]) || !std::isfinite(ref[n]))
      return std::numeric_limits<double>::infinity();
    maxError = std::max(maxError, std::abs(static_cast<double>(got[n]) - ref[n]));
    maxRef = std::max(maxRef, std::abs(ref[n]));
  }
  return maxError / (maxRef == 0.0 ? 1.0 : maxRef);
}

} // namespace mhac::reference
