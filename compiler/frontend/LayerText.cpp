//===- LayerText.cpp - a checked layer, printed back as source ------------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "compiler/frontend/LayerText.h"

#include <fmt/format.h>

#include <utility>
#include <vector>

namespace mhac {
namespace {

std::string size(int64_t value) {
  return value == kDynamicSize ? "?" : std::to_string(value);
}

const char *flag(bool value) { return value ? "true" : "false"; }

/// Every key of `spec` with its value, in the order of docs/language.md's table.
std::vector<std::pair<const char *, std::string>> keys(const LayerSpec &spec) {
  std::vector<std::pair<const char *, std::string>> result = {
      {"model_dim", size(spec.modelDim)},
      {"heads", size(spec.heads)},
      {"head_dim", size(spec.headDim)},
      {"kv_heads", size(spec.kvHeads)},
      {"seq", size(spec.seq)},
      {"batch", size(spec.batch)},
      {"cross", flag(spec.cross)},
      {"kv_seq", size(spec.kvSeq)},
  };
  if (spec.cross)
    result.emplace_back("kv_dim", size(spec.kvDim));
  result.emplace_back("causal", flag(spec.causal));
  result.emplace_back("kv_lens", flag(spec.kvLens));
  result.emplace_back("bias", flag(spec.bias));
  result.emplace_back("dtype", dtypeName(spec.dtype));
  // Enough digits that the double reads back exactly.
  result.emplace_back("scale", fmt::format("{:.17g}", spec.scale));
  return result;
}

} // namespace

std::string printLayer(const LayerSpec &spec) {
  std::string text = fmt::format("layer {} {{\n", spec.name);
  for (const auto &[key, value] : keys(spec))
    text += fmt::format("  {} = {}\n", key, value);
  return text + "}\n";
}

std::string layerFingerprint(const LayerSpec &spec) {
  std::string text;
  for (const auto &[key, value] : keys(spec))
    text += fmt::format("{}{}={}", text.empty() ? "" : " ", key, value);
  return text;
}

} // namespace mhac
