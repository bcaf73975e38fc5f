//===- TuneReport.h - what a tuning session did, as JSON and HTML -*- C++ -*-===//
//
// Part of mhac. `mhac tune` writes NAME.tune.json (the data; docs/schedules.md gives its
// schema) and NAME.tune.html (one self-contained page with inline SVG plots of the same data).
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_TOOLS_MHAC_TUNE_TUNEREPORT_H
#define MHAC_TOOLS_MHAC_TUNE_TUNEREPORT_H

#include "tools/mhac/tune/Candidate.h"

#include <string>
#include <utility>
#include <vector>

namespace mhac {

struct TuneSession {
  std::string layer, fingerprint, sizes, cpu, target, compiler;
  int threads = 1;
  uint64_t seed = 1;
  double budgetSeconds = 0, elapsedSeconds = 0;
  std::vector<Candidate> candidates; ///< by id
  int defaultId = 0, winnerId = 0;
  bool adopted = false; ///< the winner beat the default by more than the noise
  double speedup = 1;   ///< the default's final median over the winner's
  double noise = 0;     ///< the relative noise the winner had to beat
  /// (seconds into the session, the best median so far over the default's).
  std::vector<std::pair<double, double>> bestOverTime;
};

std::string reportJSON(const TuneSession &session);
std::string reportHTML(const TuneSession &session);

} // namespace mhac

#endif // MHAC_TOOLS_MHAC_TUNE_TUNEREPORT_H
