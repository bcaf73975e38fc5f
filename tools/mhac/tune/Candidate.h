//===- Candidate.h - one schedule the tuner tries, and what it measured -*- C++ -*-===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_TOOLS_MHAC_TUNE_CANDIDATE_H
#define MHAC_TOOLS_MHAC_TUNE_CANDIDATE_H

#include "compiler/schedules/Schedule.h"

#include <string>
#include <vector>

namespace mhac {

/// How far a candidate got.
enum class CandidateStatus {
  Proposed,      ///< ranked, not compiled
  Built,         ///< compiled, not yet measured
  CompileFailed, ///< mhac compile failed or timed out
  Crashed,       ///< its probe died on a signal
  TimedOut,      ///< its probe outlived its limit
  Wrong,         ///< wrong results, or other bits on N threads than on one
  Measured,
};

const char *statusName(CandidateStatus status);

struct Candidate {
  int id = 0;
  Schedule schedule;
  std::string origin;   ///< "default", "model", "neighbour of #3", "database", ...
  double predicted = 0; ///< the cost model's estimate, over the default's
  CandidateStatus status = CandidateStatus::Proposed;
  std::string reason; ///< why it failed
  double compileSeconds = 0;
  /// Per-call times of every sample, in ms; the final round's are kept apart.
  std::vector<double> samplesMs, finalSamplesMs;
  /// Each probe's median over the default's median measured just before it: comparisons are
  /// made on these, so that a machine that slows down or speeds up during the session does not
  /// rank candidates by when they ran. The final round's decide the winner.
  std::vector<double> ratios, finalRatios;
  int rounds = 0; ///< rounds it was measured in

  bool failed() const {
    return status == CandidateStatus::CompileFailed || status == CandidateStatus::Crashed ||
           status == CandidateStatus::TimedOut || status == CandidateStatus::Wrong;
  }
  bool measured() const { return status == CandidateStatus::Measured; }
};

/// The median of `values` (empty: 0).
double median(std::vector<double> values);
/// The interquartile range of `values` over their median: the noise of a measurement.
double relativeSpread(std::vector<double> values);

} // namespace mhac

#endif // MHAC_TOOLS_MHAC_TUNE_CANDIDATE_H
