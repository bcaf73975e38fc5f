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

/// How the host rule treats one CPU: its schedule's vector width, its tuning, and whether LLVM's
/// vectorizers are told not to prefer ymm.
struct HostCase {
  const char *cpu;
  bool avx512;
  const char *tuneCpu;
};

class HostCpu : public testing::TestWithParam<HostCase> {};

TEST_P(HostCpu, GetsItsIsaScheduleAndTuning) {
  const HostCase &c = GetParam();
  llvm::StringMap<bool> features = featuresOf({"avx2", "fma"});
  if (c.avx512)
    features["avx512f"] = true;
  CpuTarget target = cpuTarget("host", c.cpu, features);
  EXPECT_EQ(target.name, "host");
  EXPECT_EQ(target.cpu, c.cpu);
  EXPECT_EQ(target.tuneCpu, c.tuneCpu);
  EXPECT_EQ(target.vectorBits, c.avx512 ? 512u : 256u);
  EXPECT_EQ(hasFeature(target, "+avx512f"), c.avx512);
  EXPECT_EQ(hasFeature(target, "-prefer-256-bit"), c.avx512);
}

// Zen 4 and 5 are tuned as x86-64-v4 (their own model spills the 6 x 64 tile); Zen 3 (AVX2)
// and Intel's AVX-512 CPUs keep their own models.
INSTANTIATE_TEST_SUITE_P(CpuTarget, HostCpu,
                         testing::Values(HostCase{"znver5", true, "x86-64-v4"},
                                         HostCase{"znver4", true, "x86-64-v4"},
                                         HostCase{"znver3", false, ""},
                                         HostCase{"sapphirerapids", true, ""},
                                         HostCase{"rocketlake", true, ""}));

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
