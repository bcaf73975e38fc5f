//===- Options.h - the command line of mha-run ------------------*- C++ -*-===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_TOOLS_MHA_RUN_OPTIONS_H
#define MHAC_TOOLS_MHA_RUN_OPTIONS_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mhac {

struct RunOptions {
  std::string modulePath;
  std::string layer;
  // File mode.
  std::string weightsPath, inputPath, memoryPath, kvLensPath, outputPath;
  /// Decoder layers with a cache: the caches' files (read, and written back with the new
  /// tokens' rows), and --cache-len as a file (cacheLenPath) or as lengths (cacheLen: one for
  /// every batch row, or one per row).
  std::string kCachePath, vCachePath, cacheLenPath;
  /// --reference FILE: where to write the float64 reference's output (as float32 .npy).
  std::string referencePath;
  std::vector<int64_t> cacheLen;
  /// --weights-prefix: the layer's tensors in a checkpoint of many (Hugging Face's
  /// `model.layers.0.self_attn.`).
  std::string weightsPrefix;
  // Modes on random (or file) data.
  bool check = false;
  bool list = false;
  bool printSchedule = false;
  std::optional<long> bench;
  /// --measure REF: mhac tune's probe (see Measure.h); REF holds the float64 reference.
  std::string measureReference;
  long samples = 5;   ///< --samples: timed samples of --measure
  long sampleMs = 20; ///< --sample-ms: the least time one sample runs
  // Sizes of '?' dimensions, threads, seed.
  std::optional<long> batch, seq, kvSeq;
  std::optional<long> threads;
  unsigned seed = 1;

  bool fileMode() const { return !inputPath.empty(); }
};

/// Parses the command line. Returns nothing after printing help (status 0) or a usage error
/// (status 2) into `status`.
std::optional<RunOptions> parseRunOptions(int argc, char **argv, int &status);

} // namespace mhac

#endif // MHAC_TOOLS_MHA_RUN_OPTIONS_H
