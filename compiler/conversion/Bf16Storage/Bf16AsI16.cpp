//===- Bf16AsI16.cpp - bf16 values travel as their 16 bits ----------------===//
//
// Part of mhac.
//
// By the time a layer reaches the LLVM dialect, arith-expand has turned every conversion between
// bf16 and f32 into integer operations: bf16 values are only loaded, stored, selected and passed
// through block arguments. LLVM's x86 backend without AVX512-BF16 still promotes each bf16 SSA
// value (a phi of unrolled masked reads, a select) to f32 element by element through calls to
// __truncsfbf2, which is slow and which libgcc before GCC 13 does not define. Retyping those
// values to i16, which is what they are, leaves LLVM nothing to promote.
//
//===----------------------------------------------------------------------===//

#include "compiler/conversion/Passes.h"

#include "mlir/IR/BuiltinAttributes.h"

namespace mhac {
#define GEN_PASS_DEF_BF16ASI16
#include "compiler/conversion/Passes.h.inc"
} // namespace mhac

using namespace mlir;

namespace mhac {
namespace {

/// `type` with every bf16 in it (as a scalar, a vector element or an array element) replaced by
/// i16; null when it holds no bf16.
Type retype(Type type) {
  if (type.isBF16())
    return IntegerType::get(type.getContext(), 16);
  if (auto vector = dyn_cast<VectorType>(type)) {
    Type element = retype(vector.getElementType());
    return element ? vector.clone(element) : Type();
  }
  if (auto array = dyn_cast<LLVM::LLVMArrayType>(type)) {
    Type element = retype(array.getElementType());
    return element ? LLVM::LLVMArrayType::get(element, array.getNumElements()) : Type();
  }
  return {};
}

/// The same constant with bf16 bits as i16 integers; null when it holds no bf16.
Attribute retype(Attribute value) {
  if (auto dense = dyn_cast<DenseElementsAttr>(value)) {
    auto shaped = cast<ShapedType>(dense.getType());
    if (!shaped.getElementType().isBF16())
      return {};
    return dense.bitcast(IntegerType::get(value.getContext(), 16));
  }
  if (auto scalar = dyn_cast<FloatAttr>(value); scalar && scalar.getType().isBF16())
    return IntegerAttr::get(IntegerType::get(value.getContext(), 16),
                            scalar.getValue().bitcastToAPInt());
  return {};
}

/// AVX512-BF16's dot products and conversions, which compute on bf16 itself (vdpbf16ps,
/// vcvtneps2bf16): their operands are bit-cast back to bf16 where they are used, their
/// results to i16 where they are made.
bool computesOnBf16(Operation *op) {
  auto intrinsic = dyn_cast<LLVM::CallIntrinsicOp>(op);
  return intrinsic && intrinsic.getIntrin().starts_with("llvm.x86.avx512bf16.");
}

/// Ops that only move bits: their bf16 operands and results may be i16 instead.
bool onlyMovesBits(Operation *op) {
  return isa<LLVM::LoadOp, LLVM::StoreOp, LLVM::SelectOp, LLVM::InsertValueOp, LLVM::ExtractValueOp,
             LLVM::InsertElementOp, LLVM::ExtractElementOp, LLVM::ShuffleVectorOp, LLVM::BitcastOp,
             LLVM::ConstantOp, LLVM::ZeroOp, LLVM::UndefOp, LLVM::PoisonOp, LLVM::MaskedLoadOp,
             LLVM::MaskedStoreOp, LLVM::BrOp, LLVM::CondBrOp, LLVM::GEPOp>(op);
}

struct Bf16AsI16 : impl::Bf16AsI16Base<Bf16AsI16> {
  void runOnOperation() override {
    WalkResult walk = getOperation()->walk([&](Operation *op) -> WalkResult {
      bool touchesBf16 = llvm::any_of(op->getOperandTypes(), [](Type t) { return retype(t); }) ||
                         llvm::any_of(op->getResultTypes(), [](Type t) { return retype(t); });
      if (touchesBf16 && !onlyMovesBits(op) && !computesOnBf16(op))
        return op->emitOpError("computes on bf16 values, which should have been expanded "
                               "into integer operations before the LLVM dialect");
      for (Region &region : op->getRegions())
        for (Block &block : region)
          for (BlockArgument argument : block.getArguments())
            if (Type type = retype(argument.getType()))
              argument.setType(type);
      if (!computesOnBf16(op))
        for (OpResult result : op->getResults())
          if (Type type = retype(result.getType()))
            result.setType(type);
      if (auto constant = dyn_cast<LLVM::ConstantOp>(op))
        if (Attribute value = retype(constant.getValue()))
          constant.setValueAttr(cast<TypedAttr>(value));
      if (auto gep = dyn_cast<LLVM::GEPOp>(op))
        if (Type element = retype(gep.getElemType()))
          gep.setElemType(element);
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return signalPassFailure();
    getOperation()->walk([](Operation *op) {
      if (!computesOnBf16(op))
        return;
      OpBuilder b(op);
      for (OpOperand &operand : op->getOpOperands()) {
        auto vector = dyn_cast<VectorType>(operand.get().getType());
        if (vector && vector.getElementType().isInteger(16))
          operand.set(LLVM::BitcastOp::create(b, op->getLoc(),
                                              vector.clone(BFloat16Type::get(op->getContext())),
                                              operand.get()));
      }
      b.setInsertionPointAfter(op);
      for (OpResult result : op->getResults())
        if (Type type = retype(result.getType())) {
          auto bits = LLVM::BitcastOp::create(b, op->getLoc(), type, result);
          result.replaceAllUsesExcept(bits, bits);
        }
    });
    // Bitcasts between bf16 and i16 (from the expanded conversions) now cast i16 to itself.
    getOperation()->walk([](LLVM::BitcastOp cast) {
      if (cast.getArg().getType() == cast.getType()) {
        cast.replaceAllUsesWith(cast.getArg());
        cast.erase();
      }
    });
  }
};

} // namespace
} // namespace mhac
