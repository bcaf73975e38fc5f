//===- Measure.cpp - mha-run --measure, the tuner's probe -----------------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "tools/mha-run/Measure.h"

#include "runtime/io/File.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstring>

namespace mhac {
namespace {

using Clock = std::chrono::steady_clock;

/// The float64 reference of `data`, from `path` when it holds one of the right size, else
/// computed and written there (atomically: concurrent probes may race to write it). Empty,
/// with `error` set, when it cannot be written.
std::vector<double> loadOrComputeReference(const std::string &path, const LayerData &data,
                                           std::string &error) {
  if (io::Expected<std::vector<uint8_t>> bytes = io::readFileBytes(path);
      bytes && bytes->size() == data.outputSize() * sizeof(double)) {
    std::vector<double> reference(data.outputSize());
    std::memcpy(reference.data(), bytes->data(), bytes->size());
    return reference;
  }
  std::vector<double> reference = referenceOutput(data);
  io::Status written = io::writeFileAtomically(
      path, reinterpret_cast<const uint8_t *>(reference.data()), reference.size() * sizeof(double));
  if (!written) {
    error = written.error();
    return {};
  }
  return reference;
}

/// The calls one sample makes so that it lasts at least `sampleMs`: doubled from one until a
/// batch does (the first batches also warm the caches and wake the threads).
long callsPerSample(LayerCall &call, long sampleMs) {
  for (long calls = 1;; calls *= 2) {
    auto before = Clock::now();
    for (long i = 0; i < calls; ++i)
      call.runPrepared();
    double ms = std::chrono::duration<double, std::milli>(Clock::now() - before).count();
    if (ms >= static_cast<double>(sampleMs) || calls >= (1L << 30))
      return std::max<long>(1, std::lround(std::ceil(calls * sampleMs / std::max(ms, 1e-6))));
  }
}

/// `text` as a JSON string.
std::string jsonString(std::string_view text) {
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\')
      quoted += '\\';
    if (static_cast<unsigned char>(c) < 0x20)
      quoted += fmt::format("\\u{:04x}", c);
    else
      quoted += c;
  }
  return quoted + "\"";
}

void printFailure(const std::string &reason) {
  fmt::print("{{\"ok\": false, \"reason\": {}}}\n", jsonString(reason));
}

} // namespace

int measure(const mhac_layer &layer, const LayerData &data, const RunOptions &options) {
  LayerCall call(layer, data);
  uint64_t inputs = call.inputsDigest();
  if (int32_t status = call.prepare()) {
    printFailure(fmt::format("preparation failed: {}", mhac_status_string(status)));
    return 1;
  }
  // One thread first: the reference check, and the bits every thread count must reproduce.
  mhac_set_num_threads(1);
  if (int32_t status = call.runPrepared()) {
    printFailure(fmt::format("the layer failed: {}", mhac_status_string(status)));
    return 1;
  }
  if (const char *wrong = call.misbehaviour(inputs)) {
    printFailure(fmt::format("the layer {}", wrong));
    return 1;
  }
  std::vector<float> single = call.output();
  std::string referenceError;
  std::vector<double> expected =
      loadOrComputeReference(options.measureReference, data, referenceError);
  if (expected.empty()) {
    printFailure(fmt::format("cannot keep the reference: {}", referenceError));
    return 1;
  }
  double error = reference::relativeError(single.data(), expected.data(), single.size());
  double tolerance = layer.dtype == MHAC_DTYPE_BF16 ? 2e-2 : 1e-4;
  if (!(error <= tolerance)) {
    printFailure(fmt::format("error {:.3g} past the tolerance {:g}", error, tolerance));
    return 1;
  }
  int32_t threads = static_cast<int32_t>(std::min<long>(options.threads.value_or(0), INT32_MAX));
  mhac_set_num_threads(threads);
  if (int32_t status = call.runPrepared()) {
    printFailure(
        fmt::format("the layer failed on several threads: {}", mhac_status_string(status)));
    return 1;
  }
  if (const char *wrong = call.misbehaviour(inputs)) {
    printFailure(fmt::format("the layer {} on several threads", wrong));
    return 1;
  }
  if (call.output() != single) {
    printFailure("several threads give other bits than one");
    return 1;
  }

  long calls = callsPerSample(call, options.sampleMs);
  std::vector<double> sampleMs;
  for (long sample = 0; sample < options.samples; ++sample) {
    auto before = Clock::now();
    for (long i = 0; i < calls; ++i)
      call.runPrepared();
    double ms = std::chrono::duration<double, std::milli>(Clock::now() - before).count();
    sampleMs.push_back(ms / static_cast<double>(calls));
  }
  std::vector<double> sorted = sampleMs;
  std::sort(sorted.begin(), sorted.end());
  fmt::print("{{\"ok\": true, \"error\": {:.3g}, \"tolerance\": {:g}, \"threads\": {}, "
             "\"calls_per_sample\": {}, \"sample_ms\": [{:.6g}], \"median_ms\": {:.6g}}}\n",
             error, tolerance, threads, calls, fmt::join(sampleMs, ", "),
             sorted[sorted.size() / 2]);
  return 0;
}

} // namespace mhac
