//===- Sema.cpp - the language's checks and default resolution ------------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "compiler/frontend/Sema.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

namespace mhac {
namespace {

/// What a key's value must be.
enum class ValueRule {
  Size,          ///< a positive integer known at compile time
  SizeOrDynamic, ///< a positive integer or `?`
  Boolean,       ///< `true` or `false`
  DataType,      ///< `f32` or `bf16`
  Scale,         ///< a positive finite number
};

struct KeyRule {
  std::string_view name;
  ValueRule rule;
};

/// Every key of the language (docs/language.md).
constexpr KeyRule kKeyRules[] = {
    {"model_dim", ValueRule::Size},    {"heads", ValueRule::Size},
    {"head_dim", ValueRule::Size},     {"kv_heads", ValueRule::Size},
    {"seq", ValueRule::SizeOrDynamic}, {"batch", ValueRule::SizeOrDynamic},
    {"cross", ValueRule::Boolean},     {"kv_seq", ValueRule::SizeOrDynamic},
    {"kv_dim", ValueRule::Size},       {"causal", ValueRule::Boolean},
    {"kv_lens", ValueRule::Boolean},   {"bias", ValueRule::Boolean},
    {"dtype", ValueRule::DataType},    {"scale", ValueRule::Scale},
};

/// Identifiers a layer may not be named, since the name becomes a C function: the keywords of
/// C11 and C23.
constexpr std::string_view kCKeywords[] = {
    "alignas",
    "alignof",
    "auto",
    "bool",
    "break",
    "case",
    "char",
    "const",
    "constexpr",
    "continue",
    "default",
    "do",
    "double",
    "else",
    "enum",
    "extern",
    "false",
    "float",
    "for",
    "goto",
    "if",
    "inline",
    "int",
    "long",
    "nullptr",
    "register",
    "restrict",
    "return",
    "short",
    "signed",
    "sizeof",
    "static",
    "static_assert",
    "struct",
    "switch",
    "thread_local",
    "true",
    "typedef",
    "typeof",
    "typeof_unqual",
    "union",
    "unsigned",
    "void",
    "volatile",
    "while",
    "_Alignas",
    "_Alignof",
    "_Atomic",
    "_BitInt",
    "_Bool",
    "_Complex",
    "_Generic",
    "_Imaginary",
    "_Noreturn",
    "_Static_assert",
    "_Thread_local",
};

/// The closest known key to a misspelled one, if it is close enough to be a likely typo.
std::optional<std::string_view> suggestKey(std::string_view key) {
  std::vector<std::string_view> names;
  for (const KeyRule &rule : kKeyRules)
    names.push_back(rule.name);
  return closestName(key, names);
}

std::string_view ruleExpectation(ValueRule rule) {
  switch (rule) {
  case ValueRule::Size:
    return "a positive integer";
  case ValueRule::SizeOrDynamic:
    return "a positive integer or '?'";
  case ValueRule::Boolean:
    return "true or false";
  case ValueRule::DataType:
    return "f32 or bf16";
  case ValueRule::Scale:
    return "a positive number";
  }
  return "a value";
}

/// Checks one layer. Values that passed their own checks are kept in `valid_`, so that the
/// consistency checks run only on well-formed values and one mistake is reported once.
class LayerChecker {
public:
  LayerChecker(const LayerAST &layer, DiagnosticEngine &diags) : layer_(layer), diags_(diags) {}

  std::optional<LayerSpec> check();

private:
  void checkEntry(const EntryAST &entry);
  bool checkValue(const EntryAST &entry, ValueRule rule);
  void checkName();
  void checkRequired(std::string_view key, std::string_view why = "");
  /// Warns when a causal cross-attention layer has rows that see no key (S > Skv).
  void warnAboutMaskedRows(const LayerSpec &spec);

  /// The entry for `key` if it was written, even with a bad value.
  const EntryAST *given(std::string_view key) const {
    auto it = seen_.find(key);
    return it == seen_.end() ? nullptr : it->second;
  }
  /// The entry for `key` if it was written with a well-formed value.
  const EntryAST *valid(std::string_view key) const {
    auto it = valid_.find(key);
    return it == valid_.end() ? nullptr : it->second;
  }
  int64_t size(std::string_view key, int64_t fallback) const {
    const EntryAST *entry = valid(key);
    if (!entry)
      return fallback;
    return entry->value.kind == ValueAST::Kind::Dynamic ? kDynamicSize : entry->value.integer;
  }
  bool boolean(std::string_view key, bool fallback) const {
    const EntryAST *entry = valid(key);
    return entry ? entry->value.boolean : fallback;
  }
  void error(SourceLocation loc, const std::string &message, size_t length = 1) {
    diags_.error(loc, message, length);
    failed_ = true;
  }

  const LayerAST &layer_;
  DiagnosticEngine &diags_;
  std::map<std::string_view, const EntryAST *, std::less<>> seen_;
  std::map<std::string_view, const EntryAST *, std::less<>> valid_;
  bool failed_ = false;
};

void LayerChecker::checkName() {
  std::string_view name = layer_.name;
  if (std::find(std::begin(kCKeywords), std::end(kCKeywords), name) != std::end(kCKeywords))
    error(layer_.nameLoc,
          fmt::format("layer name '{}' is a C keyword; it must name a C function", name),
          name.size());
  else if (name.substr(0, 5) == "mhac_")
    error(layer_.nameLoc,
          fmt::format("layer name '{}' uses the prefix 'mhac_', which is reserved for the "
                      "runtime",
                      name),
          name.size());
}

bool LayerChecker::checkValue(const EntryAST &entry, ValueRule rule) {
  const ValueAST &value = entry.value;
  auto wrongType = [&] {
    std::string message = fmt::format("'{}' expects {}, found {}", entry.key, ruleExpectation(rule),
                                      describeValue(value));
    if (value.kind == ValueAST::Kind::Dynamic)
      message += "; only batch, seq and kv_seq may be given at run time";
    error(value.loc, message, value.spelling.size());
    return false;
  };

  switch (rule) {
  case ValueRule::Size:
  case ValueRule::SizeOrDynamic:
    if (value.kind == ValueAST::Kind::Dynamic && rule == ValueRule::SizeOrDynamic)
      return true;
    if (value.kind != ValueAST::Kind::Integer)
      return wrongType();
    if (value.integer <= 0) {
      error(value.loc, fmt::format("'{}' must be positive, found {}", entry.key, value.integer),
            value.spelling.size());
      return false;
    }
    if (value.integer > kMaxSize) {
      error(value.loc,
            fmt::format("'{}' is too large: {} (the limit is {})", entry.key, value.integer,
                        kMaxSize),
            value.spelling.size());
      return false;
    }
    return true;
  case ValueRule::Boolean:
    return value.kind == ValueAST::Kind::Boolean || wrongType();
  case ValueRule::DataType:
    if (value.kind != ValueAST::Kind::Identifier)
      return wrongType();
    if (value.spelling != "f32" && value.spelling != "bf16") {
      error(value.loc,
            fmt::format("unknown dtype '{}'; expected f32 or bf16", quoteSource(value.spelling)),
            value.spelling.size());
      return false;
    }
    return true;
  case ValueRule::Scale: {
    if (value.kind != ValueAST::Kind::Integer && value.kind != ValueAST::Kind::Decimal)
      return wrongType();
    double scale =
        value.kind == ValueAST::Kind::Integer ? static_cast<double>(value.integer) : value.decimal;
    // The scale becomes an f32 constant: it must stay positive and finite once rounded.
    float rounded = static_cast<float>(scale);
    if (!(scale > 0) || !std::isfinite(rounded) || rounded == 0.0f) {
      error(value.loc,
            fmt::format("'scale' must be a positive number representable in f32, found {}",
                        value.spelling),
            value.spelling.size());
      return false;
    }
    return true;
  }
  }
  return false;
}

void LayerChecker::checkEntry(const EntryAST &entry) {
  const KeyRule *rule = nullptr;
  for (const KeyRule &candidate : kKeyRules)
    if (candidate.name == entry.key)
      rule = &candidate;
  if (!rule) {
    std::string message = fmt::format("unknown key '{}'", entry.key);
    if (auto suggestion = suggestKey(entry.key))
      message += fmt::format("; did you mean '{}'?", *suggestion);
    error(entry.keyLoc, message, entry.key.size());
    return;
  }
  auto [previous, inserted] = seen_.try_emplace(rule->name, &entry);
  if (!inserted) {
    error(entry.keyLoc, fmt::format("duplicate key '{}'", entry.key), entry.key.size());
    diags_.note(previous->second->keyLoc, "first given here", entry.key.size());
    return;
  }
  if (checkValue(entry, rule->rule))
    valid_.emplace(rule->name, &entry);
}

void LayerChecker::checkRequired(std::string_view key, std::string_view why) {
  if (given(key))
    return;
  error(layer_.nameLoc,
        fmt::format("layer '{}' is missing required key '{}'{}", layer_.name, key, why),
        layer_.name.size());
}

std::optional<LayerSpec> LayerChecker::check() {
  checkName();
  for (const EntryAST &entry : layer_.entries)
    checkEntry(entry);

  bool cross = boolean("cross", false);
  checkRequired("model_dim");
  checkRequired("heads");
  checkRequired("seq");
  if (cross)
    checkRequired("kv_seq", " (cross-attention takes keys and values from 'memory')");

  LayerSpec spec;
  spec.name = layer_.name;
  spec.loc = layer_.nameLoc;
  spec.modelDim = size("model_dim", 0);
  spec.heads = size("heads", 0);
  spec.seq = size("seq", 0);
  spec.batch = size("batch", kDynamicSize);
  spec.cross = cross;
  spec.causal = boolean("causal", false);
  spec.kvLens = boolean("kv_lens", false);
  spec.bias = boolean("bias", true);
  if (const EntryAST *dtype = valid("dtype"))
    spec.dtype = dtype->value.spelling == "bf16" ? DType::BF16 : DType::F32;

  // head_dim defaults to model_dim / heads, which must then divide evenly.
  spec.headDim = size("head_dim", 0);
  if (!given("head_dim") && spec.modelDim > 0 && spec.heads > 0) {
    if (spec.modelDim % spec.heads == 0) {
      spec.headDim = spec.modelDim / spec.heads;
    } else {
      const EntryAST *heads = valid("heads");
      error(heads->value.loc,
            fmt::format("model_dim ({}) is not divisible by heads ({}); set head_dim to choose "
                        "the width of each head",
                        spec.modelDim, spec.heads),
            heads->value.spelling.size());
    }
  }

  spec.kvHeads = size("kv_heads", spec.heads);
  if (const EntryAST *kvHeads = valid("kv_heads");
      kvHeads && spec.heads > 0 && spec.heads % spec.kvHeads != 0)
    error(kvHeads->value.loc,
          fmt::format("kv_heads ({}) must divide heads ({})", spec.kvHeads, spec.heads),
          kvHeads->value.spelling.size());

  if (spec.headDim > 0 && spec.heads > 0 && spec.heads * spec.headDim > kMaxSize)
    error(layer_.nameLoc,
          fmt::format("heads * head_dim ({} * {}) is too large (the limit is {})", spec.heads,
                      spec.headDim, kMaxSize),
          layer_.name.size());

  if (const EntryAST *kvDim = given("kv_dim"); kvDim && !cross)
    error(kvDim->keyLoc, "'kv_dim' is only allowed when cross = true", kvDim->key.size());
  spec.kvDim = cross ? size("kv_dim", spec.modelDim) : spec.modelDim;

  // In self-attention keys and values come from x itself: kv_seq can only repeat seq.
  spec.kvSeq = cross ? size("kv_seq", 0) : spec.seq;
  if (const EntryAST *kvSeq = valid("kv_seq");
      kvSeq && !cross && spec.seq != 0 && size("kv_seq", 0) != spec.seq)
    error(kvSeq->value.loc,
          fmt::format("kv_seq ({}) must equal seq ({}) in self-attention; set cross = true to "
                      "attend over a separate input",
                      kvSeq->value.spelling,
                      spec.seq == kDynamicSize ? std::string("?") : std::to_string(spec.seq)),
          kvSeq->value.spelling.size());

  if (const EntryAST *scale = valid("scale"))
    spec.scale = scale->value.kind == ValueAST::Kind::Integer
                     ? static_cast<double>(scale->value.integer)
                     : scale->value.decimal;
  else if (spec.headDim > 0)
    spec.scale = 1.0 / std::sqrt(static_cast<double>(spec.headDim));

  warnAboutMaskedRows(spec);
  if (failed_)
    return std::nullopt;
  return spec;
}

void LayerChecker::warnAboutMaskedRows(const LayerSpec &spec) {
  // The causal mask is aligned to the bottom right: query i sees keys j <= i + (Skv - S).
  const EntryAST *causal = valid("causal");
  if (!spec.causal || !causal || spec.seq <= 0 || spec.kvSeq <= 0 || spec.seq <= spec.kvSeq)
    return;
  diags_.warning(causal->keyLoc,
                 fmt::format("with causal = true, query i sees the keys j <= i - {} (seq {} minus "
                             "kv_seq {}): the first {} rows see no key, so their attention is 0 "
                             "and their output the output projection's bias",
                             spec.seq - spec.kvSeq, spec.seq, spec.kvSeq, spec.seq - spec.kvSeq),
                 causal->key.size());
}

} // namespace

std::optional<std::vector<LayerSpec>> analyzeModule(const ModuleAST &module,
                                                    DiagnosticEngine &diags) {
  std::vector<LayerSpec> specs;
  std::map<std::string_view, SourceLocation, std::less<>> names;
  for (const LayerAST &layer : module.layers) {
    if (diags.reachedErrorLimit())
      break;
    auto [previous, inserted] = names.try_emplace(layer.name, layer.nameLoc);
    if (!inserted) {
      diags.error(layer.nameLoc, fmt::format("redefinition of layer '{}'", layer.name),
                  layer.name.size());
      diags.note(previous->second, "previous definition is here", layer.name.size());
      continue;
    }
    if (std::optional<LayerSpec> spec = LayerChecker(layer, diags).check())
      specs.push_back(std::move(*spec));
  }
  if (diags.hasErrors())
    return std::nullopt;
  return specs;
}

} // namespace mhac
