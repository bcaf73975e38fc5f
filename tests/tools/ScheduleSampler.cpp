//===- ScheduleSampler.cpp - random legal schedules, for tests ------------===//
//
// Part of mhac. `schedule-sampler FILE.mha --target T [--emulate-amx] --seed N [--steps K]
// [--backend mlir|halide]` prints a schedule file with a random legal schedule for every layer
// of FILE.mha on target T, named and taken (with --emulate-amx) as `mhac compile` takes it:
// its vector width, AVX512-BF16 and AMX decide what is legal. Each schedule is the target's
// default fitted to the layer, then K steps that each give one random knob of the backend a
// random value among those the constraint table allows with the other knobs as they are.
// Every step keeps the schedule legal, so every printed schedule must compile and compute the
// layer correctly.
//
//===----------------------------------------------------------------------===//

#include "compiler/frontend/Parser.h"
#include "compiler/frontend/Sema.h"
#include "compiler/schedules/ScheduleFile.h"
#include "compiler/target/Target.h"
#include "compiler/tuning/SearchSpace.h"

#include "llvm/Support/Error.h"

#include <fmt/format.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <string_view>

using namespace mhac;

static int usage() {
  std::cerr << "usage: schedule-sampler FILE.mha --target T [--emulate-amx] --seed N "
               "[--steps K] [--backend mlir|halide]\n";
  return 2;
}

int main(int argc, char **argv) {
  std::string path, targetName;
  uint64_t seed = 0;
  int steps = 12;
  bool emulateAmx = false;
  Backend backend = Backend::Mlir;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--target" && i + 1 < argc)
      targetName = argv[++i];
    else if (arg == "--emulate-amx")
      emulateAmx = true;
    else if (arg == "--seed" && i + 1 < argc)
      seed = std::strtoull(argv[++i], nullptr, 10);
    else if (arg == "--steps" && i + 1 < argc)
      steps = std::atoi(argv[++i]);
    else if (arg == "--backend" && i + 1 < argc)
      backend = std::string_view(argv[++i]) == "halide" ? Backend::Halide : Backend::Mlir;
    else if (path.empty() && !arg.empty() && arg[0] != '-')
      path = arg;
    else
      return usage();
  }
  if (path.empty() || targetName.empty())
    return usage();
  llvm::Expected<CpuTarget> resolved = resolveCpuTarget(targetName);
  if (!resolved) {
    std::cerr << "schedule-sampler: " << llvm::toString(resolved.takeError()) << "\n";
    return 2;
  }
  CpuTarget target = *resolved;
  if (emulateAmx)
    if (llvm::Error error = mhac::emulateAmx(target)) {
      std::cerr << "schedule-sampler: " << llvm::toString(std::move(error)) << "\n";
      return 2;
    }

  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  SourceFile file(path, text.str());
  DiagnosticEngine diags(file, std::cerr);
  ModuleAST ast = Parser(file, diags).parseModule();
  std::optional<std::vector<LayerSpec>> layers =
      diags.hasErrors() ? std::nullopt : analyzeModule(ast, diags);
  if (!layers)
    return 1;

  std::mt19937_64 random(seed);
  std::vector<std::pair<std::string, Schedule>> schedules;
  for (const LayerSpec &layer : *layers) {
    ScheduleResolution resolution = resolveSchedule(layer, target, nullptr, nullptr);
    if (!resolution.schedule) {
      std::cerr << resolution.error << "\n";
      return 1;
    }
    KnobContext context{target, &layer};
    Schedule schedule =
        randomWalk(*resolution.schedule, context, random, steps, WalkRange::Anywhere, backend);
    // The knobs are what is sampled: an autoscheduler replaces them (halide/schedules.test runs
    // one), and Adams2019 searches for minutes.
    schedule.halide.autoscheduler = HalideAutoscheduler::None;
    if (const Constraint *broken = firstViolation(schedule, context)) {
      std::cerr << "internal error: the sampler broke a rule: "
                << broken->explain(schedule, context) << "\n";
      return 1;
    }
    schedules.emplace_back(layer.name, schedule);
  }
  std::cout << printScheduleFile(schedules, fmt::format("{} (seed {})", path, seed), target,
                                 backend);
  return 0;
}
