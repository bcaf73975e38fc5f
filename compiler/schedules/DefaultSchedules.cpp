//===- DefaultSchedules.cpp - the target's schedule when the user gives none ===//
//
// Part of mhac. The defaults are schedule files in compiler/schedules/defaults, one per kind of
// vector unit, compiled in as text and read with the same reader as a user's file.
//
//===----------------------------------------------------------------------===//

#include "compiler/schedules/ScheduleFile.h"

#include <fmt/format.h>

#include <cstdlib>
#include <iostream>
#include <map>
#include <mutex>
#include <string_view>

namespace mhac {
namespace {

struct EmbeddedSchedule {
  std::string_view kind, text;
};

constexpr EmbeddedSchedule kDefaultSchedules[] = {
#include "DefaultSchedules.inc"
};

[[noreturn]] void brokenDefaults(std::string_view kind, std::string_view why) {
  std::cerr << fmt::format("mhac: internal error: the default schedule '{}' {}\n", kind, why);
  std::abort();
}

/// Whether the default file of machine kind `kind` sets `knob`: a CPU's file sets the knobs of
/// the two CPU backends, the CUDA file those of the CUDA target.
bool setsKnob(std::string_view kind, const Knob &knob) {
  return (kind == "cuda") == (knob.backend == Backend::Cuda);
}

/// Reads the default file of `target`'s kind, where every knob of its backends must be set (a
/// CUDA target's CPU knobs are those of AVX2, which no code for it reads, but which keep every
/// rule well defined). Its values are each
/// knob's preferred (largest) one: resolveSchedule fits them to a layer, so they need not
/// satisfy the rules together (a score tile of 8 keys x 4 vectors, 8 x 3 on a 48-row block).
Schedule readDefaults(const CpuTarget &target) {
  std::string_view kind = target.vectorKind();
  for (const EmbeddedSchedule &embedded : kDefaultSchedules) {
    if (embedded.kind != kind)
      continue;
    SourceFile file(fmt::format("<default schedule {}>", kind), std::string(embedded.text));
    DiagnosticEngine diags(file, std::cerr);
    std::optional<ScheduleFile> read = readScheduleFile(file, diags, target, "target");
    const ScheduleBlock *block = read ? read->find(kind) : nullptr;
    if (!block)
      brokenDefaults(kind, "does not read");
    Schedule schedule = kind == "cuda" ? readDefaults(genericCpuTarget(256)) : Schedule();
    for (const Knob &k : knobs()) {
      if (!setsKnob(kind, k))
        continue;
      const KnobSetting *setting = block->find(k.id);
      if (!setting)
        brokenDefaults(kind, fmt::format("does not set {}", k.name));
      k.set(schedule, setting->value);
    }
    return schedule;
  }
  brokenDefaults(kind, "is missing");
}

} // namespace

const Schedule &targetDefaults(const CpuTarget &target) {
  static std::mutex mutex;
  static std::map<std::string, Schedule> defaults;
  std::lock_guard<std::mutex> lock(mutex);
  auto [it, inserted] = defaults.try_emplace(target.vectorKind());
  if (inserted)
    it->second = readDefaults(target);
  return it->second;
}

} // namespace mhac
