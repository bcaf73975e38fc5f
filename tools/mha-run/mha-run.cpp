//===- mha-run.cpp - run, check and time compiled layers ------------------===//
//
// Part of mhac. Loads a module written by `mhac compile --shared` and runs one of its layers on
// random data: `--check` compares the result with the float64 reference of SPEC section 2,
// `--bench N` times N calls.
//
//===----------------------------------------------------------------------===//

#include "runtime/reference/ReferenceAttention.h"

#include "mhac/runtime.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace {

constexpr int kFailure = 1;
constexpr int kUsageError = 2;

const char *kHelp = R"(mha-run: run a layer compiled by 'mhac compile --shared'

usage:
  mha-run MODULE.so [--layer NAME] --check [sizes] [--seed N]
  mha-run MODULE.so [--layer NAME] --bench N [sizes] [--seed N]

  --layer NAME   the layer to run (needed when the module has several)
  --check        run on random data and compare with the float64 reference; prints the error
                 (max |out - ref| / max |ref|) and exits 1 past the tolerance of the dtype
                 (1e-4 for f32, 2e-2 for bf16)
  --bench N      run once to warm up, then N timed calls; prints the median, min and max time
                 per call and the median GFLOP/s
  --batch N, --seq N, --kv-seq N
                 sizes of the dimensions the layer declares '?'
  --seed N       seed of the random data (default 1)
  --list         list the layers of the module and exit
)";

struct Options {
  std::string modulePath;
  std::string layer;
  bool check = false;
  bool list = false;
  std::optional<long> bench;
  std::optional<long> batch, seq, kvSeq;
  unsigned seed = 1;
};

int usageError(const std::string &message) {
  fmt::print(stderr, "mha-run: error: {}\nrun 'mha-run --help' for usage\n", message);
  return kUsageError;
}

int failure(const std::string &message) {
  fmt::print(stderr, "mha-run: error: {}\n", message);
  return kFailure;
}

/// Parses a positive decimal integer, rejecting trailing text and overflow.
std::optional<long> parsePositive(std::string_view text) {
  if (text.empty() || text.size() > 12)
    return std::nullopt;
  long value = 0;
  for (char c : text) {
    if (c < '0' || c > '9')
      return std::nullopt;
    value = value * 10 + (c - '0');
  }
  if (value < 1)
    return std::nullopt;
  return value;
}

/// Returns nullopt after printing the error when the command line is unusable.
std::optional<Options> parseOptions(int argc, char **argv, int &status) {
  Options options;
  status = kUsageError;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    auto value = [&](std::string_view name) -> std::optional<std::string_view> {
      if (i + 1 >= argc) {
        usageError(fmt::format("{} needs a value", name));
        return std::nullopt;
      }
      return std::string_view(argv[++i]);
    };
    auto positive = [&](std::string_view name, std::optional<long> &into) {
      std::optional<std::string_view> text = value(name);
      if (!text)
        return false;
      into = parsePositive(*text);
      if (!into) {
        usageError(fmt::format("{} needs a positive integer, got '{}'", name, *text));
        return false;
      }
      return true;
    };
    if (arg == "--help" || arg == "-h") {
      fmt::print("{}", kHelp);
      status = 0;
      return std::nullopt;
    }
    if (arg == "--check") {
      options.check = true;
    } else if (arg == "--list") {
      options.list = true;
    } else if (arg == "--layer") {
      std::optional<std::string_view> name = value(arg);
      if (!name)
        return std::nullopt;
      options.layer = std::string(*name);
    } else if (arg == "--bench") {
      if (!positive(arg, options.bench))
        return std::nullopt;
    } else if (arg == "--batch") {
      if (!positive(arg, options.batch))
        return std::nullopt;
    } else if (arg == "--seq") {
      if (!positive(arg, options.seq))
        return std::nullopt;
    } else if (arg == "--kv-seq") {
      if (!positive(arg, options.kvSeq))
        return std::nullopt;
    } else if (arg == "--seed") {
      std::optional<long> seed;
      if (!positive(arg, seed))
        return std::nullopt;
      options.seed = static_cast<unsigned>(*seed);
    } else if (!arg.empty() && arg[0] == '-') {
      usageError(fmt::format("unknown option '{}'", arg));
      return std::nullopt;
    } else if (options.modulePath.empty()) {
      options.modulePath = std::string(arg);
    } else {
      usageError(fmt::format("more than one module ('{}' and '{}')", options.modulePath, arg));
      return std::nullopt;
    }
  }
  if (options.modulePath.empty()) {
    usageError("no module given");
    return std::nullopt;
  }
  if (!options.list && !options.check && !options.bench) {
    usageError("nothing to do: give --check, --bench N or --list");
    return std::nullopt;
  }
  return options;
}

/// Resolves one size: the compiled one, or the one given for a '?' dimension.
std::optional<int64_t> resolveSize(const char *name, int64_t compiled, std::optional<long> given,
                                   const std::string &layer) {
  if (compiled != MHAC_DYNAMIC) {
    if (given && *given != compiled) {
      failure(fmt::format("layer '{}' was compiled with {} = {}; --{} {} does not match", layer,
                          name, compiled, name, *given));
      return std::nullopt;
    }
    return compiled;
  }
  if (!given) {
    failure(fmt::format("layer '{}' has a run-time {}: give --{} N", layer, name, name));
    return std::nullopt;
  }
  return *given;
}

/// Random tensors of one layer, in the order run_packed takes them.
struct LayerData {
  std::vector<std::vector<float>> floats;  ///< x, [memory], weights, biases, out (as f32)
  std::vector<std::vector<uint16_t>> bf16; ///< the same, rounded, for bf16 layers
  std::vector<int32_t> kvLens;
  std::vector<void *> pointers;
};

uint16_t toBF16Bits(float value) {
  float rounded = mhac::reference::roundToBF16(value);
  uint32_t bits;
  std::memcpy(&bits, &rounded, sizeof bits);
  return static_cast<uint16_t>(bits >> 16);
}

float fromBF16Bits(uint16_t bits) {
  uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &wide, sizeof value);
  return value;
}

int run(const Options &options) {
  char error[512];
  mhac_module *module = mhac_module_open(options.modulePath.c_str(), error, sizeof error);
  if (!module)
    return failure(error);
  struct Closer {
    mhac_module *module;
    ~Closer() { mhac_module_close(module); }
  } closer{module};

  if (options.list) {
    for (int32_t i = 0; i < mhac_module_num_layers(module); ++i)
      fmt::print("{}\n", mhac_module_layer(module, i)->name);
    return 0;
  }
  const mhac_layer *layer = nullptr;
  if (!options.layer.empty()) {
    layer = mhac_module_find_layer(module, options.layer.c_str());
    if (!layer)
      return failure(fmt::format("{}: no layer named '{}'", options.modulePath, options.layer));
  } else if (mhac_module_num_layers(module) == 1) {
    layer = mhac_module_layer(module, 0);
  } else {
    return failure(fmt::format("{} has {} layers: choose one with --layer NAME", options.modulePath,
                               mhac_module_num_layers(module)));
  }

  std::string name = layer->name;
  auto batch = resolveSize("batch", layer->batch, options.batch, name);
  auto seq = resolveSize("seq", layer->seq, options.seq, name);
  if (!batch || !seq)
    return kFailure;
  std::optional<int64_t> kvSeq = *seq;
  if (layer->cross)
    kvSeq = resolveSize("kv-seq", layer->kv_seq, options.kvSeq, name);
  else if (options.kvSeq && *options.kvSeq != *seq)
    return failure(fmt::format("layer '{}' is self-attention: its kv_seq is its seq", name));
  if (!kvSeq)
    return kFailure;

  mhac::reference::LayerShape shape;
  shape.batch = *batch;
  shape.seq = *seq;
  shape.kvSeq = *kvSeq;
  shape.modelDim = layer->model_dim;
  shape.kvDim = layer->kv_dim;
  shape.heads = layer->heads;
  shape.kvHeads = layer->kv_heads;
  shape.headDim = layer->head_dim;
  shape.cross = layer->cross;
  shape.causal = layer->causal;
  shape.bias = layer->bias;
  shape.scale = layer->scale;
  int64_t width = shape.heads * shape.headDim, kvWidth = shape.kvHeads * shape.headDim;

  // PyTorch-like magnitudes: inputs in [-1, 1], weights in [-1/sqrt(in), 1/sqrt(in)].
  std::mt19937 random(options.seed);
  auto uniform = [&](size_t count, double bound) {
    std::uniform_real_distribution<float> distribution(-bound, bound);
    std::vector<float> values(count);
    for (float &value : values)
      value = distribution(random);
    return values;
  };
  bool bf16 = layer->dtype == MHAC_DTYPE_BF16;
  std::vector<std::vector<float>> tensors;
  tensors.push_back(uniform(shape.batch * shape.seq * shape.modelDim, 1.0));
  if (shape.cross)
    tensors.push_back(uniform(shape.batch * shape.kvSeq * shape.kvDim, 1.0));
  int64_t kvIn = shape.cross ? shape.kvDim : shape.modelDim;
  auto projection = [&](int64_t out, int64_t in) {
    tensors.push_back(uniform(out * in, 1.0 / std::sqrt(double(in))));
    if (shape.bias)
      tensors.push_back(uniform(out, 1.0 / std::sqrt(double(in))));
  };
  projection(width, shape.modelDim);
  projection(kvWidth, kvIn);
  projection(kvWidth, kvIn);
  projection(shape.modelDim, width);
  if (bf16)
    for (auto &tensor : tensors)
      for (float &value : tensor)
        value = mhac::reference::roundToBF16(value);

  std::vector<int32_t> kvLens;
  if (layer->kv_lens) {
    // The first entry sees every key, the second none; the rest are random.
    std::uniform_int_distribution<int32_t> length(0, static_cast<int32_t>(shape.kvSeq));
    for (int64_t b = 0; b < shape.batch; ++b)
      kvLens.push_back(b == 0 ? static_cast<int32_t>(shape.kvSeq) : b == 1 ? 0 : length(random));
  }
  size_t outCount = shape.batch * shape.seq * shape.modelDim;

  std::vector<std::vector<uint16_t>> bf16Tensors;
  std::vector<void *> pointers;
  for (auto &tensor : tensors) {
    if (bf16) {
      bf16Tensors.emplace_back(tensor.size());
      std::transform(tensor.begin(), tensor.end(), bf16Tensors.back().begin(), toBF16Bits);
      pointers.push_back(bf16Tensors.back().data());
    } else {
      pointers.push_back(tensor.data());
    }
  }
  if (layer->kv_lens)
    pointers.push_back(kvLens.data());
  std::vector<float> out(outCount);
  std::vector<uint16_t> outBF16(bf16 ? outCount : 0);
  pointers.push_back(bf16 ? static_cast<void *>(outBF16.data()) : out.data());
  if (static_cast<int32_t>(pointers.size()) != layer->num_tensors)
    return failure(fmt::format("layer '{}' takes {} tensors, mha-run prepared {}", name,
                               layer->num_tensors, pointers.size()));

  mhac_sizes sizes = {*batch, *seq, *kvSeq};
  auto call = [&]() { return mhac_layer_run(layer, pointers.data(), &sizes); };
  if (int32_t status = call())
    return failure(fmt::format("layer '{}' failed: {}", name, mhac_status_string(status)));
  if (bf16)
    std::transform(outBF16.begin(), outBF16.end(), out.begin(), fromBF16Bits);

  int status = 0;
  if (options.check) {
    mhac::reference::LayerTensors refTensors;
    size_t next = 0;
    refTensors.x = tensors[next++].data();
    if (shape.cross)
      refTensors.memory = tensors[next++].data();
    const float **slots[4][2] = {{&refTensors.wq, &refTensors.bq},
                                 {&refTensors.wk, &refTensors.bk},
                                 {&refTensors.wv, &refTensors.bv},
                                 {&refTensors.wo, &refTensors.bo}};
    for (auto &slot : slots) {
      *slot[0] = tensors[next++].data();
      if (shape.bias)
        *slot[1] = tensors[next++].data();
    }
    refTensors.kvLens = layer->kv_lens ? kvLens.data() : nullptr;
    std::vector<double> expected(outCount);
    mhac::reference::computeLayer(shape, refTensors, expected.data());
    double relative = mhac::reference::relativeError(out.data(), expected.data(), outCount);
    double tolerance = bf16 ? 2e-2 : 1e-4;
    bool ok = relative <= tolerance;
    fmt::print("{}: batch {}, seq {}, kv_seq {}: error {:.3g} (tolerance {:g}): {}\n", name, *batch,
               *seq, *kvSeq, relative, tolerance, ok ? "ok" : "FAILED");
    if (!ok)
      status = kFailure;
  }

  if (options.bench) {
    std::vector<double> seconds;
    for (long i = 0; i < *options.bench; ++i) {
      auto start = std::chrono::steady_clock::now();
      call();
      seconds.push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    std::sort(seconds.begin(), seconds.end());
    double median = seconds[seconds.size() / 2];
    double flops = mhac_layer_flops(layer, &sizes);
    fmt::print("{}: {} calls: median {:.3f} ms (min {:.3f}, max {:.3f}), {:.1f} GFLOP/s\n", name,
               seconds.size(), median * 1e3, seconds.front() * 1e3, seconds.back() * 1e3,
               flops / median * 1e-9);
  }
  return status;
}

} // namespace

int main(int argc, char **argv) {
  int status = 0;
  std::optional<Options> options = parseOptions(argc, argv, status);
  if (!options)
    return status;
  return run(*options);
}
