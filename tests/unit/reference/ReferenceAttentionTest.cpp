//===- ReferenceAttentionTest.cpp - the oracle against the definition -----===//
//
// Part of mhac. The reference is what every generated kernel is judged by, so it is checked three
// ways: against cases small enough to compute by hand, against a second, deliberately naive
// implementation of the formulas, and against identities the definition implies (GQA is MHA with repeated
// heads, kv_lens is a shorter memory, causal is bottom-right aligned).
//
//===----------------------------------------------------------------------===//

#include "runtime/reference/ReferenceAttention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <ostream>
#include <random>
#include <string>
#include <vector>

using namespace mhac::reference;

namespace {

/// A self-attention shape with the language's defaults: Hkv = H, scale = 1/sqrt(Dh), biases.
LayerShape selfShape(int64_t batch, int64_t seq, int64_t modelDim, int64_t heads, int64_t headDim) {
  LayerShape shape;
  shape.batch = batch;
  shape.seq = seq;
  shape.kvSeq = seq;
  shape.modelDim = modelDim;
  shape.kvDim = modelDim;
  shape.heads = heads;
  shape.kvHeads = heads;
  shape.headDim = headDim;
  shape.scale = 1.0 / std::sqrt(static_cast<double>(headDim));
  return shape;
}

/// A cross-attention shape: keys and values from a memory of `kvSeq` rows of width `kvDim`.
LayerShape crossShape(int64_t batch, int64_t seq, int64_t kvSeq, int64_t modelDim, int64_t kvDim,
                      int64_t heads, int64_t headDim) {
  LayerShape shape = selfShape(batch, seq, modelDim, heads, headDim);
  shape.cross = true;
  shape.kvSeq = kvSeq;
  shape.kvDim = kvDim;
  return shape;
}

/// A layer that owns its tensors (row-major, shapes of the definition).
struct Layer {
  LayerShape shape;
  std::vector<float> x, memory, wq, bq, wk, bk, wv, bv, wo, bo;
  std::vector<int32_t> kvLens; ///< empty: the layer has no kv_lens

  /// Allocates every tensor, filled with zeros; `memory` only for cross-attention.
  explicit Layer(const LayerShape &shape) : shape(shape) {
    const int64_t qWidth = shape.heads * shape.headDim;
    const int64_t kvWidth = shape.kvHeads * shape.headDim;
    x.assign(shape.batch * shape.seq * shape.modelDim, 0.0f);
    if (shape.cross)
      memory.assign(shape.batch * shape.kvSeq * shape.kvDim, 0.0f);
    wq.assign(qWidth * shape.modelDim, 0.0f);
    bq.assign(qWidth, 0.0f);
    wk.assign(kvWidth * kvDim(), 0.0f);
    bk.assign(kvWidth, 0.0f);
    wv.assign(kvWidth * kvDim(), 0.0f);
    bv.assign(kvWidth, 0.0f);
    wo.assign(shape.modelDim * qWidth, 0.0f);
    bo.assign(shape.modelDim, 0.0f);
  }

  /// Fills every float tensor with values uniform in [-1, 1] drawn from `seed`.
  Layer &randomize(unsigned seed) {
    std::mt19937 engine(seed);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    for (std::vector<float> *tensor : {&x, &memory, &wq, &bq, &wk, &bk, &wv, &bv, &wo, &bo})
      for (float &value : *tensor)
        value = uniform(engine);
    return *this;
  }

  int64_t kvSeq() const { return shape.cross ? shape.kvSeq : shape.seq; }
  int64_t kvDim() const { return shape.cross ? shape.kvDim : shape.modelDim; }
  size_t outSize() const { return static_cast<size_t>(shape.batch * shape.seq * shape.modelDim); }

  LayerTensors tensors() const {
    auto ptr = [](const auto &v) { return v.empty() ? nullptr : v.data(); };
    LayerTensors t;
    t.x = ptr(x);
    t.memory = ptr(memory);
    t.wq = ptr(wq);
    t.bq = ptr(bq);
    t.wk = ptr(wk);
    t.bk = ptr(bk);
    t.wv = ptr(wv);
    t.bv = ptr(bv);
    t.wo = ptr(wo);
    t.bo = ptr(bo);
    t.kvLens = ptr(kvLens);
    return t;
  }

  /// computeLayer on these tensors; the output starts as NaN so that a skipped entry shows.
  std::vector<double> run() const { return runWith(tensors()); }

  std::vector<double> runWith(const LayerTensors &t) const {
    std::vector<double> out(outSize(), std::numeric_limits<double>::quiet_NaN());
    computeLayer(shape, t, out.data());
    return out;
  }

  /// Element [b, i, n] of a [B, S, D] output.
  size_t at(int64_t b, int64_t i, int64_t n) const {
    return static_cast<size_t>((b * shape.seq + i) * shape.modelDim + n);
  }
};

/// The definition (docs/language.md) evaluated as literally as possible, in long double: every projection element is
/// recomputed where it is used, the masks are tested key by key as written, and the softmax is
/// formed from the listed unmasked scores. Slow, and shares no structure with computeLayer.
std::vector<double> naiveLayer(const Layer &layer) {
  const LayerShape &s = layer.shape;
  const int64_t S = s.seq, Skv = layer.kvSeq(), D = s.modelDim, kvDim = layer.kvDim();
  const int64_t H = s.heads, Hkv = s.kvHeads, Dh = s.headDim;
  const std::vector<float> &memory = s.cross ? layer.memory : layer.x;

  // Output feature `o` of y = row·Wᵀ + b for a row of width `in`.
  auto project = [&](const float *row, int64_t in, const std::vector<float> &w,
                     const std::vector<float> &bias, int64_t o) {
    long double y = s.bias ? bias[o] : 0.0L;
    for (int64_t c = 0; c < in; ++c)
      y += static_cast<long double>(row[c]) * w[o * in + c];
    return y;
  };
  auto masked = [&](int64_t b, int64_t i, int64_t j) {
    if (s.causal && j > i + (Skv - S))
      return true;
    if (!layer.kvLens.empty()) {
      int64_t len = layer.kvLens[b];
      len = len < 0 ? 0 : (len > Skv ? Skv : len);
      if (j >= len)
        return true;
    }
    return false;
  };

  std::vector<double> out(layer.outSize());
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t i = 0; i < S; ++i) {
      const float *xRow = &layer.x[(b * S + i) * D];
      std::vector<long double> a(H * Dh, 0.0L);
      for (int64_t h = 0; h < H; ++h) {
        const int64_t g = h / (H / Hkv);
        std::vector<int64_t> keys;
        std::vector<long double> scores;
        for (int64_t j = 0; j < Skv; ++j) {
          if (masked(b, i, j))
            continue;
          const float *mRow = &memory[(b * Skv + j) * kvDim];
          long double dot = 0.0L;
          for (int64_t d = 0; d < Dh; ++d)
            dot += project(xRow, D, layer.wq, layer.bq, h * Dh + d) *
                   project(mRow, kvDim, layer.wk, layer.bk, g * Dh + d);
          keys.push_back(j);
          scores.push_back(static_cast<long double>(s.scale) * dot);
        }
        if (keys.empty())
          continue; // a fully masked row gives a = 0
        const long double maxScore = *std::max_element(scores.begin(), scores.end());
        long double total = 0.0L;
        for (long double score : scores)
          total += std::exp(score - maxScore);
        for (size_t n = 0; n < keys.size(); ++n) {
          const long double p = std::exp(scores[n] - maxScore) / total;
          const float *mRow = &memory[(b * Skv + keys[n]) * kvDim];
          for (int64_t d = 0; d < Dh; ++d)
            a[h * Dh + d] += p * project(mRow, kvDim, layer.wv, layer.bv, g * Dh + d);
        }
      }
      for (int64_t n = 0; n < D; ++n) {
        long double y = s.bias ? layer.bo[n] : 0.0L;
        for (int64_t c = 0; c < H * Dh; ++c)
          y += static_cast<long double>(layer.wo[n * H * Dh + c]) * a[c];
        out[layer.at(b, i, n)] = static_cast<double>(y);
      }
    }
  }
  return out;
}

/// Every |got - want| <= tolerance * max(1, max |want|); NaN never passes.
::testing::AssertionResult allNear(const std::vector<double> &got, const std::vector<double> &want,
                                   double tolerance) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << "sizes differ: " << got.size() << " vs " << want.size();
  double scale = 1.0;
  for (double value : want)
    scale = std::max(scale, std::abs(value));
  for (size_t n = 0; n < got.size(); ++n)
    if (!(std::abs(got[n] - want[n]) <= tolerance * scale))
      return ::testing::AssertionFailure()
             << "entry " << n << ": got " << got[n] << ", want " << want[n];
  return ::testing::AssertionSuccess();
}

/// Row [b, i, :] of a [B, S, D] output.
std::vector<double> row(const Layer &layer, const std::vector<double> &out, int64_t b, int64_t i) {
  const double *begin = &out[layer.at(b, i, 0)];
  return std::vector<double>(begin, begin + layer.shape.modelDim);
}

/// bo widened to double: the output row of a query whose keys are all masked.
std::vector<double> biasRow(const Layer &layer) {
  return std::vector<double>(layer.bo.begin(), layer.bo.end());
}

constexpr double kTight = 1e-12;

//===----------------------------------------------------------------------===//
// Against the naive implementation
//===----------------------------------------------------------------------===//

struct NaiveCase {
  std::string name;
  LayerShape shape;
  std::vector<int32_t> kvLens;
};

std::vector<NaiveCase> naiveCases() {
  std::vector<NaiveCase> cases;
  cases.push_back({"Plain", selfShape(2, 5, 12, 3, 4), {}});
  {
    LayerShape s = selfShape(2, 5, 12, 4, 3);
    s.kvHeads = 2;
    cases.push_back({"GroupedQuery", s, {}});
  }
  {
    LayerShape s = selfShape(1, 6, 8, 4, 2);
    s.kvHeads = 1;
    cases.push_back({"MultiQuery", s, {}});
  }
  {
    LayerShape s = selfShape(2, 6, 8, 2, 4);
    s.causal = true;
    cases.push_back({"CausalSquare", s, {}});
  }
  {
    LayerShape s = crossShape(2, 3, 7, 8, 8, 2, 4);
    s.causal = true;
    cases.push_back({"CausalFewerQueries", s, {}});
  }
  {
    LayerShape s = crossShape(2, 7, 3, 8, 8, 2, 4);
    s.causal = true;
    cases.push_back({"CausalMoreQueries", s, {}});
  }
  cases.push_back({"KvLens", selfShape(4, 6, 8, 2, 4), {0, 4, 9, -2}});
  {
    LayerShape s = crossShape(2, 4, 6, 8, 8, 2, 4);
    s.causal = true;
    cases.push_back({"KvLensAndCausal", s, {2, 6}});
  }
  cases.push_back({"Cross", crossShape(2, 3, 5, 8, 6, 2, 5), {}});
  {
    LayerShape s = crossShape(2, 4, 3, 6, 10, 4, 3);
    s.kvHeads = 2;
    cases.push_back({"CrossGroupedQuery", s, {}});
  }
  cases.push_back({"HeadDimIndependent", selfShape(2, 4, 10, 3, 7), {}});
  {
    LayerShape s = selfShape(2, 5, 8, 2, 4);
    s.bias = false;
    cases.push_back({"NoBias", s, {}});
  }
  {
    LayerShape s = selfShape(1, 5, 8, 2, 4);
    s.scale = 3.0;
    cases.push_back({"ExplicitScale", s, {}});
  }
  {
    LayerShape s = selfShape(2, 33, 96, 6, 16);
    s.kvHeads = 2;
    s.causal = true;
    cases.push_back({"Medium", s, {}});
  }
  return cases;
}

/// Names the case in failure messages instead of dumping its bytes.
void PrintTo(const NaiveCase &naiveCase, std::ostream *os) { *os << naiveCase.name; }

class ReferenceMatchesNaive : public ::testing::TestWithParam<NaiveCase> {};

TEST_P(ReferenceMatchesNaive, OnRandomData) {
  Layer layer(GetParam().shape);
  layer.randomize(7);
  layer.kvLens = GetParam().kvLens;
  EXPECT_TRUE(allNear(layer.run(), naiveLayer(layer), kTight));
}

INSTANTIATE_TEST_SUITE_P(Shapes, ReferenceMatchesNaive, ::testing::ValuesIn(naiveCases()),
                         [](const ::testing::TestParamInfo<NaiveCase> &info) {
                           return info.param.name;
                         });

//===----------------------------------------------------------------------===//
// Hand-computed cases
//===----------------------------------------------------------------------===//

TEST(ReferenceAttention, SingleKeyGivesValueProjection) {
  // S = Skv = 1: the softmax is 1 whatever the score, so out = (x·Wvᵀ + bv)·Woᵀ + bo.
  Layer layer(selfShape(1, 1, 2, 1, 2));
  layer.randomize(3); // q and k are arbitrary
  layer.x = {1, 2};
  layer.wv = {1, 2, 3, 4};
  layer.bv = {0.5f, -1};
  layer.wo = {1, 0, 2, -1};
  layer.bo = {0.25f, 0};
  // v = [1 + 4 + 0.5, 3 + 8 - 1] = [5.5, 10]; out = [5.5 + 0.25, 11 - 10 + 0] = [5.75, 1].
  std::vector<double> out = layer.run();
  EXPECT_DOUBLE_EQ(out[0], 5.75);
  EXPECT_DOUBLE_EQ(out[1], 1.0);
}

TEST(ReferenceAttention, EqualScoresAverageTheValues) {
  // q = 0 makes every score 0; with identity Wv and Wo every row is the mean of the x rows.
  Layer layer(selfShape(1, 3, 2, 1, 2));
  layer.randomize(5);
  std::fill(layer.wq.begin(), layer.wq.end(), 0.0f);
  std::fill(layer.bq.begin(), layer.bq.end(), 0.0f);
  layer.x = {1, 2, 3, 4, 5, 9};
  layer.wv = {1, 0, 0, 1};
  layer.bv = {0, 0};
  layer.wo = {1, 0, 0, 1};
  layer.bo = {0, 0};
  std::vector<double> out = layer.run();
  for (int64_t i = 0; i < 3; ++i) {
    EXPECT_NEAR(out[layer.at(0, i, 0)], 3.0, kTight) << "row " << i;
    EXPECT_NEAR(out[layer.at(0, i, 1)], 5.0, kTight) << "row " << i;
  }
}

TEST(ReferenceAttention, TwoKeysWeighByTheirSoftmax) {
  // q = 1, k = [0, 1] and scale = ln 3 give scores [0, ln 3], so p = [1/4, 3/4];
  // v = 2*memory + 1 = [1, 3], so a = 1/4 + 9/4 = 2.5, and out = a with Wo = 1, bo = 0.
  Layer layer(crossShape(1, 1, 2, 1, 1, 1, 1));
  layer.shape.scale = std::log(3.0);
  layer.x = {1};
  layer.wq = {1};
  layer.memory = {0, 1};
  layer.wk = {1};
  layer.wv = {2};
  layer.bv = {1};
  layer.wo = {1};
  EXPECT_NEAR(layer.run()[0], 2.5, kTight);

  // With kv_lens = 1 only the first key is left: out = v[0] = 1.
  layer.kvLens = {1};
  EXPECT_NEAR(layer.run()[0], 1.0, kTight);
}

TEST(ReferenceAttention, HeadsReadTheirOwnColumns) {
  // Two heads of width 1, one query and two keys. Head 0 attends with scores [0, 0] (uniform),
  // head 1 with scores [0, 1000] (all on key 1). Wo sends head 0 to output 0 and head 1 to
  // output 1; a mix-up of columns or of heads changes the numbers.
  Layer layer(crossShape(1, 1, 2, 2, 2, 2, 1));
  layer.shape.scale = 1.0;
  layer.x = {1, 1};
  layer.wq = {0, 0, 0, 1}; // q = [0, 1]
  layer.memory = {0, 10, 1000, 20};
  layer.wk = {1, 0, 1, 0}; // k[j] = [m0, m0] = [0, 0] and [1000, 1000]
  layer.wv = {0, 1, 0, 2}; // v[j] = [m1, 2*m1] = [10, 20] and [20, 40]
  layer.wo = {1, 0, 0, 1};
  std::vector<double> out = layer.run();
  EXPECT_NEAR(out[0], 15.0, kTight); // head 0: mean of 10 and 20
  EXPECT_NEAR(out[1], 40.0, kTight); // head 1: v[1] of its columns
}

TEST(ReferenceAttention, LargeScoresStayFiniteAndPickTheMaximum) {
  // memory rows are [key, value]; Wk and Wv pick one column each, q = 1, scale 5000.
  Layer layer(crossShape(1, 1, 3, 1, 2, 1, 1));
  layer.shape.scale = 5000;
  layer.x = {1};
  layer.wq = {1};
  layer.wk = {1, 0};
  layer.wv = {0, 1};
  layer.wo = {1};

  // Scores [0, 5000, 10000]: all the weight on the last key.
  layer.memory = {0, 7, 1, 8, 2, 9};
  double out = layer.run()[0];
  EXPECT_TRUE(std::isfinite(out));
  EXPECT_DOUBLE_EQ(out, 9.0);

  // Scores [-10000, -10000, -5000]: the largest still wins, without 0/0.
  layer.memory = {-2, 7, -2, 8, -1, 9};
  out = layer.run()[0];
  EXPECT_TRUE(std::isfinite(out));
  EXPECT_DOUBLE_EQ(out, 9.0);

  // Scores all -10000: exp would underflow to 0 without the max subtraction; the values average.
  layer.memory = {-2, 7, -2, 8, -2, 12};
  out = layer.run()[0];
  EXPECT_TRUE(std::isfinite(out));
  EXPECT_NEAR(out, 9.0, kTight);
}

//===----------------------------------------------------------------------===//
// Identities the definition implies
//===----------------------------------------------------------------------===//

/// The multi-head layer equal to a grouped-query one: K/V head g's weight rows and biases are
/// copied to every query head h with g = h / (H / Hkv).
Layer repeatKvHeads(const Layer &grouped) {
  LayerShape shape = grouped.shape;
  shape.kvHeads = shape.heads;
  Layer full(shape);
  full.x = grouped.x;
  full.memory = grouped.memory;
  full.wq = grouped.wq;
  full.bq = grouped.bq;
  full.wo = grouped.wo;
  full.bo = grouped.bo;
  full.kvLens = grouped.kvLens;
  const int64_t Dh = shape.headDim, in = grouped.kvDim();
  const int64_t groupSize = shape.heads / grouped.shape.kvHeads;
  for (int64_t h = 0; h < shape.heads; ++h) {
    const int64_t g = h / groupSize;
    for (int64_t d = 0; d < Dh; ++d) {
      for (int64_t c = 0; c < in; ++c) {
        full.wk[(h * Dh + d) * in + c] = grouped.wk[(g * Dh + d) * in + c];
        full.wv[(h * Dh + d) * in + c] = grouped.wv[(g * Dh + d) * in + c];
      }
      full.bk[h * Dh + d] = grouped.bk[g * Dh + d];
      full.bv[h * Dh + d] = grouped.bv[g * Dh + d];
    }
  }
  return full;
}

TEST(ReferenceAttention, GroupedQueryEqualsRepeatedHeads) {
  // Consecutive query heads share a K/V head ([g0, g0, g1, g1]), not round robin.
  LayerShape shape = selfShape(2, 5, 8, 4, 3);
  shape.kvHeads = 2;
  Layer grouped(shape);
  grouped.randomize(11);
  EXPECT_TRUE(allNear(grouped.run(), repeatKvHeads(grouped).run(), kTight));
}

TEST(ReferenceAttention, MultiQueryEqualsRepeatedHeads) {
  LayerShape shape = crossShape(2, 3, 4, 6, 5, 3, 2);
  shape.kvHeads = 1;
  shape.causal = true;
  Layer multiQuery(shape);
  multiQuery.randomize(12);
  EXPECT_TRUE(allNear(multiQuery.run(), repeatKvHeads(multiQuery).run(), kTight));
}

TEST(ReferenceAttention, CrossWithMemoryEqualToXIsSelfAttention) {
  Layer self(selfShape(2, 4, 6, 2, 3));
  self.randomize(13);
  Layer cross(crossShape(2, 4, 4, 6, 6, 2, 3));
  cross.x = cross.memory = self.x;
  cross.wq = self.wq, cross.bq = self.bq, cross.wk = self.wk, cross.bk = self.bk;
  cross.wv = self.wv, cross.bv = self.bv, cross.wo = self.wo, cross.bo = self.bo;
  EXPECT_TRUE(allNear(cross.run(), self.run(), kTight));
}

TEST(ReferenceAttention, SelfAttentionReadsXAndIgnoresCrossFields) {
  Layer layer(selfShape(2, 4, 6, 2, 3));
  layer.randomize(14);
  const std::vector<double> expected = layer.run();

  // A memory tensor, kvSeq and kvDim are all ignored without cross.
  std::vector<float> garbage(4096, 1e6f);
  LayerTensors tensors = layer.tensors();
  tensors.memory = garbage.data();
  layer.shape.kvSeq = 3;
  layer.shape.kvDim = 5;
  EXPECT_EQ(layer.runWith(tensors), expected);
}

TEST(ReferenceAttention, CrossTakesKeysAndValuesFromMemory) {
  Layer layer(crossShape(1, 2, 3, 4, 5, 2, 2));
  layer.randomize(15);
  const std::vector<double> before = layer.run();
  layer.memory[0] += 0.5f; // key/value row 0 of batch 0: every query row must change
  const std::vector<double> after = layer.run();
  for (int64_t i = 0; i < 2; ++i)
    EXPECT_NE(row(layer, before, 0, i), row(layer, after, 0, i)) << "row " << i;
}

TEST(ReferenceAttention, NoBiasIgnoresTheBiasTensors) {
  LayerShape shape = crossShape(2, 3, 4, 6, 5, 2, 3);
  shape.bias = false;
  Layer layer(shape);
  layer.randomize(16); // non-zero biases, which must be ignored
  const std::vector<double> out = layer.run();

  Layer zeroBias = layer;
  zeroBias.shape.bias = true;
  for (std::vector<float> *b : {&zeroBias.bq, &zeroBias.bk, &zeroBias.bv, &zeroBias.bo})
    std::fill(b->begin(), b->end(), 0.0f);
  EXPECT_TRUE(allNear(out, zeroBias.run(), kTight));

  LayerTensors noBiases = layer.tensors();
  noBiases.bq = noBiases.bk = noBiases.bv = noBiases.bo = nullptr;
  EXPECT_EQ(layer.runWith(noBiases), out);

  // And a bias layer with the same tensors does differ.
  layer.shape.bias = true;
  EXPECT_FALSE(allNear(layer.run(), out, 1e-6));
}

//===----------------------------------------------------------------------===//
// Masks
//===----------------------------------------------------------------------===//

TEST(ReferenceAttention, CausalSquareIgnoresLaterPositions) {
  LayerShape shape = selfShape(1, 5, 6, 2, 3);
  shape.causal = true;
  Layer layer(shape);
  layer.randomize(21);
  const std::vector<double> out = layer.run();

  // Row 0 sees key 0 only: the same as the one-token prefix on its own.
  Layer first(selfShape(1, 1, 6, 2, 3));
  first.wq = layer.wq, first.bq = layer.bq, first.wk = layer.wk, first.bk = layer.bk;
  first.wv = layer.wv, first.bv = layer.bv, first.wo = layer.wo, first.bo = layer.bo;
  first.x.assign(layer.x.begin(), layer.x.begin() + 6);
  EXPECT_TRUE(allNear(row(layer, out, 0, 0), first.run(), kTight));

  // The last row sees every key, as without the mask; the others do not.
  Layer unmasked = layer;
  unmasked.shape.causal = false;
  const std::vector<double> full = unmasked.run();
  EXPECT_TRUE(allNear(row(layer, out, 0, 4), row(layer, full, 0, 4), kTight));
  for (int64_t i = 0; i < 4; ++i)
    EXPECT_FALSE(allNear(row(layer, out, 0, i), row(layer, full, 0, i), 1e-9)) << "row " << i;

  // Changing the last token leaves every earlier row bit for bit.
  Layer changed = layer;
  for (int64_t n = 0; n < 6; ++n)
    changed.x[4 * 6 + n] += 0.75f;
  const std::vector<double> after = changed.run();
  for (int64_t i = 0; i < 4; ++i)
    EXPECT_EQ(row(layer, out, 0, i), row(layer, after, 0, i)) << "row " << i;
  EXPECT_NE(row(layer, out, 0, 4), row(layer, after, 0, 4));
}

TEST(ReferenceAttention, CausalWithFewerQueriesIsBottomRightAligned) {
  // S = 2, Skv = 5: query i sees keys j <= i + 3, so row 0 sees 4 keys and row 1 all 5.
  LayerShape shape = crossShape(1, 2, 5, 4, 3, 2, 2);
  shape.causal = true;
  Layer layer(shape);
  layer.randomize(22);
  const std::vector<double> out = layer.run();

  Layer firstFour = layer;
  firstFour.shape.causal = false;
  firstFour.kvLens = {4};
  EXPECT_TRUE(allNear(row(layer, out, 0, 0), row(layer, firstFour.run(), 0, 0), kTight));

  Layer unmasked = layer;
  unmasked.shape.causal = false;
  EXPECT_TRUE(allNear(row(layer, out, 0, 1), row(layer, unmasked.run(), 0, 1), kTight));
}

TEST(ReferenceAttention, CausalWithMoreQueriesMasksLeadingRowsToBias) {
  // S = 5, Skv = 2: rows 0..2 have no key (j <= i - 3), row 3 sees key 0, row 4 both keys.
  LayerShape shape = crossShape(2, 5, 2, 4, 3, 2, 2);
  shape.causal = true;
  Layer layer(shape);
  layer.randomize(23);
  const std::vector<double> out = layer.run();
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t i = 0; i < 3; ++i)
      EXPECT_EQ(row(layer, out, b, i), biasRow(layer)) << "batch " << b << " row " << i;

  Layer firstKey = layer;
  firstKey.shape.causal = false;
  firstKey.kvLens = {1, 1};
  Layer unmasked = layer;
  unmasked.shape.causal = false;
  for (int64_t b = 0; b < 2; ++b) {
    EXPECT_TRUE(allNear(row(layer, out, b, 3), row(layer, firstKey.run(), b, 3), kTight));
    EXPECT_TRUE(allNear(row(layer, out, b, 4), row(layer, unmasked.run(), b, 4), kTight));
  }

  // Without bias a fully masked row is exactly zero.
  layer.shape.bias = false;
  EXPECT_EQ(row(layer, layer.run(), 1, 0), std::vector<double>(4, 0.0));
}

TEST(ReferenceAttention, KvLensIsAShorterMemory) {
  // kv_lens = [0, 3] over Skv = 5: batch 0 has no key (every row is bo); batch 1 equals a
  // memory of its first 3 rows.
  Layer layer(crossShape(2, 3, 5, 4, 6, 2, 2));
  layer.randomize(24);
  layer.kvLens = {0, 3};
  const std::vector<double> out = layer.run();
  for (int64_t i = 0; i < 3; ++i)
    EXPECT_EQ(row(layer, out, 0, i), biasRow(layer)) << "row " << i;

  Layer shorter(crossShape(1, 3, 3, 4, 6, 2, 2));
  shorter.wq = layer.wq, shorter.bq = layer.bq, shorter.wk = layer.wk, shorter.bk = layer.bk;
  shorter.wv = layer.wv, shorter.bv = layer.bv, shorter.wo = layer.wo, shorter.bo = layer.bo;
  shorter.x.assign(layer.x.begin() + 3 * 4, layer.x.end());
  shorter.memory.assign(layer.memory.begin() + 5 * 6, layer.memory.begin() + 5 * 6 + 3 * 6);
  const std::vector<double> expected = shorter.run();
  for (int64_t i = 0; i < 3; ++i)
    EXPECT_TRUE(allNear(row(layer, out, 1, i), row(shorter, expected, 0, i), kTight))
        << "row " << i;
}

TEST(ReferenceAttention, KvLensAreClampedToTheKeyRange) {
  Layer layer(selfShape(3, 4, 6, 2, 3));
  layer.randomize(25);
  const std::vector<double> unmasked = layer.run();

  // Entries past Skv mean "every key".
  layer.kvLens = {5, 1000000, std::numeric_limits<int32_t>::max()};
  EXPECT_EQ(layer.run(), unmasked);

  // Negative entries mean "no key": every row of that batch is bo.
  layer.kvLens = {-1, 4, std::numeric_limits<int32_t>::min()};
  const std::vector<double> out = layer.run();
  for (int64_t i = 0; i < 4; ++i) {
    EXPECT_EQ(row(layer, out, 0, i), biasRow(layer)) << "row " << i;
    EXPECT_EQ(row(layer, out, 1, i), row(layer, unmasked, 1, i)) << "row " << i;
    EXPECT_EQ(row(layer, out, 2, i), biasRow(layer)) << "row " << i;
  }
}

TEST(ReferenceAttention, RealisticShapeIsPermutationEquivariant) {
  // The size the end-to-end tests use (ViT-B/16 at batch 2), too big for the naive version.
  // Without masks self-attention commutes with permuting the tokens: batch 1 holds batch 0's
  // tokens reversed, so its output rows must be batch 0's reversed.
  const int64_t S = 197, D = 768;
  Layer layer(selfShape(2, S, D, 12, 64));
  layer.randomize(26);
  for (float &w : layer.wq)
    w *= 0.1f; // scores in the range trained layers have, so the softmax is not one-hot
  for (int64_t i = 0; i < S; ++i)
    std::copy_n(&layer.x[i * D], D, &layer.x[(2 * S - 1 - i) * D]);
  const std::vector<double> out = layer.run();
  double maxAbs = 0;
  for (double value : out)
    maxAbs = std::max(maxAbs, std::abs(value));
  EXPECT_GT(maxAbs, 0.1);
  for (int64_t i = 0; i < S; ++i)
    ASSERT_TRUE(allNear(row(layer, out, 1, S - 1 - i), row(layer, out, 0, i), kTight))
        << "row " << i;
}

//===----------------------------------------------------------------------===//
// relativeError
//===----------------------------------------------------------------------===//

TEST(RelativeError, IsMaxErrorOverMaxReference) {
  const float got[] = {1.0f, 2.5f, -3.0f};
  const double ref[] = {1.0, 2.0, -4.0};
  EXPECT_DOUBLE_EQ(relativeError(got, ref, 3), 1.0 / 4.0);
  EXPECT_EQ(relativeError(got, ref, 1), 0.0);
  EXPECT_EQ(relativeError(got, ref, 0), 0.0);
}

TEST(RelativeError, ExactResultIsZero) {
  const float got[] = {0.5f, -7.25f, 1e-3f};
  const double ref[] = {0.5, -7.25, static_cast<double>(1e-3f)};
  EXPECT_EQ(relativeError(got, ref, 3), 0.0);
}

TEST(RelativeError, ZeroReferenceGivesAbsoluteError) {
  const float got[] = {0.0f, -0.5f, 0.25f};
  const double ref[] = {0.0, 0.0, 0.0};
  EXPECT_DOUBLE_EQ(relativeError(got, ref, 3), 0.5);
  EXPECT_EQ(relativeError(got, ref, 1), 0.0);
}

TEST(RelativeError, NonFiniteNeverPasses) {
  const double inf = std::numeric_limits<double>::infinity();
  const double ref[] = {1.0, 2.0};
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                    -std::numeric_limits<float>::infinity()}) {
    const float got[] = {1.0f, bad};
    EXPECT_EQ(relativeError(got, ref, 2), inf) << bad;
    EXPECT_EQ(relativeError(got, ref, 1), 0.0) << "entries past count are not read";
  }
  const float got[] = {1.0f, 2.0f};
  const double nanRef[] = {1.0, std::numeric_limits<double>::quiet_NaN()};
  EXPECT_EQ(relativeError(got, nanRef, 2), inf);
}

} // namespace
