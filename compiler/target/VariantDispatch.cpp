//===- VariantDispatch.cpp - one object, code for several CPUs ------------===//
//
// Part of mhac. The choice is a function pointer's worth of state: an index cached in an
// internal global with relaxed atomics (every thread that races to fill it computes the same
// value), so a call after the first costs a load and an indirect branch. The check calls the
// runtime's mhac_missing_cpu_feature, which also knows whether the operating system enabled
// the AVX-512 and AMX registers.
//
//===----------------------------------------------------------------------===//

#include "compiler/target/VariantDispatch.h"

#include "runtime/include/mhac/runtime.h"

#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Module.h"

#include <cctype>

using namespace llvm;

namespace mhac {

std::string variantTag(StringRef targetName) {
  std::string tag;
  for (char c : targetName)
    tag += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return tag;
}

Expected<std::vector<PublicFunction>> hideAsVariant(Module &module, StringRef tag) {
  // LLVM's own arrays (llvm.global_ctors, llvm.global_dtors: the Halide backend's runtime has
  // destructors) are appended to each other when the variants are linked, not dispatched.
  for (GlobalVariable &global : module.globals())
    if (!global.isDeclaration() && !global.hasLocalLinkage() && !global.hasAppendingLinkage())
      return createStringError(inconvertibleErrorCode(),
                               "internal error: the public data symbol '%s' cannot be dispatched",
                               global.getName().str().c_str());
  std::vector<PublicFunction> functions;
  for (Function &fn : module) {
    if (fn.isDeclaration())
      continue;
    // Kernels too carry the tag, so that profiles name the variant that ran.
    std::string name = fn.getName().str();
    fn.setName(name + "." + tag);
    if (fn.hasLocalLinkage())
      continue;
    functions.push_back({name, fn.getLinkage()});
    // Still public: llvm::Linker moves only the internal functions that something references.
    fn.setVisibility(GlobalValue::HiddenVisibility);
  }
  return functions;
}

namespace {

/// Builds the dispatch of one module.
class DispatchBuilder {
public:
  DispatchBuilder(Module &module, ArrayRef<CodeVariant> variants)
      : module_(module), variants_(variants), ctx_(module.getContext()), b_(ctx_),
        i32_(Type::getInt32Ty(ctx_)), ptr_(PointerType::get(ctx_, 0)) {}

  /// `int32_t mhac.select_variant(void)`: the index of the variant for this CPU, or the number
  /// of variants when none fits.
  Function *buildSelector();
  Error buildDispatcher(const PublicFunction &function, Function *selector);

private:
  Module &module_;
  ArrayRef<CodeVariant> variants_;
  LLVMContext &ctx_;
  IRBuilder<> b_;
  IntegerType *i32_;
  PointerType *ptr_;
};

Function *DispatchBuilder::buildSelector() {
  auto *chosen =
      new GlobalVariable(module_, i32_, /*isConstant=*/false, GlobalValue::InternalLinkage,
                         ConstantInt::getSigned(i32_, -1), "mhac.variant");
  FunctionCallee missing = module_.getOrInsertFunction("mhac_missing_cpu_feature",
                                                       FunctionType::get(ptr_, {ptr_}, false));
  Function *selector =
      Function::Create(FunctionType::get(i32_, {}, false), GlobalValue::InternalLinkage,
                       "mhac.select_variant", module_);
  auto *entry = BasicBlock::Create(ctx_, "entry", selector);
  auto *select = BasicBlock::Create(ctx_, "select", selector);
  b_.SetInsertPoint(entry);
  LoadInst *cached = b_.CreateAlignedLoad(i32_, chosen, Align(4));
  cached->setAtomic(AtomicOrdering::Monotonic);
  auto *known = BasicBlock::Create(ctx_, "known", selector);
  b_.CreateCondBr(b_.CreateICmpSGE(cached, ConstantInt::get(i32_, 0)), known, select);
  b_.SetInsertPoint(known);
  b_.CreateRet(cached);

  b_.SetInsertPoint(select);
  for (auto [index, variant] : llvm::enumerate(variants_)) {
    Value *features = b_.CreateGlobalString(variant.cpuFeatures, "mhac.variant.features");
    Value *lacking = b_.CreateCall(missing, {features});
    auto *fits = BasicBlock::Create(ctx_, "fits." + variant.tag, selector);
    auto *next = BasicBlock::Create(ctx_, "next", selector);
    b_.CreateCondBr(b_.CreateIsNull(lacking), fits, next);
    b_.SetInsertPoint(fits);
    b_.CreateAlignedStore(ConstantInt::get(i32_, index), chosen, Align(4))
        ->setAtomic(AtomicOrdering::Monotonic);
    b_.CreateRet(ConstantInt::get(i32_, index));
    b_.SetInsertPoint(next);
  }
  Constant *none = ConstantInt::get(i32_, variants_.size());
  b_.CreateAlignedStore(none, chosen, Align(4))->setAtomic(AtomicOrdering::Monotonic);
  b_.CreateRet(none);
  return selector;
}

Error DispatchBuilder::buildDispatcher(const PublicFunction &function, Function *selector) {
  std::vector<Function *> targets;
  for (const CodeVariant &variant : variants_) {
    Function *fn = module_.getFunction(function.name + "." + variant.tag);
    if (!fn || (!targets.empty() && fn->getFunctionType() != targets[0]->getFunctionType()))
      return createStringError(inconvertibleErrorCode(),
                               "internal error: the variants of '%s' differ",
                               function.name.c_str());
    targets.push_back(fn);
  }
  for (Function *fn : targets) {
    fn->setLinkage(GlobalValue::InternalLinkage);
    fn->setVisibility(GlobalValue::DefaultVisibility);
  }
  FunctionType *type = targets[0]->getFunctionType();
  Type *result = type->getReturnType();
  if (result != i32_ && result != ptr_)
    return createStringError(inconvertibleErrorCode(),
                             "internal error: '%s' returns neither a status nor a pointer",
                             function.name.c_str());
  Function *dispatcher = Function::Create(type, function.linkage, function.name, module_);
  SmallVector<Value *> args(llvm::make_pointer_range(dispatcher->args()));
  auto *entry = BasicBlock::Create(ctx_, "entry", dispatcher);
  auto *none = BasicBlock::Create(ctx_, "none", dispatcher);
  b_.SetInsertPoint(entry);
  SwitchInst *choice = b_.CreateSwitch(b_.CreateCall(selector), none, targets.size());
  auto forward = [&](Function *target) {
    CallInst *call = b_.CreateCall(target, args);
    call->setTailCallKind(CallInst::TCK_MustTail);
    b_.CreateRet(call);
  };
  for (auto [index, target] : llvm::enumerate(targets)) {
    auto *block = BasicBlock::Create(ctx_, variants_[index].tag, dispatcher);
    choice->addCase(ConstantInt::get(i32_, index), block);
    b_.SetInsertPoint(block);
    forward(target);
  }
  b_.SetInsertPoint(none);
  if (result == i32_)
    b_.CreateRet(ConstantInt::get(i32_, MHAC_ERROR_UNSUPPORTED_CPU));
  else
    forward(targets.back());
  return Error::success();
}

} // namespace

Error addVariantDispatch(Module &module, ArrayRef<CodeVariant> variants,
                         ArrayRef<PublicFunction> functions) {
  DispatchBuilder builder(module, variants);
  Function *selector = builder.buildSelector();
  for (const PublicFunction &function : functions)
    if (Error error = builder.buildDispatcher(function, selector))
      return error;
  return Error::success();
}

} // namespace mhac
