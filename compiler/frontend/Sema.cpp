//===- Sema.cpp - the language's checks and default resolution ------------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "compiler/frontend/Sema.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <map>
#include <vector>

namespace mhac {
namespace {

/// What a key's value must be.
enum class ValueRule {
  Size,          ///< a positive integer known at compile time
  SizeOrDynamic, ///< a positive integer or `?`
  Boolean,       ///< `true` or `false`
  DataType,      ///< `f32` or `bf16`
  Scale,         ///< a positive number, finite once rounded to f32
  Number,        ///< a positive finite number
  Choice,        ///< one of the identifiers KeyRule::choices
};

struct KeyRule {
  std::string_view name;
  ValueRule rule;
  /// For ValueRule::Choice: the identifiers it takes, the default first.
  std::initializer_list<std::string_view> choices = {};
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
    // Decoder layers (docs/language.md, "Decoder keys").
    {"rope", ValueRule::Choice, {"none", "half", "interleaved"}},
    {"rope_base", ValueRule::Number},
    {"rope_dim", ValueRule::Size},
    {"rope_scaling", ValueRule::Choice, {"none", "linear", "llama3", "yarn"}},
    {"rope_factor", ValueRule::Number},
    {"rope_low_freq_factor", ValueRule::Number},
    {"rope_high_freq_factor", ValueRule::Number},
    {"rope_original_max", ValueRule::Size},
    {"rope_beta_fast", ValueRule::Number},
    {"rope_beta_slow", ValueRule::Number},
    {"rope_truncate", ValueRule::Boolean},
    {"rope_attention_factor", ValueRule::Number},
    {"kv_cache", ValueRule::Size},
    {"window", ValueRule::Size},
    {"softcap", ValueRule::Number},
    {"qk_norm", ValueRule::Choice, {"none", "rms"}},
    {"qk_norm_eps", ValueRule::Number},
    {"sinks", ValueRule::Boolean},
};

/// The parameters of each rope_scaling, and whether each must be written.
struct ScalingParameter {
  std::string_view key;
  bool required;
};
constexpr ScalingParameter kLinearParameters[] = {{"rope_factor", true}};
constexpr ScalingParameter kLlama3Parameters[] = {{"rope_factor", true},
                                                  {"rope_low_freq_factor", true},
                                                  {"rope_high_freq_factor", true},
                                                  {"rope_original_max", true}};
constexpr ScalingParameter kYarnParameters[] = {
    {"rope_factor", true},     {"rope_original_max", true},     {"rope_beta_fast", false},
    {"rope_beta_slow", false}, {"rope_truncate", false}, {"rope_attention_factor", false}};
/// Every key that is a parameter of some rope_scaling.
constexpr std::string_view kScalingKeys[] = {
    "rope_factor",    "rope_low_freq_factor", "rope_high_freq_factor", "rope_original_max",
    "rope_beta_fast", "rope_beta_slow",       "rope_truncate",         "rope_attention_factor"};

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
  case ValueRule::Number:
    return "a positive number";
  case ValueRule::Choice:
    return "a name";
  }
  return "a value";
}

/// The identifiers a choice takes, for messages: "none, half or interleaved".
std::string choiceList(const KeyRule &rule) {
  std::string list;
  size_t i = 0, count = rule.choices.size();
  for (std::string_view choice : rule.choices) {
    list += (i == 0 ? "" : i + 1 == count ? " or " : ", ") + std::string(choice);
    ++i;
  }
  return list;
}

/// Checks one layer. Values that passed their own checks are kept in `valid_`, so that the
/// consistency checks run only on well-formed values and one mistake is reported once.
class LayerChecker {
public:
  LayerChecker(const LayerAST &layer, DiagnosticEngine &diags) : layer_(layer), diags_(diags) {}

  std::optional<LayerSpec> check();

private:
  void checkEntry(const EntryAST &entry);
  bool checkValue(const EntryAST &entry, const KeyRule &rule);
  /// The checks of the decoder keys (rope, kv_cache, window, softcap, qk_norm, sinks), which
  /// fill spec's fields of them.
  void checkDecoderKeys(LayerSpec &spec);
  void checkRope(LayerSpec &spec);
  /// An error at `key`'s entry (its key) when it was written: `message` says why it does not
  /// apply here.
  void refuseKey(std::string_view key, const std::string &message);
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
  double number(std::string_view key, double fallback) const {
    const EntryAST *entry = valid(key);
    if (!entry)
      return fallback;
    return entry->value.kind == ValueAST::Kind::Integer ? static_cast<double>(entry->value.integer)
                                                        : entry->value.decimal;
  }
  std::string_view choice(std::string_view key, std::string_view fallback) const {
    const EntryAST *entry = valid(key);
    return entry ? std::string_view(entry->value.spelling) : fallback;
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

bool LayerChecker::checkValue(const EntryAST &entry, const KeyRule &keyRule) {
  const ValueAST &value = entry.value;
  ValueRule rule = keyRule.rule;
  auto wrongType = [&] {
    std::string expected =
        rule == ValueRule::Choice ? choiceList(keyRule) : std::string(ruleExpectation(rule));
    std::string message =
        fmt::format("'{}' expects {}, found {}", entry.key, expected, describeValue(value));
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
  case ValueRule::Number: {
    if (value.kind != ValueAST::Kind::Integer && value.kind != ValueAST::Kind::Decimal)
      return wrongType();
    double number =
        value.kind == ValueAST::Kind::Integer ? static_cast<double>(value.integer) : value.decimal;
    if (!(number > 0) || !std::isfinite(number)) {
      error(value.loc,
            fmt::format("'{}' must be a positive number, found {}", entry.key, value.spelling),
            value.spelling.size());
      return false;
    }
    return true;
  }
  case ValueRule::Choice: {
    if (value.kind != ValueAST::Kind::Identifier)
      return wrongType();
    for (std::string_view choice : keyRule.choices)
      if (value.spelling == choice)
        return true;
    error(value.loc,
          fmt::format("unknown {} '{}'; expected {}", entry.key, quoteSource(value.spelling),
                      choiceList(keyRule)),
          value.spelling.size());
    return false;
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
  if (checkValue(entry, *rule))
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

  checkDecoderKeys(spec);
  for (const auto &[key, entry] : seen_)
    spec.keyLocations.emplace(std::string(key), entry->keyLoc);

  warnAboutMaskedRows(spec);
  if (failed_)
    return std::nullopt;
  return spec;
}

void LayerChecker::refuseKey(std::string_view key, const std::string &message) {
  if (const EntryAST *entry = given(key))
    error(entry->keyLoc, message, entry->key.size());
}

void LayerChecker::checkDecoderKeys(LayerSpec &spec) {
  checkRope(spec);

  spec.kvCache = size("kv_cache", 0);
  if (given("kv_cache")) {
    if (spec.cross)
      refuseKey("kv_cache", "kv_cache keeps the past keys and values of a self-attention layer; "
                            "a cross-attention layer computes its keys from 'memory' on each "
                            "call (remove kv_cache, or make the layer self-attention)");
    refuseKey("kv_lens", "kv_lens cannot be combined with kv_cache: with a cache, each row's "
                         "cache_len says which keys it sees (remove kv_lens)");
    if (!spec.cross)
      refuseKey("kv_seq", "kv_seq is implied by kv_cache: the keys are the cache's first "
                          "cache_len + seq rows (remove kv_seq)");
    // A cache's queries see the keys before them: causal is the default. A call's keys are
    // the cache's first cache_len + seq rows, a count known when it runs.
    spec.causal = boolean("causal", true);
    if (!spec.cross)
      spec.kvSeq = kDynamicSize;
    if (const EntryAST *seq = valid("seq");
        seq && spec.kvCache > 0 && spec.seq != kDynamicSize && spec.seq > spec.kvCache)
      error(seq->value.loc,
            fmt::format("seq ({}) is larger than kv_cache ({}): the new tokens of a call must "
                        "fit in the cache",
                        spec.seq, spec.kvCache),
            seq->value.spelling.size());
  }

  spec.window = size("window", 0);
  if (spec.cross)
    refuseKey("window", "a sliding window compares the positions of queries and keys, which "
                        "only self-attention has (remove window, or make the layer self-attention)");

  spec.softcap = number("softcap", 0);

  spec.qkNorm = choice("qk_norm", "none") == "rms";
  spec.qkNormEps = number("qk_norm_eps", 1e-6);
  if (!spec.qkNorm)
    refuseKey("qk_norm_eps", "'qk_norm_eps' is the epsilon of qk_norm = rms, which this layer "
                             "does not have");

  spec.sinks = boolean("sinks", false);
}

void LayerChecker::checkRope(LayerSpec &spec) {
  RopeSpec &rope = spec.rope;
  std::string_view kind = choice("rope", "none");
  rope.kind = kind == "half" ? RopeKind::Half
              : kind == "interleaved" ? RopeKind::Interleaved
                                      : RopeKind::None;
  if (given("rope") && !valid("rope"))
    return; // its value is reported; the keys that depend on it are not checked
  if (!rope.enabled()) {
    std::vector<std::string_view> keys = {"rope_base", "rope_dim", "rope_scaling"};
    keys.insert(keys.end(), std::begin(kScalingKeys), std::end(kScalingKeys));
    for (std::string_view key : keys)
      refuseKey(key, fmt::format("'{}' configures rotary embeddings, which this layer does not "
                                 "have; set rope = half or rope = interleaved",
                                 key));
    return;
  }
  if (spec.cross) {
    refuseKey("rope", "rotary embeddings turn queries and keys by their positions, which only "
                      "self-attention has (remove rope, or make the layer self-attention)");
    return;
  }
  rope.base = number("rope_base", 10000);
  rope.dim = size("rope_dim", spec.headDim);
  if (const EntryAST *dim = valid("rope_dim"); dim && spec.headDim > 0) {
    if (rope.dim % 2 != 0)
      error(dim->value.loc,
            fmt::format("rope_dim ({}) must be even: a rotary embedding turns pairs of features",
                        rope.dim),
            dim->value.spelling.size());
    else if (rope.dim > spec.headDim)
      error(dim->value.loc,
            fmt::format("rope_dim ({}) is larger than head_dim ({}): the rotated features are "
                        "the first rope_dim of each head",
                        rope.dim, spec.headDim),
            dim->value.spelling.size());
  } else if (!dim && spec.headDim % 2 != 0) {
    error(layer_.nameLoc,
          fmt::format("layer '{}' has rope and an odd head_dim ({}); set rope_dim to an even "
                      "number of features to rotate",
                      layer_.name, spec.headDim),
          layer_.name.size());
  }

  std::string_view scaling = choice("rope_scaling", "none");
  rope.scaling = scaling == "linear"   ? RopeScaling::Linear
                 : scaling == "llama3" ? RopeScaling::Llama3
                 : scaling == "yarn"   ? RopeScaling::Yarn
                                       : RopeScaling::None;
  std::vector<ScalingParameter> parameters;
  if (rope.scaling == RopeScaling::Linear)
    parameters.assign(std::begin(kLinearParameters), std::end(kLinearParameters));
  else if (rope.scaling == RopeScaling::Llama3)
    parameters.assign(std::begin(kLlama3Parameters), std::end(kLlama3Parameters));
  else if (rope.scaling == RopeScaling::Yarn)
    parameters.assign(std::begin(kYarnParameters), std::end(kYarnParameters));
  for (std::string_view key : kScalingKeys) {
    auto parameter = std::find_if(parameters.begin(), parameters.end(),
                                  [&](const ScalingParameter &p) { return p.key == key; });
    if (parameter == parameters.end())
      refuseKey(key, rope.scaling == RopeScaling::None
                         ? fmt::format("'{}' is a parameter of a rope_scaling, and this layer "
                                       "has none; set rope_scaling = linear, llama3 or yarn",
                                       key)
                         : fmt::format("'{}' is not a parameter of rope_scaling = {}", key,
                                       scaling));
    else if (parameter->required && !given(key))
      if (const EntryAST *entry = valid("rope_scaling"))
        error(entry->value.loc,
              fmt::format("rope_scaling = {} needs '{}'", scaling, key), entry->value.spelling.size());
  }
  rope.factor = number("rope_factor", 0);
  rope.lowFreqFactor = number("rope_low_freq_factor", 0);
  rope.highFreqFactor = number("rope_high_freq_factor", 0);
  rope.originalMax = size("rope_original_max", 0);
  if (rope.scaling == RopeScaling::Yarn) {
    rope.betaFast = number("rope_beta_fast", 32);
    rope.betaSlow = number("rope_beta_slow", 1);
    rope.truncate = boolean("rope_truncate", true);
    rope.attentionFactor = number("rope_attention_factor", 0);
  }
  if (const EntryAST *high = valid("rope_high_freq_factor");
      high && rope.scaling == RopeScaling::Llama3 && valid("rope_low_freq_factor") &&
      !(rope.highFreqFactor > rope.lowFreqFactor))
    error(high->value.loc,
          fmt::format("rope_high_freq_factor ({}) must be larger than rope_low_freq_factor ({}): "
                      "llama3 scaling blends the frequencies between the two",
                      high->value.spelling, valid("rope_low_freq_factor")->value.spelling),
          high->value.spelling.size());
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
