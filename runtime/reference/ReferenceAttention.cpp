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

/// Number of keys that query row `i` of batch `b` may attend to. Both masks of the definition
/// keep a prefix of the keys (causal: j <= i + (Skv - S); kv_lens: j < kv_lens[b]), so the
/// unmasked keys are exactly j in [0, end).
int64_t unmaskedKeys(const Sizes &sizes, bool causal, const int32_t *kvLens, int64_t b, int64_t i) {
  int64_t end = sizes.Skv;
  if (kvLens)
    end = std::clamp<int64_t>(kvLens[b], 0, sizes.Skv);
  if (causal)
    end = std::min(end, i + (sizes.Skv - sizes.S) + 1);
  return std::max<int64_t>(end, 0);
}

} // namespace

void computeLayer(const LayerShape &shape, const LayerTensors &tensors, double *out) {
  const Sizes z = resolveSizes(shape);
  const float *memory = shape.cross ? tensors.memory : tensors.x;
  const float *bq = shape.bias ? tensors.bq : nullptr;
  const float *bk = shape.bias ? tensors.bk : nullptr;
  const float *bv = shape.bias ? tensors.bv : nullptr;
  const float *bo = shape.bias ? tensors.bo : nullptr;
  const int64_t qWidth = z.H * z.Dh;
  const int64_t kvWidth = z.Hkv * z.Dh;

  // q [B*S, H*Dh], k and v [B*Skv, Hkv*Dh].
  const std::vector<double> q = linear(tensors.x, z.B * z.S, z.D, tensors.wq, bq, qWidth);
  const std::vector<double> k = linear(memory, z.B * z.Skv, z.kvDim, tensors.wk, bk, kvWidth);
  const std::vector<double> v = linear(memory, z.B * z.Skv, z.kvDim, tensors.wv, bv, kvWidth);

  // a [B*S, H*Dh]; rows with every key masked keep their zeros.
  std::vector<double> a(static_cast<size_t>(z.B * z.S * qWidth), 0.0);
  std::vector<double> p(static_cast<size_t>(z.Skv));
  const int64_t groupSize = z.H / z.Hkv;
  for (int64_t b = 0; b < z.B; ++b) {
    for (int64_t i = 0; i < z.S; ++i) {
      const int64_t keys = unmaskedKeys(z, shape.causal, tensors.kvLens, b, i);
      if (keys == 0)
        continue;
      for (int64_t h = 0; h < z.H; ++h) {
        const int64_t g = h / groupSize;
        const double *qRow = &q[(b * z.S + i) * qWidth + h * z.Dh];

        // s[j] = scale * q·k, then p = softmax(s) with the maximum subtracted first.
        double maxScore = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < keys; ++j) {
          const double *kRow = &k[(b * z.Skv + j) * kvWidth + g * z.Dh];
          double dot = 0.0;
          for (int64_t d = 0; d < z.Dh; ++d)
            dot += qRow[d] * kRow[d];
          p[j] = shape.scale * dot;
          maxScore = std::max(maxScore, p[j]);
        }
        double sum = 0.0;
        for (int64_t j = 0; j < keys; ++j) {
          p[j] = std::exp(p[j] - maxScore);
          sum += p[j];
        }

        double *aRow = &a[(b * z.S + i) * qWidth + h * z.Dh];
        for (int64_t j = 0; j < keys; ++j) {
          const double weight = p[j] / sum;
          const double *vRow = &v[(b * z.Skv + j) * kvWidth + g * z.Dh];
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
