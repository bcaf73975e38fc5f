//===- SearchSpace.h - legal schedules around a default ---------*- C++ -*-===//
//
// Part of mhac. The schedules a search visits, drawn from the knob and constraint tables
// (Knobs.h) alone: every schedule these functions return is legal for the layer, and the same
// seed gives the same schedules on every machine.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_COMPILER_TUNING_SEARCHSPACE_H
#define MHAC_COMPILER_TUNING_SEARCHSPACE_H

#include "compiler/schedules/Knobs.h"

#include <cstdint>
#include <random>
#include <vector>

namespace mhac {

/// A uniform draw from [0, n), the same on every standard library (unlike
/// std::uniform_int_distribution), so that a seed names the same schedules everywhere.
size_t drawIndex(std::mt19937_64 &random, size_t n);

/// Where a random move may take an integer knob.
enum class WalkRange {
  Anywhere, ///< any legal value (tests: reaches every corner of the space)
  Near,     ///< a legal value within a factor of two of the current one (searches)
};

/// `steps` random moves from `start`, a legal schedule: each gives one of `backend`'s knobs a
/// random value among those the rules allow with the other knobs as they are (within `range`),
/// so the result is legal too.
Schedule randomWalk(Schedule start, const KnobContext &context, std::mt19937_64 &random, int steps,
                    WalkRange range = WalkRange::Anywhere, Backend backend = Backend::Mlir);

/// The legal schedules one knob away from `center`: for every knob in table order, its legal
/// values next to the current one (the one below and the one above; every other value of a
/// boolean or a choice).
std::vector<Schedule> neighbours(const Schedule &center, const KnobContext &context);

/// The schedules a search starts from, without duplicates, in a fixed order: `start`, its
/// neighbours (the next `neighbours` schedules), then random walks from it.
struct CandidatePool {
  std::vector<Schedule> schedules;
  size_t neighbours = 0;
};

/// The pool around `start`, with `walks` random walks drawn with `seed`.
CandidatePool candidatePool(const Schedule &start, const KnobContext &context, uint64_t seed,
                            size_t walks);

} // namespace mhac

#endif // MHAC_COMPILER_TUNING_SEARCHSPACE_H
