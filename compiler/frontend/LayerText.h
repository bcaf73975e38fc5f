//===- LayerText.h - a checked layer, printed back as source ----*- C++ -*-===//
//
// Part of mhac. The canonical text of a layer: every key written out, defaults resolved, in a
// fixed order. Two layers that compute the same thing print the same text, whatever their
// sources looked like, so the text is also the layer's fingerprint (the tuner keys its
// database and its schedules' provenance on it).
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_COMPILER_FRONTEND_LAYERTEXT_H
#define MHAC_COMPILER_FRONTEND_LAYERTEXT_H

#include "compiler/frontend/LayerSpec.h"

#include <string>

namespace mhac {

/// `layer NAME { ... }` with every key of `spec`, one per line; reading it back gives `spec`.
std::string printLayer(const LayerSpec &spec);

/// The keys and values of `spec` on one line, without its name: "model_dim=768 heads=12 ...".
std::string layerFingerprint(const LayerSpec &spec);

} // namespace mhac

#endif // MHAC_COMPILER_FRONTEND_LAYERTEXT_H
