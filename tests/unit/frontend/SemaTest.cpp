//===- SemaTest.cpp - checks and default resolution ------------------------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "TestHelpers.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace mhac;
using mhac::testing::FrontendRun;

namespace {

/// Wraps entries into one layer named `l`.
std::string layer(const std::string &entries) { return "layer l {\n" + entries + "}\n"; }

/// The one error `entries` should produce, or a failure naming what was printed instead.
::testing::AssertionResult failsWith(const std::string &entries, const std::string &message) {
  FrontendRun run(layer(entries));
  std::string text = run.messages.str();
  if (run.layers)
    return ::testing::AssertionFailure() << "accepted:\n" << entries;
  if (text.find(message) == std::string::npos)
    return ::testing::AssertionFailure() << "expected '" << message << "' in:\n" << text;
  return ::testing::AssertionSuccess();
}

const char *kBase = "  model_dim = 768\n  heads = 12\n  seq = 128\n";

} // namespace

TEST(SemaTest, ResolvesSpecDefaults) {
  FrontendRun run(layer(kBase));
  ASSERT_TRUE(run.layers) << run.messages.str();
  const LayerSpec &spec = run.layers->front();
  EXPECT_EQ(spec.name, "l");
  EXPECT_EQ(spec.modelDim, 768);
  EXPECT_EQ(spec.heads, 12);
  EXPECT_EQ(spec.headDim, 64);
  EXPECT_EQ(spec.kvHeads, 12);
  EXPECT_EQ(spec.seq, 128);
  EXPECT_EQ(spec.batch, kDynamicSize);
  EXPECT_EQ(spec.kvSeq, 128);
  EXPECT_EQ(spec.kvDim, 768);
  EXPECT_FALSE(spec.cross);
  EXPECT_FALSE(spec.causal);
  EXPECT_FALSE(spec.kvLens);
  EXPECT_TRUE(spec.bias);
  EXPECT_EQ(spec.dtype, DType::F32);
  EXPECT_DOUBLE_EQ(spec.scale, 0.125);
}

TEST(SemaTest, ReadsEveryKey) {
  FrontendRun run(layer("  model_dim = 96\n  heads = 6\n  head_dim = 20\n  kv_heads = 3\n"
                        "  seq = ?\n  batch = 2\n  cross = true\n  kv_seq = 7\n  kv_dim = 50\n"
                        "  causal = true\n  kv_lens = true\n  bias = false\n  dtype = bf16\n"
                        "  scale = 2\n"));
  ASSERT_TRUE(run.layers) << run.messages.str();
  const LayerSpec &spec = run.layers->front();
  EXPECT_EQ(spec.headDim, 20);
  EXPECT_EQ(spec.kvHeads, 3);
  EXPECT_EQ(spec.seq, kDynamicSize);
  EXPECT_EQ(spec.batch, 2);
  EXPECT_TRUE(spec.cross);
  EXPECT_EQ(spec.kvSeq, 7);
  EXPECT_EQ(spec.kvDim, 50);
  EXPECT_TRUE(spec.causal);
  EXPECT_TRUE(spec.kvLens);
  EXPECT_FALSE(spec.bias);
  EXPECT_EQ(spec.dtype, DType::BF16);
  EXPECT_DOUBLE_EQ(spec.scale, 2.0);
}

TEST(SemaTest, HeadDimNeedNotDivideModelDim) {
  FrontendRun run(layer("  model_dim = 100\n  heads = 3\n  head_dim = 80\n  seq = 1\n"));
  ASSERT_TRUE(run.layers) << run.messages.str();
  EXPECT_EQ(run.layers->front().headDim, 80);
  EXPECT_NEAR(run.layers->front().scale, 1 / std::sqrt(80.0), 1e-15);
}

TEST(SemaTest, SuggestsCloseKeysOnly) {
  std::string base = kBase;
  EXPECT_TRUE(failsWith(base + "  hedas = 2\n", "unknown key 'hedas'; did you mean 'heads'?"));
  EXPECT_TRUE(failsWith(base + "  kvheads = 2\n", "did you mean 'kv_heads'?"));
  EXPECT_TRUE(failsWith(base + "  dropout = 0\n", "unknown key 'dropout'\n"));
}

TEST(SemaTest, ReportsDuplicatesWithANote) {
  FrontendRun run(layer(std::string(kBase) + "  heads = 4\n"));
  EXPECT_FALSE(run.layers);
  std::string text = run.messages.str();
  EXPECT_NE(text.find("test.mha:5:3: error: duplicate key 'heads'"), std::string::npos);
  EXPECT_NE(text.find("test.mha:3:3: note: first given here"), std::string::npos);
}

TEST(SemaTest, ReportsMissingRequiredKeys) {
  FrontendRun run(layer("  heads = 2\n"));
  EXPECT_EQ(run.diags.errorCount(), 2u);
  std::string text = run.messages.str();
  EXPECT_NE(text.find("layer 'l' is missing required key 'model_dim'"), std::string::npos);
  EXPECT_NE(text.find("layer 'l' is missing required key 'seq'"), std::string::npos);
  EXPECT_TRUE(failsWith(std::string(kBase) + "  cross = true\n", "missing required key 'kv_seq'"));
}

TEST(SemaTest, ChecksValueTypes) {
  std::string base = "  model_dim = 768\n  seq = 128\n";
  EXPECT_TRUE(
      failsWith(base + "  heads = 1.5\n", "'heads' expects a positive integer, found decimal 1.5"));
  EXPECT_TRUE(
      failsWith(base + "  heads = ?\n", "only batch, seq and kv_seq may be given at run time"));
  EXPECT_TRUE(failsWith(base + "  heads = twelve\n", "found identifier 'twelve'"));
  std::string full = kBase;
  EXPECT_TRUE(
      failsWith(full + "  causal = 1\n", "'causal' expects true or false, found integer 1"));
  EXPECT_TRUE(failsWith(full + "  dtype = f16\n", "unknown dtype 'f16'; expected f32 or bf16"));
  EXPECT_TRUE(failsWith(full + "  dtype = 32\n", "'dtype' expects f32 or bf16, found integer 32"));
  EXPECT_TRUE(failsWith(full + "  scale = true\n", "'scale' expects a positive number"));
  EXPECT_TRUE(failsWith(full + "  scale = -0.5\n", "'scale' must be a positive number"));
  EXPECT_TRUE(failsWith(full + "  scale = 1e300\n", "representable in f32"));
}

TEST(SemaTest, ChecksSizes) {
  EXPECT_TRUE(failsWith("  model_dim = 768\n  heads = 0\n  seq = 1\n",
                        "'heads' must be positive, found 0"));
  EXPECT_TRUE(failsWith("  model_dim = -768\n  heads = 12\n  seq = 1\n",
                        "'model_dim' must be positive, found -768"));
  EXPECT_TRUE(failsWith("  model_dim = 768\n  heads = 12\n  seq = 3000000000\n",
                        "'seq' is too large: 3000000000 (the limit is 2147483647)"));
  EXPECT_TRUE(failsWith("  model_dim = 770\n  heads = 12\n  seq = 1\n",
                        "model_dim (770) is not divisible by heads (12)"));
  EXPECT_TRUE(
      failsWith(std::string(kBase) + "  kv_heads = 5\n", "kv_heads (5) must divide heads (12)"));
  EXPECT_TRUE(
      failsWith(std::string(kBase) + "  kv_heads = 24\n", "kv_heads (24) must divide heads (12)"));
  EXPECT_TRUE(failsWith("  model_dim = 8\n  heads = 65536\n  head_dim = 65536\n  seq = 1\n",
                        "heads * head_dim (65536 * 65536) is too large"));
}

TEST(SemaTest, ChecksCrossAttentionKeys) {
  EXPECT_TRUE(failsWith(std::string(kBase) + "  kv_dim = 512\n",
                        "'kv_dim' is only allowed when cross = true"));
  EXPECT_TRUE(failsWith(std::string(kBase) + "  kv_seq = 64\n",
                        "kv_seq (64) must equal seq (128) in self-attention"));
  FrontendRun same(layer(std::string(kBase) + "  kv_seq = 128\n"));
  EXPECT_TRUE(same.layers) << same.messages.str();
}

TEST(SemaTest, ChecksLayerNames) {
  FrontendRun keyword("layer int {\n  model_dim = 8\n  heads = 2\n  seq = 1\n}\n");
  EXPECT_NE(keyword.messages.str().find("layer name 'int' is a C keyword"), std::string::npos);
  FrontendRun reserved("layer mhac_x {\n  model_dim = 8\n  heads = 2\n  seq = 1\n}\n");
  EXPECT_NE(reserved.messages.str().find("reserved for the runtime"), std::string::npos);
  FrontendRun twice("layer a {\n  model_dim = 8\n  heads = 2\n  seq = 1\n}\n"
                    "layer a {\n  model_dim = 8\n  heads = 2\n  seq = 1\n}\n");
  EXPECT_NE(twice.messages.str().find("test.mha:6:7: error: redefinition of layer 'a'"),
            std::string::npos);
  EXPECT_NE(twice.messages.str().find("test.mha:1:7: note: previous definition is here"),
            std::string::npos);
}

TEST(SemaTest, ReportsErrorsOfSeveralLayers) {
  FrontendRun run("layer a {\n  heads = 2\n  model_dim = 8\n  seq = 0\n}\n"
                  "layer b {\n  heads = 2\n  model_dim = 8\n  seq = 1\n  bias = 3\n}\n");
  EXPECT_EQ(run.diags.errorCount(), 2u) << run.messages.str();
}

TEST(SemaTest, ResolvesDecoderDefaults) {
  FrontendRun run(layer("  model_dim = 64\n  heads = 4\n  kv_heads = 2\n  seq = ?\n"
                        "  rope = interleaved\n  kv_cache = 32\n  qk_norm = rms\n"));
  ASSERT_TRUE(run.layers) << run.messages.str();
  const LayerSpec &spec = run.layers->front();
  EXPECT_EQ(spec.rope.kind, reference::RopeKind::Interleaved);
  EXPECT_EQ(spec.rope.base, 10000);
  EXPECT_EQ(spec.rope.dim, 16); // head_dim
  EXPECT_EQ(spec.rope.scaling, reference::RopeScaling::None);
  EXPECT_EQ(spec.kvCache, 32);
  EXPECT_TRUE(spec.causal); // the default with a cache
  EXPECT_EQ(spec.kvSeq, kDynamicSize); // cache_len + seq, known when the layer runs
  EXPECT_TRUE(spec.qkNorm);
  EXPECT_EQ(spec.qkNormEps, 1e-6);
  EXPECT_EQ(spec.window, 0);
  EXPECT_EQ(spec.softcap, 0);
  EXPECT_FALSE(spec.sinks);

  FrontendRun noncausal(layer("  model_dim = 64\n  heads = 4\n  seq = ?\n  kv_cache = 8\n"
                              "  causal = false\n  window = 3\n  softcap = 30.0\n  sinks = true\n"));
  ASSERT_TRUE(noncausal.layers) << noncausal.messages.str();
  const LayerSpec &other = noncausal.layers->front();
  EXPECT_FALSE(other.causal);
  EXPECT_EQ(other.window, 3);
  EXPECT_EQ(other.softcap, 30);
  EXPECT_TRUE(other.sinks);
}

TEST(SemaTest, ResolvesYarnDefaults) {
  FrontendRun run(layer("  model_dim = 64\n  heads = 4\n  seq = ?\n  rope = half\n"
                        "  rope_dim = 8\n  rope_scaling = yarn\n  rope_factor = 32.0\n"
                        "  rope_original_max = 4096\n"));
  ASSERT_TRUE(run.layers) << run.messages.str();
  const reference::RopeParameters &rope = run.layers->front().rope;
  EXPECT_EQ(rope.dim, 8);
  EXPECT_EQ(rope.factor, 32);
  EXPECT_EQ(rope.originalMax, 4096);
  EXPECT_EQ(rope.betaFast, 32);
  EXPECT_EQ(rope.betaSlow, 1);
  EXPECT_TRUE(rope.truncate);
  EXPECT_EQ(rope.attentionFactor, 0); // the scaling's own: 0.1 ln(factor) + 1
}

TEST(SemaTest, ChecksDecoderCombinations) {
  const std::string self = "  model_dim = 64\n  heads = 4\n  seq = 8\n";
  EXPECT_TRUE(failsWith(self + "  kv_cache = 4\n", "seq (8) is larger than kv_cache (4)"));
  EXPECT_TRUE(failsWith(self + "  kv_cache = 16\n  kv_lens = true\n",
                        "kv_lens cannot be combined with kv_cache"));
  EXPECT_TRUE(failsWith(self + "  rope_base = 500000.0\n",
                        "'rope_base' configures rotary embeddings, which this layer does not have"));
  EXPECT_TRUE(failsWith(self + "  rope = half\n  rope_dim = 5\n", "rope_dim (5) must be even"));
  EXPECT_TRUE(failsWith(self + "  rope = half\n  rope_scaling = linear\n",
                        "rope_scaling = linear needs 'rope_factor'"));
  EXPECT_TRUE(failsWith(self + "  softcap = 0.0\n", "'softcap' must be a positive number"));
  EXPECT_TRUE(failsWith("  model_dim = 64\n  heads = 4\n  seq = 8\n  cross = true\n"
                        "  kv_seq = 8\n  rope = half\n",
                        "which only self-attention has"));
}
