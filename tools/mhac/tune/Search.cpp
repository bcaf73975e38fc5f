//===- Search.cpp - the search of mhac tune, within a budget --------------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "tools/mhac/tune/Search.h"

#include "compiler/frontend/LayerText.h"
#include "compiler/schedules/ScheduleFile.h"
#include "compiler/tuning/SearchSpace.h"
#include "runtime/io/File.h"
#include "tools/mhac/Subprocess.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <thread>

#include <unistd.h>

namespace mhac {
namespace {

/// The least time a timed sample runs (mha-run --measure --sample-ms), and the most: a sample
/// lasts three calls of the default between them.
constexpr long kMinSampleMs = 20, kMaxSampleMs = 200;
constexpr int kFirstRoundSamples = 3, kNeighbourSamples = 5, kFinalSamples = 3, kFinalRounds = 5;
/// The default is measured again after this many probes of other candidates, so that every
/// candidate is compared with a default measured shortly before it.
constexpr int kProbesPerDefault = 6;
/// Successive halving stops after this many rounds (or with two candidates left).
constexpr int kHalvingRounds = 3;
/// The first round of successive halving takes at least this many candidates, so that a session
/// whose calibration a busy moment slowed still compares the default with something; the
/// rounds stop at the budget whatever their size.
constexpr size_t kLeastFirstRound = 2;
/// Random walks from the default in the pool, besides its neighbours.
constexpr size_t kRandomWalks = 400;
/// A measured difference below this fraction is noise, whatever the samples say.
constexpr double kNoiseFloor = 0.01;

/// Faults to inject, for the tuner's tests: MHAC_TUNE_FAULTS="1:crash,2:hang" replaces the first
/// and the second probe of a candidate other than the default by a process that dies on SIGSEGV,
/// and by one that never ends (named mhac-tune-hang-PID, PID the tuner's, for the tests to
/// find).
std::map<int, std::string> injectedFaults() {
  std::map<int, std::string> faults;
  std::optional<std::string> text = llvm::sys::Process::GetEnv("MHAC_TUNE_FAULTS");
  if (!text)
    return faults;
  llvm::SmallVector<llvm::StringRef> items;
  llvm::StringRef(*text).split(items, ',', -1, false);
  for (llvm::StringRef item : items) {
    auto [id, kind] = item.split(':');
    int number = 0;
    if (!id.getAsInteger(10, number))
      faults[number] = kind.str();
  }
  return faults;
}

} // namespace

WorkDirectory::WorkDirectory(std::string &error) {
  llvm::SmallString<128> path;
  if (std::error_code ec = llvm::sys::fs::createUniqueDirectory("mhac-tune", path))
    error = fmt::format("cannot create a temporary folder: {}", ec.message());
  path_ = std::string(path);
}

WorkDirectory::~WorkDirectory() {
  if (!path_.empty())
    llvm::sys::fs::remove_directories(path_);
}

std::string WorkDirectory::file(const std::string &name) const {
  llvm::SmallString<128> path(path_);
  llvm::sys::path::append(path, name);
  return std::string(path);
}

Search::Search(const TuneOptions &options, const TuneSetup &setup, const WorkDirectory &work,
               const Budget &budget)
    : options_(options), setup_(setup), work_(work),
      budget_(budget), context_{setup_.target, &setup_.layer}, faults_(injectedFaults()),
      sampleMs_(kMinSampleMs), noise_(kNoiseFloor) {}

double Search::probeSeconds(int samples) const { return probeOverhead_ + samples * sampleSeconds_; }

double Search::finalReserve() const {
  // At most a third of the search's time: the final round checks the budget before each of its
  // rounds, so a short reserve costs rounds, never the budget.
  double searchSeconds = budget_.seconds - budget_.closingSeconds;
  return std::min(3.0 * kFinalRounds * probeSeconds(kFinalSamples) + 1, searchSeconds / 3);
}

double Search::score(int id) const { return id == 0 ? 1 : median(candidates_[id].ratios); }

int Search::add(const Schedule &schedule, const std::string &origin) {
  for (const Candidate &c : candidates_)
    if (c.schedule == schedule)
      return c.id;
  Candidate c;
  c.id = static_cast<int>(candidates_.size());
  c.schedule = schedule;
  c.origin = origin;
  double cost =
      estimateCost(schedule, setup_.layer, setup_.sizes, setup_.target, setup_.threads).cycles();
  if (candidates_.empty())
    defaultCost_ = cost;
  c.predicted = defaultCost_ > 0 ? cost / defaultCost_ : 1;
  candidates_.push_back(c);
  return c.id;
}

bool Search::propose(const std::optional<Schedule> &warmStart) {
  ScheduleResolution resolution = resolveSchedule(setup_.layer, setup_.target, nullptr, nullptr);
  if (!resolution.schedule) {
    fmt::print(stderr, "mhac: error: {}\n", resolution.error);
    return false;
  }
  const Schedule &defaults = *resolution.schedule;
  add(defaults, "default");
  std::vector<int> first;
  if (warmStart && *warmStart != defaults && !firstViolation(*warmStart, context_))
    first.push_back(add(*warmStart, "database"));
  CandidatePool pool = candidatePool(defaults, context_, options_.seed, kRandomWalks);
  for (size_t i = 1; i < pool.schedules.size(); ++i)
    add(pool.schedules[i], i <= pool.neighbours ? "neighbour of the default" : "random walk");
  for (const Candidate &c : candidates_)
    if (c.id != 0 && (first.empty() || c.id != first[0]))
      ranked_.push_back(c.id);
  std::stable_sort(ranked_.begin(), ranked_.end(), [&](int a, int b) {
    return candidates_[a].predicted < candidates_[b].predicted;
  });
  ranked_.insert(ranked_.begin(), first.begin(), first.end());
  return true;
}

void Search::printPlan() const {
  const Schedule &defaults = candidates_[0].schedule;
  fmt::print("# {} candidates for layer {} ({}), ranked by the cost model (seed {})\n",
             candidates_.size(), setup_.layer.name, setup_.sizesText(), options_.seed);
  fmt::print("#0 predicted 1.000 default\n");
  for (int id : ranked_) {
    const Candidate &c = candidates_[id];
    std::string changes;
    for (const Knob &k : knobs())
      if (k.get(c.schedule) != k.get(defaults))
        changes += fmt::format(" {}={}", k.name, formatKnobValue(k, k.get(c.schedule)));
    fmt::print("#{} predicted {:.3f} {}:{}\n", id, c.predicted, c.origin, changes);
  }
}

void Search::build(const std::vector<int> &ids) {
  std::vector<int> pending;
  std::vector<Command> commands;
  double timeout = std::max(30.0, 5 * compileSeconds_);
  for (int id : ids) {
    Candidate &c = candidates_[id];
    if (c.status != CandidateStatus::Proposed)
      continue;
    std::string name = fmt::format("candidate{}", id);
    std::string schedulePath = work_.file(name + ".sched");
    std::string text = fmt::format("format = {}\n\n{}", kScheduleFormat,
                                   printScheduleBlock("layer", setup_.layer.name, c.schedule));
    if (io::Status written = io::writeFileAtomically(schedulePath, text); !written) {
      c.status = CandidateStatus::CompileFailed;
      c.reason = written.error();
      continue;
    }
    pending.push_back(id);
    commands.push_back({{llvm::sys::fs::getMainExecutable(nullptr, nullptr), "compile",
                         work_.file("layer.mha"), "--target", setup_.target.name, "--schedule",
                         schedulePath, "--shared", "-o", work_.file(name)},
                        std::min(timeout, std::max(1.0, budget_.left()))});
  }
  showProgress("compiling");
  std::vector<ProcessResult> results = runCommands(commands, parallel_);
  for (size_t i = 0; i < pending.size(); ++i) {
    Candidate &c = candidates_[pending[i]];
    const ProcessResult &result = results[i];
    c.compileSeconds = result.seconds;
    if (result.succeeded()) {
      c.status = CandidateStatus::Built;
      continue;
    }
    c.status = CandidateStatus::CompileFailed;
    llvm::StringRef message = llvm::StringRef(result.err).trim();
    c.reason = fmt::format("mhac compile: {}{}{}", result.describe(), message.empty() ? "" : ": ",
                           message.take_back(300).str());
  }
  // What a compile costs: the median of those that built so far, so that one compile a busy
  // moment slowed does not shrink the rest of the search.
  std::vector<double> built;
  for (const Candidate &c : candidates_)
    if (c.compileSeconds > 0 && c.status != CandidateStatus::CompileFailed)
      built.push_back(c.compileSeconds);
  if (!built.empty())
    compileSeconds_ = median(built);
}

bool Search::measure(int id, int samples, bool final) {
  Candidate &c = candidates_[id];
  if (c.status != CandidateStatus::Built && c.status != CandidateStatus::Measured)
    return false;
  if (id != 0 && !final && probesSinceDefault_ >= kProbesPerDefault)
    measure(0, kNeighbourSamples);
  std::vector<std::string> argv = {siblingTool("mha-run"),
                                   work_.file(fmt::format("candidate{}.so", id)),
                                   "--measure",
                                   work_.file("reference.f64"),
                                   "--threads",
                                   std::to_string(setup_.threads),
                                   "--samples",
                                   std::to_string(samples),
                                   "--sample-ms",
                                   std::to_string(sampleMs_),
                                   "--seed",
                                   std::to_string(options_.seed)};
  std::vector<std::string> sizes = setup_.runtimeSizeArguments();
  argv.insert(argv.end(), sizes.begin(), sizes.end());
  if (id != 0)
    if (auto fault = faults_.find(++probes_); fault != faults_.end())
      argv = {"/bin/sh", "-c",
              fault->second == "hang" ? "while :; do sleep 1; done" : "kill -SEGV $$",
              fmt::format("mhac-tune-hang-{}", getpid())};
  // The first probe also computes the reference; later ones are limited to ten times the
  // default's, so that a hang costs little.
  double timeout = sampleSeconds_ > 0 ? std::max(5.0, 10 * probeSeconds(samples)) : 600.0;
  timeout = std::min(timeout, std::max(1.0, budget_.left()));
  ProcessResult result = runCommands({{argv, timeout}}, 1).front();

  auto failWith = [&](CandidateStatus status, std::string reason) {
    c.status = status;
    c.reason = std::move(reason);
    return false;
  };
  if (result.end == ProcessResult::End::TimedOut)
    return failWith(CandidateStatus::TimedOut, "mha-run --measure " + result.describe());
  if (result.end != ProcessResult::End::Exited)
    return failWith(CandidateStatus::Crashed, "mha-run --measure " + result.describe());
  llvm::Expected<llvm::json::Value> json = llvm::json::parse(llvm::StringRef(result.out).trim());
  const llvm::json::Object *object = json ? json->getAsObject() : nullptr;
  if (!object) {
    if (!json)
      llvm::consumeError(json.takeError());
    return failWith(CandidateStatus::Crashed,
                    fmt::format("mha-run --measure ({}) printed no result: {}", result.describe(),
                                llvm::StringRef(result.err).trim().take_back(300).str()));
  }
  if (object->getBoolean("ok") != true)
    return failWith(CandidateStatus::Wrong, object->getString("reason").value_or("").str());
  std::vector<double> taken;
  if (const llvm::json::Array *array = object->getArray("sample_ms"))
    for (const llvm::json::Value &value : *array)
      if (std::optional<double> ms = value.getAsNumber())
        taken.push_back(*ms);
  if (taken.empty())
    return failWith(CandidateStatus::Crashed, "mha-run --measure gave no samples");
  c.status = CandidateStatus::Measured;
  ++c.rounds;
  std::vector<double> &into = final ? c.finalSamplesMs : c.samplesMs;
  into.insert(into.end(), taken.begin(), taken.end());
  double probeMedian = median(taken);
  if (id == 0) {
    defaultProbeMedian_ = probeMedian;
    probesSinceDefault_ = 0;
  } else {
    ++probesSinceDefault_;
  }
  (final ? c.finalRatios : c.ratios).push_back(probeMedian / defaultProbeMedian_);
  if (sampleSeconds_ == 0 && id == 0) {
    // Calibration: what a probe costs besides its samples.
    double calls = object->getNumber("calls_per_sample").value_or(1);
    sampleSeconds_ = calls * median(taken) * 1e-3;
    probeOverhead_ = std::max(0.0, result.seconds - samples * sampleSeconds_);
  } else if (sampleSeconds_ > 0) {
    // A probe's fixed cost is a floor that a busy machine only raises: the least seen is the
    // estimate, so that one slow calibration does not shrink the rest of the search.
    probeOverhead_ =
        std::min(probeOverhead_, std::max(0.0, result.seconds - samples * sampleSeconds_));
  }
  recordBest();
  return true;
}

std::vector<int> Search::ranking() const {
  std::vector<int> ids;
  for (const Candidate &c : candidates_)
    if (c.measured())
      ids.push_back(c.id);
  std::stable_sort(ids.begin(), ids.end(), [&](int a, int b) { return score(a) < score(b); });
  return ids;
}

void Search::recordBest() {
  std::vector<int> ids = ranking();
  if (ids.empty() || !candidates_[0].measured())
    return;
  double ratio = std::min(1.0, score(ids.front()));
  if (bestOverTime_.empty() || ratio < bestOverTime_.back().second)
    bestOverTime_.emplace_back(budget_.elapsed(), ratio);
}

void Search::showProgress(const std::string &phase) {
  size_t built = 0, timed = 0, failed = 0;
  for (const Candidate &c : candidates_) {
    built += c.compileSeconds > 0 && c.status != CandidateStatus::CompileFailed;
    timed += c.measured();
    failed += c.failed();
  }
  // Until the final round the leader's figure is an estimate from its probes, each against
  // a default measured near it; only the final round's paired ratios confirm a winner, and
  // they often give back most of an early lead (the VMs drift by 5-10%).
  std::string best = "no leader yet";
  std::vector<int> ids = ranking();
  if (!ids.empty() && candidates_[0].measured())
    best = fmt::format("leader estimated at {:.3f}x the default, unconfirmed (noise {:.1f}%)",
                       1 / std::min(1.0, score(ids.front())), 100 * noise_);
  const Candidate *finalist = nullptr;
  for (size_t id = 1; id < candidates_.size(); ++id)
    if (!candidates_[id].finalRatios.empty() &&
        (!finalist || median(candidates_[id].finalRatios) < median(finalist->finalRatios)))
      finalist = &candidates_[id];
  if (finalist)
    best = fmt::format("leader {:.3f}x the default in {} paired final round(s) (noise {:.1f}%)",
                       1 / median(finalist->finalRatios), finalist->finalRatios.size(),
                       100 * noise_);
  progress_.update(fmt::format("mhac tune: {}: {} built, {} timed, {} failed; {}; {:.0f} s left",
                               phase, built, timed, failed, best, std::max(0.0, budget_.left())));
}

bool Search::run() {
  parallel_ = std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 2);
  if (io::Status written =
          io::writeFileAtomically(work_.file("layer.mha"), printLayer(setup_.layer));
      !written) {
    fmt::print(stderr, "mhac: error: {}\n", written.error());
    return false;
  }
  if (!calibrate())
    return false;
  halve();
  climbNeighbours();
  finalRound();
  return true;
}

/// 1. The default, twice: the first probe computes the reference and sets the samples' length,
/// the second measures what a probe costs.
bool Search::calibrate() {
  showProgress("calibrating");
  build({0});
  if (!measure(0, kFirstRoundSamples)) {
    progress_.finish();
    fmt::print(stderr, "mhac: error: the default schedule fails: {}\n", candidates_[0].reason);
    return false;
  }
  Candidate &defaults = candidates_[0];
  sampleMs_ = std::clamp(static_cast<long>(std::ceil(3 * median(defaults.samplesMs))), kMinSampleMs,
                         kMaxSampleMs);
  sampleSeconds_ = 0;
  defaults.samplesMs.clear();
  defaults.ratios.clear();
  defaults.rounds = 0;
  measure(0, kNeighbourSamples);
  noise_ = std::max(kNoiseFloor, relativeSpread(candidates_[0].samplesMs));
  return true;
}

/// 2. Successive halving over the candidates the model ranks first.
void Search::halve() {
  double perCandidate = compileSeconds_ / parallel_ + 4 * probeSeconds(kFirstRoundSamples);
  double halvingTime = 0.6 * (budget_.left() - finalReserve());
  size_t first = static_cast<size_t>(std::max(0.0, halvingTime / std::max(perCandidate, 1e-3)));
  first = std::min(std::max(first, kLeastFirstRound), ranked_.size());
  std::vector<int> round(ranked_.begin(), ranked_.begin() + static_cast<std::ptrdiff_t>(first));
  // Compiled in batches, so that the budget is checked between them.
  for (size_t begin = 0; begin < round.size(); begin += 4 * parallel_) {
    if (budget_.left() < finalReserve() + compileSeconds_)
      break;
    size_t end = std::min(round.size(), begin + 4 * parallel_);
    build({round.begin() + static_cast<std::ptrdiff_t>(begin),
           round.begin() + static_cast<std::ptrdiff_t>(end)});
  }
  int samples = kFirstRoundSamples;
  for (int r = 0; r < kHalvingRounds && !round.empty(); ++r) {
    std::vector<int> survivors;
    for (int id : round) {
      if (budget_.left() < finalReserve() + probeSeconds(samples))
        break;
      showProgress(fmt::format("round {} of {}", r + 1, kHalvingRounds));
      if (measure(id, samples))
        survivors.push_back(id);
    }
    std::stable_sort(survivors.begin(), survivors.end(),
                     [&](int a, int b) { return score(a) < score(b); });
    survivors.resize(std::min(survivors.size(), std::max<size_t>(2, survivors.size() / 2)));
    if (survivors.size() <= 2 && r > 0)
      break;
    round = survivors;
    samples *= 2;
  }
}

/// 3. The neighbours of the best, one knob at a time, while the budget allows.
void Search::climbNeighbours() {
  std::vector<int> ids = ranking();
  int best = ids.empty() ? 0 : ids.front();
  bool moved = true;
  while (moved &&
         budget_.left() > finalReserve() + compileSeconds_ + probeSeconds(kNeighbourSamples)) {
    moved = false;
    std::vector<int> around;
    for (const Schedule &s : neighbours(candidates_[best].schedule, context_))
      around.push_back(add(s, fmt::format("neighbour of #{}", best)));
    std::stable_sort(around.begin(), around.end(), [&](int a, int b) {
      return candidates_[a].predicted < candidates_[b].predicted;
    });
    for (size_t begin = 0; begin < around.size() && !moved; begin += parallel_) {
      if (budget_.left() < finalReserve() + compileSeconds_ + probeSeconds(kNeighbourSamples))
        break;
      std::vector<int> batch(
          around.begin() + static_cast<std::ptrdiff_t>(begin),
          around.begin() + static_cast<std::ptrdiff_t>(std::min(around.size(), begin + parallel_)));
      build(batch);
      for (int id : batch) {
        if (candidates_[id].status != CandidateStatus::Built)
          continue;
        showProgress("neighbours");
        // A neighbour that looks faster is measured again before it becomes the best: one
        // lucky probe must not steer the search.
        auto faster = [&] { return score(id) < score(best) * (1 - noise_); };
        if (measure(id, kNeighbourSamples) && faster() && measure(id, kNeighbourSamples) &&
            faster()) {
          best = id;
          moved = true;
        }
      }
    }
  }
}

/// 4. Default, winner and runner-up, one after the other, round after round; each round's
/// ratios to that round's default decide.
void Search::finalRound() {
  std::vector<int> ids = ranking();
  std::vector<int> finalists = {0};
  for (int id : ids)
    if (id != 0 && finalists.size() < 3)
      finalists.push_back(id);
  for (int r = 0; r < kFinalRounds; ++r) {
    if (budget_.left() < finalists.size() * probeSeconds(kFinalSamples) + 0.5)
      break;
    for (int id : finalists) {
      showProgress("final round");
      measure(id, kFinalSamples, /*final=*/true);
    }
  }
  progress_.finish();
  winner_ = 0;
  for (size_t i = 1; i < finalists.size(); ++i) {
    const Candidate &c = candidates_[finalists[i]];
    if (c.measured() && c.finalRatios.size() >= 2 &&
        (winner_ == 0 || median(c.finalRatios) < median(candidates_[winner_].finalRatios)))
      winner_ = finalists[i];
  }
  if (winner_ != 0) {
    // Robust to a round the machine disturbed: the noise is twice the standard error of the
    // median ratio estimated from its median absolute deviation, and the winner must also have
    // been faster in three rounds out of four.
    const std::vector<double> &ratios = candidates_[winner_].finalRatios;
    double middle = median(ratios);
    std::vector<double> deviations;
    for (double ratio : ratios)
      deviations.push_back(std::abs(ratio - middle));
    double n = static_cast<double>(ratios.size());
    noise_ = std::max(kNoiseFloor, 2 * 1.4826 * median(deviations) / std::sqrt(n));
    double fasterRounds = static_cast<double>(
        std::count_if(ratios.begin(), ratios.end(), [](double r) { return r < 1; }));
    speedup_ = 1 / middle;
    adopted_ = middle < 1 - noise_ && fasterRounds >= 0.75 * n;
  }
}

TuneSession Search::session() const {
  TuneSession s;
  s.layer = setup_.layer.name;
  s.fingerprint = layerFingerprint(setup_.layer);
  s.sizes = setup_.sizesText();
  s.cpu = describeCpu(setup_.target);
  s.target = setup_.target.name;
  s.compiler = setup_.compiler;
  s.threads = setup_.threads;
  s.seed = options_.seed;
  s.budgetSeconds = budget_.seconds;
  s.elapsedSeconds = budget_.elapsed();
  s.candidates = candidates_;
  s.winnerId = winner_;
  s.adopted = adopted_;
  s.speedup = speedup_;
  s.noise = noise_;
  s.bestOverTime = bestOverTime_;
  return s;
}

} // namespace mhac
