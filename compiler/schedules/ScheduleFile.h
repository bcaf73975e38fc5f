//===- ScheduleFile.h - schedule files: read, resolve, print ----*- C++ -*-===//
//
// Part of mhac. A schedule file is the user's view of schedules:
//
//   format = 1
//   layer bert_base {
//     projection_register_rows = 6      # one knob per line; comments anywhere
//     attention_key_block      = 96
//   }
//
// It is read with the layer language's lexer and parser (the same tokens, comments and
// `FILE:LINE:COL: error:` diagnostics), checked against the knob table, and resolved per layer:
// knobs a block leaves out take the target's defaults, fitted to the layer.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_COMPILER_SCHEDULES_SCHEDULEFILE_H
#define MHAC_COMPILER_SCHEDULES_SCHEDULEFILE_H

#include "compiler/frontend/Diagnostics.h"
#include "compiler/frontend/LayerSpec.h"
#include "compiler/schedules/Knobs.h"
#include "runtime/include/mhac/runtime.h"

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mhac {

/// The format version of the schedule files this mhac reads and writes.
inline constexpr int64_t kScheduleFormat = MHAC_SCHEDULE_FORMAT;

/// One `knob = value` line.
struct KnobSetting {
  KnobId id;
  int64_t value = 0;
  SourceLocation keyLoc, valueLoc;
  size_t keyLength = 1, valueLength = 1;
};

/// The line that names a transform-dialect file in place of the projections' tiling script.
inline constexpr std::string_view kProjectionTransformKey = "projection_transform";

/// `projection_transform = "FILE"`.
struct PathSetting {
  std::string path; ///< relative paths are resolved against the schedule file's folder
  SourceLocation keyLoc;
};

/// Where a tuned block comes from: the `tuned_*` lines mhac tune writes (strings). They change
/// no code; compiling a block tuned for another layer or CPU warns (checkProvenance).
struct Provenance {
  std::string layer;   ///< tuned_layer: the layer's fingerprint (LayerText.h)
  std::string sizes;   ///< tuned_sizes: "batch=1 seq=384 kv_seq=384"
  std::string cpu;     ///< tuned_cpu: describeCpu of the machine it was measured on
  std::string threads; ///< tuned_threads
  std::string result;  ///< tuned_result: the compiler, and the speed-up over the default
  SourceLocation loc;  ///< the first tuned_* line
};

/// One block: `layer NAME { ... }` (or `target KIND { ... }` in mhac's default schedules).
struct ScheduleBlock {
  std::string name;
  SourceLocation nameLoc;
  std::vector<KnobSetting> settings;
  std::optional<PathSetting> projectionTransform;
  std::optional<Provenance> provenance;

  const KnobSetting *find(KnobId id) const;
};

struct ScheduleFile {
  std::vector<ScheduleBlock> blocks;

  const ScheduleBlock *find(std::string_view name) const;
};

/// Reads a schedule file: its `format` line, its blocks (of `blockKeyword`), and each knob's
/// name, type and value on `target` (values are checked against the knobs' domains here; the
/// rules that couple knobs or read the layer are checked by resolveSchedule). With `backend`,
/// knobs of the other backend are errors. Reports every error to `diags` and returns nullopt
/// if there was one.
std::optional<ScheduleFile> readScheduleFile(const SourceFile &file, DiagnosticEngine &diags,
                                             const CpuTarget &target,
                                             std::string_view blockKeyword = "layer",
                                             std::optional<Backend> backend = std::nullopt);

/// Reports, for every block of `file` that names no layer of `layers`, an error with a
/// suggestion. Returns false if there was one.
bool checkBlockNames(const ScheduleFile &file, const std::vector<LayerSpec> &layers,
                     DiagnosticEngine &diags);

/// The schedule of `layer` on `target`: the knobs `block` sets (none when null), the others the
/// target's defaults fitted to the layer (each the largest legal value up to its default).
/// A schedule that breaks a rule is reported at the first knob of the rule that `block` sets
/// (to `diags`), or, when the block sets none of them, as the returned error.
struct ScheduleResolution {
  std::optional<Schedule> schedule;
  std::string error; ///< set when the rule broken involves no knob of the block
};
ScheduleResolution resolveSchedule(const LayerSpec &layer, const CpuTarget &target,
                                   const ScheduleBlock *block, DiagnosticEngine *diags);

/// `layer NAME { ... }` with every knob of `schedule` for `backend`, one per line, each with its
/// summary, its projection transform file when it has one, and the `tuned_*` lines of
/// `provenance`.
std::string printScheduleBlock(std::string_view keyword, std::string_view name,
                               const Schedule &schedule, const Provenance *provenance = nullptr,
                               Backend backend = Backend::Mlir);

/// Warns (to `diags`) when `block` was tuned for another layer than `layer` or another CPU
/// than `target`, saying what it was tuned for.
void checkProvenance(const ScheduleBlock &block, const LayerSpec &layer, const CpuTarget &target,
                     DiagnosticEngine &diags);

/// A whole schedule file of `schedules` (layer names and their schedules) for `target`, with
/// a header saying where they come from.
std::string printScheduleFile(const std::vector<std::pair<std::string, Schedule>> &schedules,
                              std::string_view source, const CpuTarget &target,
                              Backend backend = Backend::Mlir);

/// The default schedule of `target`'s kind of vector unit (compiler/schedules/defaults),
/// before it is fitted to a layer.
const Schedule &targetDefaults(const CpuTarget &target);

} // namespace mhac

#endif // MHAC_COMPILER_SCHEDULES_SCHEDULEFILE_H
