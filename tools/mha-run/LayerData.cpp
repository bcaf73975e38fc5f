//===- LayerData.cpp - the tensors one run of a layer needs ---------------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "tools/mha-run/LayerData.h"

#include "runtime/io/Npy.h"
#include "runtime/io/Weights.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <random>

namespace mhac {
namespace {

/// The guards around a layer's output: a cache line on each side (wider than any vector store
/// of a tail), of a byte no f32 or bf16 result of a check is made of.
constexpr size_t kGuardBytes = 64;
constexpr unsigned char kGuardByte = 0xA5;

bool fail(const std::string &message) {
  fmt::print(stderr, "mha-run: error: {}\n", message);
  return false;
}

std::string formatShape(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + (shape[i] < 0 ? std::string("?") : std::to_string(shape[i]));
  return text + "]";
}

/// One size: the compiled one, or the one given for a '?' dimension. `fromFile` is the size a
/// file implies, if any; every source must agree.
bool resolveSize(const char *name, int64_t compiled, std::optional<long> given,
                 std::optional<int64_t> fromFile, const mhac_layer &layer, int64_t &size) {
  if (compiled != MHAC_DYNAMIC && given && *given != compiled)
    return fail(fmt::format("layer '{}' was compiled with {} = {}; --{} {} does not match",
                            layer.name, name, compiled, name, *given));
  if (given && fromFile && *given != *fromFile)
    return fail(
        fmt::format("--{} {} does not match the input files ({})", name, *given, *fromFile));
  if (compiled != MHAC_DYNAMIC)
    size = compiled;
  else if (given)
    size = *given;
  else if (fromFile)
    size = *fromFile;
  else
    return fail(fmt::format("layer '{}' has a run-time {}: give --{} N", layer.name, name, name));
  return true;
}

/// The reference's description of a layer's rotary embedding.
reference::RopeParameters ropeOf(const mhac_rope &rope) {
  reference::RopeParameters parameters;
  parameters.kind = static_cast<reference::RopeKind>(rope.kind);
  parameters.scaling = static_cast<reference::RopeScaling>(rope.scaling);
  parameters.dim = rope.dim;
  parameters.originalMax = rope.original_max;
  parameters.base = rope.base;
  parameters.factor = rope.factor;
  parameters.lowFreqFactor = rope.low_freq_factor;
  parameters.highFreqFactor = rope.high_freq_factor;
  parameters.betaFast = rope.beta_fast;
  parameters.betaSlow = rope.beta_slow;
  parameters.attentionFactor = rope.attention_factor;
  parameters.truncate = rope.truncate != 0;
  return parameters;
}

void describeShape(const mhac_layer &layer, reference::LayerShape &shape) {
  shape.modelDim = layer.model_dim;
  shape.kvDim = layer.kv_dim;
  shape.heads = layer.heads;
  shape.kvHeads = layer.kv_heads;
  shape.headDim = layer.head_dim;
  shape.cross = layer.cross;
  shape.causal = layer.causal;
  shape.bias = layer.bias;
  shape.scale = layer.scale;
  shape.rope = ropeOf(layer.rope);
  shape.kvCache = layer.kv_cache;
  shape.window = layer.window;
  shape.softcap = layer.softcap;
  shape.qkNorm = layer.qk_norm != 0;
  shape.qkNormEps = layer.qk_norm_eps;
  shape.sinks = layer.sinks != 0;
}

/// The per-row cache lengths the options give for `batch` rows: one number for all, or one
/// each. Negative or too large ones are passed on: the layer's status says what is wrong.
bool resolveCacheLen(const mhac_layer &layer, const std::vector<int64_t> &given, int64_t batch,
                     std::vector<int32_t> &lengths) {
  if (given.size() > 1 && static_cast<int64_t>(given.size()) != batch)
    return fail(fmt::format("--cache-len gives {} lengths; layer '{}' runs {} batch rows: give "
                            "one for every row, or one per row",
                            given.size(), layer.name, batch));
  for (int64_t b = 0; b < batch; ++b) {
    int64_t length = given.empty() ? 0 : given[given.size() == 1 ? 0 : b];
    lengths.push_back(static_cast<int32_t>(std::clamp<int64_t>(length, INT32_MIN, INT32_MAX)));
  }
  return true;
}

/// Checks what the layer takes with a cache (and without one, that none is given).
bool checkCacheOptions(const mhac_layer &layer, const RunOptions &options) {
  bool given = !options.kCachePath.empty() || !options.cacheLenPath.empty() ||
               !options.cacheLen.empty();
  if (!layer.kv_cache && given)
    return fail(fmt::format("layer '{}' has no KV cache: it takes no --k-cache, --v-cache or "
                            "--cache-len",
                            layer.name));
  if (layer.device && layer.kv_cache)
    return fail(fmt::format("layer '{}' runs on {}: mha-run passes caches to CPU layers only",
                            layer.name, layer.device));
  return true;
}

/// Rounds every value to bf16 for a bf16 layer, so that the reference sees what the layer sees.
void roundForLayer(const mhac_layer &layer, std::vector<float> &values) {
  if (layer.dtype == MHAC_DTYPE_BF16)
    for (float &value : values)
      value = io::bf16ToFloat(io::floatToBF16(value));
}

io::WeightExpectation expectationOf(const mhac_layer &layer) {
  io::WeightExpectation expected;
  int64_t width = layer.heads * layer.head_dim, kvWidth = layer.kv_heads * layer.head_dim;
  expected.q = {width, layer.model_dim};
  expected.k = {kvWidth, layer.kv_dim};
  expected.v = {kvWidth, layer.kv_dim};
  expected.o = {layer.model_dim, width};
  expected.hasBias = layer.bias;
  expected.normWidth = layer.qk_norm ? layer.head_dim : 0;
  expected.sinks = layer.sinks ? layer.heads : 0;
  return expected;
}

/// Reads a float32 (or, for kv_lens, int32) .npy and checks its rank.
std::optional<io::HostTensor> readArray(const std::string &path, io::DType dtype, size_t rank) {
  io::Expected<io::HostTensor> tensor = io::readNpyFile(path);
  if (!tensor) {
    fail(tensor.error());
    return std::nullopt;
  }
  if (tensor->dtype != dtype) {
    fail(fmt::format("{}: expected {} data, found {}", path,
                     dtype == io::DType::I32 ? "int32 ('<i4')" : "float32 ('<f4')",
                     tensor->dtype == io::DType::I32 ? "int32" : "float32"));
    return std::nullopt;
  }
  if (tensor->shape.size() != rank) {
    fail(fmt::format("{}: expected {} dimensions, found shape {}", path, rank,
                     formatShape(tensor->shape)));
    return std::nullopt;
  }
  return std::move(*tensor);
}

/// Checks `tensor` against the expected shape (resolved sizes).
bool checkShape(const std::string &path, const io::HostTensor &tensor,
                const std::vector<int64_t> &expected) {
  if (tensor.shape != expected)
    return fail(fmt::format("{}: shape {} does not match the layer's {}", path,
                            formatShape(tensor.shape), formatShape(expected)));
  return true;
}

/// The caches and their lengths, from --k-cache, --v-cache and --cache-len.
bool readCacheFiles(const mhac_layer &layer, const RunOptions &options, LayerData &data) {
  const reference::LayerShape &shape = data.shape;
  std::vector<int64_t> expected = {shape.batch, shape.kvCache, shape.kvHeads, shape.headDim};
  for (auto [path, cache] :
       {std::pair{&options.kCachePath, &data.kCache}, std::pair{&options.vCachePath, &data.vCache}}) {
    std::optional<io::HostTensor> tensor = readArray(*path, io::DType::F32, 4);
    if (!tensor || !checkShape(*path, *tensor, expected))
      return false;
    *cache = std::move(tensor->f32);
    roundForLayer(layer, *cache);
  }
  if (!options.cacheLenPath.empty()) {
    std::optional<io::HostTensor> lens = readArray(options.cacheLenPath, io::DType::I32, 1);
    if (!lens || !checkShape(options.cacheLenPath, *lens, {shape.batch}))
      return false;
    data.cacheLen = std::move(lens->i32);
    return true;
  }
  if (options.cacheLen.empty())
    return fail(fmt::format("layer '{}' needs --cache-len with cache files: the tokens already "
                            "cached in each row (0 for a first call)",
                            layer.name));
  return resolveCacheLen(layer, options.cacheLen, shape.batch, data.cacheLen);
}

} // namespace

bool makeRandomData(const mhac_layer &layer, const RunOptions &options, LayerData &data) {
  reference::LayerShape &shape = data.shape;
  describeShape(layer, shape);
  if (!checkCacheOptions(layer, options) ||
      !resolveSize("batch", layer.batch, options.batch, std::nullopt, layer, shape.batch) ||
      !resolveSize("seq", layer.seq, options.seq, std::nullopt, layer, shape.seq))
    return false;
  shape.kvSeq = shape.seq;
  if (layer.cross) {
    if (!resolveSize("kv-seq", layer.kv_seq, options.kvSeq, std::nullopt, layer, shape.kvSeq))
      return false;
  } else if (options.kvSeq && *options.kvSeq != shape.seq) {
    return fail(fmt::format("layer '{}' is self-attention: its kv_seq is its seq", layer.name));
  }

  std::mt19937 random(options.seed);
  auto uniform = [&](int64_t count, double bound) {
    std::uniform_real_distribution<float> distribution(static_cast<float>(-bound),
                                                       static_cast<float>(bound));
    std::vector<float> values(static_cast<size_t>(count));
    for (float &value : values)
      value = distribution(random);
    roundForLayer(layer, values);
    return values;
  };
  int64_t width = shape.heads * shape.headDim, kvWidth = shape.kvHeads * shape.headDim;
  data.x = uniform(shape.batch * shape.seq * shape.modelDim, 1.0);
  if (shape.cross)
    data.memory = uniform(shape.batch * shape.kvSeq * shape.kvDim, 1.0);
  auto projection = [&](std::vector<float> &weight, std::vector<float> &bias, int64_t out,
                        int64_t in) {
    double bound = 1.0 / std::sqrt(double(in));
    weight = uniform(out * in, bound);
    if (shape.bias)
      bias = uniform(out, bound);
  };
  projection(data.wq, data.bq, width, shape.modelDim);
  projection(data.wk, data.bk, kvWidth, layer.kv_dim);
  projection(data.wv, data.bv, kvWidth, layer.kv_dim);
  projection(data.wo, data.bo, shape.modelDim, width);
  if (layer.kv_lens) {
    std::uniform_int_distribution<int32_t> length(0, static_cast<int32_t>(shape.kvSeq));
    for (int64_t b = 0; b < shape.batch; ++b)
      data.kvLens.push_back(b == 0   ? static_cast<int32_t>(shape.kvSeq)
                            : b == 1 ? 0
                                     : length(random));
  }
  // RMS norm weights near 1, as trained ones are; sink logits of a few units.
  auto around = [&](int64_t count, double center, double spread) {
    std::vector<float> values = uniform(count, spread);
    for (float &value : values)
      value += static_cast<float>(center);
    roundForLayer(layer, values);
    return values;
  };
  if (shape.qkNorm) {
    data.qNorm = around(shape.headDim, 1.0, 0.5);
    data.kNorm = around(shape.headDim, 1.0, 0.5);
  }
  if (shape.sinks)
    data.sinks = uniform(shape.heads, 2.0);
  if (shape.kvCache) {
    if (!resolveCacheLen(layer, options.cacheLen, shape.batch, data.cacheLen))
      return false;
    // Rows below a row's cache_len hold past keys and values; the others NaN, which a layer
    // that reads no row past its cache_len + seq never sees.
    data.kCache = uniform(static_cast<int64_t>(data.cacheSize()), 1.0);
    data.vCache = uniform(static_cast<int64_t>(data.cacheSize()), 1.0);
    size_t row = size_t(shape.kvHeads * shape.headDim);
    for (int64_t b = 0; b < shape.batch; ++b)
      for (int64_t j = std::max<int64_t>(0, data.cacheLen[b]); j < shape.kvCache; ++j)
        for (std::vector<float> *cache : {&data.kCache, &data.vCache})
          std::fill_n(cache->begin() + static_cast<std::ptrdiff_t>((b * shape.kvCache + j) * row),
                      row, std::numeric_limits<float>::quiet_NaN());
  }
  return true;
}

bool readDataFiles(const mhac_layer &layer, const RunOptions &options, LayerData &data) {
  reference::LayerShape &shape = data.shape;
  describeShape(layer, shape);
  if (layer.cross && options.memoryPath.empty())
    return fail(fmt::format("layer '{}' is cross-attention: give --memory FILE", layer.name));
  if (!layer.cross && !options.memoryPath.empty())
    return fail(fmt::format("layer '{}' is self-attention: it takes no --memory", layer.name));
  if (!checkCacheOptions(layer, options))
    return false;
  if (layer.kv_cache && options.kCachePath.empty())
    return fail(fmt::format("layer '{}' has a KV cache: give --k-cache FILE, --v-cache FILE and "
                            "--cache-len",
                            layer.name));
  if (layer.kv_lens && options.kvLensPath.empty())
    return fail(fmt::format("layer '{}' masks keys by kv_lens: give --kv-lens FILE", layer.name));
  if (!layer.kv_lens && !options.kvLensPath.empty())
    return fail(fmt::format("layer '{}' has no kv_lens: it takes no --kv-lens", layer.name));

  std::optional<io::HostTensor> x = readArray(options.inputPath, io::DType::F32, 3);
  if (!x)
    return false;
  if (!resolveSize("batch", layer.batch, options.batch, x->shape[0], layer, shape.batch) ||
      !resolveSize("seq", layer.seq, options.seq, x->shape[1], layer, shape.seq) ||
      !checkShape(options.inputPath, *x, {shape.batch, shape.seq, layer.model_dim}))
    return false;
  data.x = std::move(x->f32);
  roundForLayer(layer, data.x);

  shape.kvSeq = shape.seq;
  if (layer.cross) {
    std::optional<io::HostTensor> memory = readArray(options.memoryPath, io::DType::F32, 3);
    if (!memory ||
        !resolveSize("kv-seq", layer.kv_seq, options.kvSeq, memory->shape[1], layer, shape.kvSeq) ||
        !checkShape(options.memoryPath, *memory, {shape.batch, shape.kvSeq, layer.kv_dim}))
      return false;
    data.memory = std::move(memory->f32);
    roundForLayer(layer, data.memory);
  }
  if (layer.kv_lens) {
    std::optional<io::HostTensor> lens = readArray(options.kvLensPath, io::DType::I32, 1);
    if (!lens || !checkShape(options.kvLensPath, *lens, {shape.batch}))
      return false;
    for (size_t b = 0; b < lens->i32.size(); ++b)
      if (lens->i32[b] < 0 || lens->i32[b] > shape.kvSeq)
        return fail(fmt::format("{}: kv_lens[{}] = {} is outside [0, {}]", options.kvLensPath, b,
                                lens->i32[b], shape.kvSeq));
    data.kvLens = std::move(lens->i32);
  }

  io::Expected<io::LayerWeights> weights =
      io::loadWeightsFile(options.weightsPath, expectationOf(layer), options.weightsPrefix);
  if (!weights)
    return fail(weights.error());
  auto take = [&](io::Projection &projection, std::vector<float> &weight,
                  std::vector<float> &bias) {
    weight = std::move(projection.weight.f32);
    roundForLayer(layer, weight);
    if (projection.bias) {
      bias = std::move(projection.bias->f32);
      roundForLayer(layer, bias);
    }
  };
  take(weights->q, data.wq, data.bq);
  take(weights->k, data.wk, data.bk);
  take(weights->v, data.wv, data.bv);
  take(weights->o, data.wo, data.bo);
  auto takeOne = [&](std::optional<io::HostTensor> &tensor, std::vector<float> &into) {
    if (!tensor)
      return;
    into = std::move(tensor->f32);
    roundForLayer(layer, into);
  };
  takeOne(weights->qNorm, data.qNorm);
  takeOne(weights->kNorm, data.kNorm);
  takeOne(weights->sinks, data.sinks);
  return !layer.kv_cache || readCacheFiles(layer, options, data);
}

double LayerCall::flops() const {
  if (!layer_.kv_cache)
    return mhac_layer_flops(&layer_, &sizes_);
  // mhac_layer_flops takes one cache_len for every row: each row is a batch's share.
  double total = 0;
  for (int32_t length : data_.cacheLen) {
    mhac_sizes row = {sizes_.batch, sizes_.seq, length};
    total += mhac_layer_flops(&layer_, &row) / static_cast<double>(sizes_.batch);
  }
  return total;
}

double LayerCall::bytesMoved() const {
  double bytes = static_cast<double>(layer_.prepared_bytes) + static_cast<double>(bytes_.front()) +
                 static_cast<double>(bytes_.back());
  if (data_.shape.cross)
    bytes += static_cast<double>(bytes_[1]);
  // Row b's queries, at positions cache_len[b] .. cache_len[b] + S - 1, attend over positions
  // from the first query's window (or 0) to the last query's own.
  double rowBytes = 2.0 * static_cast<double>(layer_.kv_heads * layer_.head_dim * elementBytes_);
  for (int32_t length : data_.cacheLen) {
    int64_t first = layer_.window ? std::max<int64_t>(0, length - layer_.window + 1) : 0;
    bytes += static_cast<double>(length + sizes_.seq - first) * rowBytes;
  }
  return bytes;
}

LayerCall::LayerCall(const mhac_layer &layer, const LayerData &data)
    : layer_(layer), data_(data), sizes_{data.shape.batch, data.shape.seq, data.shape.kvSeq} {
  bool bf16 = layer.dtype == MHAC_DTYPE_BF16;
  elementBytes_ = bf16 ? sizeof(uint16_t) : sizeof(float);
  // The tensors in ABI order (mhac_layer.num_tensors): inputs and parameters of the layer's
  // dtype, kv_lens, the caches and cache_len, then out.
  std::vector<const std::vector<float> *> tensors = {&data.x};
  if (data.shape.cross)
    tensors.push_back(&data.memory);
  for (const auto &[weight, bias] :
       {std::pair{&data.wq, &data.bq}, std::pair{&data.wk, &data.bk}, std::pair{&data.wv, &data.bv},
        std::pair{&data.wo, &data.bo}}) {
    tensors.push_back(weight);
    if (data.shape.bias)
      tensors.push_back(bias);
  }
  if (data.shape.qkNorm) {
    tensors.push_back(&data.qNorm);
    tensors.push_back(&data.kNorm);
  }
  if (data.shape.sinks)
    tensors.push_back(&data.sinks);
  bf16_.reserve(tensors.size());
  auto addFloats = [&](const std::vector<float> &values) {
    if (bf16) {
      bf16_.emplace_back(values.size());
      std::transform(values.begin(), values.end(), bf16_.back().begin(), io::floatToBF16);
      pointers_.push_back(bf16_.back().data());
    } else {
      pointers_.push_back(const_cast<float *>(values.data()));
    }
    bytes_.push_back(values.size() * elementBytes_);
  };
  for (const std::vector<float> *tensor : tensors)
    addFloats(*tensor);
  if (layer.kv_lens) {
    pointers_.push_back(const_cast<int32_t *>(data.kvLens.data()));
    bytes_.push_back(data.kvLens.size() * sizeof(int32_t));
  }
  if (data.shape.kvCache) {
    // The caches live in bytes of their own: the layer writes them.
    for (int which = 0; which < 2; ++which) {
      const std::vector<float> &values = which == 0 ? data.kCache : data.vCache;
      std::vector<unsigned char> &bytes = caches_[which];
      bytes.resize(values.size() * elementBytes_);
      for (size_t n = 0; n < values.size(); ++n) {
        if (bf16) {
          uint16_t bits = io::floatToBF16(values[n]);
          std::memcpy(&bytes[n * 2], &bits, 2);
        } else {
          std::memcpy(&bytes[n * 4], &values[n], 4);
        }
      }
      cachesBefore_[which] = bytes;
      pointers_.push_back(bytes.data());
      bytes_.push_back(bytes.size());
    }
    pointers_.push_back(const_cast<int32_t *>(data.cacheLen.data()));
    bytes_.push_back(data.cacheLen.size() * sizeof(int32_t));
  }
  outBytes_.assign(kGuardBytes + data.outputSize() * elementBytes_ + kGuardBytes, kGuardByte);
  std::fill_n(outBytes_.begin() + kGuardBytes, data.outputSize() * elementBytes_, 0);
  pointers_.push_back(outBytes_.data() + kGuardBytes);
  bytes_.push_back(data.outputSize() * elementBytes_);
  // A CUDA layer gets device copies of everything.
  if (layer.device)
    deviceStatus_ = upload();
}

int32_t LayerCall::upload() {
  for (size_t i = 0; i < pointers_.size(); ++i) {
    void *device = nullptr;
    if (int32_t status = mhac_cuda_malloc(&device, bytes_[i]))
      return status;
    devicePointers_.push_back(device);
    if (i + 1 < pointers_.size())
      if (int32_t status = mhac_cuda_copy_to_device(device, pointers_[i], bytes_[i]))
        return status;
  }
  return MHAC_OK;
}

LayerCall::~LayerCall() {
  for (void *device : devicePointers_)
    mhac_cuda_free(device);
  if (layer_.device)
    mhac_cuda_free(prepared_);
  else
    mhac_free(prepared_);
}

int32_t LayerCall::finish(int32_t status) {
  if (status == MHAC_OK && layer_.device)
    status = mhac_cuda_synchronize(nullptr);
  return status;
}

int32_t LayerCall::run() {
  if (static_cast<int32_t>(pointers_.size()) != layer_.num_tensors)
    return MHAC_ERROR_INVALID_ARGUMENT;
  if (deviceStatus_)
    return deviceStatus_;
  return finish(mhac_layer_run(&layer_, arguments(), &sizes_));
}

int32_t LayerCall::prepare() {
  if (static_cast<int32_t>(pointers_.size()) != layer_.num_tensors)
    return MHAC_ERROR_INVALID_ARGUMENT;
  if (deviceStatus_)
    return deviceStatus_;
  if (layer_.device)
    mhac_cuda_free(prepared_);
  else
    mhac_free(prepared_);
  prepared_ = nullptr;
  return mhac_layer_prepare(&layer_, arguments(), &prepared_);
}

int32_t LayerCall::queuePrepared() {
  if (!prepared_)
    return MHAC_ERROR_INVALID_ARGUMENT;
  return mhac_layer_run_prepared(&layer_, arguments(), prepared_, &sizes_);
}

int32_t LayerCall::runPrepared() { return finish(queuePrepared()); }

std::vector<float> LayerCall::output() const {
  size_t count = (outBytes_.size() - 2 * kGuardBytes) / elementBytes_;
  std::vector<float> out(count);
  std::vector<uint16_t> outBF16(count);
  void *host = layer_.dtype == MHAC_DTYPE_BF16 ? static_cast<void *>(outBF16.data())
                                               : static_cast<void *>(out.data());
  if (layer_.device) {
    // A failed copy leaves NaNs, which no check passes.
    if (mhac_cuda_copy_to_host(host, devicePointers_.back(), bytes_.back()) != MHAC_OK) {
      std::fill(out.begin(), out.end(), std::nanf(""));
      return out;
    }
  } else {
    std::memcpy(host, outBytes_.data() + kGuardBytes, count * elementBytes_);
  }
  if (layer_.dtype != MHAC_DTYPE_BF16)
    return out;
  std::vector<float> widened(outBF16.size());
  std::transform(outBF16.begin(), outBF16.end(), widened.begin(), io::bf16ToFloat);
  return widened;
}

uint64_t LayerCall::inputsDigest() const {
  // FNV-1a over every input's bytes, in order; the caches are checked row by row instead.
  uint64_t digest = 14695981039346656037ull;
  for (size_t i = 0; i + 1 < pointers_.size(); ++i) {
    if (pointers_[i] == caches_[0].data() || pointers_[i] == caches_[1].data())
      continue;
    const auto *bytes = static_cast<const unsigned char *>(pointers_[i]);
    for (size_t j = 0; j < bytes_[i]; ++j)
      digest = (digest ^ bytes[j]) * 1099511628211ull;
  }
  return digest;
}

std::vector<float> LayerCall::cache(int which) const {
  const std::vector<unsigned char> &bytes = caches_[which];
  std::vector<float> values(bytes.size() / elementBytes_);
  for (size_t n = 0; n < values.size(); ++n) {
    if (elementBytes_ == 2) {
      uint16_t bits;
      std::memcpy(&bits, &bytes[n * 2], 2);
      values[n] = io::bf16ToFloat(bits);
    } else {
      std::memcpy(&values[n], &bytes[n * 4], 4);
    }
  }
  return values;
}

std::string LayerCall::cacheMisbehaviour() const {
  const reference::LayerShape &shape = data_.shape;
  size_t row = size_t(shape.kvHeads * shape.headDim) * elementBytes_;
  for (int which = 0; which < 2; ++which)
    for (int64_t b = 0; b < shape.batch; ++b)
      for (int64_t j = 0; j < shape.kvCache; ++j) {
        int64_t past = data_.cacheLen[b];
        if (j >= past && j < past + shape.seq)
          continue; // a new token's row
        size_t at = size_t(b * shape.kvCache + j) * row;
        if (std::memcmp(&caches_[which][at], &cachesBefore_[which][at], row) != 0)
          return fmt::format("changed row {} of batch row {} of its {} cache (cache_len {}, seq "
                             "{}): only the new tokens' rows may be written",
                             j, b, which == 0 ? "key" : "value", past, shape.seq);
      }
  return "";
}

const char *LayerCall::misbehaviour(std::optional<uint64_t> inputsBefore) const {
  auto intact = [](auto first, auto last) {
    return std::all_of(first, last, [](unsigned char byte) { return byte == kGuardByte; });
  };
  if (!intact(outBytes_.begin(), outBytes_.begin() + kGuardBytes) ||
      !intact(outBytes_.end() - kGuardBytes, outBytes_.end()))
    return "wrote past the ends of its output";
  if (inputsBefore && inputsDigest() != *inputsBefore)
    return "changed its inputs";
  return nullptr;
}

std::vector<double> referenceOutput(const LayerData &data, std::vector<double> *newKeys,
                                    std::vector<double> *newValues) {
  reference::LayerTensors tensors;
  tensors.x = data.x.data();
  tensors.memory = data.shape.cross ? data.memory.data() : nullptr;
  tensors.wq = data.wq.data();
  tensors.wk = data.wk.data();
  tensors.wv = data.wv.data();
  tensors.wo = data.wo.data();
  if (data.shape.bias) {
    tensors.bq = data.bq.data();
    tensors.bk = data.bk.data();
    tensors.bv = data.bv.data();
    tensors.bo = data.bo.data();
  }
  tensors.kvLens = data.kvLens.empty() ? nullptr : data.kvLens.data();
  tensors.qNorm = data.qNorm.empty() ? nullptr : data.qNorm.data();
  tensors.kNorm = data.kNorm.empty() ? nullptr : data.kNorm.data();
  tensors.sinks = data.sinks.empty() ? nullptr : data.sinks.data();
  reference::CacheRows rows;
  if (data.shape.kvCache) {
    tensors.kCache = data.kCache.data();
    tensors.vCache = data.vCache.data();
    tensors.cacheLen = data.cacheLen.data();
    for (auto [into, pointer] : {std::pair{newKeys, &rows.keys}, std::pair{newValues, &rows.values}})
      if (into) {
        into->assign(data.newRowsSize(), 0.0);
        *pointer = into->data();
      }
  }
  std::vector<double> out(data.outputSize());
  reference::computeLayer(data.shape, tensors, out.data(), rows);
  return out;
}

std::vector<float> newRowsOf(const LayerData &data, const std::vector<float> &cache) {
  const reference::LayerShape &shape = data.shape;
  size_t row = size_t(shape.kvHeads * shape.headDim);
  std::vector<float> rows;
  rows.reserve(data.newRowsSize());
  for (int64_t b = 0; b < shape.batch; ++b)
    for (int64_t i = 0; i < shape.seq; ++i) {
      auto first = cache.begin() +
                   static_cast<std::ptrdiff_t>((b * shape.kvCache + data.cacheLen[b] + i) * row);
      rows.insert(rows.end(), first, first + static_cast<std::ptrdiff_t>(row));
    }
  return rows;
}

std::vector<float> mergeNewRows(const LayerData &data, const std::vector<float> &original,
                                const std::vector<float> &written) {
  const reference::LayerShape &shape = data.shape;
  size_t row = size_t(shape.kvHeads * shape.headDim);
  std::vector<float> merged = original;
  for (int64_t b = 0; b < shape.batch; ++b)
    for (int64_t i = 0; i < shape.seq; ++i) {
      auto at = static_cast<std::ptrdiff_t>((b * shape.kvCache + data.cacheLen[b] + i) * row);
      std::copy_n(written.begin() + at, row, merged.begin() + at);
    }
  return merged;
}

} // namespace mhac
