//===- Search.h - the search of mhac tune, within a budget ------*- C++ -*-===//
//
// Part of mhac. The steps of Tuner.h (calibration, successive halving, neighbours, a final
// paired round) over one layer's candidates, each compiled by a child `mhac compile` and
// measured by a child `mha-run --measure` (Subprocess.h).
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_TOOLS_MHAC_TUNE_SEARCH_H
#define MHAC_TOOLS_MHAC_TUNE_SEARCH_H

#include "compiler/schedules/Knobs.h"
#include "tools/common/ProgressLine.h"
#include "tools/mhac/tune/Candidate.h"
#include "tools/mhac/tune/TuneReport.h"
#include "tools/mhac/tune/TuneSetup.h"

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mhac {

/// The session's time: started before anything else, so that the whole command keeps to it.
struct Budget {
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  double seconds = 0;
  /// Of `seconds`, what the search leaves for the work after it.
  double closingSeconds = 0;

  double elapsed() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  /// The search's time left.
  double left() const { return seconds - closingSeconds - elapsed(); }
};

/// A folder of the session's files, removed at the end.
class WorkDirectory {
public:
  /// Sets `error` when the folder cannot be created.
  explicit WorkDirectory(std::string &error);
  ~WorkDirectory();
  WorkDirectory(const WorkDirectory &) = delete;
  WorkDirectory &operator=(const WorkDirectory &) = delete;

  std::string file(const std::string &name) const;

private:
  std::string path_;
};

class Search {
public:
  Search(const TuneOptions &options, const TuneSetup &setup, const WorkDirectory &work,
         const Budget &budget);

  /// Fills the pool: the default (#0), a database schedule if any, then the space around the
  /// default, each with the model's estimate. False when the default does not resolve.
  bool propose(const std::optional<Schedule> &warmStart);
  /// --plan: the candidates in the order the model ranks them.
  void printPlan() const;
  /// The search itself. False when the default cannot be built or measured.
  bool run();

  TuneSession session() const;
  /// The winner when adopted, else the default.
  const Candidate &chosen() const { return candidates_[adopted_ ? winner_ : 0]; }
  bool adopted() const { return adopted_; }
  double speedup() const { return speedup_; }
  double noise() const { return noise_; }

private:
  // The steps of run().
  bool calibrate();
  void halve();
  void climbNeighbours();
  void finalRound();

  int add(const Schedule &schedule, const std::string &origin);
  /// Compiles the candidates `ids` that are not built yet, `parallel_` at a time.
  void build(const std::vector<int> &ids);
  /// Measures candidate `id` with `samples` samples; false if it failed.
  bool measure(int id, int samples, bool final = false);
  /// What a probe of `samples` samples costs, from the calibration.
  double probeSeconds(int samples) const;
  /// The time kept for the final round.
  double finalReserve() const;
  /// A candidate's time over the default's (the median of its probes' ratios); 1 for the
  /// default itself.
  double score(int id) const;
  /// The measured candidates, fastest first.
  std::vector<int> ranking() const;
  void showProgress(const std::string &phase);
  void recordBest();

  const TuneOptions &options_;
  const TuneSetup &setup_;
  const WorkDirectory &work_;
  const Budget &budget_;
  KnobContext context_;
  std::map<int, std::string> faults_;
  int probes_ = 0; ///< probes of candidates other than the default so far
  int probesSinceDefault_ = 0;
  double defaultProbeMedian_ = 0; ///< the median of the default's latest probe
  long sampleMs_;
  std::vector<Candidate> candidates_;
  double defaultCost_ = 0;  ///< the cost model's estimate of the default
  std::vector<int> ranked_; ///< the pool but the default, by predicted cost
  ProgressLine progress_;
  size_t parallel_ = 1;
  double compileSeconds_ = 0, probeOverhead_ = 0, sampleSeconds_ = 0;
  double noise_, speedup_ = 1;
  int winner_ = 0;
  bool adopted_ = false;
  std::vector<std::pair<double, double>> bestOverTime_;
};

} // namespace mhac

#endif // MHAC_TOOLS_MHAC_TUNE_SEARCH_H
