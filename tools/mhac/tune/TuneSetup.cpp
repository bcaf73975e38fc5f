//===- TuneSetup.cpp - what a tuning session is about ---------------------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "tools/mhac/tune/TuneSetup.h"

#include "compiler/frontend/LayerText.h"
#include "compiler/frontend/Parser.h"
#include "compiler/frontend/Sema.h"
#include "compiler/target/Target.h"

#include "llvm/Config/llvm-config.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Process.h"

#include <fmt/format.h>

#include <iostream>
#include <thread>

#include <sched.h>

namespace mhac {
namespace {

constexpr int kFailure = 1, kUsageError = 2;

/// The threads the runtime's pool would use by default: MHAC_NUM_THREADS, else the CPUs this
/// process may run on.
int defaultThreads() {
  if (std::optional<std::string> text = llvm::sys::Process::GetEnv("MHAC_NUM_THREADS")) {
    int threads = std::atoi(text->c_str());
    if (threads > 0)
      return threads;
  }
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

/// The size a dimension is tuned at: the layer's own when static, else the option's (or
/// `fallback`). A size given for a static dimension must agree with it.
std::optional<int64_t> tunedSize(int64_t declared, std::optional<int64_t> given,
                                 std::optional<int64_t> fallback, const char *name,
                                 const LayerSpec &layer) {
  if (declared != kDynamicSize) {
    if (given && *given != declared) {
      fmt::print(stderr,
                 "mhac: error: layer '{}' has {} = {}; --{} applies to a size declared '?'\n",
                 layer.name, name, declared, name);
      return std::nullopt;
    }
    return declared;
  }
  if (given)
    return given;
  if (fallback)
    return fallback;
  fmt::print(stderr, "mhac: error: layer '{}' has {} = ?: give the size to tune for with --{} N\n",
             layer.name, name, name);
  return std::nullopt;
}

} // namespace

std::string TuneSetup::sizesText() const {
  std::string text =
      fmt::format("batch={} seq={} kv_seq={}", sizes.batch, sizes.seq, sizes.kvSeq);
  if (layer.kvCache)
    text += fmt::format(" cache_len={}", sizes.cacheLen);
  return text;
}

std::vector<std::string> TuneSetup::runtimeSizeArguments() const {
  std::vector<std::string> arguments;
  if (layer.batch == kDynamicSize)
    arguments.insert(arguments.end(), {"--batch", std::to_string(sizes.batch)});
  if (layer.seq == kDynamicSize)
    arguments.insert(arguments.end(), {"--seq", std::to_string(sizes.seq)});
  if (layer.cross && layer.kvSeq == kDynamicSize)
    arguments.insert(arguments.end(), {"--kv-seq", std::to_string(sizes.kvSeq)});
  if (layer.kvCache)
    arguments.insert(arguments.end(), {"--cache-len", std::to_string(sizes.cacheLen)});
  return arguments;
}

TuningKey TuneSetup::key() const {
  return TuningKey{layerFingerprint(layer), sizesText(), describeCpu(target),
                   target.features,         target.name, threads};
}

double TuneSetup::flops() const {
  double b = static_cast<double>(sizes.batch), s = static_cast<double>(sizes.seq),
         skv = static_cast<double>(sizes.kvSeq), cached = static_cast<double>(sizes.cacheLen);
  double queryWidth = static_cast<double>(layer.heads * layer.headDim);
  double kvWidth = static_cast<double>(layer.kvHeads * layer.headDim);
  double projections = 2 * b *
                       (s * layer.modelDim * queryWidth + 2 * skv * layer.kvDim * kvWidth +
                        s * queryWidth * layer.modelDim);
  return projections + 4 * b * s * (skv + cached) * queryWidth;
}

std::optional<TuneSetup> setUpTuning(const TuneOptions &options, int &status) {
  status = kFailure;
  auto buffer = llvm::MemoryBuffer::getFile(options.inputPath, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (std::error_code error = buffer.getError()) {
    fmt::print(stderr, "mhac: error: cannot read '{}': {}\n", options.inputPath, error.message());
    return std::nullopt;
  }
  SourceFile file(options.inputPath, (*buffer)->getBuffer().str());
  DiagnosticEngine diags(file, std::cerr);
  ModuleAST ast = Parser(file, diags).parseModule();
  std::optional<std::vector<LayerSpec>> layers =
      diags.hasErrors() ? std::nullopt : analyzeModule(ast, diags);
  if (!layers)
    return std::nullopt;

  TuneSetup setup;
  const LayerSpec *chosen = nullptr;
  std::vector<std::string_view> names;
  for (const LayerSpec &layer : *layers) {
    names.push_back(layer.name);
    if (layer.name == options.layer || (options.layer.empty() && layers->size() == 1))
      chosen = &layer;
  }
  if (!chosen) {
    std::string list = fmt::format("{}", fmt::join(names, ", "));
    if (options.layer.empty())
      fmt::print(stderr, "mhac: error: {} has {} layers ({}): choose one with --layer NAME\n",
                 options.inputPath, layers->size(), list);
    else
      fmt::print(stderr, "mhac: error: no layer '{}' in {} (its layers: {}){}\n", options.layer,
                 options.inputPath, list,
                 closestName(options.layer, names)
                     ? fmt::format("; did you mean '{}'?", *closestName(options.layer, names))
                     : "");
    status = kUsageError;
    return std::nullopt;
  }
  setup.layer = *chosen;

  llvm::Expected<CpuTarget> target = resolveCpuTarget(options.target);
  if (!target) {
    fmt::print(stderr, "mhac: error: {}\n", llvm::toString(target.takeError()));
    return std::nullopt;
  }
  if (target->cuda) {
    fmt::print(stderr, "mhac: error: mhac tune searches CPU schedules, timed on this machine's "
                       "CPU; write a CUDA target's schedule by hand (docs/schedules.md)\n");
    status = kUsageError;
    return std::nullopt;
  }
  setup.target = *target;

  const LayerSpec &layer = setup.layer;
  std::optional<int64_t> batch = tunedSize(layer.batch, options.batch, 1, "batch", layer);
  std::optional<int64_t> seq = tunedSize(layer.seq, options.seq, std::nullopt, "seq", layer);
  if (!batch || !seq)
    return std::nullopt;
  std::optional<int64_t> kvSeq =
      layer.cross ? tunedSize(layer.kvSeq, options.kvSeq, std::nullopt, "kv-seq", layer) : seq;
  if (!kvSeq)
    return std::nullopt;
  setup.sizes = TuningSizes{*batch, *seq, *kvSeq};
  if (options.cacheLen && !layer.kvCache) {
    fmt::print(stderr, "mhac: error: --cache-len {}: layer '{}' has no kv_cache\n",
               *options.cacheLen, layer.name);
    return std::nullopt;
  }
  setup.sizes.cacheLen = options.cacheLen.value_or(0);
  if (layer.kvCache && setup.sizes.cacheLen + *seq > layer.kvCache) {
    fmt::print(stderr,
               "mhac: error: --cache-len {} and seq {} are {} positions; layer '{}''s cache "
               "holds {} (kv_cache)\n",
               setup.sizes.cacheLen, *seq, setup.sizes.cacheLen + *seq, layer.name,
               layer.kvCache);
    return std::nullopt;
  }
  setup.threads = options.threads ? static_cast<int>(*options.threads) : defaultThreads();

  setup.schedulePath = options.outputPath.empty() ? layer.name + ".sched" : options.outputPath;
  llvm::StringRef base(setup.schedulePath);
  base.consume_back(".sched");
  setup.reportBase = base.str();
  setup.compiler = fmt::format("mhac {} (LLVM/MLIR {})", MHAC_VERSION, LLVM_VERSION_STRING);
  status = 0;
  return setup;
}

} // namespace mhac
