//===- HostTargetTest.cpp - how the host CPU becomes a target -------------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "compiler/target/Target.h"

#include <gtest/gtest.h>

using namespace mhac;

namespace {

llvm::StringMap<bool> featuresOf(std::initializer_list<const char *> names) {
  llvm::StringMap<bool> features;
  for (const char *name : names)
    features[name] = true;
  return features;
}

TEST(HostTarget, ZenWithAvx512IsTunedAsX86_64V4) {
  CpuTarget target = hostCpuTarget("znver5", featuresOf({"avx2", "fma", "avx512f"}));
  EXPECT_EQ(target.cpu, "znver5");
  EXPECT_EQ(target.tuneCpu, "x86-64-v4");
  EXPECT_EQ(target.vectorBits, 512u);
  EXPECT_NE(target.features.find("+avx512f"), std::string::npos);
  EXPECT_NE(target.features.find("-prefer-256-bit"), std::string::npos);
}

TEST(HostTarget, ZenWithoutAvx512KeepsItsOwnTuning) {
  CpuTarget target = hostCpuTarget("znver3", featuresOf({"avx2", "fma"}));
  EXPECT_EQ(target.tuneCpu, "");
  EXPECT_EQ(target.vectorBits, 256u);
}

TEST(HostTarget, IntelWithAvx512KeepsItsOwnTuning) {
  CpuTarget target = hostCpuTarget("sapphirerapids", featuresOf({"avx2", "fma", "avx512f"}));
  EXPECT_EQ(target.name, "host");
  EXPECT_EQ(target.tuneCpu, "");
  EXPECT_EQ(target.vectorBits, 512u);
  EXPECT_EQ(target.features.find("prefer-256-bit"), std::string::npos);
}

} // namespace
