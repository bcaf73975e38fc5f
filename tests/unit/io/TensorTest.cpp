//===- TensorTest.cpp - host tensors and their checked sizes ---------------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "runtime/io/Tensor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

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
