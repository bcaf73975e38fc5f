//===- LayerABITest.cpp - the C interface derived from a layer ------------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "compiler/target/LayerABI.h"

#include <gtest/gtest.h>

using namespace mhac;

namespace {

std::vector<std::string> tensorNames(const LayerABI &layer) {
  std::vector<std::string> names;
  for (const TensorABI &tensor : layer.tensors)
    names.push_back(tensor.name);
  return names;
}

LayerSpec selfAttention() {
  LayerSpec spec;
  spec.name = "encoder";
  spec.modelDim = 96;
  spec.heads = 6;
  spec.headDim = 16;
  spec.kvHeads = 2;
  spec.seq = kDynamicSize;
  spec.kvSeq = kDynamicSize;
  spec.kvDim = 96;
  spec.scale = 0.25;
  return spec;
}

TEST(LayerABI, SelfAttentionTensorsInArgumentOrder) {
  LayerABI layer = describeLayer(selfAttention());
  EXPECT_EQ(tensorNames(layer),
            (std::vector<std::string>{"x", "wq", "bq", "wk", "bk", "wv", "bv", "wo", "bo", "out"}));
  const TensorABI &x = layer.tensors.front();
  EXPECT_EQ(x.shape, (std::vector<int64_t>{kDynamicSize, kDynamicSize, 96}));
  EXPECT_EQ(x.dynamicAs,
            (std::vector<RuntimeSize>{RuntimeSize::Batch, RuntimeSize::Seq, RuntimeSize::None}));
  EXPECT_FALSE(x.isParameter);
  // Grouped-query: k and v are Hkv * Dh wide.
  EXPECT_EQ(findTensor(layer, "wk")->shape, (std::vector<int64_t>{32, 96}));
  EXPECT_EQ(findTensor(layer, "wo")->shape, (std::vector<int64_t>{96, 96}));
  EXPECT_TRUE(findTensor(layer, "bv")->isParameter);
  EXPECT_TRUE(layer.tensors.back().isOutput);
  EXPECT_TRUE(layer.hasDynamicSizes());
  EXPECT_FLOAT_EQ(layer.scale, 0.25f);
}

TEST(LayerABI, CrossAttentionWithKvLensAndNoBias) {
  LayerSpec spec = selfAttention();
  spec.cross = true;
  spec.kvDim = 40;
  spec.kvSeq = 7;
  spec.batch = 3;
  spec.seq = 5;
  spec.bias = false;
  spec.kvLens = true;
  spec.dtype = DType::BF16;
  LayerABI layer = describeLayer(spec);
  EXPECT_EQ(tensorNames(layer),
            (std::vector<std::string>{"x", "memory", "wq", "wk", "wv", "wo", "kv_lens", "out"}));
  EXPECT_EQ(findTensor(layer, "memory")->shape, (std::vector<int64_t>{3, 7, 40}));
  EXPECT_EQ(findTensor(layer, "wk")->shape, (std::vector<int64_t>{32, 40}));
  const TensorABI *kvLens = findTensor(layer, "kv_lens");
  EXPECT_TRUE(kvLens->isInt32);
  EXPECT_FALSE(kvLens->isParameter);
  EXPECT_EQ(kvLens->dynamicAs, (std::vector<RuntimeSize>{RuntimeSize::None}));
  EXPECT_TRUE(layer.bf16);
  EXPECT_FALSE(layer.hasDynamicSizes());
  EXPECT_EQ(findTensor(layer, "bq"), nullptr);
}

TEST(LayerABI, EntryPointsSplitParametersFromActivations) {
  LayerSpec spec = selfAttention();
  spec.kvLens = true;
  LayerABI layer = describeLayer(spec);
  // x, wq..bo, kv_lens, out
  EXPECT_EQ(entryPointers(layer, EntryKind::Run),
            (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
  EXPECT_EQ(entryPointers(layer, EntryKind::Prepare),
            (std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8, kPreparedBlock}));
  EXPECT_EQ(entryPointers(layer, EntryKind::RunPrepared),
            (std::vector<int>{0, kPreparedBlock, 9, 10}));
}

} // namespace
