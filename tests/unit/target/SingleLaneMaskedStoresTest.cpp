//===- SingleLaneMaskedStoresTest.cpp - masked stores of one lane ---------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "compiler/target/SingleLaneMaskedStores.h"

#include "llvm/AsmParser/Parser.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Support/SourceMgr.h"

#include <gtest/gtest.h>

using namespace llvm;

namespace {

/// Three masked stores of 16 x i16: lane 5 alone, lanes 0 to 2, and lane 0 alone of a truncated
/// vector (what Halide writes for a bf16 row's last feature).
constexpr const char *kStores = R"(
define void @stores(<16 x i16> %v, <16 x i32> %w, ptr %p, ptr %q, ptr %r) {
  call void @llvm.masked.store.v16i16.p0(<16 x i16> %v, ptr align 32 %p, <16 x i1> <i1 false, i1 false, i1 false, i1 false, i1 false, i1 true, i1 false, i1 false, i1 false, i1 false, i1 false, i1 false, i1 false, i1 false, i1 false, i1 false>)
  call void @llvm.masked.store.v16i16.p0(<16 x i16> %v, ptr align 2 %q, <16 x i1> <i1 true, i1 true, i1 true, i1 false, i1 false, i1 false, i1 false, i1 false, i1 false, i1 false, i1 false, i1 false, i1 false, i1 false, i1 false, i1 false>)
  %t = trunc <16 x i32> %w to <16 x i16>
  call void @llvm.masked.store.v16i16.p0(<16 x i16> %t, ptr align 2 %r, <16 x i1> <i1 true, i1 false, i1 false, i1 false, i1 false, i1 false, i1 false, i1 false, i1 false, i1 false, i1 false, i1 false, i1 false, i1 false, i1 false, i1 false>)
  ret void
}
declare void @llvm.masked.store.v16i16.p0(<16 x i16>, ptr, <16 x i1>)
)";

TEST(SingleLaneMaskedStores, BecomePlainStoresOfTheirLane) {
  LLVMContext context;
  SMDiagnostic diagnostic;
  std::unique_ptr<Module> module = parseAssemblyString(kStores, diagnostic, context);
  ASSERT_TRUE(module) << diagnostic.getMessage().str();

  EXPECT_EQ(mhac::scalarizeSingleLaneMaskedStores(*module), 2u);
  EXPECT_FALSE(verifyModule(*module, &errs()));

  Function *fn = module->getFunction("stores");
  SmallVector<StoreInst *> stores;
  int maskedStores = 0;
  for (Instruction &instruction : instructions(fn)) {
    if (auto *store = dyn_cast<StoreInst>(&instruction))
      stores.push_back(store);
    if (auto *call = dyn_cast<IntrinsicInst>(&instruction))
      maskedStores += call->getIntrinsicID() == Intrinsic::masked_store;
  }
  EXPECT_EQ(maskedStores, 1) << "the store of three lanes stays masked";
  ASSERT_EQ(stores.size(), 2u);

  // Lane 5 of %v: 16 bits, 10 bytes into %p, whose 32-byte alignment leaves 2 there.
  StoreInst *lane5 = stores[0];
  EXPECT_TRUE(lane5->getValueOperand()->getType()->isIntegerTy(16));
  auto *element = cast<ExtractElementInst>(lane5->getValueOperand());
  EXPECT_EQ(element->getVectorOperand(), fn->getArg(0));
  EXPECT_EQ(cast<ConstantInt>(element->getIndexOperand())->getZExtValue(), 5u);
  auto *address = cast<GetElementPtrInst>(lane5->getPointerOperand());
  EXPECT_EQ(address->getPointerOperand(), fn->getArg(2));
  EXPECT_EQ(lane5->getAlign().value(), 2u);

  // Lane 0 of the truncation: 16 bits at %r itself.
  StoreInst *lane0 = stores[1];
  EXPECT_TRUE(lane0->getValueOperand()->getType()->isIntegerTy(16));
  EXPECT_EQ(lane0->getPointerOperand(), fn->getArg(4));
}

} // namespace
