//===- RopeTest.cpp - rope frequencies against hand-computed cases --------===//
//
// Part of mhac. The frequencies every rotary embedding of mhac is computed from (the compiler's
// tables and the float64 reference both call ropeFrequencies), each scaling on a case whose
// answer follows from Hugging Face's formulas by hand.
//
//===----------------------------------------------------------------------===//

#include "runtime/reference/Rope.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace mhac::reference;

namespace {

constexpr double kPi = 3.14159265358979323846;

RopeParameters rope(int64_t dim, double base) {
  RopeParameters parameters;
  parameters.kind = RopeKind::Half;
  parameters.dim = dim;
  parameters.base = base;
  return parameters;
}

/// `rope(dim, base)` with Llama 3.1's scaling.
RopeParameters llama3(int64_t dim, double base, double factor, double low, double high,
                      int64_t originalMax) {
  RopeParameters parameters = rope(dim, base);
  parameters.scaling = RopeScaling::Llama3;
  parameters.factor = factor;
  parameters.lowFreqFactor = low;
  parameters.highFreqFactor = high;
  parameters.originalMax = originalMax;
  return parameters;
}

} // namespace

TEST(RopeTest, DefaultFrequenciesArePowersOfTheBase) {
  RopeFrequencies f = ropeFrequencies(rope(4, 10000));
  ASSERT_EQ(f.inverse.size(), 2u);
  EXPECT_DOUBLE_EQ(f.inverse[0], 1);
  EXPECT_DOUBLE_EQ(f.inverse[1], 0.01); // 10000^(-2/4)
  EXPECT_EQ(f.attentionFactor, 1);
}

TEST(RopeTest, LinearDividesEveryFrequency) {
  RopeParameters parameters = rope(4, 10000);
  parameters.scaling = RopeScaling::Linear;
  parameters.factor = 4;
  RopeFrequencies f = ropeFrequencies(parameters);
  EXPECT_DOUBLE_EQ(f.inverse[0], 0.25);
  EXPECT_DOUBLE_EQ(f.inverse[1], 0.0025);
  EXPECT_EQ(f.attentionFactor, 1);
}

TEST(RopeTest, Llama3KeepsShortWavelengthsDividesLongOnesAndBlendsBetween) {
  RopeFrequencies f = ropeFrequencies(llama3(128, 500000, 8, 1, 4, 8192));
  RopeFrequencies plain = ropeFrequencies(rope(128, 500000));
  // Pair 0 turns once per 2π positions, far below 8192 / 4: kept. Pair 63's wavelength is
  // millions of positions, past 8192 / 1: divided by the factor.
  EXPECT_DOUBLE_EQ(f.inverse[0], plain.inverse[0]);
  EXPECT_DOUBLE_EQ(f.inverse[63], plain.inverse[63] / 8);

  // One pair of wavelength 2π between original_max / high = 4 and original_max / low = 12:
  // smooth = (12 / 2π - 1) / (3 - 1), f = (1 - smooth) / factor + smooth.
  double smooth = (12 / (2 * kPi) - 1) / 2;
  EXPECT_NEAR(ropeFrequencies(llama3(2, 10000, 2, 1, 3, 12)).inverse[0], (1 - smooth) / 2 + smooth,
              1e-15);
}

TEST(RopeTest, YarnRampsFromExtrapolationToInterpolation) {
  RopeParameters parameters = rope(128, 150000);
  parameters.scaling = RopeScaling::Yarn;
  parameters.factor = 32;
  parameters.originalMax = 4096;
  parameters.betaFast = 32;
  parameters.betaSlow = 1;
  RopeFrequencies f = ropeFrequencies(parameters);
  RopeFrequencies plain = ropeFrequencies(rope(128, 150000));
  // The correction range: dims 128 ln(4096 / (r 2π)) / (2 ln 150000) for r = 32 and 1, that is
  // 16.2 and 34.8, rounded outwards to 16 and 35 (truncate).
  for (int i : {0, 10, 16})
    EXPECT_DOUBLE_EQ(f.inverse[i], plain.inverse[i]) << "pair " << i;
  for (int i : {35, 40, 63})
    EXPECT_DOUBLE_EQ(f.inverse[i], plain.inverse[i] / 32) << "pair " << i;
  double ramp = (25 - 16) / 19.0;
  EXPECT_NEAR(f.inverse[25], plain.inverse[25] * ((1 - ramp) + ramp / 32), 1e-18);
  EXPECT_NEAR(f.attentionFactor, 0.1 * std::log(32) + 1, 1e-15);

  parameters.attentionFactor = 1.25;
  EXPECT_EQ(ropeFrequencies(parameters).attentionFactor, 1.25);
}
