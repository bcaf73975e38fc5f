//===- Options.cpp - the command line of mha-run --------------------------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "tools/mha-run/Options.h"

#include <fmt/format.h>

#include <string_view>
#include <utility>

namespace mhac {

static const char *kHelp = R"(mha-run: run a layer compiled by 'mhac compile --shared'

usage:
  mha-run MODULE.so [--layer NAME] --weights W.safetensors --input X.npy [--memory M.npy]
          [--kv-lens L.npy] [--k-cache K.npy --v-cache V.npy --cache-len C.npy|N[,N...]]
          --output Y.npy [--threads N] [--check] [--bench N]
  mha-run MODULE.so [--layer NAME] --check [sizes] [--seed N] [--threads N]
  mha-run MODULE.so [--layer NAME] --bench N [sizes] [--seed N] [--threads N]
  mha-run MODULE.so [--layer NAME] --measure REF [sizes] [--seed N] [--threads N]
          [--samples K] [--sample-ms MS]
  mha-run MODULE.so --list
  mha-run MODULE.so [--layer NAME] --print-schedule

  --layer NAME        the layer to run (needed when the module has several)
  --weights FILE      .safetensors with q_proj.weight, q_proj.bias, ..., o_proj.bias, or
                      PyTorch's in_proj_weight, in_proj_bias, out_proj.weight, out_proj.bias;
                      decoder layers: q_norm.weight, k_norm.weight, sinks (Phi's dense and
                      Phi-3's fused qkv_proj are taken too, rotary_emb.inv_freq skipped)
  --weights-prefix P  read the tensors whose names start with P, P removed: one layer of a
                      checkpoint of many (Hugging Face: 'model.layers.0.self_attn.')
  --input FILE        x, float32 .npy of shape [batch, seq, model_dim]
  --memory FILE       cross-attention only: float32 .npy of shape [batch, kv_seq, kv_dim]
  --kv-lens FILE      layers with kv_lens: int32 .npy of shape [batch]
  --k-cache FILE, --v-cache FILE
                      layers with kv_cache: the caches, float32 .npy of shape [batch, kv_cache,
                      kv_heads, head_dim] (bf16 layers round them to bf16); after the call each
                      file is replaced atomically by the cache with the new tokens' rows
                      written, every other element's bits as they were
  --cache-len FILE|N[,N...]
                      layers with kv_cache: tokens already cached in each batch row, an int32
                      .npy of shape [batch], or numbers (one for every row, or one per row);
                      required with cache files; on random data (--check, --bench) the caches
                      hold random rows below it and NaN above, which no correct layer reads
                      (default 0)
  --output FILE       where to write the result, float32 .npy of shape [batch, seq, model_dim];
                      written to a temporary file and renamed, never left half-written
  --reference FILE    write the float64 reference's output there (float32 .npy of the
                      output's shape), for comparisons of mha-run's reference with another
  --check             compare the result with the float64 reference (on random data unless
                      files are given); prints the error, max |out - ref| / max |ref|, and exits
                      1 past the tolerance of the layer's dtype (1e-4 for f32, 2e-2 for bf16)
  --bench N           after one warm-up call, time N calls; prints the median, min and max time
                      per call, the GFLOP/s at the median, and the fraction of the machine's
                      peak when MHAC_PEAK_GFLOPS gives it; for CPU layers the GB/s moved at
                      the least (prepared weights, inputs, output, the cache rows attended
                      over), and their fraction of MHAC_BANDWIDTH_GBS when set (a progress line
                      goes to a terminal's stderr when the benchmark runs longer than a second)
  --batch N, --seq N, --kv-seq N
                      sizes of the dimensions the layer declares '?' (files give them too)
  --threads N         threads of the runtime's pool (default: MHAC_NUM_THREADS, else all CPUs)
  --seed N            seed of the random data (default 1)
  --measure REF       what 'mhac tune' runs for each candidate: checks the layer against the
                      float64 reference kept in REF (computed and written there when REF does
                      not exist), checks that N threads give the bits of one, then times K
                      samples (--samples, default 5) of at least MS ms each (--sample-ms,
                      default 20) after a warm-up; prints one line of JSON
  --list              list the layers of the module
  --print-schedule    print the schedules the module's layers (or the one --layer names) were
                      compiled with, as a schedule file that 'mhac compile --schedule' reads

bf16 layers take float32 inputs, round them to bf16, and write float32 outputs.
)";

static int usageError(const std::string &message) {
  fmt::print(stderr, "mha-run: error: {}\nrun 'mha-run --help' for usage\n", message);
  return 2;
}

/// Parses "N" or "N,N,...": integers (a negative one is for the layer to refuse); false for
/// anything else (a file name).
static bool parseLengths(std::string_view text, std::vector<int64_t> &lengths) {
  std::vector<int64_t> parsed;
  while (true) {
    size_t comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    bool negative = !item.empty() && item[0] == '-';
    std::string_view digits = item.substr(negative ? 1 : 0);
    if (digits.empty() || digits.size() > 12 ||
        digits.find_first_not_of("0123456789") != std::string_view::npos)
      return false;
    int64_t value = std::stoll(std::string(digits));
    parsed.push_back(negative ? -value : value);
    if (comma == std::string_view::npos)
      break;
    text = text.substr(comma + 1);
  }
  lengths = std::move(parsed);
  return true;
}

/// Parses a positive decimal integer, rejecting signs, trailing text and overflow.
static std::optional<long> parsePositive(std::string_view text) {
  if (text.empty() || text.size() > 12)
    return std::nullopt;
  long value = 0;
  for (char c : text) {
    if (c < '0' || c > '9')
      return std::nullopt;
    value = value * 10 + (c - '0');
  }
  if (value < 1)
    return std::nullopt;
  return value;
}

std::optional<RunOptions> parseRunOptions(int argc, char **argv, int &status) {
  RunOptions options;
  status = 2;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    // `--opt=V` as well as `--opt V`, as mhac takes them.
    std::optional<std::string> inlineValue;
    if (size_t equal = arg.find('='); arg.substr(0, 2) == "--" && equal != std::string_view::npos) {
      inlineValue = std::string(arg.substr(equal + 1));
      arg = arg.substr(0, equal);
    }
    auto value = [&]() -> std::optional<std::string> {
      if (inlineValue)
        return std::exchange(inlineValue, std::nullopt);
      if (i + 1 >= argc) {
        usageError(fmt::format("{} needs a value", arg));
        return std::nullopt;
      }
      return std::string(argv[++i]);
    };
    auto path = [&](std::string &into) {
      std::optional<std::string> text = value();
      if (text)
        into = *text;
      return text.has_value();
    };
    auto positive = [&](std::optional<long> &into) {
      std::optional<std::string> text = value();
      if (!text)
        return false;
      into = parsePositive(*text);
      if (!into)
        usageError(fmt::format("{} needs a positive integer, got '{}'", arg, *text));
      return into.has_value();
    };

    bool ok = true;
    if (arg == "--help" || arg == "-h") {
      fmt::print("{}", kHelp);
      status = 0;
      return std::nullopt;
    } else if (arg == "--check") {
      options.check = true;
    } else if (arg == "--list") {
      options.list = true;
    } else if (arg == "--print-schedule") {
      options.printSchedule = true;
    } else if (arg == "--layer") {
      ok = path(options.layer);
    } else if (arg == "--weights") {
      ok = path(options.weightsPath);
    } else if (arg == "--weights-prefix") {
      ok = path(options.weightsPrefix);
    } else if (arg == "--input") {
      ok = path(options.inputPath);
    } else if (arg == "--memory") {
      ok = path(options.memoryPath);
    } else if (arg == "--kv-lens") {
      ok = path(options.kvLensPath);
    } else if (arg == "--output") {
      ok = path(options.outputPath);
    } else if (arg == "--reference") {
      ok = path(options.referencePath);
    } else if (arg == "--k-cache") {
      ok = path(options.kCachePath);
    } else if (arg == "--v-cache") {
      ok = path(options.vCachePath);
    } else if (arg == "--cache-len") {
      std::optional<std::string> text = value();
      ok = text.has_value();
      if (ok && !parseLengths(*text, options.cacheLen))
        options.cacheLenPath = *text;
    } else if (arg == "--bench") {
      ok = positive(options.bench);
    } else if (arg == "--measure") {
      ok = path(options.measureReference);
    } else if (arg == "--samples" || arg == "--sample-ms") {
      std::optional<long> count;
      ok = positive(count);
      if (ok)
        (arg == "--samples" ? options.samples : options.sampleMs) = *count;
    } else if (arg == "--batch") {
      ok = positive(options.batch);
    } else if (arg == "--seq") {
      ok = positive(options.seq);
    } else if (arg == "--kv-seq") {
      ok = positive(options.kvSeq);
    } else if (arg == "--threads") {
      ok = positive(options.threads);
    } else if (arg == "--seed") {
      std::optional<long> seed;
      ok = positive(seed);
      if (ok)
        options.seed = static_cast<unsigned>(*seed);
    } else if (!arg.empty() && arg[0] == '-') {
      usageError(fmt::format("unknown option '{}'", arg));
      return std::nullopt;
    } else if (options.modulePath.empty()) {
      options.modulePath = std::string(arg);
    } else {
      usageError(fmt::format("more than one module ('{}' and '{}')", options.modulePath, arg));
      return std::nullopt;
    }
    if (!ok)
      return std::nullopt;
    if (inlineValue) {
      usageError(fmt::format("{} takes no value", arg));
      return std::nullopt;
    }
  }

  if (options.modulePath.empty()) {
    usageError("no module given");
    return std::nullopt;
  }
  bool anyFile = !options.weightsPath.empty() || !options.inputPath.empty() ||
                 !options.memoryPath.empty() || !options.kvLensPath.empty() ||
                 !options.outputPath.empty() || !options.kCachePath.empty() ||
                 !options.vCachePath.empty() || !options.cacheLenPath.empty();
  if (options.kCachePath.empty() != options.vCachePath.empty()) {
    usageError("--k-cache and --v-cache go together: a layer's two caches");
    return std::nullopt;
  }
  if (!options.cacheLenPath.empty() && options.kCachePath.empty()) {
    usageError("--cache-len FILE goes with cache files (--k-cache, --v-cache); on random data "
               "it takes numbers: --cache-len N[,N...]");
    return std::nullopt;
  }
  if (!options.weightsPrefix.empty() && options.weightsPath.empty()) {
    usageError("--weights-prefix selects tensors of --weights FILE; give the file too");
    return std::nullopt;
  }
  if (anyFile && (options.weightsPath.empty() || options.inputPath.empty())) {
    usageError("running on files needs both --weights and --input");
    return std::nullopt;
  }
  if (options.fileMode() && options.outputPath.empty() && !options.check && !options.bench &&
      options.referencePath.empty()) {
    usageError("nothing to do with the files: give --output FILE (or --check, --bench N, "
               "--reference FILE)");
    return std::nullopt;
  }
  if (!options.measureReference.empty() && (options.fileMode() || options.check || options.bench)) {
    usageError("--measure runs on random data alone; it cannot be combined with files, --check or "
               "--bench");
    return std::nullopt;
  }
  if (!options.list && !options.printSchedule && !options.fileMode() && !options.check &&
      !options.bench && options.measureReference.empty()) {
    usageError("nothing to do: give --weights and --input, --check, --bench N, --measure REF, "
               "--list or --print-schedule");
    return std::nullopt;
  }
  return options;
}

} // namespace mhac
