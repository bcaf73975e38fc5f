//===- HeaderEmitter.cpp - the C header of compiled layers ----------------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "compiler/target/HeaderEmitter.h"

#include "runtime/include/mhac/runtime.h"

#include "llvm/Support/Path.h"

#include <fmt/format.h>

#include <cctype>

namespace mhac {
namespace {

std::string sizeName(RuntimeSize size) {
  switch (size) {
  case RuntimeSize::Batch:
    return "batch";
  case RuntimeSize::Seq:
    return "seq";
  case RuntimeSize::KvSeq:
    return "kv_seq";
  case RuntimeSize::None:
    break;
  }
  return "";
}

std::string formatShape(const LayerABI &layer, const TensorABI &tensor) {
  std::string text = "[";
  for (size_t d = 0; d < tensor.shape.size(); ++d) {
    if (d)
      text += ", ";
    if (tensor.shape[d] == kDynamicSize) {
      RuntimeSize which = tensor.dynamicAs[d];
      text += sizeName(which == RuntimeSize::KvSeq && !layer.cross ? RuntimeSize::Seq : which);
    } else {
      text += std::to_string(tensor.shape[d]);
    }
  }
  return text + "]";
}

std::string describeTensor(const std::string &name) {
  if (name == "x")
    return "input";
  if (name == "memory")
    return "keys and values are projected from it";
  if (name == "kv_lens")
    return "valid keys per batch entry, each in [0, kv_seq]";
  if (name == "out")
    return "output, written by the call";
  if (name == "q_norm" || name == "k_norm")
    return fmt::format("qk_norm's weight of each {} head", name[0] == 'q' ? "query" : "key");
  if (name == "sinks")
    return "each query head's sink logit";
  if (name == "k_cache" || name == "v_cache")
    return fmt::format("the {} of past tokens; the call writes its tokens' rows", 
                       name[0] == 'k' ? "keys (normalized, rotated)" : "values");
  if (name == "cache_len")
    return "tokens cached per batch entry; 0 <= cache_len[b] <= kv_cache - seq";
  const char *projection = name.size() == 2 && name[1] == 'q'   ? "query"
                           : name.size() == 2 && name[1] == 'k' ? "key"
                           : name.size() == 2 && name[1] == 'v' ? "value"
                                                                : "output";
  return fmt::format("{} projection {}", projection,
                     name[0] == 'w' ? "weight, PyTorch's [out, in] layout" : "bias");
}

/// The decoder keys of `layer` and, with a cache, where its tokens are.
void emitDecoderKeys(std::string &out, const LayerABI &layer) {
  const RopeSpec &rope = layer.rope;
  if (rope.enabled()) {
    const char *scalings[] = {"", ", linear scaling", ", llama3 scaling", ", yarn scaling"};
    out += fmt::format(" *   rotary embedding of q and k: {}, the first {} features of each head, "
                       "base {}{}\n",
                       rope.kind == RopeKind::Half ? "half (rotate_half)" : "interleaved",
                       rope.dim, rope.base, scalings[static_cast<int>(rope.scaling)]);
  }
  if (layer.qkNorm)
    out += fmt::format(" *   q and k heads RMS-normalized (eps {}) before the rotation\n",
                       layer.qkNormEps);
  if (layer.window)
    out += fmt::format(" *   sliding window: a query at position p sees keys j > p - {}\n",
                       layer.window);
  if (layer.softcap > 0)
    out += fmt::format(" *   scores capped: s becomes {0} * tanh(s / {0})\n", layer.softcap);
  if (layer.sinks)
    out += " *   a sink logit per query head joins each softmax's denominator\n";
  if (layer.kvCache)
    out += fmt::format(
        " *   KV cache of {0} positions: row b's new tokens have positions cache_len[b] + i,\n"
        " *   their keys and values are written into k_cache and v_cache there (no other row is\n"
        " *   written), and they attend over positions 0 .. cache_len[b] + seq - 1. The call\n"
        " *   does not change cache_len: add seq to it for the next call.\n",
        layer.kvCache);
}

std::string formatSize(int64_t size) {
  return size == kDynamicSize ? "given at run time" : std::to_string(size);
}

/// Declares NAME_prepare, NAME_run_prepared and their packed forms.
void emitPrepared(std::string &out, const LayerABI &layer, const std::vector<std::string> &sizes) {
  const char *element = layer.bf16 ? "uint16_t" : "float";
  if (layer.device.empty())
    out += fmt::format(
        "/* Prepared parameters. {0}_prepare rearranges the weights and biases once into the\n"
        " * layout the kernels read, in a block of {0}_PREPARED_BYTES bytes (any alignment "
        "works;\n"
        " * 64 bytes is fastest) that does not refer to them afterwards. {0}_run_prepared then\n"
        " * runs the layer on it, where {0}_run rearranges them on every call. The block is "
        "read\n"
        " * only: concurrent calls may share it. {0}_prepare returns MHAC_OK or\n"
        " * MHAC_ERROR_NULL_POINTER; {0}_run_prepared returns what {0}_run does, except\n"
        " * MHAC_ERROR_OUT_OF_MEMORY, which it never needs. */\n",
        layer.cName());
  else
    out += fmt::format(
        "/* Prepared parameters. {0}_prepare copies the weights and biases, on `stream`, into\n"
        " * a block of {0}_PREPARED_BYTES bytes of device memory (256-byte aligned, as\n"
        " * cudaMalloc's), which {0}_run_prepared then reads instead of them; the kernels read\n"
        " * PyTorch's layout, so {0}_run takes the weights where they are. The block is read\n"
        " * only: concurrent calls may share it. Both return what {0}_run does. */\n",
        layer.cName());
  out +=
      fmt::format("#define {}_PREPARED_BYTES ((size_t){})\n", layer.cName(), layer.preparedBytes);
  auto pointerParameters = [&](EntryKind kind) {
    std::vector<std::string> params;
    for (int pointer : entryPointers(layer, kind)) {
      if (pointer == kPreparedBlock) {
        params.push_back(kind == EntryKind::Prepare ? "void *prepared" : "const void *prepared");
        continue;
      }
      const TensorABI &tensor = layer.tensors[pointer];
      params.push_back(fmt::format("{}{} *{}", tensor.isOutput || tensor.isCache ? "" : "const ",
                                   tensor.isInt32 ? "int32_t" : element, tensor.name));
    }
    return params;
  };
  auto declare = [&](const std::string &function, const std::vector<std::string> &params) {
    out += fmt::format("int32_t {}(", function);
    std::string indent(function.size() + 9, ' ');
    for (size_t i = 0; i < params.size(); ++i)
      out += (i ? ",\n" + indent : "") + params[i];
    out += ");\n";
  };
  std::vector<std::string> prepareParams = pointerParameters(EntryKind::Prepare);
  std::vector<std::string> params = pointerParameters(EntryKind::RunPrepared);
  for (const std::string &size : sizes)
    params.push_back("int64_t " + size);
  if (!layer.device.empty()) {
    prepareParams.push_back("void *stream");
    params.push_back("void *stream");
  }
  declare(layer.cName() + "_prepare", prepareParams);
  declare(layer.cName() + "_run_prepared", params);
  out += layer.device.empty()
             ? "/* The same with run_packed's array of tensors (entries not needed are not "
               "read). */\n"
             : "/* The same with run_packed's array of tensors (entries not needed are not "
               "read),\n * on the default stream. */\n";
  out += fmt::format("int32_t {}_prepare_packed(void *const *tensors, void *prepared);\n",
                     layer.cName());
  out += fmt::format("int32_t {}_run_prepared_packed(void *const *tensors, const void *prepared,\n"
                     "{}const mhac_sizes *sizes);\n\n",
                     layer.cName(), std::string(layer.cName().size() + 29, ' '));
}

/// The schedule of `layer`, as a comment that a schedule file can be cut from.
void emitSchedule(std::string &out, const LayerABI &layer) {
  out += fmt::format("/* The schedule layer {} was compiled with (as a block of a schedule file "
                     "of\n * format {}; `mhac compile --schedule FILE` reads it):\n *\n",
                     layer.name, MHAC_SCHEDULE_FORMAT);
  llvm::SmallVector<llvm::StringRef> lines;
  llvm::StringRef(layer.schedule).rtrim('\n').split(lines, '\n');
  for (llvm::StringRef line : lines)
    out += fmt::format(" *   {}\n", line.str());
  out += " */\n";
}

void emitLayer(std::string &out, const LayerABI &layer) {
  emitSchedule(out, layer);
  const char *element = layer.bf16 ? "uint16_t" : "float";
  out += fmt::format(
      "/* Layer {}: {}, {}{}.\n", layer.name, layer.cross ? "cross-attention" : "self-attention",
      layer.bf16 ? "bf16 (raw bfloat16 bits in uint16_t; accumulation in f32)" : "f32",
      layer.device.empty() ? "" : ", on a CUDA GPU (" + layer.device + ")");
  out += fmt::format(" *   model_dim {}, heads {} of head_dim {}, kv_heads {}{}\n", layer.modelDim,
                     layer.heads, layer.headDim, layer.kvHeads,
                     layer.cross ? fmt::format(", kv_dim {}", layer.kvDim) : "");
  out += fmt::format(" *   batch {}, seq {}{}\n", formatSize(layer.batch), formatSize(layer.seq),
                     layer.cross ? fmt::format(", kv_seq {}", formatSize(layer.kvSeq)) : "");
  out += fmt::format(" *   {}{}{}, scale {}\n", layer.bias ? "biases" : "no biases",
                     layer.causal ? layer.kvCache ? ", causal" : ", causal (bottom-right aligned)"
                                  : "",
                     layer.kvLens ? ", keys masked by kv_lens" : "", layer.scale);
  emitDecoderKeys(out, layer);
  out += layer.device.empty() ? " *\n * Tensors, row-major and batch first:\n"
                              : " *\n * Tensors, in CUDA device memory, row-major and batch "
                                "first:\n";
  size_t width = 0;
  for (const TensorABI &tensor : layer.tensors)
    width = std::max(width, tensor.name.size());
  for (const TensorABI &tensor : layer.tensors)
    out += fmt::format(" *   {:<{}}  {:<22} {}\n", tensor.name, width, formatShape(layer, tensor),
                       describeTensor(tensor.name));
  if (layer.device.empty()) {
    out += " *\n * Returns MHAC_OK, or MHAC_ERROR_NULL_POINTER for a NULL tensor,\n"
           " * MHAC_ERROR_OUT_OF_MEMORY when the prepared parameters cannot be allocated";
    if (layer.hasDynamicSizes())
      out += ",\n * MHAC_ERROR_BAD_SIZE for a size that is not in [1, 2147483647]";
    if (layer.kvLens)
      out += ",\n * MHAC_ERROR_BAD_KV_LENS for a kv_lens entry outside [0, kv_seq]";
    if (layer.kvCache)
      out += ",\n * MHAC_ERROR_BAD_CACHE_LEN for a cache_len entry outside [0, kv_cache - seq]\n"
             " * (checked before anything is written)";
    out += ".\n * `out` must not overlap the other tensors. Calls share no state";
    out += layer.kvCache ? " but the caches:\n * calls on one cache run one after the other.\n */\n"
                         : ".\n */\n";
  } else {
    out += " *\n * The call queues the layer's kernels on `stream` (a CUstream; NULL: the default\n"
           " * stream) and returns, as a kernel launch does: synchronize with the stream before\n"
           " * reading `out`. It returns MHAC_OK once they are queued, or\n"
           " * MHAC_ERROR_NULL_POINTER for a NULL tensor";
    if (layer.hasDynamicSizes())
      out += ",\n * MHAC_ERROR_BAD_SIZE for a size that is not in [1, 2147483647]";
    out += ",\n * MHAC_ERROR_OUT_OF_MEMORY when its workspace cannot be allocated,\n"
           " * MHAC_ERROR_NO_DEVICE without an NVIDIA driver or GPU, MHAC_ERROR_DRIVER when the\n"
           " * driver fails (mhac_cuda_last_error() says how). The kernels load on the first\n"
           " * call, into the current CUDA context (or device 0's primary context).";
    if (layer.bf16)
      out += "\n * x, memory and the weights start on 16 bytes (as cudaMalloc's and PyTorch's\n"
             " * allocations do): the tensor cores' copies move 16 bytes; a view that does not\n"
             " * gets MHAC_ERROR_INVALID_ARGUMENT.";
    if (layer.kvLens)
      out += "\n * kv_lens entries outside [0, kv_seq] count as the nearest end.";
    out += "\n * `out` must not overlap the other tensors. Calls share no state.\n */\n";
  }

  out += fmt::format("int32_t {}_run(", layer.cName());
  std::string indent(layer.cName().size() + 13, ' ');
  std::vector<std::string> params;
  for (const TensorABI &tensor : layer.tensors)
    params.push_back(fmt::format("{}{} *{}", tensor.isOutput || tensor.isCache ? "" : "const ",
                                 tensor.isInt32 ? "int32_t" : element, tensor.name));
  std::vector<std::string> sizes;
  if (layer.batch == kDynamicSize)
    sizes.push_back("batch");
  if (layer.seq == kDynamicSize)
    sizes.push_back("seq");
  if (layer.cross && layer.kvSeq == kDynamicSize)
    sizes.push_back("kv_seq");
  for (const std::string &size : sizes)
    params.push_back("int64_t " + size);
  if (!layer.device.empty())
    params.push_back("void *stream");
  for (size_t i = 0; i < params.size(); ++i)
    out += (i ? ",\n" + indent : "") + params[i];
  out += ");\n\n";

  out += fmt::format("/* The same, with the tensors in an array of {} pointers in the order above "
                     "and the\n * run-time sizes in `sizes` (may be NULL when there are none){}. "
                     "*/\n",
                     layer.tensors.size(), layer.device.empty() ? "" : ", on the default stream");
  out += fmt::format("int32_t {}_run_packed(void *const *tensors, const mhac_sizes *sizes);\n\n",
                     layer.cName());
  emitPrepared(out, layer, sizes);
  out += "/* Sizes, dtype and options of the layer; see mhac_layer in mhac/runtime.h. */\n";
  out += fmt::format("const mhac_layer *{}_metadata(void);\n\n", layer.cName());

  out += layer.kvCache ? "/* FLOPs of one call with cache_len tokens cached in every row (see "
                         "mhac_layer_flops). */\n"
                       : "/* FLOPs of one call (see mhac_layer_flops). */\n";
  std::vector<std::string> sizeParams;
  for (const std::string &size : sizes)
    sizeParams.push_back("int64_t " + size);
  if (layer.kvCache)
    sizeParams.push_back("int64_t cache_len");
  std::string sizeList = sizeParams.empty() ? "void" : "";
  for (size_t i = 0; i < sizeParams.size(); ++i)
    sizeList += (i ? ", " : "") + sizeParams[i];
  auto given = [&](const char *name) {
    for (const std::string &size : sizes)
      if (size == name)
        return std::string(name);
    return std::string("0");
  };
  out += fmt::format("static inline double {}_flops({}) {{\n", layer.cName(), sizeList);
  out += fmt::format("  mhac_sizes sizes = {{{}, {}, {}}};\n", given("batch"), given("seq"),
                     layer.kvCache ? std::string("cache_len") : given("kv_seq"));
  out += fmt::format("  return mhac_layer_flops({}_metadata(), &sizes);\n}}\n\n", layer.cName());
}

} // namespace

std::string emitHeader(llvm::ArrayRef<LayerABI> layers, const std::string &guardName,
                       const std::string &source) {
  std::string guard = "MHAC_GENERATED_";
  for (char c : guardName)
    guard += std::isalnum(static_cast<unsigned char>(c))
                 ? static_cast<char>(std::toupper(static_cast<unsigned char>(c)))
                 : '_';
  guard += "_H";

  std::string out;
  out += fmt::format("/* Generated by mhac {} from {}. Do not edit.\n *\n", MHAC_VERSION,
                     llvm::sys::path::filename(source).str());
  out += " * Link the object with mhac's runtime library (-lmhac_runtime) and the C library.\n";
  out += layers.empty() || layers[0].device.empty()
             ? " * A call runs its parallel loops on the runtime's thread pool\n"
               " * (mhac_set_num_threads); calls share no state. */\n\n"
             : " * The kernels run on a CUDA GPU: the runtime loads the driver (libcuda.so.1)\n"
               " * on the first call, so nothing links CUDA. */\n\n";
  out += fmt::format("#ifndef {0}\n#define {0}\n\n", guard);
  out += "#include <stddef.h>\n#include <stdint.h>\n\n#include <mhac/runtime.h>\n\n";
  out += "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n";
  for (const LayerABI &layer : layers)
    emitLayer(out, layer);
  out += "#ifdef __cplusplus\n} /* extern \"C\" */\n#endif\n\n";
  out += fmt::format("#endif /* {} */\n", guard);
  return out;
}

} // namespace mhac
