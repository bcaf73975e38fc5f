//===- HalideLayer.cpp - a layer through the Halide backend ---------------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "tools/mhac/HalideLayer.h"

#include "compiler/conversion/Passes.h"
#include "compiler/schedules/Knobs.h"
#include "compiler/target/EntryPoints.h"
#include "compiler/target/LoweredLayer.h"
#include "tools/mhac/Subprocess.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Linker/Linker.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Transforms/IPO/GlobalDCE.h"
#include "llvm/Transforms/IPO/Internalize.h"

#include <fmt/format.h>

#include <set>
#include <sstream>

using namespace llvm;

namespace mhac {
namespace {

/// Seconds a generator may run: Halide compiles a layer in a few seconds with the knobs, and
/// Mullapudi2016 and Li2018 in a few more; Adams2019's beam search took 553 s for a BERT-base
/// layer on a Zen 3 core.
constexpr double kGeneratorSeconds = 3600;

/// Halide's runtime functions that mhac's runtime serves (runtime/src/HalideHooks.c).
constexpr const char *kRoutedHooks[] = {"halide_do_par_for", "halide_malloc", "halide_free",
                                        "halide_error"};

/// The name of a layer's run pipeline as mhac-halide generates it. Not the layer's own name, which
/// addEntryPoints expects: Halide adds NAME_metadata and NAME_argv beside a pipeline NAME, and
/// NAME_metadata is an entry point of mhac's.
std::string halideRunSymbol(const LayerSpec &layer) { return "mhac_halide_" + layer.name; }

/// A temporary file, removed when it goes out of scope.
class TemporaryFile {
public:
  Error create(StringRef suffix) {
    SmallString<128> path;
    if (std::error_code ec = sys::fs::createTemporaryFile("mhac-halide", suffix, path))
      return createStringError(ec, "cannot create a temporary file: %s", ec.message().c_str());
    path_ = std::string(path);
    return Error::success();
  }
  ~TemporaryFile() {
    if (!path_.empty())
      sys::fs::remove(path_);
  }
  const std::string &path() const { return path_; }

private:
  std::string path_;
};

/// The layer and the schedule's Halide knobs, as mhac-halide's `key=value` words.
std::vector<std::string> generatorArguments(const LayerSpec &layer, const Schedule &schedule) {
  auto flag = [](bool value) { return value ? "1" : "0"; };
  std::vector<std::string> words = {
      fmt::format("bf16={}", flag(layer.dtype == DType::BF16)),
      fmt::format("model_dim={}", layer.modelDim),
      fmt::format("heads={}", layer.heads),
      fmt::format("head_dim={}", layer.headDim),
      fmt::format("kv_heads={}", layer.kvHeads),
      fmt::format("kv_dim={}", layer.kvDim),
      fmt::format("batch={}", layer.batch),
      fmt::format("seq={}", layer.seq),
      fmt::format("kv_seq={}", layer.kvSeq),
      fmt::format("cross={}", flag(layer.cross)),
      fmt::format("causal={}", flag(layer.causal)),
      fmt::format("kv_lens={}", flag(layer.kvLens)),
      fmt::format("bias={}", flag(layer.bias)),
      // Nine significant digits print an f32 exactly.
      fmt::format("scale={:.9g}", static_cast<float>(layer.scale)),
  };
  for (const Knob *k : backendKnobs(Backend::Halide))
    words.push_back(fmt::format("{}={}", k->name, formatKnobValue(*k, k->get(schedule))));
  return words;
}

/// Reads the generator's "prepared NAME SIZE..." lines (f32 shapes, outermost first) into the
/// prepared layout of `abi`.
Error readPreparedLayout(StringRef out, LayerABI &abi) {
  std::set<std::string> seen;
  abi.preparedBytes = 0;
  for (StringRef line : split(out, '\n')) {
    SmallVector<StringRef> words;
    line.split(words, ' ', -1, /*KeepEmpty=*/false);
    if (words.empty())
      continue;
    auto *tensor = words.size() >= 3 && words[0] == "prepared"
                       ? const_cast<TensorABI *>(findTensor(abi, words[1].str()))
                       : nullptr;
    std::vector<int64_t> shape;
    for (StringRef word : ArrayRef(words).drop_front(2)) {
      int64_t size = 0;
      if (word.getAsInteger(10, size) || size < 1)
        tensor = nullptr;
      shape.push_back(size);
    }
    if (!tensor || !tensor->isParameter || !seen.insert(tensor->name).second)
      return createStringError(inconvertibleErrorCode(), "internal error: mhac-halide printed '%s'",
                               line.str().c_str());
    appendPrepared(abi, *tensor, std::move(shape), /*elementBytes=*/4);
  }
  for (const TensorABI &tensor : abi.tensors)
    if (tensor.isParameter && !seen.count(tensor.name))
      return createStringError(inconvertibleErrorCode(),
                               "internal error: mhac-halide gave no layout for '%s'",
                               tensor.name.c_str());
  return Error::success();
}

/// Runs mhac-halide for `layer`, writing the run and preparation pipelines' bitcode.
Expected<ProcessResult> runGenerator(const LayerSpec &layer, const Schedule &schedule,
                                     const CpuTarget &target, const LayerABI &abi,
                                     const std::string &runBitcode,
                                     const std::string &prepareBitcode) {
  std::string program = siblingTool("mhac-halide");
  if (!sys::fs::can_execute(program))
    return createStringError(inconvertibleErrorCode(),
                             "--backend halide needs mhac-halide beside mhac (%s), and this "
                             "build has none: it is built when CMake finds Halide 21 (the "
                             "virtual environment .deps/halide that scripts/setup.sh makes)",
                             program.c_str());
  Command command;
  command.timeoutSeconds = kGeneratorSeconds;
  command.argv = {program,
                  "run=" + halideRunSymbol(layer),
                  "prepare=" + preparationSymbol(abi),
                  "target=" + halideTarget(target),
                  "bitcode=" + runBitcode,
                  "prepare_bitcode=" + prepareBitcode};
  for (std::string &argument : generatorArguments(layer, schedule))
    command.argv.push_back(std::move(argument));
  ProcessResult result = runCommands({command}, 1)[0];
  if (!result.succeeded()) {
    StringRef message = StringRef(result.err).trim();
    return createStringError(inconvertibleErrorCode(),
                             "the Halide generator failed on layer '%s' (%s)%s%s",
                             layer.name.c_str(), result.describe().c_str(),
                             message.empty() ? "" : ": ", message.str().c_str());
  }
  return result;
}

Expected<std::unique_ptr<Module>> readBitcode(const std::string &path, LLVMContext &context) {
  auto buffer = MemoryBuffer::getFile(path);
  if (!buffer)
    return createStringError(buffer.getError(), "cannot read '%s'", path.c_str());
  return parseBitcodeFile((*buffer)->getMemBufferRef(), context);
}

/// Replaces Halide's runtime hooks with mhac's (HalideHooks.c).
void routeRuntimeHooks(Module &module) {
  for (const char *name : kRoutedHooks) {
    Function *hook = module.getFunction(name);
    if (!hook)
      continue;
    FunctionCallee replacement =
        module.getOrInsertFunction((Twine("mhac_") + name).str(), hook->getFunctionType());
    hook->replaceAllUsesWith(replacement.getCallee());
    hook->eraseFromParent();
  }
}

} // namespace

std::string halideTarget(const CpuTarget &target) {
  SmallVector<StringRef> features;
  StringRef(target.features).split(features, ',');
  auto has = [&](StringRef feature) { return llvm::is_contained(features, ("+" + feature).str()); };
  std::string name = "x86-64-linux";
  if (has("amx-bf16"))
    name += "-avx512_sapphirerapids";
  else if (has("avx512bf16"))
    name += "-avx512_zen4";
  else if (has("avx512f") && has("avx512bw") && has("avx512vl") && has("avx512dq"))
    name += "-avx512_skylake";
  else if (has("avx2") && has("fma") && has("f16c"))
    name += "-avx2-fma-f16c-sse41";
  else if (has("sse4.1"))
    name += "-sse41";
  // 64-bit addressing inside buffers: a layer's intermediates may pass 2 GiB.
  return name + "-large_buffers";
}

Expected<std::unique_ptr<Module>>
compileHalideLayer(const LayerSpec &layer, const Schedule &schedule, const CpuTarget &target,
                   TargetMachine &machine, LayerABI &abi, LLVMContext &context) {
  TemporaryFile runBitcode, prepareBitcode;
  if (Error error = runBitcode.create("bc"))
    return std::move(error);
  if (Error error = prepareBitcode.create("bc"))
    return std::move(error);
  auto generated =
      runGenerator(layer, schedule, target, abi, runBitcode.path(), prepareBitcode.path());
  if (!generated)
    return generated.takeError();
  if (Error error = readPreparedLayout(generated->out, abi))
    return std::move(error);

  auto module = readBitcode(runBitcode.path(), context);
  if (!module)
    return module.takeError();
  auto preparation = readBitcode(prepareBitcode.path(), context);
  if (!preparation)
    return preparation.takeError();
  if (Linker::linkModules(**module, std::move(*preparation)))
    return createStringError(inconvertibleErrorCode(),
                             "internal error: Halide's pipelines of layer '%s' do not link",
                             layer.name.c_str());
  (*module)->setTargetTriple(machine.getTargetTriple());
  (*module)->setDataLayout(machine.createDataLayout());
  routeRuntimeHooks(**module);
  Function *run = (*module)->getFunction(halideRunSymbol(layer));
  if (!run)
    return createStringError(inconvertibleErrorCode(),
                             "internal error: mhac-halide wrote no pipeline for layer '%s'",
                             layer.name.c_str());
  run->setName(layer.name);

  std::set<Function *> halideFunctions;
  for (Function &fn : **module)
    halideFunctions.insert(&fn);
  if (Error error = addEntryPoints(**module, ArrayRef(abi), machine.getTargetFeatureString(),
                                   KernelConvention::HalideBuffers))
    return std::move(error);
  // The entry points are compiled for the target; Halide's functions keep Halide's attributes.
  std::set<std::string> entryPoints;
  for (Function &fn : **module) {
    if (halideFunctions.count(&fn) || fn.isDeclaration())
      continue;
    fn.addFnAttr("target-cpu", machine.getTargetCPU());
    if (!machine.getTargetFeatureString().empty())
      fn.addFnAttr("target-features", machine.getTargetFeatureString());
    if (fn.hasExternalLinkage())
      entryPoints.insert(fn.getName().str());
  }
  // Only the entry points stay visible: Halide's pipelines and its runtime become internal, and
  // what nothing calls is dropped.
  internalizeModule(**module, [&](const GlobalValue &value) {
    return entryPoints.count(value.getName().str()) > 0;
  });
  ModuleAnalysisManager analyses;
  PassBuilder builder(&machine);
  builder.registerModuleAnalyses(analyses);
  GlobalDCEPass().run(**module, analyses);
  return std::move(*module);
}

} // namespace mhac
