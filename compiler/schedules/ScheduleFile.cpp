//===- ScheduleFile.cpp - reading and printing schedule files -------------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "compiler/schedules/ScheduleFile.h"

#include "compiler/frontend/AST.h"
#include "compiler/frontend/LayerText.h"
#include "compiler/frontend/Parser.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>

namespace mhac {

const KnobSetting *ScheduleBlock::find(KnobId id) const {
  for (const KnobSetting &setting : settings)
    if (setting.id == id)
      return &setting;
  return nullptr;
}

const ScheduleBlock *ScheduleFile::find(std::string_view name) const {
  for (const ScheduleBlock &block : blocks)
    if (block.name == name)
      return &block;
  return nullptr;
}

namespace {

/// What a knob of `backend` shapes, for messages.
std::string knobOwner(Backend backend) {
  return backend == Backend::Cuda ? "the CUDA target (--target cuda:*)"
                                  : fmt::format("the {} backend", backendName(backend));
}

/// What a compilation for `backend` is, for messages: "uses --backend halide".
std::string compilationKind(Backend backend) {
  return backend == Backend::Cuda ? "is for a CUDA target"
                                  : fmt::format("uses --backend {}", backendName(backend));
}

/// The `tuned_*` keys and the fields of Provenance they fill.
constexpr std::pair<std::string_view, std::string Provenance::*> kProvenanceKeys[] = {
    {"tuned_layer", &Provenance::layer},   {"tuned_sizes", &Provenance::sizes},
    {"tuned_cpu", &Provenance::cpu},       {"tuned_threads", &Provenance::threads},
    {"tuned_result", &Provenance::result},
};

/// The provenance field `key` names in `block` (created at the first one, given at `loc`), or
/// null for a key that is no `tuned_*` line.
std::string *provenanceField(ScheduleBlock &block, std::string_view key, SourceLocation loc) {
  for (const auto &[name, field] : kProvenanceKeys) {
    if (key != name)
      continue;
    if (!block.provenance) {
      block.provenance = Provenance();
      block.provenance->loc = loc;
    }
    return &(*block.provenance.*field);
  }
  return nullptr;
}

/// Checks one schedule file's syntax tree against the knob table.
class ScheduleFileChecker {
public:
  ScheduleFileChecker(const SourceFile &file, DiagnosticEngine &diags, const CpuTarget &target,
                      std::string_view blockKeyword, std::optional<Backend> backend)
      : file_(file), diags_(diags), target_(target), blockKeyword_(blockKeyword),
        backend_(backend) {}

  std::optional<ScheduleFile> check(const ModuleAST &ast, SourceLocation start);

private:
  void checkFormat(const std::vector<EntryAST> &settings, SourceLocation start);
  std::optional<KnobSetting> checkEntry(const EntryAST &entry);
  std::optional<PathSetting> checkPath(const EntryAST &entry);
  void error(SourceLocation loc, std::string_view message, size_t length) {
    diags_.error(loc, message, length);
  }

  const SourceFile &file_;
  DiagnosticEngine &diags_;
  const CpuTarget &target_;
  std::string_view blockKeyword_;
  std::optional<Backend> backend_;
};

std::optional<PathSetting> ScheduleFileChecker::checkPath(const EntryAST &entry) {
  const ValueAST &value = entry.value;
  size_t length = std::max<size_t>(1, value.spelling.size());
  if (value.kind != ValueAST::Kind::String || value.string.empty()) {
    error(value.loc,
          fmt::format("{} takes a transform-dialect file as a quoted path, found {}",
                      kProjectionTransformKey, describeValue(value)),
          length);
    return std::nullopt;
  }
  std::filesystem::path path(value.string);
  if (path.is_relative())
    path = std::filesystem::path(file_.name()).parent_path() / path;
  if (!std::ifstream(path)) {
    error(value.loc,
          fmt::format("cannot read the transform file '{}' (a relative path is relative to the "
                      "schedule file's folder)",
                      path.string()),
          length);
    return std::nullopt;
  }
  return PathSetting{path.lexically_normal().string(), entry.keyLoc};
}

void ScheduleFileChecker::checkFormat(const std::vector<EntryAST> &settings, SourceLocation start) {
  const EntryAST *format = nullptr;
  for (const EntryAST &entry : settings) {
    if (entry.key != "format") {
      std::string hint =
          findKnob(entry.key)
              ? fmt::format("; knobs go inside a '{} NAME {{ ... }}' block", blockKeyword_)
              : "";
      error(entry.keyLoc,
            fmt::format("unknown setting '{}' (a schedule file starts with 'format = {}'){}",
                        quoteSource(entry.key), kScheduleFormat, hint),
            entry.key.size());
      continue;
    }
    if (format) {
      error(entry.keyLoc, "duplicate setting 'format'", entry.key.size());
      diags_.note(format->keyLoc, "first given here", format->key.size());
      continue;
    }
    format = &entry;
    const ValueAST &value = entry.value;
    if (value.kind != ValueAST::Kind::Integer || value.integer != kScheduleFormat)
      error(value.loc,
            fmt::format("unsupported schedule format {} (this mhac reads format {})",
                        quoteSource(value.spelling), kScheduleFormat),
            value.spelling.size());
  }
  if (!format)
    error(start,
          fmt::format("the schedule file has no 'format = {}' line; write it first, before "
                      "the blocks",
                      kScheduleFormat),
          1);
}

std::optional<KnobSetting> ScheduleFileChecker::checkEntry(const EntryAST &entry) {
  const Knob *k = findKnob(entry.key);
  if (!k) {
    std::optional<std::string_view> suggestion = closestKnobName(entry.key);
    error(entry.keyLoc,
          fmt::format("unknown knob '{}'{}", quoteSource(entry.key),
                      suggestion ? fmt::format("; did you mean '{}'?", *suggestion)
                                 : std::string(" (docs/schedules.md lists the knobs)")),
          entry.key.size());
    return std::nullopt;
  }
  if (backend_ && k->backend != *backend_) {
    error(entry.keyLoc,
          fmt::format("'{}' is a knob of {}; this compilation {}", k->name, knobOwner(k->backend),
                      compilationKind(*backend_)),
          entry.key.size());
    return std::nullopt;
  }
  const ValueAST &value = entry.value;
  KnobSetting setting{k->id,
                      0,
                      entry.keyLoc,
                      value.loc,
                      entry.key.size(),
                      std::max<size_t>(1, value.spelling.size())};
  auto wrongValue = [&](std::string_view expected) {
    error(value.loc, fmt::format("{} takes {}, found {}", k->name, expected, describeValue(value)),
          setting.valueLength);
    return std::nullopt;
  };
  switch (k->type) {
  case KnobType::Integer:
    if (value.kind != ValueAST::Kind::Integer)
      return wrongValue("an integer");
    if (!inDomain(*k, value.integer, target_)) {
      error(value.loc, explainDomain(*k, value.integer, target_), setting.valueLength);
      return std::nullopt;
    }
    setting.value = value.integer;
    return setting;
  case KnobType::Boolean:
    if (value.kind != ValueAST::Kind::Boolean)
      return wrongValue("true or false");
    setting.value = value.boolean;
    return setting;
  case KnobType::Choice: {
    auto found = std::find(k->choices.begin(), k->choices.end(), value.spelling);
    if (value.kind != ValueAST::Kind::Identifier || found == k->choices.end()) {
      std::vector<int64_t> all(k->choices.size());
      for (size_t i = 0; i < all.size(); ++i)
        all[i] = static_cast<int64_t>(i);
      return wrongValue(fmt::format("one of {}", describeValues(*k, all)));
    }
    setting.value = found - k->choices.begin();
    return setting;
  }
  }
  return std::nullopt;
}

std::optional<ScheduleFile> ScheduleFileChecker::check(const ModuleAST &ast, SourceLocation start) {
  checkFormat(ast.settings, start);
  ScheduleFile file;
  std::map<std::string, SourceLocation> seenBlocks;
  for (const LayerAST &layer : ast.layers) {
    if (layer.keyword != blockKeyword_) {
      error(layer.keywordLoc,
            fmt::format("'{}' blocks are only in mhac's default schedules; write '{} {} {{ "
                        "... }}'",
                        layer.keyword, blockKeyword_, layer.name),
            layer.keyword.size());
      continue;
    }
    auto [previous, inserted] = seenBlocks.emplace(layer.name, layer.nameLoc);
    if (!inserted) {
      error(layer.nameLoc, fmt::format("duplicate schedule for {} '{}'", blockKeyword_, layer.name),
            layer.name.size());
      diags_.note(previous->second, "the first one is here", layer.name.size());
      continue;
    }
    ScheduleBlock block{layer.name, layer.nameLoc, {}, std::nullopt, std::nullopt};
    for (const EntryAST &entry : layer.entries) {
      if (std::string *field = provenanceField(block, entry.key, entry.keyLoc)) {
        if (entry.value.kind != ValueAST::Kind::String)
          error(entry.value.loc,
                fmt::format("{} takes a quoted string, found {}", entry.key,
                            describeValue(entry.value)),
                std::max<size_t>(1, entry.value.spelling.size()));
        else
          *field = entry.value.string;
        continue;
      }
      if (entry.key == kProjectionTransformKey) {
        if (backend_ && *backend_ != Backend::Mlir) {
          error(entry.keyLoc,
                fmt::format("'{}' replaces a transform-dialect script of the mlir backend; "
                            "this compilation {}",
                            kProjectionTransformKey, compilationKind(*backend_)),
                entry.key.size());
          continue;
        }
        std::optional<PathSetting> path = checkPath(entry);
        if (path && block.projectionTransform) {
          error(entry.keyLoc, fmt::format("duplicate setting '{}'", entry.key), entry.key.size());
          diags_.note(block.projectionTransform->keyLoc, "first given here", entry.key.size());
        } else if (path) {
          block.projectionTransform = std::move(path);
        }
        continue;
      }
      std::optional<KnobSetting> setting = checkEntry(entry);
      if (!setting)
        continue;
      if (const KnobSetting *first = block.find(setting->id)) {
        error(entry.keyLoc, fmt::format("duplicate knob '{}'", entry.key), entry.key.size());
        diags_.note(first->keyLoc, "first given here", first->keyLength);
        continue;
      }
      block.settings.push_back(*setting);
    }
    file.blocks.push_back(std::move(block));
  }
  if (diags_.hasErrors())
    return std::nullopt;
  return file;
}

/// `text` as a string of the schedule language: in quotes, `"` and `\` escaped.
std::string quoteString(std::string_view text) {
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\')
      quoted += '\\';
    quoted += c;
  }
  return quoted + "\"";
}

/// Where a message about something missing from the whole file points: its first line.
SourceLocation fileStart() { return SourceLocation{1, 1}; }

} // namespace

std::optional<ScheduleFile> readScheduleFile(const SourceFile &file, DiagnosticEngine &diags,
                                             const CpuTarget &target, std::string_view blockKeyword,
                                             std::optional<Backend> backend) {
  BlockGrammar grammar{/*settings=*/true, {"layer", "target"}, /*needsBlock=*/false};
  ModuleAST ast = Parser(file, diags, grammar).parseModule();
  if (diags.hasErrors())
    return std::nullopt;
  return ScheduleFileChecker(file, diags, target, blockKeyword, backend).check(ast, fileStart());
}

bool checkBlockNames(const ScheduleFile &file, const std::vector<LayerSpec> &layers,
                     DiagnosticEngine &diags) {
  bool ok = true;
  for (const ScheduleBlock &block : file.blocks) {
    auto named = [&](const LayerSpec &layer) { return layer.name == block.name; };
    if (std::any_of(layers.begin(), layers.end(), named))
      continue;
    std::vector<std::string_view> names;
    for (const LayerSpec &layer : layers)
      names.push_back(layer.name);
    std::optional<std::string_view> suggestion = closestName(block.name, names);
    diags.error(block.nameLoc,
                fmt::format("no layer '{}' in the compiled file (its layers: {}){}", block.name,
                            fmt::join(names, ", "),
                            suggestion ? fmt::format("; did you mean '{}'?", *suggestion) : ""),
                block.name.size());
    ok = false;
  }
  return ok;
}

std::string printScheduleBlock(std::string_view keyword, std::string_view name,
                               const Schedule &schedule, const Provenance *provenance,
                               Backend backend) {
  size_t width = 0;
  for (const Knob &k : knobs())
    if (k.backend == backend)
      width = std::max(width, k.name.size() + 3 + formatKnobValue(k, k.get(schedule)).size());
  std::string out = fmt::format("{} {} {{\n", keyword, name);
  if (provenance)
    for (const auto &[key, field] : kProvenanceKeys)
      out += fmt::format("  {} = {}\n", key, quoteString(provenance->*field));
  for (const Knob &k : knobs()) {
    if (k.backend != backend)
      continue;
    std::string line = fmt::format("{} = {}", k.name, formatKnobValue(k, k.get(schedule)));
    out += fmt::format("  {:<{}}  # {}\n", line, width, k.summary);
  }
  if (backend == Backend::Mlir && !schedule.projectionTransform.empty())
    out += fmt::format("  {} = {}  # replaces the projections' tiling script (MLIR 22)\n",
                       kProjectionTransformKey, quoteString(schedule.projectionTransform));
  out += "}\n";
  return out;
}

void checkProvenance(const ScheduleBlock &block, const LayerSpec &layer, const CpuTarget &target,
                     DiagnosticEngine &diags) {
  if (!block.provenance)
    return;
  const Provenance &p = *block.provenance;
  auto warnIfOther = [&](const std::string &tunedFor, const std::string &current,
                         std::string_view what, std::string_view thisOne) {
    if (tunedFor.empty() || tunedFor == current)
      return;
    diags.warning(p.loc,
                  fmt::format("the schedule of '{}' was tuned {} ({}); {} {}: its speed may "
                              "differ, tune it again with mhac tune",
                              block.name, what, tunedFor, thisOne, current),
                  11);
  };
  warnIfOther(p.layer, layerFingerprint(layer), "for another layer", "this one is");
  warnIfOther(p.cpu, describeCpu(target), "on another CPU", "this target is");
}

std::string printScheduleFile(const std::vector<std::pair<std::string, Schedule>> &schedules,
                              std::string_view source, const CpuTarget &target, Backend backend) {
  std::string machine = target.cuda ? fmt::format("{} KiB of shared memory per block",
                                                  target.cuda->sharedBytes / 1024)
                                    : fmt::format("{}-bit vectors, {} vector registers",
                                                  target.vectorBits, target.vectorRegisters);
  std::string out = fmt::format(
      "# Schedules of {} for target {} ({}){}.\n"
      "# Edit a knob and compile with --schedule FILE; a knob left out takes the target's\n"
      "# default. docs/schedules.md describes every knob.\n"
      "format = {}\n",
      source, target.name, machine, backend == Backend::Halide ? ", backend halide" : "",
      kScheduleFormat);
  for (const auto &[name, schedule] : schedules)
    out += "\n" + printScheduleBlock("layer", name, schedule, nullptr, backend);
  return out;
}

} // namespace mhac
