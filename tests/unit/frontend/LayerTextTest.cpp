//===- LayerTextTest.cpp - a checked layer, printed back as source --------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "TestHelpers.h"

#include "compiler/frontend/LayerText.h"

#include <gtest/gtest.h>

using namespace mhac;
using mhac::testing::FrontendRun;

namespace {

bool sameLayer(const LayerSpec &a, const LayerSpec &b) {
  return a.name == b.name && a.modelDim == b.modelDim && a.heads == b.heads &&
         a.headDim == b.headDim && a.kvHeads == b.kvHeads && a.seq == b.seq &&
         a.batch == b.batch && a.kvSeq == b.kvSeq && a.kvDim == b.kvDim && a.cross == b.cross &&
         a.causal == b.causal && a.kvLens == b.kvLens && a.bias == b.bias && a.dtype == b.dtype &&
         a.scale == b.scale && a.kvCache == b.kvCache && a.window == b.window &&
         a.rope.enabled() == b.rope.enabled();
}

} // namespace

TEST(LayerTextTest, PrintedLayersReadBackAsTheSameLayers) {
  FrontendRun run("layer a { model_dim = 96\n heads = 6\n seq = ? }\n"
                  "layer b { model_dim = 64\n heads = 4\n kv_heads = 2\n head_dim = 24\n"
                  "  cross = true\n kv_seq = 7\n kv_dim = 40\n seq = 5\n batch = 3\n"
                  "  causal = true\n kv_lens = true\n bias = false\n dtype = bf16\n"
                  "  scale = 0.1 }\n"
                  // A decoder layer: read back without the kv_lens its cache excludes.
                  "layer c { model_dim = 64\n heads = 4\n kv_heads = 2\n seq = ?\n"
                  "  rope = half\n window = 16\n kv_cache = 32 }\n");
  ASSERT_TRUE(run.layers) << run.messages.str();
  for (const LayerSpec &layer : *run.layers) {
    FrontendRun again(printLayer(layer));
    ASSERT_TRUE(again.layers) << again.messages.str() << printLayer(layer);
    ASSERT_EQ(again.layers->size(), 1u);
    EXPECT_TRUE(sameLayer(layer, again.layers->front())) << printLayer(layer);
  }
}

TEST(LayerTextTest, TheFingerprintIgnoresTheNameAndHowTheSourceWasWritten) {
  FrontendRun run("layer qqq { model_dim = 64\n heads = 4\n seq = 9 }\n"
                  "layer b { heads = 4\n seq = 9\n model_dim = 64\n head_dim = 16\n kv_heads = 4\n"
                  "  bias = true\n scale = 0.25 }\n"
                  "layer c { model_dim = 64\n heads = 4\n seq = 10 }\n");
  ASSERT_TRUE(run.layers) << run.messages.str();
  const std::vector<LayerSpec> &layers = *run.layers;
  EXPECT_EQ(layerFingerprint(layers[0]), layerFingerprint(layers[1]));
  EXPECT_NE(layerFingerprint(layers[0]), layerFingerprint(layers[2]));
  EXPECT_EQ(layerFingerprint(layers[0]).find("qqq"), std::string::npos);
}
