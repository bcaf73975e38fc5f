//===- ScheduleFuzzer.cpp - libFuzzer target for schedule files -----------===//
//
// Part of mhac. Feeds arbitrary bytes as a schedule file for a fixed set of layers, at both
// vector widths, through the reader, the block-name check and the resolution of every layer,
// rendering every diagnostic. It checks the schedule language's promises: whatever resolves
// breaks no rule of the constraint table, and prints as a block that reads back to the same
// schedule. A crash, a sanitizer report or a broken promise is a finding.
//
//===----------------------------------------------------------------------===//

#include "compiler/frontend/Parser.h"
#include "compiler/frontend/Sema.h"
#include "compiler/schedules/ScheduleFile.h"

#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace {

/// Layers of every shape a rule reads: grouped, a short static sequence, a dynamic one, a head
/// no square tile covers, a wide head.
const char kLayers[] = R"(
layer self { model_dim = 64
heads = 4
seq = ? }
layer grouped { model_dim = 128
heads = 8
kv_heads = 2
seq = 100 }
layer decode { model_dim = 80
heads = 2
seq = 7 }
layer wide { model_dim = 4096
heads = 2
seq = 33 }
)";

const std::vector<mhac::LayerSpec> &layers() {
  static const std::vector<mhac::LayerSpec> specs = [] {
    mhac::SourceFile file("layers.mha", kLayers);
    std::ostringstream messages;
    mhac::DiagnosticEngine diags(file, messages);
    mhac::ModuleAST ast = mhac::Parser(file, diags).parseModule();
    std::optional<std::vector<mhac::LayerSpec>> analyzed = mhac::analyzeModule(ast, diags);
    if (!analyzed) {
      std::fprintf(stderr, "the fuzzer's layers do not compile:\n%s", messages.str().c_str());
      std::abort();
    }
    return *analyzed;
  }();
  return specs;
}

[[noreturn]] void finding(const char *what, const std::string &detail) {
  std::fprintf(stderr, "%s\n%s\n", what, detail.c_str());
  std::abort();
}

void fuzzTarget(const mhac::SourceFile &file, const mhac::CpuTarget &target) {
  std::ostringstream messages;
  mhac::DiagnosticEngine diags(file, messages);
  std::optional<mhac::ScheduleFile> schedules = mhac::readScheduleFile(file, diags, target);
  if (!schedules || !mhac::checkBlockNames(*schedules, layers(), diags))
    return;
  for (const mhac::LayerSpec &layer : layers()) {
    mhac::ScheduleResolution resolution =
        mhac::resolveSchedule(layer, target, schedules->find(layer.name), &diags);
    if (!resolution.schedule)
      continue;
    const mhac::Schedule &schedule = *resolution.schedule;
    mhac::KnobContext context{target, &layer};
    if (const mhac::Constraint *broken = mhac::firstViolation(schedule, context))
      finding("an accepted schedule breaks a rule", broken->explain(schedule, context));

    std::string printed = mhac::printScheduleFile({{layer.name, schedule}}, "fuzz", target);
    mhac::SourceFile again("printed.sched", printed);
    std::ostringstream againMessages;
    mhac::DiagnosticEngine againDiags(again, againMessages);
    std::optional<mhac::ScheduleFile> reread = mhac::readScheduleFile(again, againDiags, target);
    if (!reread)
      finding("a printed schedule does not read back", againMessages.str());
    mhac::ScheduleResolution same =
        mhac::resolveSchedule(layer, target, reread->find(layer.name), &againDiags);
    if (!same.schedule || *same.schedule != schedule)
      finding("a printed schedule reads back as another one", printed);
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mhac::SourceFile file("fuzz.sched", std::string(reinterpret_cast<const char *>(data), size));
  for (unsigned bits : {256u, 512u})
    fuzzTarget(file, mhac::genericCpuTarget(bits));
  return 0;
}
