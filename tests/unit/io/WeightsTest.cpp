//===- WeightsTest.cpp - resolving a layer's weights by name --------------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "runtime/io/Weights.h"

#include "tests/unit/io/TestFiles.h"

#include <gtest/gtest.h>

#include <numeric>

using namespace mhac::io;
using namespace mhac::io::testing;

namespace {

const char *const kFile = "weights.safetensors";

/// Values start, start + 1, ... so that every element tells where it came from.
std::vector<float> iota(size_t count, float start) {
  std::vector<float> values(count);
  std::iota(values.begin(), values.end(), start);
  return values;
}

HostTensor f32(std::vector<int64_t> shape, float start = 0) {
  size_t count = static_cast<size_t>(*checkedElementCount(shape));
  return HostTensor::makeF32(std::move(shape), iota(count, start));
}

/// Self-attention with D = 4: every projection [4, 4].
WeightExpectation selfAttention(bool bias = true) {
  WeightExpectation expected;
  expected.q = expected.k = expected.v = expected.o = {4, 4};
  expected.hasBias = bias;
  return expected;
}

/// Grouped-query cross-attention: D = 8, H·Dh = 4, Hkv·Dh = 2, kv_dim = 6.
WeightExpectation crossAttention() {
  WeightExpectation expected;
  expected.q = {4, 8};
  expected.k = expected.v = {2, 6};
  expected.o = {8, 4};
  return expected;
}

/// mhac's own names for `expected`, each tensor counting up from a distinct start.
TensorMap nativeTensors(const WeightExpectation &expected) {
  TensorMap tensors;
  const char *names[] = {"q", "k", "v", "o"};
  const ProjectionShape *shapes[] = {&expected.q, &expected.k, &expected.v, &expected.o};
  for (int i = 0; i < 4; ++i) {
    std::string prefix = std::string(names[i]) + "_proj.";
    tensors[prefix + "weight"] =
        f32({shapes[i]->outFeatures, shapes[i]->inFeatures}, 1000.0f * float(i));
    if (expected.hasBias)
      tensors[prefix + "bias"] = f32({shapes[i]->outFeatures}, 1000.0f * float(i) + 500);
  }
  return tensors;
}

/// nn.MultiheadAttention(4, heads).state_dict(), renamed nothing.
TensorMap pytorchTensors(bool bias = true) {
  TensorMap tensors;
  tensors["in_proj_weight"] = f32({12, 4});
  tensors["out_proj.weight"] = f32({4, 4}, 100);
  if (bias) {
    tensors["in_proj_bias"] = f32({12}, 200);
    tensors["out_proj.bias"] = f32({4}, 300);
  }
  return tensors;
}

} // namespace

TEST(WeightsTest, ResolvesSpecNames) {
  WeightExpectation expected = crossAttention();
  Expected<LayerWeights> weights = resolveWeights(nativeTensors(expected), expected, kFile);
  ASSERT_TRUE(weights) << weights.error();
  EXPECT_FALSE(weights->fromPyTorchNames);
  EXPECT_EQ(weights->q.weight.shape, (std::vector<int64_t>{4, 8}));
  EXPECT_EQ(weights->k.weight.shape, (std::vector<int64_t>{2, 6}));
  EXPECT_EQ(weights->o.weight.shape, (std::vector<int64_t>{8, 4}));
  EXPECT_EQ(weights->v.weight.f32.front(), 2000.0f);
  ASSERT_TRUE(weights->o.bias);
  EXPECT_EQ(weights->o.bias->shape, std::vector<int64_t>{8});
  EXPECT_EQ(weights->o.bias->f32, iota(8, 3500));
}

TEST(WeightsTest, ResolvesSpecNamesWithoutBiases) {
  WeightExpectation expected = selfAttention(/*bias=*/false);
  Expected<LayerWeights> weights = resolveWeights(nativeTensors(expected), expected, kFile);
  ASSERT_TRUE(weights) << weights.error();
  EXPECT_FALSE(weights->q.bias);
  EXPECT_FALSE(weights->o.bias);
  EXPECT_EQ(weights->k.weight.f32, iota(16, 1000));
}

TEST(WeightsTest, SplitsPyTorchInProjection) {
  Expected<LayerWeights> weights = resolveWeights(pytorchTensors(), selfAttention(), kFile);
  ASSERT_TRUE(weights) << weights.error();
  EXPECT_TRUE(weights->fromPyTorchNames);
  // Rows [0, 4) are Wq, [4, 8) Wk, [8, 12) Wv.
  EXPECT_EQ(weights->q.weight.f32, iota(16, 0));
  EXPECT_EQ(weights->k.weight.f32, iota(16, 16));
  EXPECT_EQ(weights->v.weight.f32, iota(16, 32));
  EXPECT_EQ(weights->v.weight.shape, (std::vector<int64_t>{4, 4}));
  EXPECT_EQ(weights->o.weight.f32, iota(16, 100));
  ASSERT_TRUE(weights->q.bias && weights->k.bias && weights->v.bias && weights->o.bias);
  EXPECT_EQ(weights->q.bias->f32, iota(4, 200));
  EXPECT_EQ(weights->k.bias->f32, iota(4, 204));
  EXPECT_EQ(weights->v.bias->f32, iota(4, 208));
  EXPECT_EQ(weights->v.bias->shape, std::vector<int64_t>{4});
  EXPECT_EQ(weights->o.bias->f32, iota(4, 300));
}

TEST(WeightsTest, SplitsPyTorchInProjectionWithoutBiases) {
  Expected<LayerWeights> weights =
      resolveWeights(pytorchTensors(/*bias=*/false), selfAttention(/*bias=*/false), kFile);
  ASSERT_TRUE(weights) << weights.error();
  EXPECT_FALSE(weights->q.bias);
  EXPECT_EQ(weights->k.weight.f32, iota(16, 16));
}

TEST(WeightsTest, PyTorchNamesNeedSquareSelfAttention) {
  EXPECT_TRUE(failsWith(resolveWeights(pytorchTensors(), crossAttention(), kFile), kFile,
                        "PyTorch's 'in_proj_weight' names fit only self-attention"));
}

TEST(WeightsTest, ReportsMisshapedTensors) {
  WeightExpectation expected;
  expected.q = expected.k = expected.v = expected.o = {768, 768};
  TensorMap tensors = nativeTensors(expected);
  tensors["q_proj.weight"] = f32({768, 512});
  Expected<LayerWeights> weights = resolveWeights(tensors, expected, kFile);
  ASSERT_FALSE(weights);
  EXPECT_EQ(
      weights.error(),
      "weights.safetensors: tensor 'q_proj.weight' has shape [768, 512], expected [768, 768]");
}

TEST(WeightsTest, ReportsTransposedAndBadlyShapedBiases) {
  WeightExpectation expected = crossAttention();
  TensorMap transposed = nativeTensors(expected);
  transposed["o_proj.weight"] = f32({4, 8});
  EXPECT_TRUE(failsWith(resolveWeights(transposed, expected, kFile), kFile,
                        "tensor 'o_proj.weight' has shape [4, 8], expected [8, 4]"));
  TensorMap bias = nativeTensors(expected);
  bias["k_proj.bias"] = f32({1, 2});
  EXPECT_TRUE(failsWith(resolveWeights(bias, expected, kFile), kFile,
                        "tensor 'k_proj.bias' has shape [1, 2], expected [2]"));
  TensorMap packed = pytorchTensors();
  packed["in_proj_weight"] = f32({8, 4});
  EXPECT_TRUE(failsWith(resolveWeights(packed, selfAttention(), kFile), kFile,
                        "tensor 'in_proj_weight' has shape [8, 4], expected [12, 4]"));
}

TEST(WeightsTest, MissingBiasesBesideGivenOnesAreZeros) {
  // Hugging Face checkpoints of Qwen2 have q, k and v biases and none on o_proj.
  WeightExpectation expected = crossAttention();
  TensorMap tensors = nativeTensors(expected);
  tensors.erase("o_proj.bias");
  Expected<LayerWeights> weights = resolveWeights(tensors, expected, kFile);
  ASSERT_TRUE(weights) << weights.error();
  ASSERT_TRUE(weights->o.bias);
  EXPECT_EQ(weights->o.bias->shape, std::vector<int64_t>{expected.o.outFeatures});
  for (float value : weights->o.bias->f32)
    EXPECT_EQ(value, 0.0f);
  EXPECT_EQ(weights->k.bias->f32, tensors.at("k_proj.bias").f32);
}

TEST(WeightsTest, DecoderTensors) {
  WeightExpectation expected = crossAttention();
  expected.normWidth = 3;
  expected.sinks = 5;
  TensorMap tensors = nativeTensors(expected);
  EXPECT_TRUE(failsWith(resolveWeights(tensors, expected, kFile), kFile,
                        "missing tensor 'q_norm.weight' (expected shape [3])"));
  tensors["q_norm.weight"] = f32({3});
  tensors["k_norm.weight"] = f32({3});
  tensors["sinks"] = f32({4});
  EXPECT_TRUE(failsWith(resolveWeights(tensors, expected, kFile), kFile,
                        "tensor 'sinks' has shape [4], expected [5]"));
  tensors["sinks"] = f32({5});
  // A checkpoint's stored rotary frequencies are no weight: skipped.
  tensors["rotary_emb.inv_freq"] = f32({2});
  Expected<LayerWeights> weights = resolveWeights(tensors, expected, kFile);
  ASSERT_TRUE(weights) << weights.error();
  EXPECT_EQ(weights->qNorm->shape, std::vector<int64_t>{3});
  EXPECT_EQ(weights->sinks->shape, std::vector<int64_t>{5});
  // A layer without them takes none.
  EXPECT_TRUE(failsWith(resolveWeights(tensors, crossAttention(), kFile), kFile,
                        "unexpected tensor 'q_norm.weight': the layer has no qk_norm (qk_norm = "
                        "rms)"));
}

TEST(WeightsTest, RenamesPhiCheckpointTensors) {
  // Phi-3: q, k and v stacked by rows in qkv_proj [4 + 2 + 2, 6]; Phi: the output is `dense`.
  WeightExpectation expected;
  expected.q = {4, 6};
  expected.k = expected.v = {2, 6};
  expected.o = {6, 4};
  expected.hasBias = false;
  TensorMap tensors;
  tensors["qkv_proj.weight"] = f32({8, 6});
  tensors["dense.weight"] = f32({6, 4}, 1000);
  Expected<LayerWeights> weights = resolveWeights(tensors, expected, kFile);
  ASSERT_TRUE(weights) << weights.error();
  EXPECT_EQ(weights->q.weight.shape, (std::vector<int64_t>{4, 6}));
  EXPECT_EQ(weights->k.weight.f32.front(), 24); // row 4 of the stack
  EXPECT_EQ(weights->v.weight.f32.front(), 36); // row 6
  EXPECT_EQ(weights->o.weight.f32.front(), 1000);

  tensors["qkv_proj.weight"] = f32({9, 6});
  EXPECT_TRUE(failsWith(resolveWeights(tensors, expected, kFile), kFile,
                        "tensor 'qkv_proj.weight' has shape [9, 6], expected [8, 6] (q, k and v "
                        "stacked by rows)"));
  tensors["qkv_proj.weight"] = f32({8, 6});
  tensors["o_proj.weight"] = f32({6, 4});
  EXPECT_TRUE(failsWith(resolveWeights(tensors, expected, kFile), kFile,
                        "tensors 'dense.weight' and 'o_proj.weight' name the same projection"));
}

TEST(WeightsTest, ReportsMissingTensors) {
  WeightExpectation expected = crossAttention();
  TensorMap tensors = nativeTensors(expected);
  for (const char *bias : {"q_proj.bias", "k_proj.bias", "v_proj.bias", "o_proj.bias"})
    tensors.erase(bias);
  EXPECT_TRUE(failsWith(resolveWeights(tensors, expected, kFile), kFile,
                        "missing tensor 'q_proj.bias' (expected shape [4])"));
  EXPECT_TRUE(failsWith(resolveWeights(TensorMap{}, expected, kFile), kFile,
                        "missing tensor 'q_proj.weight' (expected shape [4, 8])"));
  TensorMap pytorch = pytorchTensors();
  pytorch.erase("out_proj.bias");
  EXPECT_TRUE(failsWith(resolveWeights(pytorch, selfAttention(), kFile), kFile,
                        "missing tensor 'out_proj.bias' (expected shape [4])"));
}

TEST(WeightsTest, SuggestsNamesForTypos) {
  WeightExpectation expected = selfAttention();
  struct Case {
    const char *wrong;
    const char *right;
  } cases[] = {
      {"q_proj.weigth", "q_proj.weight"},
      {"k_proj_weight", "k_proj.weight"}, // nn.MultiheadAttention's kdim/vdim spelling
      {"v_proj.bais", "v_proj.bias"},
      {"self_attn.o_proj.weight", "o_proj.weight"},
  };
  for (const Case &c : cases) {
    TensorMap tensors = nativeTensors(expected);
    tensors.erase(c.right);
    tensors[c.wrong] = f32({4});
    EXPECT_TRUE(failsWith(resolveWeights(tensors, expected, kFile), kFile,
                          std::string("unexpected tensor '") + c.wrong + "' (did you mean '" +
                              c.right + "'?)"))
        << c.wrong;
  }
  TensorMap pytorch = pytorchTensors();
  pytorch.erase("in_proj_weight");
  pytorch["in_proj_weights"] = f32({12, 4});
  EXPECT_TRUE(failsWith(resolveWeights(pytorch, selfAttention(), kFile), kFile,
                        "'in_proj_weights' (did you mean 'in_proj_weight'?)"));
}

TEST(WeightsTest, ReportsUnknownExtraTensors) {
  WeightExpectation expected = selfAttention();
  TensorMap tensors = nativeTensors(expected);
  tensors["bias_k"] = f32({1, 1, 4});
  Expected<LayerWeights> one = resolveWeights(tensors, expected, kFile);
  ASSERT_FALSE(one);
  EXPECT_EQ(one.error(), "weights.safetensors: unexpected tensor 'bias_k'");

  for (int i = 0; i < 6; ++i)
    tensors["extra" + std::to_string(i)] = f32({1});
  EXPECT_TRUE(failsWith(resolveWeights(tensors, expected, kFile), kFile,
                        "unexpected tensors 'bias_k', 'extra0', 'extra1', 'extra2' and 3 more"));
}

TEST(WeightsTest, RejectsBiasesOfLayersWithout) {
  WeightExpectation expected = selfAttention(/*bias=*/false);
  TensorMap tensors = nativeTensors(expected);
  tensors["o_proj.bias"] = f32({4});
  EXPECT_TRUE(failsWith(resolveWeights(tensors, expected, kFile), kFile,
                        "unexpected tensor 'o_proj.bias': the layer has no biases (bias = false)"));
  EXPECT_TRUE(failsWith(resolveWeights(pytorchTensors(), expected, kFile), kFile,
                        "the layer has no biases"));
}

TEST(WeightsTest, RejectsMixedNamingSchemes) {
  WeightExpectation expected = selfAttention();
  TensorMap tensors = nativeTensors(expected);
  tensors["out_proj.weight"] = f32({4, 4});
  EXPECT_TRUE(failsWith(resolveWeights(tensors, expected, kFile), kFile,
                        "tensors 'q_proj.weight' and 'out_proj.weight' mix two naming schemes"));
}

TEST(WeightsTest, ChecksDtypes) {
  WeightExpectation expected = selfAttention(/*bias=*/false);
  TensorMap tensors = nativeTensors(expected);
  HostTensor bf16;
  bf16.dtype = DType::BF16;
  bf16.shape = {4, 4};
  bf16.bf16.assign(16, 0x3f80); // 1.0
  tensors["v_proj.weight"] = bf16;
  // BF16 weights widen exactly (a bf16 checkpoint serves an f32 layer as it is).
  Expected<LayerWeights> weights = resolveWeights(tensors, expected, kFile);
  ASSERT_TRUE(weights) << weights.error();
  EXPECT_EQ(weights->v.weight.dtype, DType::F32);
  EXPECT_EQ(weights->v.weight.f32, std::vector<float>(16, 1.0f));
  EXPECT_EQ(weights->q.weight.dtype, DType::F32);

  tensors["v_proj.weight"] = HostTensor::makeI32({4, 4}, std::vector<int32_t>(16, 1));
  EXPECT_TRUE(failsWith(resolveWeights(tensors, expected, kFile), kFile,
                        "tensor 'v_proj.weight' has dtype I32, expected BF16 or F32"));
}

TEST(WeightsTest, LoadsFiles) {
  TempDir dir;
  std::string path = dir.file("weights.safetensors");
  std::vector<Entry> entries;
  for (const char *name : {"in_proj_weight", "out_proj.weight"})
    entries.push_back(
        {name, "F32", {name[0] == 'i' ? 12 : 4, 4}, f32Bytes(iota(name[0] == 'i' ? 48 : 16, 1))});
  entries.push_back({"in_proj_bias", "BF16", {12}, bf16Bytes(std::vector<uint16_t>(12, 0x4000))});
  entries.push_back({"out_proj.bias", "F32", {4}, f32Bytes({1, 2, 3, 4})});
  writeBytes(path, safetensorsOf(entries, "{\"format\":\"pt\"}"));

  WeightExpectation expected = selfAttention();
  Expected<LayerWeights> weights = loadWeightsFile(path, expected);
  ASSERT_TRUE(weights) << weights.error();
  EXPECT_EQ(weights->k.weight.f32, iota(16, 17));
  EXPECT_EQ(weights->v.bias->f32, std::vector<float>(4, 2.0f));
  EXPECT_TRUE(
      failsWith(loadWeightsFile(dir.file("none"), expected), dir.file("none"), "cannot open"));
}

TEST(WeightsTest, RejectsInvalidExpectations) {
  WeightExpectation expected = selfAttention();
  expected.k = {0, 4};
  EXPECT_TRUE(failsWith(resolveWeights(nativeTensors(selfAttention()), expected, kFile), kFile,
                        "invalid expected weight shape [0, 4]"));
}
