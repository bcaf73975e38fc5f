//===- BackendSupport.h - the language keys each backend compiles -*- C++ -*-===//
//
// Part of mhac. The decoder keys (rope, kv_cache, window, softcap, qk_norm, sinks) compile on
// the MLIR backend's CPU targets; the Halide backend and the CUDA target do not take them yet.
// A layer that uses one there is refused at the key's line, naming the key and the backend,
// never compiled into something that computes another layer.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_COMPILER_TARGET_BACKENDSUPPORT_H
#define MHAC_COMPILER_TARGET_BACKENDSUPPORT_H

#include "compiler/frontend/Diagnostics.h"
#include "compiler/frontend/LayerSpec.h"

#include <string>
#include <vector>

namespace mhac {

/// The decoder keys `spec` uses (written with a value that turns the feature on), in the
/// language's order.
std::vector<std::string> decoderKeysOf(const LayerSpec &spec);

/// Reports, at its key, every decoder key of a layer of `layers` that `what` ("the Halide
/// backend", "the CUDA target cuda:sm_90") does not compile yet, with `instead` (what does:
/// "--backend mlir"); returns whether it reported any.
bool refuseDecoderKeys(const std::vector<LayerSpec> &layers, const std::string &what,
                       const std::string &instead, DiagnosticEngine &diags);

} // namespace mhac

#endif // MHAC_COMPILER_TARGET_BACKENDSUPPORT_H
