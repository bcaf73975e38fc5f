//===- LayerSpec.h - a checked layer with every default resolved -*- C++ -*-===//
//
// Part of mhac. The output of Sema and the input of MLIRGen: plain data, so that code generation
// never needs the syntax tree or re-checks what Sema already guaranteed.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_COMPILER_FRONTEND_LAYERSPEC_H
#define MHAC_COMPILER_FRONTEND_LAYERSPEC_H

#include "compiler/frontend/Diagnostics.h"
#include "runtime/reference/Rope.h"

#include <cstdint>
#include <map>
#include <string>

namespace mhac {

/// Marks a size given at run time (`?` in the source).
inline constexpr int64_t kDynamicSize = -1;

enum class DType { F32, BF16 };

inline const char *dtypeName(DType dtype) { return dtype == DType::F32 ? "f32" : "bf16"; }

/// The rotary embedding of a layer: the reference's plain parameters (runtime/reference/Rope.h),
/// so that the front end, the compiler and the float64 oracle read one description of them.
using reference::RopeKind;
using reference::RopeScaling;
using RopeSpec = reference::RopeParameters;

/// One layer, consistent by construction: every size is positive (or `kDynamicSize` for batch,
/// seq and kv_seq), `heads % kvHeads == 0`, and `kvDim == modelDim` unless `cross`.
struct LayerSpec {
  std::string name;
  SourceLocation loc;

  int64_t modelDim = 0; ///< D
  int64_t heads = 0;    ///< H
  int64_t headDim = 0;  ///< Dh
  int64_t kvHeads = 0;  ///< Hkv
  int64_t seq = 0;      ///< S
  int64_t batch = kDynamicSize;
  /// Skv; equals seq unless cross, and is kDynamicSize with kv_cache (a call's keys are its
  /// rows' cache_len + seq, known when it runs).
  int64_t kvSeq = 0;
  int64_t kvDim = 0; ///< width of `memory`; equals modelDim unless cross
  bool cross = false;
  bool causal = false;
  bool kvLens = false;
  bool bias = true;
  DType dtype = DType::F32;
  double scale = 0;

  // Decoder layers.
  RopeSpec rope;
  /// kv_cache: positions of the caller-owned key and value caches; 0 = no cache.
  int64_t kvCache = 0;
  /// window: a query at position p sees keys at positions j > p - window; 0 = no window.
  int64_t window = 0;
  /// softcap: every score s becomes softcap * tanh(s / softcap); 0 = none.
  double softcap = 0;
  /// qk_norm = rms: q and k heads RMS-normalized with learned weights, and its epsilon.
  bool qkNorm = false;
  double qkNormEps = 1e-6;
  /// sinks: a learned logit per query head joins each row's softmax denominator.
  bool sinks = false;
  /// Where each key that was written is, for messages of later stages (a backend that cannot
  /// compile a key names it at its line).
  std::map<std::string, SourceLocation, std::less<>> keyLocations;

  bool hasDecoderKeys() const {
    return rope.enabled() || kvCache || window || softcap > 0 || qkNorm || sinks;
  }
};

} // namespace mhac

#endif // MHAC_COMPILER_FRONTEND_LAYERSPEC_H
