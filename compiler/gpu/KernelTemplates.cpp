//===- KernelTemplates.cpp - the CUDA kernels, specialized per layer ------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "compiler/gpu/KernelTemplates.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/BitVector.h"

#include <string_view>

using namespace mlir;

namespace mhac {
namespace {

struct KernelTemplate {
  std::string_view name, text;
};

constexpr KernelTemplate kKernelTemplates[] = {
#include "KernelTemplates.inc"
};

/// The template kernel `name`, parsed into `context`; `holder` keeps its module alive.
gpu::GPUFuncOp parseTemplate(MLIRContext *context, llvm::StringRef name,
                             OwningOpRef<ModuleOp> &holder) {
  for (const KernelTemplate &kernel : kKernelTemplates) {
    if (kernel.name != name.str())
      continue;
    holder = parseSourceString<ModuleOp>(llvm::StringRef(kernel.text.data(), kernel.text.size()),
                                         ParserConfig(context), name);
    if (!holder)
      return nullptr;
    gpu::GPUFuncOp found;
    holder->walk([&](gpu::GPUFuncOp func) {
      if (func.getName() == name)
        found = func;
    });
    return found;
  }
  return nullptr;
}

/// Makes the f32 tensor argument `index` of `kernel` a bf16 one: its loads widen to f32 and
/// its stores round to bf16 (to nearest even), so the kernel's arithmetic stays in f32.
LogicalResult retypeToBf16(gpu::GPUFuncOp kernel, unsigned index) {
  BlockArgument argument = kernel.getArgument(index);
  auto type = cast<MemRefType>(argument.getType());
  Type bf16 = BFloat16Type::get(kernel.getContext());
  Type f32 = Float32Type::get(kernel.getContext());
  argument.setType(MemRefType::get(type.getShape(), bf16, type.getLayout(), type.getMemorySpace()));
  for (OpOperand &use : llvm::make_early_inc_range(argument.getUses())) {
    Operation *user = use.getOwner();
    OpBuilder builder(user);
    if (auto load = dyn_cast<memref::LoadOp>(user)) {
      builder.setInsertionPointAfter(load);
      load.getResult().setType(bf16);
      auto widened = arith::ExtFOp::create(builder, load.getLoc(), f32, load.getResult());
      load.getResult().replaceAllUsesExcept(widened, widened);
    } else if (auto store = dyn_cast<memref::StoreOp>(user)) {
      auto rounded =
          arith::TruncFOp::create(builder, store.getLoc(), bf16, store.getValueToStore());
      store.getValueMutable().assign(rounded);
    } else {
      return user->emitError("mhac: a bf16 tensor of a kernel template may only be loaded and "
                             "stored");
    }
  }
  return success();
}

/// Folds what the bound constants decide: index arithmetic, branches on flags, the allocas'
/// sizes (which become static), the unrolled loops' bounds.
LogicalResult foldConstants(Operation *op) {
  MLIRContext *context = op->getContext();
  RewritePatternSet patterns(context);
  for (Dialect *dialect : context->getLoadedDialects())
    dialect->getCanonicalizationPatterns(patterns);
  for (RegisteredOperationName name : context->getRegisteredOperations())
    name.getCanonicalizationPatterns(patterns, context);
  return applyPatternsGreedily(op, std::move(patterns));
}

/// Replaces each static 1-D alloca whose every access has a constant index (a thread's tile,
/// once unrolled) by one scalar alloca per element, which mem2reg then makes SSA values: LLVM's
/// own SROA gives up on arrays with as many accesses as a warp's fragments have.
void scalarizeAllocas(gpu::GPUFuncOp kernel) {
  SmallVector<memref::AllocaOp> allocas;
  kernel.walk([&](memref::AllocaOp alloca) { allocas.push_back(alloca); });
  for (memref::AllocaOp alloca : allocas) {
    MemRefType type = alloca.getType();
    if (type.getRank() != 1 || !type.hasStaticShape())
      continue;
    auto constantIndex = [](ValueRange indices) -> std::optional<int64_t> {
      return indices.size() == 1 ? getConstantIntValue(indices[0]) : std::nullopt;
    };
    bool scalar = llvm::all_of(alloca->getUsers(), [&](Operation *user) {
      if (auto load = dyn_cast<memref::LoadOp>(user))
        return constantIndex(load.getIndices()).has_value();
      if (auto store = dyn_cast<memref::StoreOp>(user))
        return store.getMemRef() == alloca.getResult() &&
               constantIndex(store.getIndices()).has_value();
      return false;
    });
    if (!scalar)
      continue;
    OpBuilder builder(alloca);
    MemRefType element = MemRefType::get({}, type.getElementType());
    SmallVector<Value> slots;
    for (int64_t i = 0; i < type.getNumElements(); ++i)
      slots.push_back(memref::AllocaOp::create(builder, alloca.getLoc(), element));
    for (Operation *user : llvm::make_early_inc_range(alloca->getUsers())) {
      OpBuilder at(user);
      if (auto load = dyn_cast<memref::LoadOp>(user)) {
        Value slot = slots[*constantIndex(load.getIndices())];
        load.replaceAllUsesWith(memref::LoadOp::create(at, load.getLoc(), slot).getResult());
      } else {
        auto store = cast<memref::StoreOp>(user);
        memref::StoreOp::create(at, store.getLoc(), store.getValueToStore(),
                                slots[*constantIndex(store.getIndices())]);
      }
      user->erase();
    }
    alloca.erase();
  }
}

} // namespace

FailureOr<gpu::GPUFuncOp> addSpecializedKernel(gpu::GPUModuleOp module, llvm::StringRef name,
                                               const KernelSpecialization &specialization) {
  OwningOpRef<ModuleOp> holder;
  gpu::GPUFuncOp source = parseTemplate(module.getContext(), specialization.templateName, holder);
  if (!source)
    return module.emitError("mhac: no kernel template '") << specialization.templateName << "'";
  OpBuilder builder = OpBuilder::atBlockEnd(module.getBody());
  auto kernel = cast<gpu::GPUFuncOp>(builder.clone(*source));
  kernel.setName(name);
  if (specialization.threads <= 0)
    return kernel.emitError("mhac: kernel ") << name << " has no block size";
  kernel.setKnownBlockSizeAttr(
      builder.getDenseI32ArrayAttr({static_cast<int32_t>(specialization.threads), 1, 1}));

  Block &entry = kernel.getBody().front();
  OpBuilder constants = OpBuilder::atBlockBegin(&entry);
  llvm::BitVector bound(kernel.getNumArguments());
  std::set<std::string> used;
  for (unsigned i = 0; i < kernel.getNumArguments(); ++i) {
    BlockArgument argument = kernel.getArgument(i);
    if (auto bind = kernel.getArgAttrOfType<StringAttr>(i, "mhac.bind")) {
      auto it = specialization.bindings.find(bind.str());
      if (it == specialization.bindings.end())
        return kernel.emitError("mhac: kernel template argument '") << bind << "' is not bound";
      Value value;
      if (auto *integer = std::get_if<int64_t>(&it->second))
        value = arith::ConstantIndexOp::create(constants, kernel.getLoc(), *integer);
      else
        value = arith::ConstantFloatOp::create(constants, kernel.getLoc(),
                                               Float32Type::get(kernel.getContext()),
                                               llvm::APFloat(std::get<float>(it->second)));
      if (value.getType() != argument.getType())
        return kernel.emitError("mhac: kernel template argument '")
               << bind << "' is bound to a value of another type";
      argument.replaceAllUsesWith(value);
      bound.set(i);
      used.insert(bind.str());
    }
    if (auto storage = kernel.getArgAttrOfType<StringAttr>(i, "mhac.storage"))
      if (specialization.bf16Tensors.count(storage.str()) && failed(retypeToBf16(kernel, i)))
        return failure();
  }
  for (const auto &[key, value] : specialization.bindings)
    if (!used.count(key))
      return kernel.emitError("mhac: kernel template '")
             << specialization.templateName << "' has no argument '" << key << "'";
  SmallVector<Type> types(entry.getArgumentTypes());
  kernel.setFunctionTypeAttr(TypeAttr::get(FunctionType::get(kernel.getContext(), types, {})));
  if (failed(kernel.eraseArguments(bound)))
    return failure();
  kernel.removeArgAttrsAttr();

  if (failed(foldConstants(kernel)))
    return kernel.emitError("mhac: the bound kernel does not fold");
  // Innermost loops first (a post-order walk), so that an unrolled loop copies unrolled bodies.
  SmallVector<scf::ForOp> unrolled;
  kernel.walk([&](scf::ForOp loop) {
    if (loop->hasAttr("mhac.unroll"))
      unrolled.push_back(loop);
  });
  for (scf::ForOp loop : unrolled) {
    loop->removeAttr("mhac.unroll");
    if (!loop.getStaticTripCount())
      return loop.emitError("mhac: a loop to unroll has bounds that are not constant");
    if (failed(loopUnrollFull(loop)))
      return loop.emitError("mhac: cannot unroll the loop");
  }
  if (failed(foldConstants(kernel)))
    return kernel.emitError("mhac: the unrolled kernel does not fold");
  scalarizeAllocas(kernel);
  return kernel;
}

} // namespace mhac
