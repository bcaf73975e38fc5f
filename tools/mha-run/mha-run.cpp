//===- mha-run.cpp - run, check and time compiled layers ------------------===//
//
// Part of mhac. Loads a module written by `mhac compile --shared` and runs one of its layers,
// on files (docs/running.md) or on random data; checks the result against the float64
// reference and times it.
//
//===----------------------------------------------------------------------===//

#include "runtime/io/Npy.h"
#include "tools/common/StageProgress.h"
#include "tools/mha-run/LayerData.h"
#include "tools/mha-run/Measure.h"
#include "tools/mha-run/Options.h"

#include "mhac/runtime.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <tuple>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <memory>

#include <unistd.h>

using namespace mhac;

namespace {

constexpr int kFailure = 1;

int failure(const std::string &message) {
  fmt::print(stderr, "mha-run: error: {}\n", message);
  return kFailure;
}

struct ModuleCloser {
  void operator()(mhac_module *module) const { mhac_module_close(module); }
};

/// The layer to run: --layer NAME, or the module's only one.
const mhac_layer *selectLayer(const mhac_module *module, const RunOptions &options) {
  if (!options.layer.empty()) {
    const mhac_layer *layer = mhac_module_find_layer(module, options.layer.c_str());
    if (!layer)
      failure(fmt::format("{}: no layer named '{}'", options.modulePath, options.layer));
    return layer;
  }
  if (mhac_module_num_layers(module) == 1)
    return mhac_module_layer(module, 0);
  failure(fmt::format("{} has {} layers: choose one with --layer NAME", options.modulePath,
                      mhac_module_num_layers(module)));
  return nullptr;
}

/// What went wrong in a call that returned `status`, with the driver's message for CUDA.
std::string describeStatus(int32_t status) {
  std::string text = mhac_status_string(status);
  if (status == MHAC_ERROR_NO_DEVICE || status == MHAC_ERROR_DRIVER)
    text += fmt::format(" ({})", mhac_cuda_last_error());
  return text;
}

/// A positive number from the environment variable `name`, if it holds one.
std::optional<double> positiveFromEnvironment(const char *name) {
  const char *text = std::getenv(name);
  if (!text || !*text)
    return std::nullopt;
  char *end = nullptr;
  double peak = std::strtod(text, &end);
  if (!end || *end != '\0' || !(peak > 0))
    return std::nullopt;
  return peak;
}

/// The GPU's peak in GFLOP/s for what a layer's kernels compute on, with a description; nothing
/// without a GPU. bf16 layers: the dense bf16 tensor-core peak with f32 accumulation, on the
/// chips whose rate per SM is one figure (2048 FLOPs a clock on sm_80 and sm_87, 4096 on
/// sm_90, reached there by wgmma only); f32 layers and other chips: the f32 FMA peak (2 FLOPs
/// per lane and clock: 64 lanes per SM on sm_80, 128 on the later chips).
std::optional<std::pair<double, std::string>> gpuPeak(const mhac_layer &layer) {
  mhac_cuda_device_info info;
  if (mhac_cuda_device(&info) != MHAC_OK)
    return std::nullopt;
  double clocks = double(info.multiprocessors) * info.clock_khz * 1e-6;
  int chip = info.major * 10 + info.minor;
  int tensorFlops = chip == 80 || chip == 87 ? 2048 : chip == 90 ? 4096 : 0;
  if (layer.dtype == MHAC_DTYPE_BF16 && tensorFlops) {
    double peak = tensorFlops * clocks;
    return std::pair{peak,
                     fmt::format("{}'s bf16 tensor-core peak, {:.0f} TFLOP/s", info.name, peak / 1e3)};
  }
  int lanes = chip == 80 ? 64 : 128;
  double peak = 2.0 * lanes * clocks;
  return std::pair{peak, fmt::format("{}'s f32 FMA peak, {:.1f} TFLOP/s", info.name, peak / 1e3)};
}

/// Seconds of one call on prepared parameters: on the CPU's clock, or between CUDA events.
double timeCall(LayerCall &call, const mhac_layer &layer) {
  if (!layer.device) {
    auto before = std::chrono::steady_clock::now();
    call.runPrepared();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - before).count();
  }
  double milliseconds = 0;
  auto queue = [](void *closure) { return static_cast<LayerCall *>(closure)->queuePrepared(); };
  mhac_cuda_time_calls(queue, &call, 1, &milliseconds);
  return milliseconds * 1e-3;
}

void bench(LayerCall &call, const mhac_layer &layer, long calls) {
  using Clock = std::chrono::steady_clock;
  std::vector<double> seconds;
  auto start = Clock::now(), lastReport = start;
  bool reported = false;
  bool interactive = isatty(STDERR_FILENO);
  for (long i = 0; i < calls; ++i) {
    seconds.push_back(timeCall(call, layer));
    auto after = Clock::now();
    // A progress line on a terminal once the benchmark has run for a second, refreshed twice
    // a second.
    if (interactive && after - start > std::chrono::seconds(1) &&
        after - lastReport > std::chrono::milliseconds(500)) {
      fmt::print(stderr, "\rmha-run: {}/{} calls", i + 1, calls);
      lastReport = after;
      reported = true;
    }
  }
  if (reported)
    fmt::print(stderr, "\r{:40}\r", "");
  std::sort(seconds.begin(), seconds.end());
  double median = seconds[seconds.size() / 2];
  double gflops = call.flops() / median * 1e-9;
  std::string peak;
  if (std::optional<double> known = positiveFromEnvironment("MHAC_PEAK_GFLOPS"))
    peak = fmt::format(", {:.0f}% of peak", 100 * gflops / *known);
  else if (auto device = layer.device ? gpuPeak(layer) : std::nullopt)
    peak = fmt::format(", {:.0f}% of {}", 100 * gflops / device->first, device->second);
  // Bytes a second, against the memory bandwidth where it is given: a decode step's measure.
  std::string streamed;
  if (!layer.device) {
    double gbs = call.bytesMoved() / median * 1e-9;
    streamed = fmt::format(", {:.1f} GB/s", gbs);
    if (std::optional<double> bandwidth = positiveFromEnvironment("MHAC_BANDWIDTH_GBS"))
      streamed += fmt::format(" ({:.0f}% of {:.1f} GB/s)", 100 * gbs / *bandwidth, *bandwidth);
  }
  fmt::print("{}: {} calls: median {:.3f} ms (min {:.3f}, max {:.3f}), {:.1f} GFLOP/s{}{}\n",
             layer.name, seconds.size(), median * 1e3, seconds.front() * 1e3, seconds.back() * 1e3,
             gflops, peak, streamed);
}

/// Replaces --k-cache and --v-cache by the caches with the rows the call wrote (each file
/// atomically; every other element's bits as the file had them).
bool writeBackCaches(const LayerData &data, const RunOptions &options,
                     const std::vector<float> (&caches)[2]) {
  const std::string *paths[2] = {&options.kCachePath, &options.vCachePath};
  std::vector<int64_t> shape = {data.shape.batch, data.shape.kvCache, data.shape.kvHeads,
                                data.shape.headDim};
  for (int which = 0; which < 2; ++which) {
    io::Expected<io::HostTensor> original = io::readNpyFile(*paths[which]);
    if (!original) {
      failure(original.error());
      return false;
    }
    io::HostTensor merged =
        io::HostTensor::makeF32(shape, mergeNewRows(data, original->f32, caches[which]));
    if (io::Status written = io::writeNpyFile(*paths[which], merged); !written) {
      failure(written.error());
      return false;
    }
  }
  return true;
}

int run(const RunOptions &options) {
  char error[512];
  std::unique_ptr<mhac_module, ModuleCloser> module(
      mhac_module_open(options.modulePath.c_str(), error, sizeof error));
  if (!module)
    return failure(error);
  if (options.list) {
    for (int32_t i = 0; i < mhac_module_num_layers(module.get()); ++i)
      fmt::print("{}\n", mhac_module_layer(module.get(), i)->name);
    return 0;
  }
  if (options.printSchedule && options.layer.empty()) {
    fmt::print("format = {}\n", MHAC_SCHEDULE_FORMAT);
    for (int32_t i = 0; i < mhac_module_num_layers(module.get()); ++i)
      fmt::print("\n{}", mhac_module_layer(module.get(), i)->schedule);
    return 0;
  }
  const mhac_layer *layer = selectLayer(module.get(), options);
  if (!layer)
    return kFailure;
  if (options.printSchedule) {
    fmt::print("format = {}\n\n{}", MHAC_SCHEDULE_FORMAT, layer->schedule);
    return 0;
  }

  LayerData data;
  bool ready = options.fileMode() ? readDataFiles(*layer, options, data)
                                  : makeRandomData(*layer, options, data);
  if (!ready)
    return kFailure;
  if (!options.measureReference.empty() && layer->device)
    return failure(fmt::format("--measure probes CPU schedules; layer '{}' runs on {}", layer->name,
                               layer->device));
  if (!options.measureReference.empty())
    return measure(*layer, data, options);
  if (options.threads)
    mhac_set_num_threads(static_cast<int32_t>(std::min<long>(*options.threads, INT32_MAX)));

  LayerCall call(*layer, data);
  // --check also makes sure the layer leaves what it reads as it found it.
  std::optional<uint64_t> inputs;
  if (options.check)
    inputs = call.inputsDigest();
  if (int32_t status = call.run())
    return failure(fmt::format("layer '{}' failed: {}", layer->name, describeStatus(status)));
  if (const char *wrong = call.misbehaviour(inputs))
    return failure(fmt::format("layer '{}' {}", layer->name, wrong));
  if (std::string wrong = call.cacheMisbehaviour(); !wrong.empty())
    return failure(fmt::format("layer '{}' {}", layer->name, wrong));
  std::vector<float> out = call.output();
  std::vector<float> caches[2];
  if (layer->kv_cache)
    caches[0] = call.cache(0), caches[1] = call.cache(1);
  // The other way to call a layer, on parameters prepared once: --check and --bench use it too,
  // and it must give the very same bits.
  if (options.check || options.bench) {
    if (int32_t status = call.prepare(); status || (status = call.runPrepared()))
      return failure(fmt::format("layer '{}' failed on prepared parameters: {}", layer->name,
                                 describeStatus(status)));
    if (const char *wrong = call.misbehaviour(inputs))
      return failure(fmt::format("layer '{}' {} on prepared parameters", layer->name, wrong));
    if (call.output() != out)
      return failure(
          fmt::format("layer '{}': a run on prepared parameters differs from a run", layer->name));
    // Bits, not values: the rows past a row's tokens are NaN on random data.
    auto sameBits = [](const std::vector<float> &a, const std::vector<float> &b) {
      return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
    };
    if (layer->kv_cache && (!sameBits(call.cache(0), caches[0]) || !sameBits(call.cache(1), caches[1])))
      return failure(fmt::format(
          "layer '{}': a run on prepared parameters writes other cache rows than a run",
          layer->name));
  }

  if (!options.kCachePath.empty())
    if (!writeBackCaches(data, options, caches))
      return kFailure;

  if (!options.outputPath.empty()) {
    io::HostTensor tensor =
        io::HostTensor::makeF32({data.shape.batch, data.shape.seq, data.shape.modelDim}, out);
    if (io::Status written = io::writeNpyFile(options.outputPath, tensor); !written)
      return failure(written.error());
  }

  int status = 0;
  std::vector<double> expected, newKeys, newValues;
  if (options.check || !options.referencePath.empty()) {
    StageProgress progress("mha-run: " + std::string(layer->name));
    progress.stage("computing the float64 reference");
    expected = layer->kv_cache ? referenceOutput(data, &newKeys, &newValues)
                               : referenceOutput(data);
  }
  if (!options.referencePath.empty()) {
    io::HostTensor tensor = io::HostTensor::makeF32(
        {data.shape.batch, data.shape.seq, data.shape.modelDim},
        std::vector<float>(expected.begin(), expected.end()));
    if (io::Status written = io::writeNpyFile(options.referencePath, tensor); !written)
      return failure(written.error());
  }
  if (options.check) {
    double relative = reference::relativeError(out.data(), expected.data(), out.size());
    double tolerance = layer->dtype == MHAC_DTYPE_BF16 ? 2e-2 : 1e-4;
    bool ok = relative <= tolerance;
    std::string sizes = layer->kv_cache
                            ? fmt::format("cache_len {}", fmt::join(data.cacheLen, ","))
                            : fmt::format("kv_seq {}", data.shape.kvSeq);
    std::string cacheErrors;
    if (layer->kv_cache) {
      // The rows the call wrote into the caches: the new tokens' keys and values.
      double keys = 0, values = 0;
      for (auto [error, cache, want] : {std::tuple{&keys, &caches[0], &newKeys},
                                        std::tuple{&values, &caches[1], &newValues}}) {
        std::vector<float> rows = newRowsOf(data, *cache);
        *error = reference::relativeError(rows.data(), want->data(), rows.size());
      }
      ok = ok && keys <= tolerance && values <= tolerance;
      cacheErrors = fmt::format(", cache rows {:.3g} (keys) and {:.3g} (values)", keys, values);
    }
    fmt::print("{}: batch {}, seq {}, {}: error {:.3g}{} (tolerance {:g}): {}\n", layer->name,
               data.shape.batch, data.shape.seq, sizes, relative, cacheErrors, tolerance,
               ok ? "ok" : "FAILED");
    if (!ok)
      status = kFailure;
  }
  if (options.bench)
    bench(call, *layer, *options.bench);
  return status;
}

} // namespace

int main(int argc, char **argv) {
  int status = 0;
  std::optional<RunOptions> options = parseRunOptions(argc, argv, status);
  if (!options)
    return status;
  return run(*options);
}
