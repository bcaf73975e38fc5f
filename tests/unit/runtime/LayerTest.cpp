//===- LayerTest.cpp - layer descriptions, FLOP counts and status codes ---===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "mhac/runtime.h"

#include <cpuid.h>
#ifdef __linux__
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

namespace {

mhac_layer selfAttention(int64_t d, int64_t h, int64_t dh) {
  mhac_layer layer{};
  layer.abi_version = MHAC_ABI_VERSION;
  layer.name = "test";
  layer.model_dim = layer.kv_dim = d;
  layer.heads = layer.kv_heads = h;
  layer.head_dim = dh;
  layer.batch = layer.seq = layer.kv_seq = MHAC_DYNAMIC;
  return layer;
}

} // namespace

TEST(LayerFlopsTest, CountsProjectionsAndAttention) {
  // BERT-base: 8 * 128 * 768 * 768 for the four projections, 4 * 12 * 128 * 128 * 64 for
  // attention.
  mhac_layer bert = selfAttention(768, 12, 64);
  mhac_sizes sizes = {1, 128, 0};
  EXPECT_EQ(mhac_layer_flops(&bert, &sizes), 603979776.0 + 50331648.0);
  sizes.batch = 3;
  EXPECT_EQ(mhac_layer_flops(&bert, &sizes), 3 * (603979776.0 + 50331648.0));
  // Causal halves attention, as the benchmarks count it.
  bert.causal = 1;
  EXPECT_EQ(mhac_layer_flops(&bert, &sizes), 3 * (603979776.0 + 50331648.0 / 2));
}

TEST(LayerFlopsTest, UsesCrossAttentionSizes) {
  // B=2, S=3, Skv=5, D=8, kv_dim=6, H=4, Hkv=2, Dh=3:
  // q 2*2*3*8*12 = 1152, k and v 4*2*5*6*6 = 1440, o 1152, attention 4*2*4*3*5*3 = 1440.
  mhac_layer layer = selfAttention(8, 4, 3);
  layer.kv_heads = 2;
  layer.kv_dim = 6;
  layer.cross = 1;
  layer.kv_seq = 5; // compiled: the size given at run time is ignored
  mhac_sizes sizes = {2, 3, 99};
  EXPECT_EQ(mhac_layer_flops(&layer, &sizes), 1152.0 + 1440.0 + 1152.0 + 1440.0);
}

TEST(LayerFlopsTest, RejectsMissingSizes) {
  mhac_layer layer = selfAttention(8, 2, 4);
  mhac_sizes sizes = {0, 3, 0};
  EXPECT_EQ(mhac_layer_flops(&layer, &sizes), 0.0);
  EXPECT_EQ(mhac_layer_flops(&layer, nullptr), 0.0);
  EXPECT_EQ(mhac_layer_flops(nullptr, &sizes), 0.0);
}

TEST(LayerRunTest, ChecksTheAbiVersion) {
  mhac_layer layer = selfAttention(8, 2, 4);
  layer.run_packed = +[](void *const *, const mhac_sizes *) -> int32_t { return 42; };
  EXPECT_EQ(mhac_layer_run(&layer, nullptr, nullptr), 42);
  layer.abi_version = MHAC_ABI_VERSION + 1;
  EXPECT_EQ(mhac_layer_run(&layer, nullptr, nullptr), MHAC_ERROR_ABI_MISMATCH);
  EXPECT_EQ(mhac_layer_run(nullptr, nullptr, nullptr), MHAC_ERROR_INVALID_ARGUMENT);
}

TEST(LayerPrepareTest, AllocatesFillsAndReleasesTheBlock) {
  mhac_layer layer = selfAttention(8, 2, 4);
  layer.prepared_bytes = 256;
  layer.prepare_packed = +[](void *const *, void *prepared) -> int32_t {
    static_cast<float *>(prepared)[63] = 7.0f;
    return MHAC_OK;
  };
  layer.run_prepared_packed =
      +[](void *const *, const void *prepared, const mhac_sizes *) -> int32_t {
    return static_cast<int32_t>(static_cast<const float *>(prepared)[63]);
  };
  void *prepared = nullptr;
  ASSERT_EQ(mhac_layer_prepare(&layer, nullptr, &prepared), MHAC_OK);
  ASSERT_NE(prepared, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(prepared) % 64, 0u);
  EXPECT_EQ(mhac_layer_run_prepared(&layer, nullptr, prepared, nullptr), 7);
  mhac_free(prepared);
}

TEST(LayerPrepareTest, ReportsFailuresWithoutABlock) {
  mhac_layer layer = selfAttention(8, 2, 4);
  layer.prepared_bytes = 64;
  layer.prepare_packed = +[](void *const *, void *) -> int32_t { return MHAC_ERROR_NULL_POINTER; };
  void *prepared = &layer;
  EXPECT_EQ(mhac_layer_prepare(&layer, nullptr, &prepared), MHAC_ERROR_NULL_POINTER);
  EXPECT_EQ(prepared, nullptr);
  EXPECT_EQ(mhac_layer_prepare(&layer, nullptr, nullptr), MHAC_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(mhac_layer_prepare(nullptr, nullptr, &prepared), MHAC_ERROR_INVALID_ARGUMENT);
  layer.abi_version = MHAC_ABI_VERSION + 1;
  EXPECT_EQ(mhac_layer_prepare(&layer, nullptr, &prepared), MHAC_ERROR_ABI_MISMATCH);
  EXPECT_EQ(mhac_layer_run_prepared(&layer, nullptr, nullptr, nullptr), MHAC_ERROR_ABI_MISMATCH);
  EXPECT_EQ(mhac_layer_run_prepared(nullptr, nullptr, nullptr, nullptr),
            MHAC_ERROR_INVALID_ARGUMENT);
}

TEST(LayerRunTest, ChecksTheCpuFeatures) {
  mhac_layer layer = selfAttention(8, 2, 4);
  layer.run_packed = +[](void *const *, const mhac_sizes *) -> int32_t { return 42; };
  layer.prepare_packed = +[](void *const *, void *) -> int32_t { return MHAC_OK; };
  layer.cpu_features = "sse2,a-feature-nobody-knows";
  EXPECT_EQ(mhac_layer_missing_cpu_feature(&layer), nullptr);
  EXPECT_EQ(mhac_layer_run(&layer, nullptr, nullptr), 42);
  // XOP was AMD's Bulldozer family's alone (2011-2017): no CPU that runs these tests has it.
  ASSERT_FALSE(__builtin_cpu_supports("xop"));
  layer.cpu_features = "sse2,xop,avx2";
  EXPECT_STREQ(mhac_layer_missing_cpu_feature(&layer), "xop");
  EXPECT_EQ(mhac_layer_run(&layer, nullptr, nullptr), MHAC_ERROR_UNSUPPORTED_CPU);
  void *prepared = &layer;
  EXPECT_EQ(mhac_layer_prepare(&layer, nullptr, &prepared), MHAC_ERROR_UNSUPPORTED_CPU);
  EXPECT_EQ(prepared, nullptr);
  EXPECT_EQ(mhac_layer_missing_cpu_feature(nullptr), nullptr);
  EXPECT_EQ(mhac_missing_cpu_feature(nullptr), nullptr);
  EXPECT_EQ(mhac_missing_cpu_feature(""), nullptr);
}

/// The runtime's CPUID table against the compiler's own detection (libgcc's or compiler-rt's,
/// which check the operating system's register state too), on whatever CPU runs the tests.
TEST(CpuFeaturesTest, AgreesWithTheCompilersDetection) {
#define EXPECT_DETECTED(name)                                                                      \
  EXPECT_EQ(mhac_missing_cpu_feature(name) == nullptr, __builtin_cpu_supports(name) != 0) << name
  EXPECT_DETECTED("sse4.2");
  EXPECT_DETECTED("popcnt");
  EXPECT_DETECTED("aes");
  EXPECT_DETECTED("pclmul");
  EXPECT_DETECTED("avx");
  EXPECT_DETECTED("avx2");
  EXPECT_DETECTED("fma");
  EXPECT_DETECTED("bmi");
  EXPECT_DETECTED("bmi2");
  EXPECT_DETECTED("sse4a");
  EXPECT_DETECTED("fma4");
  EXPECT_DETECTED("avx512f");
  EXPECT_DETECTED("avx512dq");
  EXPECT_DETECTED("avx512cd");
  EXPECT_DETECTED("avx512bw");
  EXPECT_DETECTED("avx512vl");
  EXPECT_DETECTED("avx512ifma");
  EXPECT_DETECTED("avx512vbmi");
  EXPECT_DETECTED("avx512vbmi2");
  EXPECT_DETECTED("avx512vnni");
  EXPECT_DETECTED("avx512bitalg");
  EXPECT_DETECTED("avx512vpopcntdq");
  EXPECT_DETECTED("avx512bf16");
  EXPECT_DETECTED("avx512vp2intersect");
  EXPECT_DETECTED("gfni");
  EXPECT_DETECTED("vpclmulqdq");
#undef EXPECT_DETECTED
}

#ifdef __linux__
/// Whether this process holds Linux's permission to use AMX's tile data (state component 18).
static bool tilesPermitted() {
  unsigned long long permitted = 0;
  return syscall(SYS_arch_prctl, 0x1022 /* ARCH_GET_XCOMP_PERM */, &permitted) == 0 &&
         (permitted >> 18 & 1u);
}

/// AMX counts as present only once the process may use it: the runtime asks for the tile data
/// the first time a list names AMX, never for lists that do not.
TEST(CpuFeaturesTest, ReportsAmxOnlyWithThePermission) {
  EXPECT_EQ(mhac_missing_cpu_feature("avx2,fma,xop,avx512f"), mhac_missing_cpu_feature("xop"));
  EXPECT_FALSE(tilesPermitted()) << "a list without AMX asked for the tiles";
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  bool cpuHasTiles = __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) && (edx >> 24 & 1u);
  const char *missing = mhac_missing_cpu_feature("avx2,amx-tile,amx-bf16");
  if (!cpuHasTiles) {
    EXPECT_STREQ(missing, "amx-tile");
    return;
  }
  // An AMX CPU: the answer follows the permission, which the OS may refuse.
  EXPECT_EQ(missing == nullptr, tilesPermitted()) << (missing ? missing : "");
}
#endif

TEST(StatusStringTest, DescribesEveryCode) {
  for (int32_t status = MHAC_OK; status <= MHAC_ERROR_UNSUPPORTED_CPU; ++status)
    EXPECT_NE(std::string(mhac_status_string(status)), "unknown status") << status;
  EXPECT_EQ(std::string(mhac_status_string(-7)), "unknown status");
}

TEST(ModuleTest, ReportsFilesThatAreNotModules) {
  char error[256] = "";
  EXPECT_EQ(mhac_module_open("/nonexistent/module.so", error, sizeof error), nullptr);
  EXPECT_NE(std::string(error).find("/nonexistent/module.so: "), std::string::npos) << error;
  EXPECT_EQ(mhac_module_open(nullptr, error, sizeof error), nullptr);
  EXPECT_EQ(mhac_module_open("/nonexistent/module.so", nullptr, 0), nullptr);
  EXPECT_EQ(mhac_module_num_layers(nullptr), 0);
  EXPECT_EQ(mhac_module_layer(nullptr, 0), nullptr);
  EXPECT_EQ(mhac_module_find_layer(nullptr, "x"), nullptr);
  mhac_module_close(nullptr);
}
