//===- Schedule.h - how a layer is tiled, as a value ------------*- C++ -*-===//
//
// Part of mhac. The schedule is data handed to the lowering: today a default per target,
// later parsed from a user's schedule file and searched by `mhac tune`.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_COMPILER_SCHEDULES_SCHEDULE_H
#define MHAC_COMPILER_SCHEDULES_SCHEDULE_H

#include "compiler/target/Target.h"

#include <array>
#include <cstdint>
#include <string>

namespace mhac {

/// Tiling of the projections, as matmuls [M = rows, N = out features, K = in features].
struct ProjectionSchedule {
  /// Cache tiles over [M, N]: the parallel tasks; their rows' inputs and one weight panel at a
  /// time stay in L2 while the register tiles pass over them.
  std::array<int64_t, 2> cacheTile = {258, 64};
  /// Register tiles over [M, N, K]: one vectorized micro-kernel step.
  std::array<int64_t, 3> registerTile = {6, 64, 1};
  /// Projections whose weights are not packed in panels (widths that are no whole number of
  /// panels) split a cache tile's reduction into blocks of this many input features; a panel
  /// register tile runs over the whole reduction.
  int64_t reductionBlock = 128;
  /// A panel register tile's reduction loop does this many steps per iteration (unrolled).
  int64_t reductionUnroll = 4;
};

/// Blocking of attention (see convert-mha-attention-to-loops).
struct AttentionSchedule {
  int64_t queryBlock = 48;
  /// Query rows of a block whose rows are the heads of a group (grouped-query layers): whole
  /// vectors of each head's positions let the block's queries transpose in square tiles.
  int64_t groupedQueryBlock = 64;
  int64_t keyBlock = 96;
  /// The target's f32 lanes per vector register, and how many registers a register tile's
  /// accumulators may fill (the rest hold the loaded and broadcast operands).
  int64_t vectorLanes = 16;
  int64_t accumulatorRegisters = 24;
  /// Vectors in a register tile's row: the score tile spans this many of the query block, the
  /// p.v tile this many of the head.
  int64_t tileVectors = 4;
};

struct Schedule {
  ProjectionSchedule projection;
  AttentionSchedule attention;
};

/// The schedule mhac uses for `target` when the user gives none.
Schedule defaultSchedule(const CpuTarget &target);

/// The transform-dialect script that tiles and vectorizes the linalg form of a layer (on
/// tensors, before bufferization): a module holding `@__transform_main`.
std::string buildTilingScript(const Schedule &schedule);

/// The transform-dialect script that finishes the vector code after bufferization: keeps the
/// register tiles' accumulators in registers across the reduction loop, lowers the vector
/// ops to the forms LLVM handles best and unrolls the panel register tiles' reductions.
std::string buildVectorLoweringScript(const Schedule &schedule);

} // namespace mhac

#endif // MHAC_COMPILER_SCHEDULES_SCHEDULE_H
