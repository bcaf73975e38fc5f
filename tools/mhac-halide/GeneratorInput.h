//===- GeneratorInput.h - what mhac asks mhac-halide to build ---*- C++ -*-===//
//
// Part of mhac. mhac-halide runs in a process of its own (libHalide carries its own LLVM), so
// the layer, its schedule and the target arrive on the command line as `key=value` words; see
// docs/design.md. Plain data: the pipeline and its schedule read only this.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_TOOLS_MHAC_HALIDE_GENERATORINPUT_H
#define MHAC_TOOLS_MHAC_HALIDE_GENERATORINPUT_H

#include "compiler/schedules/Schedule.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace mhac::halide {

/// A size given at run time.
inline constexpr int64_t kDynamic = -1;

/// The layer, as mhac's LayerSpec describes it.
struct LayerShape {
  bool bf16 = false;
  int64_t modelDim = 0, heads = 0, headDim = 0, kvHeads = 0, kvDim = 0;
  int64_t batch = kDynamic, seq = kDynamic, kvSeq = kDynamic;
  bool cross = false, causal = false, kvLens = false, bias = true;
  float scale = 0;
};

struct GeneratorInput {
  std::string runName;     ///< the run pipeline's function
  std::string prepareName; ///< the preparation pipeline's function
  std::string target;      ///< Halide's target string
  LayerShape layer;
  /// The schedule: its Halide knobs (halide_*), every one given; the others unused.
  Schedule schedule;
  std::string bitcodePath;        ///< where the run pipeline's LLVM bitcode goes
  std::string prepareBitcodePath; ///< and the preparation's (without Halide's runtime)
};

/// Reads `key=value` words. On a bad word, sets `error` and returns nothing.
std::optional<GeneratorInput> parseGeneratorInput(int argc, char **argv, std::string &error);

} // namespace mhac::halide

#endif // MHAC_TOOLS_MHAC_HALIDE_GENERATORINPUT_H
