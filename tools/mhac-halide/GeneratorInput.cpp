//===- GeneratorInput.cpp - what mhac asks mhac-halide to build -----------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "tools/mhac-halide/GeneratorInput.h"

#include <cerrno>
#include <cstdlib>
#include <functional>

namespace mhac::halide {

std::optional<GeneratorInput> parseGeneratorInput(int argc, char **argv, std::string &error) {
  GeneratorInput input;
  LayerShape &layer = input.layer;
  HalideSchedule &schedule = input.schedule;
  auto integer = [](int64_t &field) {
    return [&field](const std::string &text) {
      char *end = nullptr;
      errno = 0;
      long long value = std::strtoll(text.c_str(), &end, 10);
      field = value;
      return errno == 0 && !text.empty() && *end == '\0';
    };
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
      {"halide_autoscheduler", string(input.autoscheduler)},
      {"bitcode", string(input.bitcodePath)},
      {"prepare_bitcode", string(input.prepareBitcodePath)},
      {"schedule_out", string(input.schedulePath)},
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
      {"halide_projection_vectors", integer(schedule.projectionVectors)},
      {"halide_projection_rows", integer(schedule.projectionRows)},
      {"halide_projection_task_rows", integer(schedule.projectionTaskRows)},
      {"halide_projection_reduction_block", integer(schedule.projectionReductionBlock)},
      {"halide_query_block", integer(schedule.queryBlock)},
      {"halide_score_vectors", integer(schedule.scoreVectors)},
      {"halide_score_rows", integer(schedule.scoreRows)},
      {"halide_value_vectors", integer(schedule.valueVectors)},
      {"halide_value_rows", integer(schedule.valueRows)},
      {"halide_key_block", integer(schedule.keyBlock)},
  };
  for (int i = 1; i < argc; ++i) {
    std::string word = argv[i];
    size_t equals = word.find('=');
    auto key = keys.find(word.substr(0, equals));
    if (equals == std::string::npos || key == keys.end()) {
      error = "unknown argument '" + word + "'";
      return std::nullopt;
    }
    if (!key->second(word.substr(equals + 1))) {
      error = "bad value in '" + word + "'";
      return std::nullopt;
    }
  }
  for (int64_t knob :
       {schedule.projectionVectors, schedule.projectionRows, schedule.projectionTaskRows,
        schedule.projectionReductionBlock, schedule.queryBlock, schedule.scoreVectors,
        schedule.scoreRows, schedule.valueVectors, schedule.valueRows, schedule.keyBlock})
    if (knob < 1) {
      error = "every halide_* knob must be given, and positive";
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
