//===- LayerABI.cpp - the C interface of a compiled layer -----------------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "compiler/target/LayerABI.h"

namespace mhac {

bool LayerABI::hasDynamicSizes() const {
  return batch == kDynamicSize || seq == kDynamicSize || (cross && kvSeq == kDynamicSize);
}

std::vector<int> entryPointers(const LayerABI &layer, EntryKind kind) {
  std::vector<int> pointers;
  bool preparedListed = false;
  for (size_t i = 0; i < layer.tensors.size(); ++i) {
    bool parameter = layer.tensors[i].isParameter;
    if (kind == EntryKind::RunPrepared && parameter) {
      if (!preparedListed)
        pointers.push_back(kPreparedBlock);
      preparedListed = true;
    } else if (kind == EntryKind::Run || (kind == EntryKind::Prepare) == parameter) {
      pointers.push_back(static_cast<int>(i));
    }
  }
  if (kind == EntryKind::Prepare)
    pointers.push_back(kPreparedBlock);
  return pointers;
}

namespace {

/// Appends the tensors of a layer to its ABI, in argument order.
class TensorList {
public:
  explicit TensorList(LayerABI &layer) : layer_(layer) {}

  /// An activation [batch, rows, width]: rows are the queries' (`seq`) or the keys' (`kv_seq`).
  void activation(std::string name, RuntimeSize rows, int64_t rowCount, int64_t width) {
    add(std::move(name), {layer_.batch, rowCount, width},
        {RuntimeSize::Batch, rows, RuntimeSize::None});
  }

  /// The weight [outFeatures, inFeatures] of projection `prefix` and, when the layer has
  /// them, its bias [outFeatures].
  void projection(const char *prefix, int64_t outFeatures, int64_t inFeatures) {
    add(std::string("w") + prefix, {outFeatures, inFeatures}, {}).isParameter = true;
    if (layer_.bias)
      add(std::string("b") + prefix, {outFeatures}, {}).isParameter = true;
  }

  TensorABI &add(std::string name, std::vector<int64_t> shape, std::vector<RuntimeSize> dynamicAs) {
    TensorABI &tensor = layer_.tensors.emplace_back();
    tensor.name = std::move(name);
    dynamicAs.resize(shape.size(), RuntimeSize::None);
    for (size_t d = 0; d < shape.size(); ++d)
      if (shape[d] != kDynamicSize)
        dynamicAs[d] = RuntimeSize::None;
    tensor.shape = std::move(shape);
    tensor.dynamicAs = std::move(dynamicAs);
    return tensor;
  }

private:
  LayerABI &layer_;
};

} // namespace

LayerABI describeLayer(const LayerSpec &spec) {
  LayerABI layer;
  layer.name = spec.name;
  layer.bf16 = spec.dtype == DType::BF16;
  layer.modelDim = spec.modelDim;
  layer.heads = spec.heads;
  layer.headDim = spec.headDim;
  layer.kvHeads = spec.kvHeads;
  layer.kvDim = spec.kvDim;
  layer.batch = spec.batch;
  layer.seq = spec.seq;
  layer.kvSeq = spec.kvSeq;
  layer.cross = spec.cross;
  layer.causal = spec.causal;
  layer.kvLens = spec.kvLens;
  layer.bias = spec.bias;
  layer.scale = static_cast<float>(spec.scale);
  layer.rope = spec.rope;
  layer.kvCache = spec.kvCache;
  layer.window = spec.window;
  layer.softcap = spec.softcap;
  layer.qkNorm = spec.qkNorm;
  layer.qkNormEps = spec.qkNormEps;
  layer.sinks = spec.sinks;

  int64_t queryWidth = spec.heads * spec.headDim;
  int64_t kvWidth = spec.kvHeads * spec.headDim;
  TensorList tensors(layer);
  tensors.activation("x", RuntimeSize::Seq, spec.seq, spec.modelDim);
  if (spec.cross)
    tensors.activation("memory", RuntimeSize::KvSeq, spec.kvSeq, spec.kvDim);
  tensors.projection("q", queryWidth, spec.modelDim);
  tensors.projection("k", kvWidth, spec.kvDim);
  tensors.projection("v", kvWidth, spec.kvDim);
  // The output projection's weight follows the attention's inputs, in the order of the data flow.
  tensors.projection("o", spec.modelDim, queryWidth);
  // The decoder layers' parameters follow the projections', so that all are one run of the
  // arguments (the prepared block's place in NAME_run_prepared).
  if (spec.qkNorm) {
    tensors.add("q_norm", {spec.headDim}, {}).isParameter = true;
    tensors.add("k_norm", {spec.headDim}, {}).isParameter = true;
  }
  if (spec.sinks)
    tensors.add("sinks", {spec.heads}, {}).isParameter = true;
  if (spec.kvLens)
    tensors.add("kv_lens", {spec.batch}, {RuntimeSize::Batch}).isInt32 = true;
  if (spec.kvCache) {
    for (const char *name : {"k_cache", "v_cache"})
      tensors.add(name, {spec.batch, spec.kvCache, spec.kvHeads, spec.headDim},
                  {RuntimeSize::Batch}).isCache = true;
    tensors.add("cache_len", {spec.batch}, {RuntimeSize::Batch}).isInt32 = true;
  }
  tensors.activation("out", RuntimeSize::Seq, spec.seq, spec.modelDim);
  layer.tensors.back().isOutput = true;
  return layer;
}

void appendPrepared(LayerABI &layer, TensorABI &tensor, std::vector<int64_t> shape,
                    int64_t elementBytes) {
  constexpr int64_t kPreparedAlignment = 64; // parameters start on a cache line
  int64_t bytes = elementBytes;
  for (int64_t size : shape)
    bytes *= size;
  tensor.preparedShape = std::move(shape);
  tensor.preparedOffset = layer.preparedBytes;
  layer.preparedBytes += (bytes + kPreparedAlignment - 1) / kPreparedAlignment * kPreparedAlignment;
}

const TensorABI *findTensor(const LayerABI &layer, std::string_view name) {
  for (const TensorABI &tensor : layer.tensors)
    if (tensor.name == name)
      return &tensor;
  return nullptr;
}

} // namespace mhac
