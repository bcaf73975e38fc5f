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

/// A number that reads back as the same double.
std::string number(double value) { return fmt::format("{:.17g}", value); }

/// The decoder keys a layer has, after the others: the rotary embedding with the parameters
/// of its scaling, then the cache, window, softcap, q/k norm and sinks.
void appendDecoderKeys(const LayerSpec &spec,
                       std::vector<std::pair<const char *, std::string>> &keys) {
  const RopeSpec &rope = spec.rope;
  if (rope.enabled()) {
    keys.emplace_back("rope", rope.kind == RopeKind::Half ? "half" : "interleaved");
    keys.emplace_back("rope_base", number(rope.base));
    keys.emplace_back("rope_dim", size(rope.dim));
    const char *scaling[] = {"none", "linear", "llama3", "yarn"};
    keys.emplace_back("rope_scaling", scaling[static_cast<int>(rope.scaling)]);
    if (rope.scaling != RopeScaling::None)
      keys.emplace_back("rope_factor", number(rope.factor));
    if (rope.scaling == RopeScaling::Llama3) {
      keys.emplace_back("rope_low_freq_factor", number(rope.lowFreqFactor));
      keys.emplace_back("rope_high_freq_factor", number(rope.highFreqFactor));
    }
    if (rope.scaling == RopeScaling::Llama3 || rope.scaling == RopeScaling::Yarn)
      keys.emplace_back("rope_original_max", size(rope.originalMax));
    if (rope.scaling == RopeScaling::Yarn) {
      keys.emplace_back("rope_beta_fast", number(rope.betaFast));
      keys.emplace_back("rope_beta_slow", number(rope.betaSlow));
      keys.emplace_back("rope_truncate", flag(rope.truncate));
      if (rope.attentionFactor > 0)
        keys.emplace_back("rope_attention_factor", number(rope.attentionFactor));
    }
  }
  if (spec.kvCache)
    keys.emplace_back("kv_cache", size(spec.kvCache));
  if (spec.window)
    keys.emplace_back("window", size(spec.window));
  if (spec.softcap > 0)
    keys.emplace_back("softcap", number(spec.softcap));
  if (spec.qkNorm) {
    keys.emplace_back("qk_norm", "rms");
    keys.emplace_back("qk_norm_eps", number(spec.qkNormEps));
  }
  if (spec.sinks)
    keys.emplace_back("sinks", "true");
}

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
  };
  if (!spec.kvCache)
    result.emplace_back("kv_seq", size(spec.kvSeq));
  if (spec.cross)
    result.emplace_back("kv_dim", size(spec.kvDim));
  result.emplace_back("causal", flag(spec.causal));
  // A cache's lengths are its cache_len: the language refuses kv_lens beside kv_cache.
  if (!spec.kvCache)
    result.emplace_back("kv_lens", flag(spec.kvLens));
  result.emplace_back("bias", flag(spec.bias));
  result.emplace_back("dtype", dtypeName(spec.dtype));
  // Enough digits that the double reads back exactly.
  result.emplace_back("scale", number(spec.scale));
  appendDecoderKeys(spec, result);
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
