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
#include <cmath>
#include <cstring>
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
  expected.dtype = layer.dtype == MHAC_DTYPE_BF16 ? io::DType::BF16 : io::DType::F32;
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

} // namespace

bool makeRandomData(const mhac_layer &layer, const RunOptions &options, LayerData &data) {
  reference::LayerShape &shape = data.shape;
  describeShape(layer, shape);
  if (!resolveSize("batch", layer.batch, options.batch, std::nullopt, layer, shape.batch) ||
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
  return true;
}

bool readDataFiles(const mhac_layer &layer, const RunOptions &options, LayerData &data) {
  reference::LayerShape &shape = data.shape;
  describeShape(layer, shape);
  if (layer.cross && options.memoryPath.empty())
    return fail(fmt::format("layer '{}' is cross-attention: give --memory FILE", layer.name));
  if (!layer.cross && !options.memoryPath.empty())
    return fail(fmt::format("layer '{}' is self-attention: it takes no --memory", layer.name));
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
  return true;
}

LayerCall::LayerCall(const mhac_layer &layer, const LayerData &data)
    : layer_(layer), sizes_{data.shape.batch, data.shape.seq, data.shape.kvSeq} {
  bool bf16 = layer.dtype == MHAC_DTYPE_BF16;
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
  bf16_.reserve(tensors.size() + 1);
  for (const std::vector<float> *tensor : tensors) {
    if (bf16) {
      bf16_.emplace_back(tensor->size());
      std::transform(tensor->begin(), tensor->end(), bf16_.back().begin(), io::floatToBF16);
      pointers_.push_back(bf16_.back().data());
    } else {
      pointers_.push_back(const_cast<float *>(tensor->data()));
    }
  }
  if (layer.kv_lens)
    pointers_.push_back(const_cast<int32_t *>(data.kvLens.data()));
  elementBytes_ = bf16 ? sizeof(uint16_t) : sizeof(float);
  outBytes_.assign(kGuardBytes + data.outputSize() * elementBytes_ + kGuardBytes, kGuardByte);
  std::fill_n(outBytes_.begin() + kGuardBytes, data.outputSize() * elementBytes_, 0);
  pointers_.push_back(outBytes_.data() + kGuardBytes);
  // Each tensor's bytes follow from its host vector (the last pointer is the output).
  for (const std::vector<float> *tensor : tensors)
    bytes_.push_back(tensor->size() * elementBytes_);
  if (layer.kv_lens)
    bytes_.push_back(data.kvLens.size() * sizeof(int32_t));
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
  // FNV-1a over every input's bytes, in order.
  uint64_t digest = 14695981039346656037ull;
  for (size_t i = 0; i + 1 < pointers_.size(); ++i) {
    const auto *bytes = static_cast<const unsigned char *>(pointers_[i]);
    for (size_t j = 0; j < bytes_[i]; ++j)
      digest = (digest ^ bytes[j]) * 1099511628211ull;
  }
  return digest;
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

std::vector<double> referenceOutput(const LayerData &data) {
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
  std::vector<double> out(data.outputSize());
  reference::computeLayer(data.shape, tensors, out.data());
  return out;
}

} // namespace mhac
