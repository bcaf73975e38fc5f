//===- Candidate.cpp - one schedule the tuner tries -----------------------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "tools/mhac/tune/Candidate.h"

#include <algorithm>

namespace mhac {

const char *statusName(CandidateStatus status) {
  switch (status) {
  case CandidateStatus::Proposed:
    return "proposed";
  case CandidateStatus::Built:
    return "built";
  case CandidateStatus::CompileFailed:
    return "compile_failed";
  case CandidateStatus::Crashed:
    return "crashed";
  case CandidateStatus::TimedOut:
    return "timed_out";
  case CandidateStatus::Wrong:
    return "wrong";
  case CandidateStatus::Measured:
    return "measured";
  }
  return "unknown";
}

/// The `q` quantile of sorted `values`, interpolated.
static double quantile(const std::vector<double> &values, double q) {
  double position = q * static_cast<double>(values.size() - 1);
  size_t below = static_cast<size_t>(position);
  size_t above = std::min(below + 1, values.size() - 1);
  double fraction = position - static_cast<double>(below);
  return values[below] * (1 - fraction) + values[above] * fraction;
}

double median(std::vector<double> values) {
  if (values.empty())
    return 0;
  std::sort(values.begin(), values.end());
  return quantile(values, 0.5);
}

double relativeSpread(std::vector<double> values) {
  if (values.size() < 2)
    return 0;
  std::sort(values.begin(), values.end());
  double middle = quantile(values, 0.5);
  return middle > 0 ? (quantile(values, 0.75) - quantile(values, 0.25)) / middle : 0;
}

} // namespace mhac
