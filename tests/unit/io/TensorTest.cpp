//===- TensorTest.cpp - host tensors and their checked sizes ---------------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "runtime/io/Tensor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>

using namespace mhac::io;

TEST(TensorTest, CountsElementsWithOverflowChecks) {
  EXPECT_EQ(checkedElementCount({}), 1u);
  EXPECT_EQ(checkedElementCount({2, 3, 4}), 24u);
  EXPECT_EQ(checkedElementCount({3, 0, 5}), 0u);
  EXPECT_EQ(checkedElementCount({int64_t(1) << 62, int64_t(1) << 62, 0}), 0u);
  EXPECT_EQ(checkedElementCount({int64_t(1) << 31, int64_t(1) << 31}), uint64_t(1) << 62);
  EXPECT_FALSE(checkedElementCount({int64_t(1) << 32, int64_t(1) << 32}));
  EXPECT_FALSE(checkedElementCount({2, -1}));
  EXPECT_FALSE(checkedElementCount({-1, 0}));
  EXPECT_EQ(checkedByteSize({int64_t(1) << 60}, DType::BF16), uint64_t(1) << 61);
  EXPECT_FALSE(checkedByteSize({int64_t(1) << 62}, DType::F32));
  EXPECT_EQ(checkedByteSize({3}, DType::I32), 12u);
}

TEST(TensorTest, FormatsShapesAndQuotesNames) {
  EXPECT_EQ(formatShape({}), "[]");
  EXPECT_EQ(formatShape({768, 512}), "[768, 512]");
  EXPECT_EQ(quoteName("q_proj.weight"), "'q_proj.weight'");
  EXPECT_EQ(quoteName(std::string("a\n\0'\\\xff", 6)), "'a\\x0a\\x00\\x27\\x5c\\xff'");
  EXPECT_EQ(quoteName(std::string(100, 'x'), 4), "'xxxx...'");
}

TEST(TensorTest, RoundsToBFloat16ToNearestEven) {
  EXPECT_EQ(floatToBF16(1.0f), 0x3f80);
  EXPECT_EQ(bf16ToFloat(0x3f80), 1.0f);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties go to the even 1.0.
  EXPECT_EQ(floatToBF16(1.0f + 1.0f / 256), 0x3f80);
  EXPECT_EQ(floatToBF16(1.0f + 3.0f / 256), 0x3f82);
  EXPECT_EQ(floatToBF16(1.0f + 1.0f / 256 + 1.0f / 65536), 0x3f81);
  EXPECT_EQ(floatToBF16(-2.5f), 0xc020);
  EXPECT_EQ(floatToBF16(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_EQ(floatToBF16(std::numeric_limits<float>::max()), 0x7f80); // rounds up to inf
  EXPECT_TRUE(std::isnan(bf16ToFloat(floatToBF16(std::numeric_limits<float>::quiet_NaN()))));
  // A NaN whose payload sits only in the low bits must not round to infinity.
  float lowNaN;
  uint32_t bits = 0x7f800001;
  std::memcpy(&lowNaN, &bits, 4);
  EXPECT_TRUE(std::isnan(bf16ToFloat(floatToBF16(lowNaN))));
}

TEST(TensorTest, ConvertsToFloat) {
  HostTensor bf16;
  bf16.dtype = DType::BF16;
  bf16.shape = {2};
  bf16.bf16 = {0x3f80, 0xc020};
  EXPECT_TRUE(bf16.isConsistent());
  EXPECT_EQ(bf16.toFloat(), (std::vector<float>{1.0f, -2.5f}));
  EXPECT_EQ(HostTensor::makeI32({2}, {3, -4}).toFloat(), (std::vector<float>{3.0f, -4.0f}));
  EXPECT_FALSE(HostTensor::makeF32({3}, {1.0f}).isConsistent());
  EXPECT_TRUE(HostTensor::makeF32({}, {1.0f}).isConsistent());
}

TEST(TensorTest, ExpectedCarriesValueOrError) {
  Expected<int> value = 3;
  ASSERT_TRUE(value);
  EXPECT_EQ(*value, 3);
  EXPECT_TRUE(value.error().empty());
  Expected<int> error = Error{"f: bad"};
  EXPECT_FALSE(error);
  EXPECT_EQ(error.error(), "f: bad");
  EXPECT_TRUE(Status::success());
  Status failed = Error{"g: worse"};
  EXPECT_FALSE(failed);
  EXPECT_EQ(failed.error(), "g: worse");
}

namespace {

//===----------------------------------------------------------------------===//
// Rounding to bf16 (floatToBF16), checked through the value it widens back to
//===----------------------------------------------------------------------===//

float fromBits(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

uint32_t toBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

/// What a bf16 layer's input becomes: rounded to bf16, widened back.
float roundToBF16(float value) { return bf16ToFloat(floatToBF16(value)); }

TEST(FloatToBF16, KeepsRepresentableValues) {
  for (float value :
       {0.0f, 1.0f, -1.0f, 1.5f, -3.25f, 0.0078125f, 65536.0f, 1.0f + 0x1p-7f,
        fromBits(0x7f7f0000u) /* largest bf16 */, fromBits(0x00010000u) /* denormal */,
        std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity()})
    EXPECT_EQ(toBits(roundToBF16(value)), toBits(value)) << value;
  EXPECT_TRUE(std::signbit(roundToBF16(-0.0f)));
}

TEST(FloatToBF16, RoundsToNearestTiesToEven) {
  // bf16 keeps 7 mantissa bits: the spacing at 1 is 2^-7.
  EXPECT_EQ(roundToBF16(1.0f + 0x1p-8f), 1.0f);                      // tie, down to even
  EXPECT_EQ(roundToBF16(1.0f + 3 * 0x1p-8f), 1.0f + 0x1p-6f);        // tie, up to even
  EXPECT_EQ(roundToBF16(1.0f + 0x1p-8f + 0x1p-23f), 1.0f + 0x1p-7f); // just above the tie
  EXPECT_EQ(roundToBF16(1.0f + 0x1p-8f - 0x1p-23f), 1.0f);           // just below the tie
  EXPECT_EQ(roundToBF16(-(1.0f + 3 * 0x1p-8f)), -(1.0f + 0x1p-6f));  // sign is symmetric
  EXPECT_EQ(roundToBF16(3.14159265f), 3.140625f);
  EXPECT_EQ(roundToBF16(fromBits(0x3f80ffffu)), fromBits(0x3f810000u)); // carries into mantissa
  EXPECT_EQ(roundToBF16(fromBits(0x3fffffffu)), 2.0f);                  // carries into exponent
}

TEST(FloatToBF16, OverflowsToInfinity) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(roundToBF16(std::numeric_limits<float>::max()), inf);
  EXPECT_EQ(roundToBF16(-std::numeric_limits<float>::max()), -inf);
  EXPECT_EQ(roundToBF16(fromBits(0x7f7f7fffu)), fromBits(0x7f7f0000u)); // below the halfway point
  EXPECT_EQ(roundToBF16(fromBits(0x7f7f8000u)), inf); // the tie goes to the even neighbour, inf
}

TEST(FloatToBF16, NaNStaysNaN) {
  EXPECT_TRUE(std::isnan(roundToBF16(std::numeric_limits<float>::quiet_NaN())));
  // Payloads only in the bits that are dropped: plain truncation would make these infinities.
  for (uint32_t bits : {0x7f800001u, 0xff800001u, 0x7f80ffffu, 0x7fffffffu}) {
    const float rounded = roundToBF16(fromBits(bits));
    EXPECT_TRUE(std::isnan(rounded)) << std::hex << bits;
    EXPECT_EQ(std::signbit(rounded), (bits >> 31) != 0) << std::hex << bits;
  }
}

TEST(FloatToBF16, MatchesNearestCandidateOnRandomBits) {
  // Against the definition: of the two bf16 values around v, the nearer; on a tie, the one with an
  // even last mantissa bit. Past the largest bf16 the upper candidate is 2^128, i.e. infinity.
  std::mt19937 engine(31);
  std::uniform_int_distribution<uint32_t> anyBits;
  for (int n = 0; n < 200000; ++n) {
    const uint32_t bits = anyBits(engine);
    const float value = fromBits(bits);
    if (!std::isfinite(value))
      continue;
    const uint32_t lowBits = bits & 0xffff0000u;
    const uint32_t highBits = lowBits + 0x10000u;
    const double low = fromBits(lowBits);
    const double high = std::isinf(fromBits(highBits)) ? std::copysign(0x1p128, value)
                                                       : static_cast<double>(fromBits(highBits));
    const double toLow = std::abs(value - low), toHigh = std::abs(high - value);
    uint32_t want = toLow < toHigh ? lowBits : highBits;
    if (toLow == toHigh)
      want = (lowBits & 0x10000u) == 0 ? lowBits : highBits;
    ASSERT_EQ(toBits(roundToBF16(value)), want) << std::hex << bits;
  }
}

} // namespace
