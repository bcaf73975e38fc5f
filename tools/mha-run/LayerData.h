//===- LayerData.h - the tensors one run of a layer needs -------*- C++ -*-===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_TOOLS_MHA_RUN_LAYERDATA_H
#define MHAC_TOOLS_MHA_RUN_LAYERDATA_H

#include "runtime/reference/ReferenceAttention.h"
#include "tools/mha-run/Options.h"

#include "mhac/runtime.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mhac {

/// Inputs and weights of one call, as float32 (already rounded to bf16 for bf16 layers, so that
/// the reference sees exactly what the layer sees), with the resolved sizes.
struct LayerData {
  reference::LayerShape shape;
  std::vector<float> x, memory;
  std::vector<float> wq, bq, wk, bk, wv, bv, wo, bo;
  std::vector<int32_t> kvLens;
  // Decoder layers: q/k norm weights, sinks, and the caches [B, N, Hkv, Dh] with their lengths.
  std::vector<float> qNorm, kNorm, sinks;
  std::vector<float> kCache, vCache;
  std::vector<int32_t> cacheLen;

  size_t outputSize() const { return size_t(shape.batch * shape.seq * shape.modelDim); }
  /// Elements of one cache, and of the rows a call writes into it ([B, S, Hkv * Dh]).
  size_t cacheSize() const {
    return size_t(shape.batch * shape.kvCache * shape.kvHeads * shape.headDim);
  }
  size_t newRowsSize() const {
    return size_t(shape.batch * shape.seq * shape.kvHeads * shape.headDim);
  }
};

/// Random data (inputs in [-1, 1], weights in +-1/sqrt(fan-in) as PyTorch initializes them;
/// kv_lens gives batch entry 0 every key and entry 1 none). Sizes come from the layer or the
/// options. Returns false after printing one error line.
bool makeRandomData(const mhac_layer &layer, const RunOptions &options, LayerData &data);

/// Data from --weights, --input, --memory and --kv-lens, checked against the layer: every
/// mismatch is one error line naming the file. Returns false after printing it.
bool readDataFiles(const mhac_layer &layer, const RunOptions &options, LayerData &data);

/// Runs the layer on `data` and returns the output as float32.
class LayerCall {
public:
  LayerCall(const mhac_layer &layer, const LayerData &data);

  ~LayerCall();
  LayerCall(const LayerCall &) = delete;
  LayerCall &operator=(const LayerCall &) = delete;

  /// One call; returns its mhac_status.
  int32_t run();
  /// Prepares the parameters once (mhac_layer_prepare); returns its mhac_status.
  int32_t prepare();
  /// One call on the prepared parameters; returns its mhac_status.
  int32_t runPrepared();
  /// The same, for a CUDA layer only queued on the default stream (for timing with events).
  int32_t queuePrepared();
  /// The output of the last call.
  std::vector<float> output() const;
  /// The layer's cache `which` (0: keys, 1: values) as the last call left it, as float32.
  std::vector<float> cache(int which) const;
  /// A digest of the host bytes of every tensor the layer reads but the caches (which it
  /// writes in part: see cacheMisbehaviour): a call must leave it as it was.
  uint64_t inputsDigest() const;
  /// What the last call did that a layer must not, as words that follow "layer NAME": stored
  /// past either end of its output (a vector tail wider than the row, say, caught by the guards
  /// around it even where the stray bytes land in memory nothing reads), or, given the inputs'
  /// digest from before, changed its inputs. Null if neither.
  const char *misbehaviour(std::optional<uint64_t> inputsBefore) const;
  /// What the last call did to the caches that it must not: changed a row that is not one of
  /// the new tokens'. Empty if nothing.
  std::string cacheMisbehaviour() const;
  /// FLOPs of one call (mhac_layer_flops), for a cache layer summed over its rows' cache_len.
  double flops() const;
  /// The bytes a call on prepared weights moves at the least: the prepared block, the inputs
  /// and the output once, and a cache layer's cache rows that its queries attend over.
  double bytesMoved() const;

private:
  /// Copies the tensors of a CUDA layer to the device; returns an mhac_status.
  int32_t upload();
  /// `status`, or for a CUDA layer the status of the work queued on the default stream.
  int32_t finish(int32_t status);
  /// The pointers the layer takes: the host tensors, or for a CUDA layer their device copies.
  void *const *arguments() const {
    return layer_.device ? devicePointers_.data() : pointers_.data();
  }

  const mhac_layer &layer_;
  const LayerData &data_;
  std::vector<std::vector<uint16_t>> bf16_; ///< bf16 copies of the inputs of a bf16 layer
  /// The caches' bytes (the layer writes them), as a call found them and as it left them.
  std::vector<unsigned char> caches_[2], cachesBefore_[2];
  /// The output's bytes between two guards of kGuardBytes, filled with kGuardByte.
  std::vector<unsigned char> outBytes_;
  /// Bytes of an element of x, memory, the weights, biases and output: 4 (f32) or 2 (bf16).
  size_t elementBytes_ = 0;
  std::vector<void *> pointers_;
  void *prepared_ = nullptr;
  mhac_sizes sizes_;
  /// The sizes in bytes of the tensors of pointers_.
  std::vector<size_t> bytes_;
  /// A CUDA layer's device copies of pointers_, and whether making them failed (an
  /// mhac_status).
  std::vector<void *> devicePointers_;
  int32_t deviceStatus_ = MHAC_OK;
};

/// The float64 reference output for `data`; for a layer with a cache, `newRows` receives the
/// keys and values the call writes into the caches ([B, S, Hkv * Dh] each), where given.
std::vector<double> referenceOutput(const LayerData &data, std::vector<double> *newKeys = nullptr,
                                    std::vector<double> *newValues = nullptr);

/// The caches of `data` with `call`'s new rows: `original` (float32, [B, N, Hkv, Dh]) with the
/// rows the call wrote replaced by `written`'s, every other element as it was (so that a cache
/// file gets back its own bits there, not their rounding to bf16).
std::vector<float> mergeNewRows(const LayerData &data, const std::vector<float> &original,
                                const std::vector<float> &written);

/// The rows a call wrote into a cache (float32, [B, N, Hkv, Dh]), as [B, S, Hkv * Dh].
std::vector<float> newRowsOf(const LayerData &data, const std::vector<float> &cache);

} // namespace mhac

#endif // MHAC_TOOLS_MHA_RUN_LAYERDATA_H
