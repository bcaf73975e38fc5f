//===- LayerSpec.h - a checked layer with every default resolved -*- C++ -*-===//
//
// Part of mhac. The output of Sema and the input of MLIRGen: plain data, so that code generation
// never needs the syntax tree or re-checks what Sema already guaranteed.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_COMPILER_FRONTEND_LAYERSPEC_H
#define MHAC_COMPILER_FRONTEND_LAYERSPEC_H

#include "compiler/frontend/Diagnostics.h"

#include <cstdint>
#include <string>

namespace mhac {

/// Marks a size given at run time (`?` in the source).
inline constexpr int64_t kDynamicSize = -1;

enum class DType { F32, BF16 };

inline const char *dtypeName(DType dtype) { return dtype == DType::F32 ? "f32" : "bf16"; }

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
  int64_t kvSeq = 0; ///< Skv; equals seq unless cross
  int64_t kvDim = 0; ///< width of `memory`; equals modelDim unless cross
  bool cross = false;
  bool causal = false;
  bool kvLens = false;
  bool bias = true;
  DType dtype = DType::F32;
  double scale = 0;
};

} // namespace mhac

#endif // MHAC_COMPILER_FRONTEND_LAYERSPEC_H
