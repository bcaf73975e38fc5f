//===- EntryPoints.cpp - the C entry points of compiled layers ------------===//
//
// Part of mhac. Written with LLVM's IRBuilder after translation, where a memref argument of
// the lowered kernel is plainly (allocated pointer, aligned pointer, offset, sizes, strides).
//
//===----------------------------------------------------------------------===//

#include "compiler/target/EntryPoints.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Module.h"

using namespace llvm;

namespace mhac {
namespace {

/// The status codes of mhac/runtime.h.
enum Status : int32_t {
  kOk = 0,
  kNullPointer = 1,
  kBadSize = 2,
  kBadKvLens = 3,
  kInvalidArgument = 5,
};

/// Largest accepted run-time size, as in the language.
constexpr int64_t kMaxRuntimeSize = 2147483647;
/// Largest element count of one tensor: beyond it, offsets would overflow 64-bit arithmetic
/// in the kernel's index computations.
constexpr int64_t kMaxElements = int64_t(1) << 48;

class EntryPointBuilder {
public:
  EntryPointBuilder(Module &module, const LayerABI &layer)
      : module_(module), layer_(layer), ctx_(module.getContext()), ptr_(PointerType::get(ctx_, 0)),
        i32_(Type::getInt32Ty(ctx_)), i64_(Type::getInt64Ty(ctx_)) {}

  Error build();
  GlobalVariable *metadata() const { return metadata_; }

private:
  std::vector<RuntimeSize> runtimeSizes() const;
  Function *buildRun(Function *kernel);
  Function *buildRunPacked(Function *run);
  void buildMetadata(Function *runPacked);

  Module &module_;
  const LayerABI &layer_;
  LLVMContext &ctx_;
  PointerType *ptr_;
  IntegerType *i32_, *i64_;
  GlobalVariable *metadata_ = nullptr;
};

std::vector<RuntimeSize> EntryPointBuilder::runtimeSizes() const {
  std::vector<RuntimeSize> sizes;
  if (mlir::ShapedType::isDynamic(layer_.batch))
    sizes.push_back(RuntimeSize::Batch);
  if (mlir::ShapedType::isDynamic(layer_.seq))
    sizes.push_back(RuntimeSize::Seq);
  if (layer_.cross && mlir::ShapedType::isDynamic(layer_.kvSeq))
    sizes.push_back(RuntimeSize::KvSeq);
  return sizes;
}

/// Returns `status` from the current function if `failed` holds; continues in a new block.
static void returnIf(IRBuilder<> &b, Value *failed, int32_t status) {
  Function *fn = b.GetInsertBlock()->getParent();
  BasicBlock *fail = BasicBlock::Create(b.getContext(), "fail", fn);
  BasicBlock *next = BasicBlock::Create(b.getContext(), "ok", fn);
  b.CreateCondBr(failed, fail, next);
  b.SetInsertPoint(fail);
  b.CreateRet(b.getInt32(status));
  b.SetInsertPoint(next);
}

Function *EntryPointBuilder::buildRun(Function *kernel) {
  std::vector<RuntimeSize> sizes = runtimeSizes();
  SmallVector<Type *> params(layer_.tensors.size(), ptr_);
  params.append(sizes.size(), i64_);
  auto *type = FunctionType::get(i32_, params, false);
  Function *run =
      Function::Create(type, GlobalValue::ExternalLinkage, layer_.name + "_run", module_);
  IRBuilder<> b(BasicBlock::Create(ctx_, "entry", run));

  for (size_t i = 0; i < layer_.tensors.size(); ++i) {
    run->getArg(i)->setName(layer_.tensors[i].name);
    run->addParamAttr(i, Attribute::NoAlias);
    returnIf(b, b.CreateIsNull(run->getArg(i)), kNullPointer);
  }

  // Resolve every size, checking the run-time ones.
  auto sizeValue = [&](RuntimeSize which) -> Value * {
    for (size_t i = 0; i < sizes.size(); ++i)
      if (sizes[i] == which)
        return run->getArg(layer_.tensors.size() + i);
    return nullptr;
  };
  const char *sizeNames[] = {"", "batch", "seq", "kv_seq"};
  for (size_t i = 0; i < sizes.size(); ++i) {
    Value *size = run->getArg(layer_.tensors.size() + i);
    size->setName(sizeNames[static_cast<int>(sizes[i])]);
    Value *bad = b.CreateOr(b.CreateICmpSLT(size, b.getInt64(1)),
                            b.CreateICmpSGT(size, b.getInt64(kMaxRuntimeSize)));
    returnIf(b, bad, kBadSize);
  }
  auto dimension = [&](const TensorABI &tensor, size_t d) -> Value * {
    if (!mlir::ShapedType::isDynamic(tensor.shape[d]))
      return b.getInt64(tensor.shape[d]);
    RuntimeSize which = tensor.dynamicAs[d];
    // A self-attention layer's keys have the queries' length.
    if (which == RuntimeSize::KvSeq && !layer_.cross)
      which = RuntimeSize::Seq;
    return sizeValue(which);
  };

  // Element counts must stay far from overflow: checked in floating point, which cannot wrap.
  for (const TensorABI &tensor : layer_.tensors) {
    Value *elements = ConstantFP::get(b.getDoubleTy(), 1.0);
    for (size_t d = 0; d < tensor.shape.size(); ++d)
      elements = b.CreateFMul(elements, b.CreateSIToFP(dimension(tensor, d), b.getDoubleTy()));
    returnIf(b, b.CreateFCmpOGT(elements, ConstantFP::get(b.getDoubleTy(), double(kMaxElements))),
             kBadSize);
  }

  // kv_lens entries must lie in [0, Skv].
  for (size_t i = 0; i < layer_.tensors.size(); ++i) {
    const TensorABI &tensor = layer_.tensors[i];
    if (!tensor.isInt32)
      continue;
    Value *batch = dimension(tensor, 0);
    const TensorABI &keys = layer_.tensors[layer_.cross ? 1 : 0];
    Value *kvSeq = dimension(keys, 1);
    BasicBlock *header = b.GetInsertBlock();
    BasicBlock *body = BasicBlock::Create(ctx_, "kv_lens.check", run);
    BasicBlock *done = BasicBlock::Create(ctx_, "kv_lens.done", run);
    b.CreateBr(body);
    b.SetInsertPoint(body);
    PHINode *index = b.CreatePHI(i64_, 2, "b");
    index->addIncoming(b.getInt64(0), header);
    Value *len = b.CreateLoad(i32_, b.CreateGEP(i32_, run->getArg(i), index));
    Value *len64 = b.CreateSExt(len, i64_);
    Value *bad = b.CreateOr(b.CreateICmpSLT(len64, b.getInt64(0)), b.CreateICmpSGT(len64, kvSeq));
    returnIf(b, bad, kBadKvLens);
    Value *nextIndex = b.CreateAdd(index, b.getInt64(1));
    index->addIncoming(nextIndex, b.GetInsertBlock());
    b.CreateCondBr(b.CreateICmpSLT(nextIndex, batch), body, done);
    b.SetInsertPoint(done);
  }

  // Call the kernel with a memref descriptor per tensor: (allocated, aligned, offset = 0,
  // sizes, row-major strides).
  SmallVector<Value *> args;
  for (size_t i = 0; i < layer_.tensors.size(); ++i) {
    const TensorABI &tensor = layer_.tensors[i];
    args.push_back(run->getArg(i));
    args.push_back(run->getArg(i));
    args.push_back(b.getInt64(0));
    SmallVector<Value *> dims;
    for (size_t d = 0; d < tensor.shape.size(); ++d)
      dims.push_back(dimension(tensor, d));
    args.append(dims.begin(), dims.end());
    SmallVector<Value *> strides(dims.size());
    Value *stride = b.getInt64(1);
    for (size_t d = dims.size(); d-- > 0;) {
      strides[d] = stride;
      stride = b.CreateMul(stride, dims[d]);
    }
    args.append(strides.begin(), strides.end());
  }
  if (args.size() != kernel->arg_size())
    return nullptr;
  b.CreateCall(kernel, args);
  b.CreateRet(b.getInt32(kOk));
  return run;
}

Function *EntryPointBuilder::buildRunPacked(Function *run) {
  StructType *sizesType = StructType::get(ctx_, {i64_, i64_, i64_});
  auto *type = FunctionType::get(i32_, {ptr_, ptr_}, false);
  Function *packed =
      Function::Create(type, GlobalValue::ExternalLinkage, layer_.name + "_run_packed", module_);
  Value *tensors = packed->getArg(0);
  Value *sizes = packed->getArg(1);
  tensors->setName("tensors");
  sizes->setName("sizes");
  IRBuilder<> b(BasicBlock::Create(ctx_, "entry", packed));
  returnIf(b, b.CreateIsNull(tensors), kNullPointer);
  std::vector<RuntimeSize> runtime = runtimeSizes();
  if (!runtime.empty())
    returnIf(b, b.CreateIsNull(sizes), kInvalidArgument);

  SmallVector<Value *> args;
  for (size_t i = 0; i < layer_.tensors.size(); ++i)
    args.push_back(b.CreateLoad(ptr_, b.CreateConstGEP1_64(ptr_, tensors, i)));
  for (RuntimeSize which : runtime) {
    unsigned field = static_cast<unsigned>(which) - 1; // batch, seq, kv_seq
    args.push_back(b.CreateLoad(i64_, b.CreateStructGEP(sizesType, sizes, field)));
  }
  b.CreateRet(b.CreateCall(run, args));
  return packed;
}

void EntryPointBuilder::buildMetadata(Function *runPacked) {
  // Field for field, the struct mhac_layer of mhac/runtime.h (natural C layout).
  Type *f32 = Type::getFloatTy(ctx_);
  StructType *layerType =
      StructType::get(ctx_, {i32_, ptr_, i32_, i64_, i64_, i64_, i64_, i64_, i64_, i64_, i64_, i32_,
                             i32_, i32_, i32_, f32, i32_, ptr_});
  Constant *name = ConstantDataArray::getString(ctx_, layer_.name);
  auto *nameGlobal = new GlobalVariable(module_, name->getType(), /*isConstant=*/true,
                                        GlobalValue::PrivateLinkage, name, layer_.name + ".name");
  auto size = [&](int64_t value) {
    return ConstantInt::get(i64_, mlir::ShapedType::isDynamic(value) ? -1 : value);
  };
  auto flag = [&](bool value) { return ConstantInt::get(i32_, value ? 1 : 0); };
  Constant *fields[] = {
      ConstantInt::get(i32_, 1), // MHAC_ABI_VERSION
      nameGlobal,
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
  };
  metadata_ =
      new GlobalVariable(module_, layerType, /*isConstant=*/true, GlobalValue::InternalLinkage,
                         ConstantStruct::get(layerType, fields), layer_.name + ".layer");

  auto *type = FunctionType::get(ptr_, {}, false);
  Function *getter =
      Function::Create(type, GlobalValue::ExternalLinkage, layer_.name + "_metadata", module_);
  IRBuilder<> b(BasicBlock::Create(ctx_, "entry", getter));
  b.CreateRet(metadata_);
}

Error EntryPointBuilder::build() {
  // The lowered layer function becomes an internal kernel; its name goes to the entry point.
  Function *kernel = module_.getFunction(layer_.name);
  if (!kernel)
    return createStringError(inconvertibleErrorCode(), "no kernel for layer '%s'",
                             layer_.name.c_str());
  kernel->setName(kernelSymbol(layer_));
  kernel->setLinkage(GlobalValue::InternalLinkage);
  Function *run = buildRun(kernel);
  if (!run)
    return createStringError(inconvertibleErrorCode(),
                             "the kernel of layer '%s' does not take the expected arguments",
                             layer_.name.c_str());
  buildMetadata(buildRunPacked(run));
  return Error::success();
}

} // namespace

Error addEntryPoints(Module &module, ArrayRef<LayerABI> layers) {
  LLVMContext &ctx = module.getContext();
  PointerType *ptr = PointerType::get(ctx, 0);
  std::vector<Constant *> list;
  for (const LayerABI &layer : layers) {
    EntryPointBuilder builder(module, layer);
    if (Error error = builder.build())
      return error;
    list.push_back(builder.metadata());
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
