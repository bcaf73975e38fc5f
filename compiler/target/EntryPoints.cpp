//===- EntryPoints.cpp - the C entry points of compiled layers ------------===//
//
// Part of mhac. Written with LLVM's IRBuilder after translation, where a memref argument of
// the lowered kernel is plainly (allocated pointer, aligned pointer, offset, sizes, strides).
//
//===----------------------------------------------------------------------===//

#include "compiler/target/EntryPoints.h"

#include "compiler/target/LoweredLayer.h"

#include "runtime/include/mhac/runtime.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Module.h"

#include <cstddef>

using namespace llvm;

namespace mhac {
namespace {

/// The status codes of mhac/runtime.h, as the entry points return them.
enum Status : int32_t {
  kOk = MHAC_OK,
  kNullPointer = MHAC_ERROR_NULL_POINTER,
  kBadSize = MHAC_ERROR_BAD_SIZE,
  kBadKvLens = MHAC_ERROR_BAD_KV_LENS,
  kBadCacheLen = MHAC_ERROR_BAD_CACHE_LEN,
  kOutOfMemory = MHAC_ERROR_OUT_OF_MEMORY,
  kInvalidArgument = MHAC_ERROR_INVALID_ARGUMENT,
};

/// The byte offset of each field of mhac_layer, in order: the metadata built here must lay
/// its fields out exactly there (checked against the module's data layout).
constexpr size_t kLayerFieldOffsets[] = {
    offsetof(mhac_layer, abi_version),
    offsetof(mhac_layer, name),
    offsetof(mhac_layer, dtype),
    offsetof(mhac_layer, model_dim),
    offsetof(mhac_layer, heads),
    offsetof(mhac_layer, head_dim),
    offsetof(mhac_layer, kv_heads),
    offsetof(mhac_layer, kv_dim),
    offsetof(mhac_layer, batch),
    offsetof(mhac_layer, seq),
    offsetof(mhac_layer, kv_seq),
    offsetof(mhac_layer, cross),
    offsetof(mhac_layer, causal),
    offsetof(mhac_layer, kv_lens),
    offsetof(mhac_layer, bias),
    offsetof(mhac_layer, scale),
    offsetof(mhac_layer, num_tensors),
    offsetof(mhac_layer, run_packed),
    offsetof(mhac_layer, prepared_bytes),
    offsetof(mhac_layer, prepare_packed),
    offsetof(mhac_layer, run_prepared_packed),
    offsetof(mhac_layer, cpu_features),
    offsetof(mhac_layer, schedule),
    offsetof(mhac_layer, device),
    offsetof(mhac_layer, rope),
    offsetof(mhac_layer, kv_cache),
    offsetof(mhac_layer, window),
    offsetof(mhac_layer, softcap),
    offsetof(mhac_layer, qk_norm),
    offsetof(mhac_layer, qk_norm_eps),
    offsetof(mhac_layer, sinks),
};

/// The same for the fields of mhac_rope, nested in mhac_layer.
constexpr size_t kRopeFieldOffsets[] = {
    offsetof(mhac_rope, kind),
    offsetof(mhac_rope, scaling),
    offsetof(mhac_rope, dim),
    offsetof(mhac_rope, original_max),
    offsetof(mhac_rope, base),
    offsetof(mhac_rope, factor),
    offsetof(mhac_rope, low_freq_factor),
    offsetof(mhac_rope, high_freq_factor),
    offsetof(mhac_rope, beta_fast),
    offsetof(mhac_rope, beta_slow),
    offsetof(mhac_rope, attention_factor),
    offsetof(mhac_rope, truncate),
};

/// Halide's error code for a failed allocation (halide_error_code_out_of_memory in Halide's
/// HalideRuntime.h); any other error of a Halide kernel is reported as an invalid argument.
constexpr int32_t kHalideOutOfMemory = -11;

/// Halide's halide_type_code_t values, and the largest extent or stride of its buffers.
enum HalideTypeCode : uint8_t { kHalideInt = 0, kHalideFloat = 2, kHalideBFloat = 4 };
constexpr int64_t kHalideMaxStride = 2147483647;

/// Largest accepted run-time size, as in the language.
constexpr int64_t kMaxRuntimeSize = 2147483647;
/// Largest element count of one tensor: beyond it, offsets would overflow 64-bit arithmetic
/// in the kernel's index computations.
constexpr int64_t kMaxElements = int64_t(1) << 48;

/// What a tensor holds, for kernels that check it (Halide's).
enum class Element { F32, BF16, I32 };

class EntryPointBuilder {
public:
  EntryPointBuilder(Module &module, const LayerABI &layer, Constant *cpuFeatures,
                    KernelConvention convention)
      : module_(module), layer_(layer), ctx_(module.getContext()), ptr_(PointerType::get(ctx_, 0)),
        i32_(Type::getInt32Ty(ctx_)), i64_(Type::getInt64Ty(ctx_)), cpuFeatures_(cpuFeatures),
        convention_(convention) {}

  Error build();
  GlobalVariable *metadata() const { return metadata_; }

private:
  std::vector<RuntimeSize> runtimeSizes() const;
  /// Emits NAME_run, NAME_prepare or NAME_run_prepared.
  Function *buildEntry(EntryKind kind);
  /// Emits the packed form of an entry point: tensors as an array, sizes as mhac_sizes.
  Function *buildPacked(EntryKind kind, Function *entry);
  Error buildMetadata(Function *runPacked, Function *preparePacked, Function *runPreparedPacked);
  /// The layer's mhac_rope, of `type`.
  Constant *ropeMetadata(StructType *type);
  /// A private constant C string `text`, named NAME.`what`.
  Constant *string(StringRef text, StringRef what);
  /// Appends the kernel arguments of a dense row-major tensor of shape `dims` at `pointer`,
  /// holding `element`s, in the kernel's convention.
  void appendTensor(IRBuilder<> &b, SmallVectorImpl<Value *> &args, Value *pointer,
                    ArrayRef<Value *> dims, Element element);
  /// The same for a static shape.
  void appendTensor(IRBuilder<> &b, SmallVectorImpl<Value *> &args, Value *pointer,
                    ArrayRef<int64_t> shape, Element element);
  /// A memref descriptor: (allocated, aligned, offset = 0, sizes, row-major strides).
  void appendDescriptor(IRBuilder<> &b, SmallVectorImpl<Value *> &args, Value *pointer,
                        ArrayRef<Value *> dims);
  /// A halide_buffer_t on the stack, describing the tensor.
  Value *halideBuffer(IRBuilder<> &b, Value *pointer, ArrayRef<Value *> dims, Element element);
  /// The element type of `tensor` as the caller passes it.
  Element callerElement(const TensorABI &tensor) const {
    return tensor.isInt32 ? Element::I32 : layer_.bf16 ? Element::BF16 : Element::F32;
  }
  bool cuda() const { return convention_ == KernelConvention::CudaLaunches; }
  /// The element type of a parameter in the prepared block: the layer's for MLIR's kernels
  /// (the schedule keeps it), f32 for Halide's (preparation widens bf16 once).
  Element preparedElement() const {
    return convention_ == KernelConvention::HalideBuffers ? Element::F32
                                                          : callerElement(layer_.tensors[0]);
  }
  /// Calls a kernel; returns from the entry point with a status if it reports an error.
  void callKernel(IRBuilder<> &b, Function *kernel, ArrayRef<Value *> args, Value *release);

  Module &module_;
  const LayerABI &layer_;
  LLVMContext &ctx_;
  PointerType *ptr_;
  IntegerType *i32_, *i64_;
  /// The module's cpu_features string (one for all its layers).
  Constant *cpuFeatures_;
  KernelConvention convention_;
  Function *kernel_ = nullptr, *preparation_ = nullptr;
  GlobalVariable *metadata_ = nullptr;
  /// The stream argument of the entry point being built (CUDA layers), else null.
  Value *stream_ = nullptr;
};

std::vector<RuntimeSize> EntryPointBuilder::runtimeSizes() const {
  std::vector<RuntimeSize> sizes;
  if (layer_.batch == kDynamicSize)
    sizes.push_back(RuntimeSize::Batch);
  if (layer_.seq == kDynamicSize)
    sizes.push_back(RuntimeSize::Seq);
  if (layer_.cross && layer_.kvSeq == kDynamicSize)
    sizes.push_back(RuntimeSize::KvSeq);
  return sizes;
}

/// Returns `status` from the current function if `failed` holds; continues in a new block.
static void returnIf(IRBuilder<> &b, Value *failed, Value *status) {
  Function *fn = b.GetInsertBlock()->getParent();
  BasicBlock *fail = BasicBlock::Create(b.getContext(), "fail", fn);
  BasicBlock *next = BasicBlock::Create(b.getContext(), "ok", fn);
  b.CreateCondBr(failed, fail, next);
  b.SetInsertPoint(fail);
  b.CreateRet(status);
  b.SetInsertPoint(next);
}
static void returnIf(IRBuilder<> &b, Value *failed, int32_t status) {
  returnIf(b, failed, b.getInt32(status));
}

void EntryPointBuilder::appendDescriptor(IRBuilder<> &b, SmallVectorImpl<Value *> &args,
                                         Value *pointer, ArrayRef<Value *> dims) {
  args.push_back(pointer);
  args.push_back(pointer);
  args.push_back(b.getInt64(0));
  args.append(dims.begin(), dims.end());
  SmallVector<Value *> strides(dims.size());
  Value *stride = b.getInt64(1);
  for (size_t d = dims.size(); d-- > 0;) {
    strides[d] = stride;
    stride = b.CreateMul(stride, dims[d]);
  }
  args.append(strides.begin(), strides.end());
}

Value *EntryPointBuilder::halideBuffer(IRBuilder<> &b, Value *pointer, ArrayRef<Value *> dims,
                                       Element element) {
  // halide_dimension_t {min, extent, stride, flags} and halide_buffer_t {device,
  // device_interface, host, flags, type {code, bits, lanes}, dimensions, dim, padding}, as
  // HalideRuntime.h lays them out. The caller has checked that extents and strides fit int32.
  auto *dimensionType = StructType::get(ctx_, {i32_, i32_, i32_, i32_});
  auto *typeType = StructType::get(ctx_, {b.getInt8Ty(), b.getInt8Ty(), b.getInt16Ty()});
  auto *bufferType = StructType::get(ctx_, {i64_, ptr_, ptr_, i64_, typeType, i32_, ptr_, ptr_});
  Function *fn = b.GetInsertBlock()->getParent();
  IRBuilder<> entry(&fn->getEntryBlock(), fn->getEntryBlock().begin());
  auto *dimensionsType = ArrayType::get(dimensionType, dims.size());
  Value *dimensions = entry.CreateAlloca(dimensionsType);
  Value *buffer = entry.CreateAlloca(bufferType);
  Value *stride = b.getInt64(1);
  // Halide's dimensions run innermost first.
  for (size_t d = 0; d < dims.size(); ++d) {
    Value *dimension =
        b.CreateConstGEP2_32(dimensionsType, dimensions, 0, static_cast<unsigned>(d));
    Value *extent = dims[dims.size() - 1 - d];
    Value *fields[] = {b.getInt32(0), b.CreateTrunc(extent, i32_), b.CreateTrunc(stride, i32_),
                       b.getInt32(0)};
    for (auto [index, value] : llvm::enumerate(fields))
      b.CreateStore(value, b.CreateStructGEP(dimensionType, dimension, index));
    stride = b.CreateMul(stride, extent);
  }
  auto [code, bits] = element == Element::F32    ? std::pair{kHalideFloat, 32}
                      : element == Element::BF16 ? std::pair{kHalideBFloat, 16}
                                                 : std::pair{kHalideInt, 32};
  Value *type = ConstantStruct::get(typeType, {b.getInt8(code), b.getInt8(bits), b.getInt16(1)});
  Value *fields[] = {b.getInt64(0), ConstantPointerNull::get(ptr_),
                     pointer,       b.getInt64(0),
                     type,          b.getInt32(static_cast<int32_t>(dims.size())),
                     dimensions,    ConstantPointerNull::get(ptr_)};
  for (auto [index, value] : llvm::enumerate(fields))
    b.CreateStore(value, b.CreateStructGEP(bufferType, buffer, index));
  return buffer;
}

void EntryPointBuilder::appendTensor(IRBuilder<> &b, SmallVectorImpl<Value *> &args, Value *pointer,
                                     ArrayRef<Value *> dims, Element element) {
  if (convention_ == KernelConvention::HalideBuffers)
    args.push_back(halideBuffer(b, pointer, dims, element));
  else
    appendDescriptor(b, args, pointer, dims);
}

void EntryPointBuilder::appendTensor(IRBuilder<> &b, SmallVectorImpl<Value *> &args, Value *pointer,
                                     ArrayRef<int64_t> shape, Element element) {
  SmallVector<Value *> dims;
  for (int64_t size : shape)
    dims.push_back(b.getInt64(size));
  appendTensor(b, args, pointer, dims, element);
}

void EntryPointBuilder::callKernel(IRBuilder<> &b, Function *kernel, ArrayRef<Value *> args,
                                   Value *release) {
  Value *result = b.CreateCall(kernel, args);
  if (cuda()) {
    returnIf(b, b.CreateICmpNE(result, b.getInt32(kOk)), result);
    return;
  }
  if (convention_ != KernelConvention::HalideBuffers)
    return;
  Function *fn = b.GetInsertBlock()->getParent();
  BasicBlock *fail = BasicBlock::Create(ctx_, "kernel.failed", fn);
  BasicBlock *next = BasicBlock::Create(ctx_, "kernel.done", fn);
  b.CreateCondBr(b.CreateICmpNE(result, b.getInt32(0)), fail, next);
  b.SetInsertPoint(fail);
  if (release)
    b.CreateCall(module_.getFunction("mhac_free"), {release});
  Value *outOfMemory = b.CreateICmpEQ(result, b.getInt32(kHalideOutOfMemory));
  b.CreateRet(b.CreateSelect(outOfMemory, b.getInt32(kOutOfMemory), b.getInt32(kInvalidArgument)));
  b.SetInsertPoint(next);
}

Function *EntryPointBuilder::buildEntry(EntryKind kind) {
  std::vector<int> pointers = entryPointers(layer_, kind);
  std::vector<RuntimeSize> sizes =
      kind == EntryKind::Prepare ? std::vector<RuntimeSize>{} : runtimeSizes();

  const char *suffix = kind == EntryKind::Run       ? "_run"
                       : kind == EntryKind::Prepare ? "_prepare"
                                                    : "_run_prepared";
  SmallVector<Type *> params(pointers.size(), ptr_);
  params.append(sizes.size(), i64_);
  if (cuda())
    params.push_back(ptr_);
  auto *type = FunctionType::get(i32_, params, false);
  Function *fn =
      Function::Create(type, GlobalValue::ExternalLinkage, layer_.cName() + suffix, module_);
  IRBuilder<> b(BasicBlock::Create(ctx_, "entry", fn));
  stream_ = cuda() ? fn->getArg(fn->arg_size() - 1) : nullptr;
  if (stream_)
    stream_->setName("stream");

  Value *prepared = nullptr;
  std::vector<Value *> tensorPointer(layer_.tensors.size(), nullptr);
  for (size_t i = 0; i < pointers.size(); ++i) {
    bool isPrepared = pointers[i] == kPreparedBlock;
    fn->getArg(i)->setName(isPrepared ? "prepared" : layer_.tensors[pointers[i]].name);
    fn->addParamAttr(i, Attribute::NoAlias);
    returnIf(b, b.CreateIsNull(fn->getArg(i)), kNullPointer);
    if (isPrepared)
      prepared = fn->getArg(i);
    else
      tensorPointer[pointers[i]] = fn->getArg(i);
  }

  // Resolve every size, checking the run-time ones.
  auto sizeValue = [&](RuntimeSize which) -> Value * {
    for (size_t i = 0; i < sizes.size(); ++i)
      if (sizes[i] == which)
        return fn->getArg(pointers.size() + i);
    return nullptr;
  };
  const char *sizeNames[] = {"", "batch", "seq", "kv_seq"};
  for (size_t i = 0; i < sizes.size(); ++i) {
    Value *size = fn->getArg(pointers.size() + i);
    size->setName(sizeNames[static_cast<int>(sizes[i])]);
    Value *bad = b.CreateOr(b.CreateICmpSLT(size, b.getInt64(1)),
                            b.CreateICmpSGT(size, b.getInt64(kMaxRuntimeSize)));
    returnIf(b, bad, kBadSize);
  }
  auto dimension = [&](const TensorABI &tensor, size_t d) -> Value * {
    if (tensor.shape[d] != kDynamicSize)
      return b.getInt64(tensor.shape[d]);
    RuntimeSize which = tensor.dynamicAs[d];
    // A self-attention layer's keys have the queries' length.
    if (which == RuntimeSize::KvSeq && !layer_.cross)
      which = RuntimeSize::Seq;
    return sizeValue(which);
  };

  if (kind != EntryKind::Prepare) {
    // Element counts must stay far from overflow: checked in floating point, which cannot wrap.
    for (const TensorABI &tensor : layer_.tensors) {
      if (tensor.isParameter)
        continue;
      Value *elements = ConstantFP::get(b.getDoubleTy(), 1.0);
      for (size_t d = 0; d < tensor.shape.size(); ++d)
        elements = b.CreateFMul(elements, b.CreateSIToFP(dimension(tensor, d), b.getDoubleTy()));
      returnIf(b, b.CreateFCmpOGT(elements, ConstantFP::get(b.getDoubleTy(), double(kMaxElements))),
               kBadSize);
      // Halide's buffers have int32 strides: the largest, of the outermost dimension, is the
      // element count of the others.
      if (convention_ == KernelConvention::HalideBuffers && !tensor.shape.empty()) {
        Value *outer = b.CreateSIToFP(dimension(tensor, 0), b.getDoubleTy());
        Value *stride = b.CreateFDiv(elements, outer);
        returnIf(
            b, b.CreateFCmpOGT(stride, ConstantFP::get(b.getDoubleTy(), double(kHalideMaxStride))),
            kBadSize);
      }
    }

    // kv_lens entries must lie in [0, Skv] (on a GPU, where the host cannot read them, the
    // kernels clamp them); cache_len entries in [0, N - S], before anything is written.
    for (size_t i = 0; i < layer_.tensors.size(); ++i) {
      const TensorABI &tensor = layer_.tensors[i];
      if (!tensor.isInt32 || cuda())
        continue;
      bool cacheLen = tensor.name == "cache_len";
      Value *batch = dimension(tensor, 0);
      const TensorABI &keys = layer_.tensors[layer_.cross ? 1 : 0];
      // The largest entry: kv_seq for kv_lens, the room the cache leaves the new tokens for
      // cache_len.
      Value *kvSeq = cacheLen ? b.CreateSub(b.getInt64(layer_.kvCache), dimension(keys, 1))
                              : dimension(keys, 1);
      BasicBlock *header = b.GetInsertBlock();
      BasicBlock *body = BasicBlock::Create(ctx_, "kv_lens.check", fn);
      BasicBlock *done = BasicBlock::Create(ctx_, "kv_lens.done", fn);
      b.CreateBr(body);
      b.SetInsertPoint(body);
      PHINode *index = b.CreatePHI(i64_, 2, "b");
      index->addIncoming(b.getInt64(0), header);
      Value *len = b.CreateLoad(i32_, b.CreateGEP(i32_, tensorPointer[i], index));
      Value *len64 = b.CreateSExt(len, i64_);
      Value *bad = b.CreateOr(b.CreateICmpSLT(len64, b.getInt64(0)), b.CreateICmpSGT(len64, kvSeq));
      returnIf(b, bad, cacheLen ? kBadCacheLen : kBadKvLens);
      Value *nextIndex = b.CreateAdd(index, b.getInt64(1));
      index->addIncoming(nextIndex, b.GetInsertBlock());
      b.CreateCondBr(b.CreateICmpSLT(nextIndex, batch), body, done);
      b.SetInsertPoint(done);
    }
  }

  // NAME_run prepares the parameters into a block of its own for the call, except on a GPU,
  // whose kernels read them in place.
  bool preparesPerCall = kind == EntryKind::Run && !cuda();
  FunctionCallee alloc = module_.getOrInsertFunction("mhac_alloc", ptr_, i64_);
  FunctionCallee release = module_.getOrInsertFunction("mhac_free", Type::getVoidTy(ctx_), ptr_);
  if (preparesPerCall) {
    prepared = b.CreateCall(alloc, {b.getInt64(layer_.preparedBytes)}, "prepared");
    returnIf(b, b.CreateIsNull(prepared), kOutOfMemory);
  }
  auto preparedPointer = [&](const TensorABI &tensor) {
    return b.CreateConstInBoundsGEP1_64(b.getInt8Ty(), prepared, tensor.preparedOffset);
  };
  if (kind == EntryKind::Prepare || preparesPerCall) {
    SmallVector<Value *> args;
    for (size_t i = 0; i < layer_.tensors.size(); ++i)
      if (layer_.tensors[i].isParameter)
        appendTensor(b, args, tensorPointer[i], ArrayRef<int64_t>(layer_.tensors[i].shape),
                     callerElement(layer_.tensors[i]));
    for (const TensorABI &tensor : layer_.tensors)
      if (tensor.isParameter)
        appendTensor(b, args, preparedPointer(tensor), ArrayRef<int64_t>(tensor.preparedShape),
                     preparedElement());
    if (stream_)
      args.push_back(stream_);
    if (args.size() != preparation_->arg_size())
      return nullptr;
    callKernel(b, preparation_, args, preparesPerCall ? prepared : nullptr);
  }
  if (kind != EntryKind::Prepare) {
    SmallVector<Value *> args;
    for (size_t i = 0; i < layer_.tensors.size(); ++i) {
      const TensorABI &tensor = layer_.tensors[i];
      if (tensor.isParameter && kind == EntryKind::Run && cuda()) {
        appendTensor(b, args, tensorPointer[i], ArrayRef<int64_t>(tensor.shape),
                     callerElement(tensor));
        continue;
      }
      if (tensor.isParameter) {
        appendTensor(b, args, preparedPointer(tensor), ArrayRef<int64_t>(tensor.preparedShape),
                     preparedElement());
        continue;
      }
      SmallVector<Value *> dims;
      for (size_t d = 0; d < tensor.shape.size(); ++d)
        dims.push_back(dimension(tensor, d));
      appendTensor(b, args, tensorPointer[i], dims, callerElement(tensor));
    }
    if (stream_)
      args.push_back(stream_);
    if (args.size() != kernel_->arg_size())
      return nullptr;
    callKernel(b, kernel_, args, preparesPerCall ? prepared : nullptr);
  }
  if (preparesPerCall)
    b.CreateCall(release, {prepared});
  b.CreateRet(b.getInt32(kOk));
  return fn;
}

Function *EntryPointBuilder::buildPacked(EntryKind kind, Function *entry) {
  // Every packed form takes the tensors as one array in ABI order (run_packed's), reading only
  // the entries its entry point needs; the prepared block and the sizes follow.
  const char *suffix = kind == EntryKind::Run       ? "_run_packed"
                       : kind == EntryKind::Prepare ? "_prepare_packed"
                                                    : "_run_prepared_packed";
  SmallVector<Type *> params = {ptr_};
  if (kind != EntryKind::Run)
    params.push_back(ptr_); // prepared
  if (kind != EntryKind::Prepare)
    params.push_back(ptr_); // sizes
  auto *type = FunctionType::get(i32_, params, false);
  Function *packed =
      Function::Create(type, GlobalValue::ExternalLinkage, layer_.cName() + suffix, module_);
  Value *tensors = packed->getArg(0);
  tensors->setName("tensors");
  Value *prepared = kind != EntryKind::Run ? packed->getArg(1) : nullptr;
  Value *sizes = kind != EntryKind::Prepare ? packed->getArg(params.size() - 1) : nullptr;
  if (prepared)
    prepared->setName("prepared");
  if (sizes)
    sizes->setName("sizes");
  IRBuilder<> b(BasicBlock::Create(ctx_, "entry", packed));
  returnIf(b, b.CreateIsNull(tensors), kNullPointer);
  std::vector<RuntimeSize> runtime =
      kind == EntryKind::Prepare ? std::vector<RuntimeSize>{} : runtimeSizes();
  if (!runtime.empty())
    returnIf(b, b.CreateIsNull(sizes), kInvalidArgument);

  SmallVector<Value *> args;
  for (int pointer : entryPointers(layer_, kind))
    args.push_back(pointer == kPreparedBlock
                       ? prepared
                       : b.CreateLoad(ptr_, b.CreateConstGEP1_64(ptr_, tensors, pointer)));
  StructType *sizesType = StructType::get(ctx_, {i64_, i64_, i64_});
  for (RuntimeSize which : runtime) {
    unsigned field = static_cast<unsigned>(which) - 1; // batch, seq, kv_seq
    args.push_back(b.CreateLoad(i64_, b.CreateStructGEP(sizesType, sizes, field)));
  }
  if (cuda())
    args.push_back(ConstantPointerNull::get(ptr_)); // the default stream
  b.CreateRet(b.CreateCall(entry, args));
  return packed;
}

Constant *EntryPointBuilder::ropeMetadata(StructType *type) {
  const RopeSpec &rope = layer_.rope;
  auto i32 = [&](int64_t value) { return ConstantInt::get(i32_, value); };
  auto i64 = [&](int64_t value) { return ConstantInt::get(i64_, value); };
  auto f64 = [&](double value) { return ConstantFP::get(Type::getDoubleTy(ctx_), value); };
  static_assert(int(RopeKind::Half) == MHAC_ROPE_HALF &&
                    int(RopeKind::Interleaved) == MHAC_ROPE_INTERLEAVED &&
                    int(RopeScaling::Yarn) == MHAC_ROPE_SCALING_YARN,
                "the rope enums of LayerSpec and mhac/runtime.h must agree");
  if (!rope.enabled())
    return ConstantAggregateZero::get(type);
  Constant *fields[] = {i32(int(rope.kind)),     i32(int(rope.scaling)), i64(rope.dim),
                        i64(rope.originalMax),   f64(rope.base),         f64(rope.factor),
                        f64(rope.lowFreqFactor), f64(rope.highFreqFactor), f64(rope.betaFast),
                        f64(rope.betaSlow),      f64(rope.attentionFactor), i32(rope.truncate)};
  return ConstantStruct::get(type, fields);
}

Constant *EntryPointBuilder::string(StringRef text, StringRef what) {
  Constant *value = ConstantDataArray::getString(ctx_, text);
  return new GlobalVariable(module_, value->getType(), /*isConstant=*/true,
                            GlobalValue::PrivateLinkage, value, layer_.name + "." + what);
}

Error EntryPointBuilder::buildMetadata(Function *runPacked, Function *preparePacked,
                                       Function *runPreparedPacked) {
  // Field for field, the struct mhac_layer of mhac/runtime.h (natural C layout).
  Type *f32 = Type::getFloatTy(ctx_);
  Type *f64 = Type::getDoubleTy(ctx_);
  StructType *ropeType = StructType::get(ctx_, {i32_, i32_, i64_, i64_, f64, f64, f64, f64, f64, f64,
                                                f64, i32_});
  StructType *layerType = StructType::get(
      ctx_, {i32_, ptr_, i32_, i64_, i64_, i64_, i64_, i64_, i64_, i64_, i64_, i32_, i32_, i32_,
             i32_, f32,  i32_, ptr_, i64_, ptr_, ptr_, ptr_, ptr_, ptr_, ropeType, i64_, i64_, f64,
             i32_, f64,  i32_});
  const StructLayout *ropeLayout = module_.getDataLayout().getStructLayout(ropeType);
  for (auto [field, offset] : llvm::enumerate(kRopeFieldOffsets))
    if (ropeType->getNumElements() != std::size(kRopeFieldOffsets) ||
        ropeLayout->getElementOffset(field) != offset)
      return createStringError(inconvertibleErrorCode(),
                               "internal error: mhac_rope of mhac/runtime.h and the generated "
                               "metadata differ at field %zu",
                               field);
  const StructLayout *layout = module_.getDataLayout().getStructLayout(layerType);
  if (layerType->getNumElements() != std::size(kLayerFieldOffsets))
    return createStringError(inconvertibleErrorCode(),
                             "internal error: mhac_layer has %zu fields, the metadata %u",
                             std::size(kLayerFieldOffsets), layerType->getNumElements());
  for (auto [field, offset] : llvm::enumerate(kLayerFieldOffsets))
    if (layout->getElementOffset(field) != offset)
      return createStringError(inconvertibleErrorCode(),
                               "internal error: field %zu of mhac_layer is at byte %zu in "
                               "mhac/runtime.h but %zu in the generated metadata",
                               field, offset, size_t(layout->getElementOffset(field)));
  auto size = [&](int64_t value) {
    return ConstantInt::get(i64_, value == kDynamicSize ? MHAC_DYNAMIC : value);
  };
  auto flag = [&](bool value) { return ConstantInt::get(i32_, value ? 1 : 0); };
  Constant *fields[] = {
      ConstantInt::get(i32_, MHAC_ABI_VERSION),
      string(layer_.name, "name"),
      ConstantInt::get(i32_, layer_.bf16 ? 1 : 0),
      size(layer_.modelDim),
      size(layer_.heads),
      size(layer_.headDim),
      size(layer_.kvHeads),
      size(layer_.kvDim),
      size(layer_.batch),
      size(layer_.seq),
      size(layer_.kvSeq),
      flag(layer_.cross),
      flag(layer_.causal),
      flag(layer_.kvLens),
      flag(layer_.bias),
      ConstantFP::get(f32, layer_.scale),
      ConstantInt::get(i32_, static_cast<int32_t>(layer_.tensors.size())),
      runPacked,
      ConstantInt::get(i64_, layer_.preparedBytes),
      preparePacked,
      runPreparedPacked,
      cpuFeatures_,
      string(layer_.schedule, "schedule"),
      layer_.device.empty() ? ConstantPointerNull::get(ptr_) : string(layer_.device, "device"),
      ropeMetadata(ropeType),
      ConstantInt::get(i64_, layer_.kvCache),
      ConstantInt::get(i64_, layer_.window),
      ConstantFP::get(f64, layer_.softcap),
      flag(layer_.qkNorm),
      ConstantFP::get(f64, layer_.qkNorm ? layer_.qkNormEps : 0.0),
      flag(layer_.sinks),
  };
  metadata_ =
      new GlobalVariable(module_, layerType, /*isConstant=*/true, GlobalValue::InternalLinkage,
                         ConstantStruct::get(layerType, fields), metadataSymbol(layer_));

  auto *type = FunctionType::get(ptr_, {}, false);
  Function *getter =
      Function::Create(type, GlobalValue::ExternalLinkage, layer_.cName() + "_metadata", module_);
  IRBuilder<> b(BasicBlock::Create(ctx_, "entry", getter));
  b.CreateRet(metadata_);
  return Error::success();
}

Error EntryPointBuilder::build() {
  // The lowered layer and preparation functions become internal; their names go to the entry
  // points.
  kernel_ = module_.getFunction(layer_.name);
  preparation_ = module_.getFunction(preparationSymbol(layer_));
  if (!kernel_ || !preparation_)
    return createStringError(inconvertibleErrorCode(), "no kernel for layer '%s'",
                             layer_.name.c_str());
  kernel_->setName(kernelSymbol(layer_));
  kernel_->setLinkage(GlobalValue::InternalLinkage);
  preparation_->setLinkage(GlobalValue::InternalLinkage);
  Function *entries[3];
  for (EntryKind kind : {EntryKind::Run, EntryKind::Prepare, EntryKind::RunPrepared}) {
    Function *entry = buildEntry(kind);
    if (!entry)
      return createStringError(inconvertibleErrorCode(),
                               "the kernels of layer '%s' do not take the expected arguments",
                               layer_.name.c_str());
    entries[static_cast<int>(kind)] = buildPacked(kind, entry);
  }
  return buildMetadata(entries[0], entries[1], entries[2]);
}

} // namespace

std::string enabledCpuFeatures(StringRef targetFeatures) {
  SmallVector<StringRef> enabled;
  for (StringRef feature : split(targetFeatures, ','))
    if (feature.consume_front("+"))
      enabled.push_back(feature);
  return join(enabled, ",");
}

Error addEntryPoints(Module &module, ArrayRef<LayerABI> layers, StringRef targetFeatures,
                     KernelConvention convention) {
  LLVMContext &ctx = module.getContext();
  Constant *features = ConstantDataArray::getString(ctx, enabledCpuFeatures(targetFeatures));
  auto *featuresGlobal =
      new GlobalVariable(module, features->getType(), /*isConstant=*/true,
                         GlobalValue::PrivateLinkage, features, "mhac.cpu_features");
  for (const LayerABI &layer : layers) {
    EntryPointBuilder builder(module, layer, featuresGlobal, convention);
    if (Error error = builder.build())
      return error;
  }
  return Error::success();
}

Error addModuleLayerList(Module &module, ArrayRef<LayerABI> layers) {
  LLVMContext &ctx = module.getContext();
  PointerType *ptr = PointerType::get(ctx, 0);
  std::vector<Constant *> list;
  for (const LayerABI &layer : layers) {
    GlobalVariable *metadata = module.getNamedGlobal(metadataSymbol(layer));
    if (!metadata)
      return createStringError(inconvertibleErrorCode(), "no metadata for layer '%s'",
                               layer.name.c_str());
    list.push_back(metadata);
  }
  list.push_back(ConstantPointerNull::get(ptr));
  ArrayType *listType = ArrayType::get(ptr, list.size());
  auto *listGlobal =
      new GlobalVariable(module, listType, /*isConstant=*/true, GlobalValue::InternalLinkage,
                         ConstantArray::get(listType, list), "mhac.module.layers");
  Function *getter = Function::Create(FunctionType::get(ptr, {}, false),
                                      GlobalValue::WeakAnyLinkage, "mhac_module_layers", module);
  IRBuilder<> b(BasicBlock::Create(ctx, "entry", getter));
  b.CreateRet(listGlobal);
  return Error::success();
}

} // namespace mhac
