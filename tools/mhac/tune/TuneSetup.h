//===- TuneSetup.h - what a tuning session is about -------------*- C++ -*-===//
//
// Part of mhac. The layer to tune, the sizes and threads it is measured with, the target, and
// where the results go: everything `mhac tune` settles before it compiles anything.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_TOOLS_MHAC_TUNE_TUNESETUP_H
#define MHAC_TOOLS_MHAC_TUNE_TUNESETUP_H

#include "compiler/frontend/LayerSpec.h"
#include "compiler/target/CpuTarget.h"
#include "compiler/tuning/CostModel.h"
#include "tools/mhac/CommandLine.h"
#include "tools/mhac/tune/TuningDatabase.h"

#include <optional>
#include <string>

namespace mhac {

struct TuneSetup {
  LayerSpec layer;
  CpuTarget target;
  TuningSizes sizes;
  int threads = 1;
  std::string schedulePath; ///< the schedule file to write
  std::string reportBase;   ///< the report is reportBase.tune.html and .json
  std::string compiler;     ///< "mhac 0.1.0 (LLVM/MLIR 22.1.8)"

  /// "batch=1 seq=97 kv_seq=97"
  std::string sizesText() const;
  /// The arguments that give mha-run the sizes of the layer's '?' dimensions.
  std::vector<std::string> runtimeSizeArguments() const;
  TuningKey key() const;
  /// FLOPs of one call at the tuned sizes.
  double flops() const;
};

/// Reads the layer and settles the session. On an error prints it and returns nothing, with the
/// exit status in `status`.
std::optional<TuneSetup> setUpTuning(const TuneOptions &options, int &status);

} // namespace mhac

#endif // MHAC_TOOLS_MHAC_TUNE_TUNESETUP_H
