//===- CpuTargetTest.cpp - how a CPU becomes a target ---------------------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "compiler/target/Target.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

#include <gtest/gtest.h>

using namespace mhac;

namespace {

llvm::StringMap<bool> featuresOf(std::initializer_list<const char *> names) {
  llvm::StringMap<bool> features;
  for (const char *name : names)
    features[name] = true;
  return features;
}

bool hasFeature(const CpuTarget &target, llvm::StringRef feature) {
  return llvm::is_contained(llvm::split(target.features, ','), feature);
}

TEST(CpuTarget, ZenWithAvx512IsTunedAsX86_64V4) {
  CpuTarget target = cpuTarget("host", "znver5", featuresOf({"avx2", "fma", "avx512f"}));
  EXPECT_EQ(target.cpu, "znver5");
  EXPECT_EQ(target.tuneCpu, "x86-64-v4");
  EXPECT_EQ(target.vectorBits, 512u);
  EXPECT_TRUE(hasFeature(target, "+avx512f"));
  EXPECT_TRUE(hasFeature(target, "-prefer-256-bit"));
}

TEST(CpuTarget, ZenWithoutAvx512KeepsItsOwnTuning) {
  CpuTarget target = cpuTarget("host", "znver3", featuresOf({"avx2", "fma"}));
  EXPECT_EQ(target.tuneCpu, "");
  EXPECT_EQ(target.vectorBits, 256u);
  EXPECT_FALSE(hasFeature(target, "-prefer-256-bit"));
}

TEST(CpuTarget, IntelWithAvx512KeepsItsOwnTuningAndZmm) {
  CpuTarget target = cpuTarget("host", "sapphirerapids", featuresOf({"avx2", "fma", "avx512f"}));
  EXPECT_EQ(target.name, "host");
  EXPECT_EQ(target.tuneCpu, "");
  EXPECT_EQ(target.vectorBits, 512u);
  EXPECT_TRUE(hasFeature(target, "-prefer-256-bit"));
}

TEST(CpuTarget, NamedCpusTakeTheirOwnFeatures) {
  llvm::Expected<CpuTarget> zen4 = resolveCpuTarget("znver4");
  ASSERT_TRUE(static_cast<bool>(zen4)) << llvm::toString(zen4.takeError());
  EXPECT_EQ(zen4->name, "znver4");
  EXPECT_EQ(zen4->cpu, "znver4");
  EXPECT_EQ(zen4->tuneCpu, "x86-64-v4");
  EXPECT_EQ(zen4->vectorBits, 512u);

  llvm::Expected<CpuTarget> haswell = resolveCpuTarget("haswell");
  ASSERT_TRUE(static_cast<bool>(haswell)) << llvm::toString(haswell.takeError());
  EXPECT_EQ(haswell->vectorBits, 256u);
  EXPECT_TRUE(hasFeature(*haswell, "+avx2"));
}

TEST(CpuTarget, X86_64V4ImpliesAvx512F) {
  // x86-64-v4 lists avx512vl and the others, not avx512f itself.
  llvm::Expected<CpuTarget> v4 = resolveCpuTarget("x86-64-v4");
  ASSERT_TRUE(static_cast<bool>(v4)) << llvm::toString(v4.takeError());
  EXPECT_EQ(v4->vectorBits, 512u);
  EXPECT_TRUE(hasFeature(*v4, "+avx512f"));
  EXPECT_EQ(v4->tuneCpu, "");
}

TEST(CpuTarget, CpusWithoutAvx2AreRefused) {
  llvm::Expected<CpuTarget> nehalem = resolveCpuTarget("nehalem");
  ASSERT_FALSE(static_cast<bool>(nehalem));
  EXPECT_EQ(llvm::toString(nehalem.takeError()),
            "target 'nehalem' has no AVX2 and FMA: mhac's CPU code needs at least x86-64-v3");
}

} // namespace
