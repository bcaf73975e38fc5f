//===- SafetensorsFuzzer.cpp - libFuzzer target for the .safetensors reader -===//
//
// Part of mhac. Feeds arbitrary bytes to the .safetensors reader and what it accepts to the
// weight resolver, with a few small layer shapes. Besides crashes and sanitizer reports, a
// finding is an error that is not one line naming the file, or an accepted tensor whose storage
// does not match its shape.
//
//===----------------------------------------------------------------------===//

#include "runtime/io/Safetensors.h"
#include "runtime/io/Weights.h"

#include <cstdio>
#include <cstdlib>

using namespace mhac::io;

namespace {

const char *const kName = "fuzz.safetensors";

[[noreturn]] void finding(const char *what, const std::string &detail) {
  std::fprintf(stderr, "safetensors-fuzzer: %s: %s\n", what, detail.c_str());
  std::abort();
}

template <typename Result> bool check(const Result &result) {
  if (result)
    return true;
  if (result.error().rfind(std::string(kName) + ": ", 0) != 0 ||
      result.error().find('\n') != std::string::npos)
    finding("malformed error message", result.error());
  return false;
}

void checkTensor(const HostTensor &tensor) {
  if (!tensor.isConsistent())
    finding("inconsistent tensor", formatShape(tensor.shape));
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  SafetensorsOptions convert;
  convert.convertBF16ToF32 = true;
  Expected<TensorMap> raw = readSafetensors(data, size, kName);
  Expected<TensorMap> converted = readSafetensors(data, size, kName, convert);
  if (bool(raw) != bool(converted))
    finding("conversion changed acceptance", raw ? converted.error() : raw.error());
  if (!check(raw))
    return 0;
  for (const auto &entry : *raw)
    checkTensor(entry.second);
  for (const auto &entry : *converted) {
    checkTensor(entry.second);
    if (entry.second.dtype == DType::BF16)
      finding("BF16 tensor not converted", entry.first);
  }

  // Self-attention with D = 2 (which also admits PyTorch's names), with and without biases,
  // a decoder layer with q/k norm and sinks, and a grouped-query cross-attention layer.
  WeightExpectation layers[4];
  layers[0].q = layers[0].k = layers[0].v = layers[0].o = {2, 2};
  layers[1] = layers[0];
  layers[1].hasBias = false;
  layers[2] = layers[0];
  layers[2].normWidth = 2;
  layers[2].sinks = 1;
  layers[3].q = {2, 3};
  layers[3].k = layers[3].v = {1, 2};
  layers[3].o = {3, 2};
  for (const WeightExpectation &layer : layers) {
    Expected<LayerWeights> weights = resolveWeights(*raw, layer, kName);
    if (!check(weights))
      continue;
    for (const Projection *p : {&weights->q, &weights->k, &weights->v, &weights->o}) {
      checkTensor(p->weight);
      if (p->weight.dtype != DType::F32 || bool(p->bias) != layer.hasBias)
        finding("resolved weights are not what was asked", "");
      if (p->bias)
        checkTensor(*p->bias);
    }
  }
  return 0;
}
