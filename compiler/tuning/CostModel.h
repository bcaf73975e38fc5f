//===- CostModel.h - a cheap analytic estimate of a schedule's time -*- C++ -*-===//
//
// Part of mhac. Ranks schedules before any is compiled: counts the FMAs of the four projections
// and of attention, and charges each for what the schedule makes it waste. The estimate only
// orders candidates (the tuner measures the ones it ranks first); it is in units of one core's
// FMA peak and is compared with measurements in the tuning report.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_COMPILER_TUNING_COSTMODEL_H
#define MHAC_COMPILER_TUNING_COSTMODEL_H

#include "compiler/frontend/LayerSpec.h"
#include "compiler/schedules/Schedule.h"
#include "compiler/target/CpuTarget.h"

#include <cstdint>

namespace mhac {

/// The sizes a layer is tuned for: its static sizes, and those given for its `?` dimensions.
struct TuningSizes {
  int64_t batch = 1, seq = 1, kvSeq = 1;
  /// A decoder layer's tokens already in its cache, which its calls' queries also see.
  int64_t cacheLen = 0;
};

/// The estimate, split by the factors the report shows.
struct CostEstimate {
  double projectionCycles = 0; ///< the four projections, on all threads
  double attentionCycles = 0;
  double cycles() const { return projectionCycles + attentionCycles; }
};

/// What one call of `layer` at `sizes` costs with `schedule` on `threads` threads of `target`,
/// in cycles of one core: FMAs over the FMA peak, divided by how well the register tiles hide
/// loads and latency, multiplied by the work edge tiles waste, by the imbalance of tasks over
/// threads, and by a penalty for a working set that overflows the L2 (or, for attention's
/// tiles, the L1).
CostEstimate estimateCost(const Schedule &schedule, const LayerSpec &layer,
                          const TuningSizes &sizes, const CpuTarget &target, int threads);

} // namespace mhac

#endif // MHAC_COMPILER_TUNING_COSTMODEL_H
