//===- SingleLaneMaskedStores.cpp - masked stores of one lane, as stores --===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "compiler/target/SingleLaneMaskedStores.h"

#include "llvm/IR/Constants.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/Module.h"

#include <optional>

using namespace llvm;

namespace mhac {
namespace {

/// The one lane `mask` turns on, if it is a constant with exactly one true lane and every other
/// lane false.
std::optional<unsigned> singleLane(Value *mask) {
  auto *constant = dyn_cast<Constant>(mask);
  auto *type = dyn_cast<FixedVectorType>(mask->getType());
  if (!constant || !type)
    return std::nullopt;
  std::optional<unsigned> lane;
  for (unsigned i = 0; i < type->getNumElements(); ++i) {
    Constant *element = constant->getAggregateElement(i);
    if (!element || !isa<ConstantInt>(element))
      return std::nullopt;
    if (element->isZeroValue())
      continue;
    if (lane)
      return std::nullopt;
    lane = i;
  }
  return lane;
}

/// Whether the elements of `vector` lie a whole number of bytes apart in memory, so that a
/// lane's element is at its index times their size (not so for vectors of i1, packed as bits).
bool elementsAreWholeBytes(Type *vector, const Module &module) {
  Type *element = cast<VectorType>(vector)->getElementType();
  const DataLayout &layout = module.getDataLayout();
  return layout.getTypeSizeInBits(element) == 8 * layout.getTypeAllocSize(element);
}

} // namespace

unsigned scalarizeSingleLaneMaskedStores(Module &module) {
  SmallVector<std::pair<IntrinsicInst *, unsigned>> stores;
  for (Function &fn : module)
    for (Instruction &instruction : instructions(fn))
      if (auto *call = dyn_cast<IntrinsicInst>(&instruction);
          call && call->getIntrinsicID() == Intrinsic::masked_store)
        if (std::optional<unsigned> lane = singleLane(call->getArgOperand(2));
            lane && elementsAreWholeBytes(call->getArgOperand(0)->getType(), module))
          stores.push_back({call, *lane});
  for (auto [call, lane] : stores) {
    IRBuilder<> b(call);
    Value *value = call->getArgOperand(0), *address = call->getArgOperand(1);
    Type *element = cast<VectorType>(value->getType())->getElementType();
    const DataLayout &layout = module.getDataLayout();
    uint64_t offset = lane * layout.getTypeStoreSize(element);
    Value *laneAddress = lane == 0 ? address : b.CreateConstInBoundsGEP1_64(element, address, lane);
    Align align = commonAlignment(call->getParamAlign(1).valueOrOne(), offset);
    StoreInst *store =
        b.CreateAlignedStore(b.CreateExtractElement(value, lane), laneAddress, align);
    store->copyMetadata(
        *call, {LLVMContext::MD_tbaa, LLVMContext::MD_alias_scope, LLVMContext::MD_noalias});
    call->eraseFromParent();
  }
  return stores.size();
}

} // namespace mhac
