//===- Weights.cpp - a layer's projection weights by name -----------------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "runtime/io/Weights.h"

#include <algorithm>
#include <array>
#include <initializer_list>
#include <limits>
#include <vector>

namespace mhac::io {
namespace {

constexpr std::array<std::string_view, 4> kWeightNames = {"q_proj.weight", "k_proj.weight",
                                                          "v_proj.weight", "o_proj.weight"};
constexpr std::array<std::string_view, 4> kBiasNames = {"q_proj.bias", "k_proj.bias", "v_proj.bias",
                                                        "o_proj.bias"};
constexpr std::string_view kInProjWeight = "in_proj_weight";
constexpr std::string_view kInProjBias = "in_proj_bias";
constexpr std::string_view kOutProjWeight = "out_proj.weight";
constexpr std::string_view kOutProjBias = "out_proj.bias";
constexpr std::array<std::string_view, 4> kPyTorchNames = {kInProjWeight, kInProjBias,
                                                           kOutProjWeight, kOutProjBias};
constexpr std::array<std::string_view, 3> kDecoderNames = {"q_norm.weight", "k_norm.weight",
                                                           "sinks"};
/// Buffers of Hugging Face checkpoints that are not weights of the layer.
constexpr std::array<std::string_view, 1> kSkippedNames = {"rotary_emb.inv_freq"};

/// Every name either scheme knows, the candidates of "did you mean".
std::vector<std::string_view> allKnownNames() {
  std::vector<std::string_view> names(kWeightNames.begin(), kWeightNames.end());
  names.insert(names.end(), kBiasNames.begin(), kBiasNames.end());
  names.insert(names.end(), kPyTorchNames.begin(), kPyTorchNames.end());
  names.insert(names.end(), kDecoderNames.begin(), kDecoderNames.end());
  names.insert(names.end(), kSkippedNames.begin(), kSkippedNames.end());
  return names;
}

bool isBiasName(std::string_view name) {
  return name == kInProjBias || name == kOutProjBias ||
         std::find(kBiasNames.begin(), kBiasNames.end(), name) != kBiasNames.end();
}

/// The optimal string alignment distance (Levenshtein plus adjacent transpositions, so that
/// `weigth` is one edit from `weight`).
size_t editDistance(std::string_view a, std::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i)
    d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j)
    d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

/// A known name `unknown` was probably meant to be, or empty.
std::string_view suggest(std::string_view unknown) {
  // Checkpoints of whole models prefix the names (`encoder.layer.0.attn.q_proj.weight`).
  for (std::string_view known : allKnownNames())
    if (unknown.size() > known.size() && unknown[unknown.size() - known.size() - 1] == '.' &&
        unknown.substr(unknown.size() - known.size()) == known)
      return known;
  if (unknown.size() > 64) // too far from every known name; spare the quadratic distance
    return {};
  std::string_view best;
  size_t bestDistance = 4;
  for (std::string_view known : allKnownNames()) {
    size_t distance = editDistance(unknown, known);
    if (distance < bestDistance && distance * 3 <= known.size()) {
      best = known;
      bestDistance = distance;
    }
  }
  return best;
}

/// Checks and fetches the tensors of one file against one expectation.
class Resolver {
public:
  Resolver(const TensorMap &tensors, const WeightExpectation &expected, std::string_view file)
      : tensors_(tensors), expected_(expected), file_(file) {}

  Expected<LayerWeights> run() {
    for (const ProjectionShape *p : {&expected_.q, &expected_.k, &expected_.v, &expected_.o})
      if (p->outFeatures <= 0 || p->inFeatures <= 0 ||
          !checkedElementCount({p->outFeatures, p->inFeatures}))
        return Error{file_ + ": invalid expected weight shape " +
                     formatShape({p->outFeatures, p->inFeatures})};

    // One naming scheme or the other, never a mix: which of two `q` weights would win?
    const std::string *native =
        firstPresent({kWeightNames[0], kWeightNames[1], kWeightNames[2], kWeightNames[3],
                      kBiasNames[0], kBiasNames[1], kBiasNames[2], kBiasNames[3]});
    const std::string *pytorch =
        firstPresent({kInProjWeight, kInProjBias, kOutProjWeight, kOutProjBias});
    if (native && pytorch)
      return Error{file_ + ": tensors " + quoteName(*native) + " and " + quoteName(*pytorch) +
                   " mix two naming schemes (use either q_proj/k_proj/v_proj/o_proj or "
                   "in_proj/out_proj names)"};

    if (std::optional<Error> error = checkUnknown())
      return *error;
    if (!expected_.hasBias)
      for (const auto &[name, tensor] : tensors_)
        if (isBiasName(name))
          return Error{file_ + ": unexpected tensor " + quoteName(name) +
                       ": the layer has no biases (bias = false)"};

    if (std::optional<Error> error = checkDecoderTensors())
      return *error;
    LayerWeights weights;
    if (!fetchDecoderTensors(weights))
      return Error{error_};
    if (pytorch) {
      if (!fetchPyTorch(weights))
        return Error{error_};
      return weights;
    }
    // Biases given for some projections only: the others are zeros.
    bool someBias = firstPresent({kBiasNames[0], kBiasNames[1], kBiasNames[2], kBiasNames[3]});
    Projection *projections[4] = {&weights.q, &weights.k, &weights.v, &weights.o};
    const ProjectionShape *shapes[4] = {&expected_.q, &expected_.k, &expected_.v, &expected_.o};
    for (size_t i = 0; i < 4; ++i) {
      std::optional<HostTensor> weight =
          fetch(kWeightNames[i], {shapes[i]->outFeatures, shapes[i]->inFeatures});
      if (!weight)
        return Error{error_};
      projections[i]->weight = std::move(*weight);
      if (expected_.hasBias) {
        if (someBias && !tensors_.count(kBiasNames[i])) {
          projections[i]->bias = HostTensor::makeF32(
              {shapes[i]->outFeatures},
              std::vector<float>(static_cast<size_t>(shapes[i]->outFeatures), 0.0f));
          continue;
        }
        projections[i]->bias = fetch(kBiasNames[i], {shapes[i]->outFeatures});
        if (!projections[i]->bias)
          return Error{error_};
      }
    }
    return weights;
  }

  /// The decoder tensors the file has and the layer does not take.
  std::optional<Error> checkDecoderTensors() const {
    for (std::string_view name : kDecoderNames) {
      bool taken = name == "sinks" ? expected_.sinks > 0 : expected_.normWidth > 0;
      if (!taken && tensors_.count(name))
        return Error{file_ + ": unexpected tensor " + quoteName(name) + ": the layer has no " +
                     (name == "sinks" ? "sinks (sinks = true)" : "qk_norm (qk_norm = rms)")};
    }
    return std::nullopt;
  }

  /// q_norm.weight, k_norm.weight and sinks, where the layer takes them.
  bool fetchDecoderTensors(LayerWeights &weights) {
    if (expected_.normWidth > 0) {
      if (!(weights.qNorm = fetch("q_norm.weight", {expected_.normWidth})) ||
          !(weights.kNorm = fetch("k_norm.weight", {expected_.normWidth})))
        return false;
    }
    if (expected_.sinks > 0 && !(weights.sinks = fetch("sinks", {expected_.sinks})))
      return false;
    return true;
  }

private:
  /// The first of `names` present in the file, or null.
  const std::string *firstPresent(std::initializer_list<std::string_view> names) const {
    for (std::string_view name : names)
      if (auto it = tensors_.find(name); it != tensors_.end())
        return &it->first;
    return nullptr;
  }

  /// Lists (some of) the tensors no scheme knows, with hints.
  std::optional<Error> checkUnknown() const {
    std::vector<std::string_view> known = allKnownNames();
    std::vector<std::string> unknown;
    size_t count = 0;
    for (const auto &entry : tensors_) {
      const std::string &name = entry.first;
      if (std::find(known.begin(), known.end(), name) != known.end())
        continue;
      if (++count > 4)
        continue;
      std::string text = quoteName(name);
      if (std::string_view hint = suggest(name); !hint.empty())
        text += " (did you mean " + quoteName(hint) + "?)";
      unknown.push_back(std::move(text));
    }
    if (count == 0)
      return std::nullopt;
    std::string message = file_ + (count == 1 ? ": unexpected tensor " : ": unexpected tensors ");
    for (size_t i = 0; i < unknown.size(); ++i)
      message += (i == 0 ? "" : ", ") + unknown[i];
    if (count > unknown.size())
      message += " and " + std::to_string(count - unknown.size()) + " more";
    return Error{message};
  }

  /// The tensor `name` of exactly `shape`, as F32; nullopt with error_ set otherwise.
  std::optional<HostTensor> fetch(std::string_view name, const std::vector<int64_t> &shape) {
    auto it = tensors_.find(name);
    std::string tensor = file_ + ": tensor " + quoteName(name);
    if (it == tensors_.end()) {
      error_ = file_ + ": missing tensor " + quoteName(name) + " (expected shape " +
               formatShape(shape) + ")";
      return std::nullopt;
    }
    const HostTensor &found = it->second;
    // BF16 widens to F32 exactly: a bf16 checkpoint serves an f32 layer as it is.
    if (found.dtype != DType::F32 && found.dtype != DType::BF16) {
      error_ = tensor + " has dtype " + dtypeName(found.dtype) + ", expected BF16 or F32";
      return std::nullopt;
    }
    if (found.shape != shape) {
      error_ =
          tensor + " has shape " + formatShape(found.shape) + ", expected " + formatShape(shape);
      return std::nullopt;
    }
    if (!found.isConsistent()) {
      error_ = tensor + " holds " + std::to_string(found.size()) + " elements for shape " +
               formatShape(found.shape);
      return std::nullopt;
    }
    HostTensor result = HostTensor::makeF32(found.shape, found.toFloat());
    return result;
  }

  /// PyTorch's packed q, k, v: rows [0, D) of in_proj_weight are Wq, [D, 2D) Wk, [2D, 3D) Wv.
  bool fetchPyTorch(LayerWeights &weights) {
    int64_t d = expected_.q.outFeatures;
    for (const ProjectionShape *p : {&expected_.q, &expected_.k, &expected_.v, &expected_.o}) {
      if (p->outFeatures != d || p->inFeatures != d) {
        error_ = file_ + ": PyTorch's 'in_proj_weight' names fit only self-attention with "
                         "heads * head_dim = model_dim and kv_heads = heads; name the tensors "
                         "q_proj.weight, k_proj.weight, v_proj.weight and o_proj.weight";
        return false;
      }
    }
    if (d > std::numeric_limits<int64_t>::max() / 3) {
      error_ = file_ + ": invalid expected weight shape";
      return false;
    }
    std::optional<HostTensor> inWeight = fetch(kInProjWeight, {3 * d, d});
    if (!inWeight)
      return false;
    std::optional<HostTensor> inBias;
    if (expected_.hasBias && !(inBias = fetch(kInProjBias, {3 * d})))
      return false;
    std::optional<HostTensor> outWeight = fetch(kOutProjWeight, {d, d});
    if (!outWeight)
      return false;
    if (expected_.hasBias && !(weights.o.bias = fetch(kOutProjBias, {d})))
      return false;
    weights.o.weight = std::move(*outWeight);

    auto slice = [](const HostTensor &packed, size_t part, std::vector<int64_t> shape) {
      size_t count = static_cast<size_t>(*checkedElementCount(shape));
      auto begin = packed.f32.begin() + static_cast<std::ptrdiff_t>(part * count);
      return HostTensor::makeF32(std::move(shape), std::vector<float>(begin, begin + count));
    };
    Projection *parts[3] = {&weights.q, &weights.k, &weights.v};
    for (size_t i = 0; i < 3; ++i) {
      parts[i]->weight = slice(*inWeight, i, {d, d});
      if (expected_.hasBias)
        parts[i]->bias = slice(*inBias, i, {d});
    }
    weights.fromPyTorchNames = true;
    return true;
  }

  const TensorMap &tensors_;
  const WeightExpectation &expected_;
  std::string file_;
  std::string error_;
};

} // namespace

/// Hugging Face checkpoints whose attention names differ from q_proj ... o_proj: Phi's output
/// projection `dense`, and Phi-3's q, k and v fused into one `qkv_proj` [(H + 2 Hkv)·Dh, D]
/// (rows: q, then k, then v). Returns the tensors under mhac's names, or nullopt when there is
/// nothing to rename.
static std::optional<Expected<TensorMap>> renameCheckpointTensors(const TensorMap &tensors,
                                                                  const WeightExpectation &expected,
                                                                  std::string_view fileName) {
  bool dense = tensors.count("dense.weight") || tensors.count("dense.bias");
  bool fused = tensors.count("qkv_proj.weight") || tensors.count("qkv_proj.bias");
  if (!dense && !fused)
    return std::nullopt;
  TensorMap renamed = tensors;
  for (std::string_view part : {"weight", "bias"}) {
    auto node = renamed.extract("dense." + std::string(part));
    if (!node.empty()) {
      node.key() = "o_proj." + std::string(part);
      if (!renamed.insert(std::move(node)).inserted)
        return Expected<TensorMap>{Error{std::string(fileName) + ": tensors 'dense." +
                                         std::string(part) + "' and 'o_proj." + std::string(part) +
                                         "' name the same projection"}};
    }
  }
  const ProjectionShape *parts[3] = {&expected.q, &expected.k, &expected.v};
  int64_t rows = expected.q.outFeatures + expected.k.outFeatures + expected.v.outFeatures;
  for (std::string_view part : {"weight", "bias"}) {
    auto node = renamed.extract("qkv_proj." + std::string(part));
    if (node.empty())
      continue;
    const HostTensor &packed = node.mapped();
    bool weight = part == "weight";
    std::vector<int64_t> shape =
        weight ? std::vector<int64_t>{rows, expected.q.inFeatures} : std::vector<int64_t>{rows};
    if (packed.shape != shape || !packed.isConsistent() ||
        expected.k.inFeatures != expected.q.inFeatures)
      return Expected<TensorMap>{Error{std::string(fileName) + ": tensor 'qkv_proj." +
                                       std::string(part) + "' has shape " +
                                       formatShape(packed.shape) + ", expected " +
                                       formatShape(shape) + " (q, k and v stacked by rows)"}};
    std::vector<float> values = packed.toFloat();
    int64_t width = weight ? expected.q.inFeatures : 1, first = 0;
    const char *names[3] = {"q_proj.", "k_proj.", "v_proj."};
    for (int i = 0; i < 3; ++i) {
      int64_t count = parts[i]->outFeatures * width;
      auto begin = values.begin() + static_cast<std::ptrdiff_t>(first);
      std::vector<int64_t> partShape = weight ? std::vector<int64_t>{parts[i]->outFeatures, width}
                                              : std::vector<int64_t>{parts[i]->outFeatures};
      std::string name = names[i] + std::string(part);
      if (!renamed
               .emplace(name, HostTensor::makeF32(std::move(partShape),
                                                  std::vector<float>(begin, begin + count)))
               .second)
        return Expected<TensorMap>{Error{std::string(fileName) + ": tensors 'qkv_proj." +
                                         std::string(part) + "' and " + quoteName(name) +
                                         " name the same projection"}};
      first += count;
    }
  }
  return Expected<TensorMap>{std::move(renamed)};
}

Expected<LayerWeights> resolveWeights(const TensorMap &tensors, const WeightExpectation &expected,
                                      std::string_view fileName) {
  std::optional<Expected<TensorMap>> renamed = renameCheckpointTensors(tensors, expected, fileName);
  if (!renamed)
    return Resolver(tensors, expected, fileName).run();
  if (!*renamed)
    return Error{renamed->error()};
  return Resolver(**renamed, expected, fileName).run();
}

Expected<TensorMap> selectPrefix(const TensorMap &tensors, std::string_view prefix,
                                 std::string_view fileName) {
  TensorMap selected;
  for (const auto &[name, tensor] : tensors)
    if (name.size() > prefix.size() && name.compare(0, prefix.size(), prefix) == 0)
      selected.emplace(name.substr(prefix.size()), tensor);
  if (!selected.empty())
    return selected;
  std::string message = std::string(fileName) + ": no tensor name starts with " +
                        quoteName(prefix) + " (the file has ";
  size_t listed = 0;
  for (const auto &entry : tensors) {
    if (listed == 3)
      break;
    message += (listed++ ? ", " : "") + quoteName(entry.first);
  }
  message += tensors.size() > listed ? ", ...)" : ")";
  return Error{message};
}

Expected<LayerWeights> loadWeightsFile(const std::string &path, const WeightExpectation &expected,
                                       std::string_view prefix) {
  Expected<TensorMap> tensors = readSafetensorsFile(path);
  if (!tensors)
    return Error{tensors.error()};
  if (prefix.empty())
    return resolveWeights(*tensors, expected, path);
  Expected<TensorMap> selected = selectPrefix(*tensors, prefix, path);
  if (!selected)
    return Error{selected.error()};
  return resolveWeights(*selected, expected, path + " (under " + std::string(prefix) + ")");
}

} // namespace mhac::io
