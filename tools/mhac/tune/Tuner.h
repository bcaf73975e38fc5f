//===- Tuner.h - mhac tune: search a faster schedule for a layer -*- C++ -*-===//
//
// Part of mhac. The search, within a hard time budget on a small machine:
//
//  1. calibration: the default schedule is compiled and measured (its probe also computes the
//     float64 reference once, for every later check);
//  2. the legal space around the default (SearchSpace.h), ranked by the cost model
//     (CostModel.h); the first ones are compiled, in parallel while nothing is timed, and
//     measured in rounds of successive halving, each keeping the faster half with twice the
//     samples;
//  3. the neighbours of the best, one knob at a time, until the budget's last part;
//  4. a final round that times the winner, the runner-up and the default interleaved: the
//     winner is adopted only when it beats the default by more than the measured noise.
//
// Every candidate is compiled by a child `mhac compile` and measured by a child
// `mha-run --measure`, which checks it before timing it. The schedule file and the tuning
// database are written atomically.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_TOOLS_MHAC_TUNE_TUNER_H
#define MHAC_TOOLS_MHAC_TUNE_TUNER_H

#include "tools/mhac/CommandLine.h"

namespace mhac {

/// Runs `mhac tune`; returns the exit status (0, 1 on an error, 2 on a misuse).
int tune(const TuneOptions &options);

} // namespace mhac

#endif // MHAC_TOOLS_MHAC_TUNE_TUNER_H
