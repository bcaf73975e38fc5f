//===- AttentionPipeline.h - a layer as two Halide pipelines ----*- C++ -*-===//
//
// Part of mhac. The algorithm of section "What a layer computes" of docs/language.md in
// Halide: a preparation pipeline that transposes the weights once into the layout the
// projections read, and a run pipeline of four projections and attention with a two-pass
// softmax over blocks of query rows (buffers grow with the key count, never with S x Skv).
// The schedule is applied separately (HalideScheduling.h), so that an autoscheduler can take
// its place.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_TOOLS_MHAC_HALIDE_ATTENTIONPIPELINE_H
#define MHAC_TOOLS_MHAC_HALIDE_ATTENTIONPIPELINE_H

#include "tools/mhac-halide/GeneratorInput.h"

#include "Halide.h"

#include <string>
#include <vector>

namespace mhac::halide {

/// One parameter in the prepared block: f32, of `shape` (outermost first), row-major.
struct PreparedTensor {
  std::string name; ///< wq, bq, ...
  std::vector<int64_t> shape;
};

/// A projection y(c, r, b) = bias(c) + sum_k input(k, r, b) * w(c, k), with its accumulator.
struct ProjectionFuncs {
  Halide::Func result, accumulator;
  Halide::RVar reduction;
};

/// The run pipeline's stages, for the schedule.
struct RunFuncs {
  ProjectionFuncs query, key, value, output;
  /// Keys in panels of one score tile's width, [key / width][feature][key % width], so that a
  /// score tile's reduction reads its keys contiguously.
  Halide::Func keyPanels;
  Halide::Func scoreAccumulator, scores;
  Halide::Func laneMax, rowMax, probabilities, laneSum, rowSum;
  Halide::Func valueAccumulator, attention, out;
  Halide::RVar headFeature, keyChunk, keyIndex;
};

struct AttentionPipeline {
  Halide::Pipeline run, prepare;
  std::vector<Halide::Argument> runArguments, prepareArguments;
  RunFuncs funcs;
  /// The prepare pipeline's outputs, in the order of its output buffers.
  std::vector<PreparedTensor> prepared;
};

/// Builds both pipelines for `layer`. `lanes` (f32 per vector) and `schedule` decide the
/// prepared weights' layout: panels as wide as a register tile, contiguous along the
/// reduction, and padded with zero features, since tiles may run past a projection's last
/// feature.
AttentionPipeline buildAttentionPipeline(const LayerShape &layer, const HalideSchedule &schedule,
                                         int lanes);

} // namespace mhac::halide

#endif // MHAC_TOOLS_MHAC_HALIDE_ATTENTIONPIPELINE_H
