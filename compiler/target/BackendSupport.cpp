//===- BackendSupport.cpp - the language keys each backend compiles -------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "compiler/target/BackendSupport.h"

#include <fmt/format.h>

namespace mhac {

std::vector<std::string> decoderKeysOf(const LayerSpec &spec) {
  std::vector<std::string> keys;
  if (spec.rope.enabled())
    keys.push_back("rope");
  if (spec.kvCache)
    keys.push_back("kv_cache");
  if (spec.window)
    keys.push_back("window");
  if (spec.softcap > 0)
    keys.push_back("softcap");
  if (spec.qkNorm)
    keys.push_back("qk_norm");
  if (spec.sinks)
    keys.push_back("sinks");
  return keys;
}

bool refuseDecoderKeys(const std::vector<LayerSpec> &layers, const std::string &what,
                       const std::string &instead, DiagnosticEngine &diags) {
  bool refused = false;
  for (const LayerSpec &spec : layers)
    for (const std::string &key : decoderKeysOf(spec)) {
      auto at = spec.keyLocations.find(key);
      SourceLocation loc = at == spec.keyLocations.end() ? spec.loc : at->second;
      diags.error(loc,
                  fmt::format("'{}' (layer '{}') is not supported by {} yet; the MLIR backend "
                              "compiles it for CPUs ({})",
                              key, spec.name, what, instead),
                  key.size());
      refused = true;
    }
  return refused;
}

} // namespace mhac
