//===- GeneratorInput.cpp - what mhac asks mhac-halide to build -----------===//
//
// Part of mhac. The layer's words are read here; the schedule's through mhac's knob table, the
// one description of their names and values, which mhac also prints them with.
//
//===----------------------------------------------------------------------===//

#include "tools/mhac-halide/GeneratorInput.h"

#include "compiler/schedules/Knobs.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <functional>
#include <set>

namespace mhac::halide {
namespace {

bool parseInteger(const std::string &text, int64_t &value) {
  char *end = nullptr;
  errno = 0;
  value = std::strtoll(text.c_str(), &end, 10);
  return errno == 0 && !text.empty() && *end == '\0';
}

/// Sets the Halide knob `k` of `schedule` from its spelling in a schedule file.
bool parseKnob(const Knob &k, const std::string &text, Schedule &schedule) {
  int64_t value = 0;
  if (k.type == KnobType::Choice) {
    auto found = std::find(k.choices.begin(), k.choices.end(), text);
    if (found == k.choices.end())
      return false;
    value = found - k.choices.begin();
  } else if (!parseInteger(text, value) || value < k.min || value > k.max) {
    return false;
  }
  k.set(schedule, value);
  return true;
}

} // namespace

std::optional<GeneratorInput> parseGeneratorInput(int argc, char **argv, std::string &error) {
  GeneratorInput input;
  LayerShape &layer = input.layer;
  auto integer = [](int64_t &field) {
    return [&field](const std::string &text) { return parseInteger(text, field); };
  };
  auto flag = [](bool &field) {
    return [&field](const std::string &text) {
      field = text == "1";
      return text == "0" || text == "1";
    };
  };
  auto string = [](std::string &field) {
    return [&field](const std::string &text) {
      field = text;
      return true;
    };
  };
  const std::map<std::string, std::function<bool(const std::string &)>> keys = {
      {"run", string(input.runName)},
      {"prepare", string(input.prepareName)},
      {"target", string(input.target)},
      {"bitcode", string(input.bitcodePath)},
      {"prepare_bitcode", string(input.prepareBitcodePath)},
      {"bf16", flag(layer.bf16)},
      {"model_dim", integer(layer.modelDim)},
      {"heads", integer(layer.heads)},
      {"head_dim", integer(layer.headDim)},
      {"kv_heads", integer(layer.kvHeads)},
      {"kv_dim", integer(layer.kvDim)},
      {"batch", integer(layer.batch)},
      {"seq", integer(layer.seq)},
      {"kv_seq", integer(layer.kvSeq)},
      {"cross", flag(layer.cross)},
      {"causal", flag(layer.causal)},
      {"kv_lens", flag(layer.kvLens)},
      {"bias", flag(layer.bias)},
      {"scale",
       [&layer](const std::string &text) {
         char *end = nullptr;
         layer.scale = std::strtof(text.c_str(), &end);
         return !text.empty() && *end == '\0' && layer.scale > 0;
       }},
  };
  std::set<KnobId> knobsGiven;
  for (int i = 1; i < argc; ++i) {
    std::string word = argv[i];
    size_t equals = word.find('=');
    std::string key = word.substr(0, equals), value = word.substr(equals + 1);
    const Knob *k = equals == std::string::npos ? nullptr : findKnob(key);
    auto field = keys.find(key);
    bool known = (k && k->backend == Backend::Halide) || field != keys.end();
    if (equals == std::string::npos || !known) {
      error = "unknown argument '" + word + "'";
      return std::nullopt;
    }
    bool parsed = k ? parseKnob(*k, value, input.schedule) : field->second(value);
    if (!parsed) {
      error = "bad value in '" + word + "'";
      return std::nullopt;
    }
    if (k)
      knobsGiven.insert(k->id);
  }
  if (knobsGiven.size() != backendKnobs(Backend::Halide).size()) {
    error = "every halide_* knob of the schedule must be given";
    return std::nullopt;
  }
  if (input.runName.empty() || input.prepareName.empty() || input.target.empty() ||
      input.bitcodePath.empty() || input.prepareBitcodePath.empty() || layer.modelDim < 1 ||
      layer.heads < 1 || layer.headDim < 1 || layer.kvHeads < 1 || layer.kvDim < 1 ||
      layer.heads % layer.kvHeads != 0 || layer.scale <= 0) {
    error = "incomplete layer: run, prepare, target, bitcode, prepare_bitcode, the sizes and scale "
            "are required";
    return std::nullopt;
  }
  return input;
}

} // namespace mhac::halide
