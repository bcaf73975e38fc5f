//===- CudaHost.cpp - the host side of a layer's CUDA kernels -------------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "compiler/gpu/CudaHost.h"

#include "compiler/target/LoweredLayer.h"

#include "runtime/include/mhac/runtime.h"

#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Module.h"

#include <map>

using namespace llvm;

namespace mhac {
namespace {

/// A tensor as the layer function receives it: its data and its sizes.
struct TensorArgument {
  Value *data = nullptr;
  SmallVector<Value *> sizes;
};

class HostBuilder {
public:
  HostBuilder(Module &module, const LayerABI &layer, const CudaLayerKernels &kernels)
      : module_(module), layer_(layer), kernels_(kernels), ctx_(module.getContext()),
        ptr_(PointerType::get(ctx_, 0)), i32_(Type::getInt32Ty(ctx_)),
        i64_(Type::getInt64Ty(ctx_)) {}

  Error build(StringRef image);

private:
  /// The function `name` taking `tensors` as memref descriptors (with their rank), then the
  /// stream; returns i32. Fills `arguments` with each tensor's data and sizes.
  Function *declare(StringRef name, ArrayRef<const TensorABI *> tensors,
                    std::vector<TensorArgument> &arguments);
  /// The runtime's mhac_cuda_kernel of kernel `name`, in the image `image`.
  GlobalVariable *kernelHandle(StringRef name, GlobalVariable *image);
  /// Returns the status `status` from the current function if it is not MHAC_OK, first freeing
  /// `workspace` (on `stream`) when given.
  void returnOnError(IRBuilder<> &b, Value *status, Value *workspace, Value *stream);
  /// Launches `kernel` with `params` (memref<?xT> tensors as pointer and element count, index
  /// values as i64), on a grid of gridX x gridY blocks.
  Value *launch(IRBuilder<> &b, const CudaLaunch &launch, GlobalVariable *handle,
                ArrayRef<std::pair<Value *, Value *>> tensors, ArrayRef<Value *> indices,
                Value *gridX, Value *gridY, Value *stream);
  Value *ceilDiv(IRBuilder<> &b, Value *value, int64_t divisor) {
    return b.CreateUDiv(b.CreateAdd(value, b.getInt64(divisor - 1)), b.getInt64(divisor));
  }

  Error buildLayerFunction(GlobalVariable *image);
  Error buildPreparation();

  Module &module_;
  const LayerABI &layer_;
  const CudaLayerKernels &kernels_;
  LLVMContext &ctx_;
  PointerType *ptr_;
  IntegerType *i32_, *i64_;
};

Function *HostBuilder::declare(StringRef name, ArrayRef<const TensorABI *> tensors,
                               std::vector<TensorArgument> &arguments) {
  SmallVector<Type *> params;
  for (const TensorABI *tensor : tensors) {
    params.append({ptr_, ptr_, i64_});
    params.append(2 * tensor->shape.size(), i64_);
  }
  params.push_back(ptr_);
  Function *fn = Function::Create(FunctionType::get(i32_, params, false),
                                  GlobalValue::ExternalLinkage, name, module_);
  unsigned index = 0;
  for (const TensorABI *tensor : tensors) {
    TensorArgument argument;
    argument.data = fn->getArg(index + 1);
    argument.data->setName(tensor->name);
    for (size_t d = 0; d < tensor->shape.size(); ++d)
      argument.sizes.push_back(fn->getArg(index + 3 + d));
    arguments.push_back(argument);
    index += 3 + 2 * tensor->shape.size();
  }
  fn->getArg(index)->setName("stream");
  return fn;
}

GlobalVariable *HostBuilder::kernelHandle(StringRef name, GlobalVariable *image) {
  Constant *nameText = ConstantDataArray::getString(ctx_, name);
  auto *nameGlobal = new GlobalVariable(module_, nameText->getType(), true,
                                        GlobalValue::PrivateLinkage, nameText, name + ".name");
  // mhac_cuda_kernel {image, name, function}; the runtime fills `function` on first use.
  StructType *type = StructType::get(ctx_, {ptr_, ptr_, ptr_});
  return new GlobalVariable(
      module_, type, false, GlobalValue::InternalLinkage,
      ConstantStruct::get(type, {image, nameGlobal, ConstantPointerNull::get(ptr_)}),
      name + ".kernel");
}

void HostBuilder::returnOnError(IRBuilder<> &b, Value *status, Value *workspace, Value *stream) {
  Function *fn = b.GetInsertBlock()->getParent();
  BasicBlock *fail = BasicBlock::Create(ctx_, "failed", fn);
  BasicBlock *next = BasicBlock::Create(ctx_, "ok", fn);
  b.CreateCondBr(b.CreateICmpNE(status, b.getInt32(MHAC_OK)), fail, next);
  b.SetInsertPoint(fail);
  if (workspace) {
    FunctionCallee release = module_.getOrInsertFunction("mhac_cuda_free_async", i32_, ptr_, ptr_);
    b.CreateCall(release, {workspace, stream});
  }
  b.CreateRet(status);
  b.SetInsertPoint(next);
}

Value *HostBuilder::launch(IRBuilder<> &b, const CudaLaunch &launch, GlobalVariable *handle,
                           ArrayRef<std::pair<Value *, Value *>> tensors, ArrayRef<Value *> indices,
                           Value *gridX, Value *gridY, Value *stream) {
  // cuLaunchKernel takes each parameter by address: a memref<?xT> is (allocated, aligned,
  // offset, size, stride), an index an i64.
  SmallVector<Value *> values;
  for (auto [data, count] : tensors)
    values.append({data, data, b.getInt64(0), count, b.getInt64(1)});
  values.append(indices.begin(), indices.end());
  Function *fn = b.GetInsertBlock()->getParent();
  IRBuilder<> entry(&fn->getEntryBlock(), fn->getEntryBlock().begin());
  ArrayType *arrayType = ArrayType::get(ptr_, values.size());
  Value *params = entry.CreateAlloca(arrayType, nullptr, launch.kernel + ".params");
  for (auto [index, value] : llvm::enumerate(values)) {
    Value *slot = entry.CreateAlloca(value->getType());
    b.CreateStore(value, slot);
    b.CreateStore(slot, b.CreateConstGEP2_32(arrayType, params, 0, index));
  }
  FunctionCallee run = module_.getOrInsertFunction("mhac_cuda_launch", i32_, ptr_, i64_, i64_, i32_,
                                                   i32_, ptr_, ptr_);
  return b.CreateCall(run, {handle, gridX, gridY, b.getInt32(launch.threads),
                            b.getInt32(launch.sharedBytes), stream, params});
}

Error HostBuilder::buildLayerFunction(GlobalVariable *image) {
  std::vector<const TensorABI *> tensors;
  for (const TensorABI &tensor : layer_.tensors)
    tensors.push_back(&tensor);
  std::vector<TensorArgument> arguments;
  Function *fn = declare(layer_.name, tensors, arguments);
  Value *stream = fn->getArg(fn->arg_size() - 1);
  std::map<std::string, const TensorArgument *> byName;
  for (auto [tensor, argument] : llvm::zip(tensors, arguments))
    byName[tensor->name] = &argument;
  auto data = [&](const char *name) -> Value * {
    auto it = byName.find(name);
    return it == byName.end() ? ConstantPointerNull::get(ptr_) : it->second->data;
  };

  IRBuilder<> b(BasicBlock::Create(ctx_, "entry", fn));
  const TensorArgument &x = *byName.at("x");
  const TensorArgument &source = *byName.at(layer_.cross ? "memory" : "x");
  Value *batch = x.sizes[0], *seq = x.sizes[1], *kvSeq = source.sizes[1];
  Value *rows = b.CreateMul(batch, seq, "rows");
  Value *kvRows = b.CreateMul(batch, kvSeq, "kv_rows");
  int64_t queryWidth = layer_.heads * layer_.headDim, kvWidth = layer_.kvHeads * layer_.headDim;
  Value *queryElements = b.CreateMul(rows, b.getInt64(queryWidth));
  Value *kvElements = b.CreateMul(kvRows, b.getInt64(kvWidth));
  Value *outElements = b.CreateMul(rows, b.getInt64(layer_.modelDim));
  auto count = [&](Value *perRow, int64_t width) { return b.CreateMul(perRow, b.getInt64(width)); };

  // The tensor-core kernels copy rows 16 bytes at a time: their inputs must start on 16 bytes
  // (cudaMalloc's and PyTorch's allocations do; a view into one may not).
  for (const CudaLaunch *projection :
       {&kernels_.projectQuery, &kernels_.projectKeyValue, &kernels_.projectOutput}) {
    if (!projection->operandAlignment)
      continue;
    SmallVector<const char *> operands;
    if (projection == &kernels_.projectQuery)
      operands = {"x", "wq"};
    else if (projection == &kernels_.projectKeyValue)
      operands = {layer_.cross ? "memory" : "x", "wk", "wv"};
    else
      operands = {"wo"};
    for (const char *name : operands) {
      Value *address = b.CreatePtrToInt(data(name), i64_);
      Value *misaligned = b.CreateICmpNE(
          b.CreateAnd(address, b.getInt64(projection->operandAlignment - 1)), b.getInt64(0));
      Value *status =
          b.CreateSelect(misaligned, b.getInt32(MHAC_ERROR_INVALID_ARGUMENT), b.getInt32(MHAC_OK));
      returnOnError(b, status, nullptr, nullptr);
    }
  }

  // The intermediates, in the layer's element type: queries, keys, values and attention's
  // output, one allocation whose parts start on 256 bytes.
  int64_t elementBytes = layer_.bf16 ? 2 : 4;
  auto partBytes = [&](Value *elements) {
    Value *bytes = b.CreateMul(elements, b.getInt64(elementBytes));
    return b.CreateAnd(b.CreateAdd(bytes, b.getInt64(255)), b.getInt64(~int64_t(255)));
  };
  Value *queryBytes = partBytes(queryElements), *kvBytes = partBytes(kvElements);
  Value *bytes =
      b.CreateAdd(b.CreateMul(queryBytes, b.getInt64(2)), b.CreateMul(kvBytes, b.getInt64(2)));
  Value *workspaceSlot = b.CreateAlloca(ptr_);
  FunctionCallee allocate =
      module_.getOrInsertFunction("mhac_cuda_alloc_async", i32_, ptr_, i64_, ptr_);
  returnOnError(b, b.CreateCall(allocate, {workspaceSlot, bytes, stream}), nullptr, nullptr);
  Value *workspace = b.CreateLoad(ptr_, workspaceSlot, "workspace");
  Value *queries = workspace;
  Value *keys = b.CreateGEP(b.getInt8Ty(), queries, queryBytes, "keys");
  Value *values = b.CreateGEP(b.getInt8Ty(), keys, kvBytes, "values");
  Value *attended = b.CreateGEP(b.getInt8Ty(), values, kvBytes, "attended");

  auto gridY = [&](const CudaLaunch &launch, int64_t features) {
    return b.getInt64((features + launch.tileCols - 1) / launch.tileCols);
  };
  auto parameter = [&](const char *name, int64_t elements) {
    return std::pair<Value *, Value *>{data(name), b.getInt64(byName.count(name) ? elements : 0)};
  };
  GlobalVariable *query = kernelHandle(kernels_.projectQuery.kernel, image);
  GlobalVariable *keyValue = kernelHandle(kernels_.projectKeyValue.kernel, image);
  GlobalVariable *attention = kernelHandle(kernels_.attention.kernel, image);
  GlobalVariable *output = kernelHandle(kernels_.projectOutput.kernel, image);

  returnOnError(b,
                launch(b, kernels_.projectQuery, query,
                       {{x.data, count(rows, layer_.modelDim)},
                        parameter("wq", queryWidth * layer_.modelDim),
                        parameter("bq", queryWidth),
                        {queries, queryElements}},
                       {rows}, ceilDiv(b, rows, kernels_.projectQuery.tileRows),
                       gridY(kernels_.projectQuery, queryWidth), stream),
                workspace, stream);
  for (auto [weight, bias, target] : {std::tuple{"wk", "bk", keys}, std::tuple{"wv", "bv", values}})
    returnOnError(b,
                  launch(b, kernels_.projectKeyValue, keyValue,
                         {{source.data, count(kvRows, layer_.kvDim)},
                          parameter(weight, kvWidth * layer_.kvDim),
                          parameter(bias, kvWidth),
                          {target, kvElements}},
                         {kvRows}, ceilDiv(b, kvRows, kernels_.projectKeyValue.tileRows),
                         gridY(kernels_.projectKeyValue, kvWidth), stream),
                  workspace, stream);
  Value *batches = byName.count("kv_lens") ? batch : b.getInt64(0);
  Value *queryBlocks = ceilDiv(b, seq, kernels_.attention.tileRows);
  returnOnError(b,
                launch(b, kernels_.attention, attention,
                       {{queries, queryElements},
                        {keys, kvElements},
                        {values, kvElements},
                        {data("kv_lens"), batches},
                        {attended, queryElements}},
                       {seq, kvSeq}, b.CreateMul(queryBlocks, batch),
                       b.getInt64(layer_.heads / kernels_.attention.headsPerBlock), stream),
                workspace, stream);
  returnOnError(b,
                launch(b, kernels_.projectOutput, output,
                       {{attended, queryElements},
                        parameter("wo", layer_.modelDim * queryWidth),
                        parameter("bo", layer_.modelDim),
                        {data("out"), outElements}},
                       {rows}, ceilDiv(b, rows, kernels_.projectOutput.tileRows),
                       gridY(kernels_.projectOutput, layer_.modelDim), stream),
                workspace, stream);
  FunctionCallee release = module_.getOrInsertFunction("mhac_cuda_free_async", i32_, ptr_, ptr_);
  b.CreateRet(b.CreateCall(release, {workspace, stream}));
  return Error::success();
}

Error HostBuilder::buildPreparation() {
  std::vector<const TensorABI *> parameters;
  for (const TensorABI &tensor : layer_.tensors)
    if (tensor.isParameter)
      parameters.push_back(&tensor);
  std::vector<const TensorABI *> tensors = parameters;
  tensors.insert(tensors.end(), parameters.begin(), parameters.end());
  std::vector<TensorArgument> arguments;
  Function *fn = declare(preparationSymbol(layer_), tensors, arguments);
  Value *stream = fn->getArg(fn->arg_size() - 1);
  IRBuilder<> b(BasicBlock::Create(ctx_, "entry", fn));
  FunctionCallee copy =
      module_.getOrInsertFunction("mhac_cuda_copy_async", i32_, ptr_, ptr_, i64_, ptr_);
  int64_t elementBytes = layer_.bf16 ? 2 : 4;
  for (size_t i = 0; i < parameters.size(); ++i) {
    int64_t bytes = elementBytes;
    for (int64_t size : parameters[i]->shape)
      bytes *= size;
    Value *status = b.CreateCall(copy, {arguments[parameters.size() + i].data, arguments[i].data,
                                        b.getInt64(bytes), stream});
    returnOnError(b, status, nullptr, nullptr);
  }
  b.CreateRet(b.getInt32(MHAC_OK));
  return Error::success();
}

Error HostBuilder::build(StringRef image) {
  // The image ends in a NUL, which PTX needs and a fatbinary ignores; cuModuleLoadData reads a
  // fatbinary's header in place, so it starts on an aligned address.
  Constant *bytes = ConstantDataArray::getString(ctx_, image, /*AddNull=*/true);
  auto *data = new GlobalVariable(module_, bytes->getType(), true, GlobalValue::PrivateLinkage,
                                  bytes, layer_.name + ".cuda.image.data");
  data->setAlignment(Align(64));
  StructType *imageType = StructType::get(ctx_, {ptr_, ptr_}); // mhac_cuda_image
  auto *imageGlobal =
      new GlobalVariable(module_, imageType, false, GlobalValue::InternalLinkage,
                         ConstantStruct::get(imageType, {data, ConstantPointerNull::get(ptr_)}),
                         layer_.name + ".cuda.image");
  if (Error error = buildLayerFunction(imageGlobal))
    return error;
  return buildPreparation();
}

} // namespace

Error addCudaHostCode(Module &module, const LayerABI &layer, const CudaLayerKernels &kernels,
                      StringRef image) {
  return HostBuilder(module, layer, kernels).build(image);
}

} // namespace mhac
