//===- Tuner.cpp - mhac tune: search a faster schedule for a layer --------===//
//
// Part of mhac. The session around the search (Search.h): the tuning database, the budget's
// floor, and the files it writes.
//
//===----------------------------------------------------------------------===//

#include "tools/mhac/tune/Tuner.h"

#include "compiler/frontend/LayerText.h"
#include "compiler/schedules/ScheduleFile.h"
#include "runtime/io/File.h"
#include "tools/mhac/tune/Search.h"
#include "tools/mhac/tune/TuneReport.h"
#include "tools/mhac/tune/TuneSetup.h"
#include "tools/mhac/tune/TuningDatabase.h"

#include <fmt/format.h>

#include <cmath>
#include <sstream>

namespace mhac {
namespace {

/// The least budget worth starting with: one compile and two probes of a small layer take
/// 3-6 s on a 2-core Zen 3; the float64 reference comes on top.
constexpr double kBaseBudget = 10;
/// The float64 reference's speed, for the least budget (a few GFLOP/s at best).
constexpr double kReferenceFlopsPerSecond = 0.5e9;

/// The layer's block of the schedule file mhac tune writes: `schedule` with its provenance.
std::string tunedBlock(const TuneSetup &setup, const Schedule &schedule,
                       const std::string &result) {
  Provenance provenance{layerFingerprint(setup.layer),
                        setup.sizesText(),
                        describeCpu(setup.target),
                        std::to_string(setup.threads),
                        result,
                        SourceLocation{}};
  return printScheduleBlock("layer", setup.layer.name, schedule, &provenance);
}

/// The schedule file mhac tune writes around `block`.
std::string tunedScheduleFile(const TuneSetup &setup, const std::string &block,
                              const std::string &origin) {
  return fmt::format("# Tuned by mhac tune for layer {} on {} ({} threads){}.\n"
                     "# Compile with: mhac compile FILE.mha --target {} --schedule THIS_FILE\n"
                     "format = {}\n\n{}",
                     setup.layer.name, describeCpu(setup.target), setup.threads, origin,
                     setup.target.name, kScheduleFormat, block);
}

/// Reads the layer's block of a stored schedule file text.
std::optional<Schedule> readStoredSchedule(const std::string &block, const TuneSetup &setup) {
  SourceFile file("<tuning database>", fmt::format("format = {}\n{}", kScheduleFormat, block));
  std::ostringstream ignored;
  DiagnosticEngine diags(file, ignored);
  std::optional<ScheduleFile> parsed = readScheduleFile(file, diags, setup.target);
  if (!parsed)
    return std::nullopt;
  ScheduleResolution resolution =
      resolveSchedule(setup.layer, setup.target, parsed->find(setup.layer.name), nullptr);
  return resolution.schedule;
}

/// Writes `text` to `path` atomically; false after printing why it could not.
bool writeOutput(const std::string &path, const std::string &text) {
  io::Status written = io::writeFileAtomically(path, text);
  if (!written)
    fmt::print(stderr, "mhac: error: {}\n", written.error());
  return static_cast<bool>(written);
}

} // namespace

/// Seconds of the budget the search leaves for what follows it: writing the schedule, the
/// report and the database, and the last child process's exit. Without it a session on a
/// loaded machine ended a few milliseconds past its budget.
constexpr double kClosingSeconds = 0.5;

int tune(const TuneOptions &options) {
  Budget budget;
  budget.seconds = options.budgetSeconds;
  budget.closingSeconds = kClosingSeconds;
  int status = 0;
  std::optional<TuneSetup> setup = setUpTuning(options, status);
  if (!setup)
    return status;

  TuningDatabase database(options.cacheDir.empty() ? TuningDatabase::defaultDirectory()
                                                   : options.cacheDir);
  std::optional<TuningRecord> stored = database.find(setup->key());
  std::optional<Schedule> warmStart;
  if (stored)
    warmStart = readStoredSchedule(stored->schedule, *setup);
  if (stored && warmStart && stored->compiler == setup->compiler && !options.retune &&
      !options.plan) {
    std::string text =
        tunedScheduleFile(*setup, stored->schedule,
                          fmt::format(", from the tuning database {}", database.directory()));
    if (!writeOutput(setup->schedulePath, text))
      return 1;
    fmt::print(stderr,
               "mhac tune: {}: reused the tuning in {} ({:.3f}x the default's speed); "
               "--retune searches again\n",
               setup->schedulePath, database.directory(), stored->speedup);
    return 0;
  }

  double minimum = kBaseBudget + setup->flops() / kReferenceFlopsPerSecond;
  if (!options.plan && options.budgetSeconds < minimum) {
    fmt::print(stderr,
               "mhac: error: --budget {:g} is too small to tune layer '{}': one compile, the "
               "float64 reference and one measurement need about {:.0f} s; give at least "
               "--budget {:.0f}\n",
               options.budgetSeconds, setup->layer.name, minimum, std::ceil(minimum));
    return 2;
  }

  std::string error;
  WorkDirectory work(error);
  if (!error.empty()) {
    fmt::print(stderr, "mhac: error: {}\n", error);
    return 1;
  }
  Search search(options, *setup, work, budget);
  if (!search.propose(stored && stored->compiler != setup->compiler ? warmStart : std::nullopt))
    return 1;
  if (options.plan) {
    search.printPlan();
    return 0;
  }
  if (!search.run())
    return 1;

  std::string result =
      search.adopted() ? fmt::format("{}: {:.3f}x the default's speed (noise {:.1f}%)",
                                     setup->compiler, search.speedup(), 100 * search.noise())
                       : fmt::format("{}: the default; no candidate beat it by more than the noise "
                                     "({:.1f}%, best {:.3f}x)",
                                     setup->compiler, 100 * search.noise(), search.speedup());
  std::string block = tunedBlock(*setup, search.chosen().schedule, result);
  std::string file = tunedScheduleFile(*setup, block, "");
  TuneSession session = search.session();
  for (const auto &[path, contents] :
       {std::pair{setup->schedulePath, file},
        std::pair{setup->reportBase + ".tune.json", reportJSON(session)},
        std::pair{setup->reportBase + ".tune.html", reportHTML(session)}}) {
    if (!writeOutput(path, contents))
      return 1;
  }
  TuningRecord record{setup->compiler, block, search.adopted() ? search.speedup() : 1.0};
  if (llvm::Error stored = database.store(setup->key(), record))
    fmt::print(stderr, "mhac tune: warning: {}\n", llvm::toString(std::move(stored)));
  fmt::print(stderr, "mhac tune: {}: {}; report in {}.tune.html ({:.0f} s)\n", setup->schedulePath,
             result, setup->reportBase, budget.elapsed());
  return 0;
}

} // namespace mhac
