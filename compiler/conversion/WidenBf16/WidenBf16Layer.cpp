//===- WidenBf16Layer.cpp - a bf16 layer computed in f32 ------------------===//
//
// Part of mhac. The widening happens once per tensor, at the layer's edges: an input row is
// widened once, not once per weight panel that reads it, and the weights once per set of
// weights, in their preparation. The cost is the f32 copies of the inputs (B·S·D elements, and
// B·Skv·kv_dim for cross-attention's memory), small beside the projections' 2·D flops per
// element.
//
//===----------------------------------------------------------------------===//

#include "compiler/conversion/Passes.h"
#include "compiler/conversion/Utils/ConvertElements.h"
#include "dialects/mha/IR/MhaOps.h"

#include "mlir/IR/Verifier.h"
#include "llvm/ADT/MapVector.h"

namespace mhac {
#define GEN_PASS_DEF_WIDENBF16LAYER
#include "compiler/conversion/Passes.h.inc"
} // namespace mhac

using namespace mlir;

namespace mhac {
namespace {

bool isBf16Tensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.getElementType().isBF16();
}

/// The projections `attention` reads, where all three of its operands are projections of
/// `widened` that only attentions read as operands; else none.
SmallVector<mha::LinearOp, 3> operandProjections(mha::AttentionOp attention,
                                                 const llvm::DenseSet<Operation *> &widened) {
  SmallVector<mha::LinearOp, 3> projections;
  for (Value operand : {Value(attention.getQuery()), attention.getKey(), attention.getValue()}) {
    auto projection = operand.getDefiningOp<mha::LinearOp>();
    if (!projection || !widened.contains(projection) ||
        !llvm::all_of(projection->getUsers(), llvm::IsaPred<mha::AttentionOp>))
      return {};
    projections.push_back(projection);
  }
  return projections;
}

/// Makes the projections (of `widened`, those that were bf16) of every attention whose
/// operands are all such projections return bf16 again. A projection two attentions read is
/// rounded only if both qualify: no attention is left with operands of two types.
void roundAttentionOperands(func::FuncOp func, const llvm::DenseSet<Operation *> &widened) {
  llvm::MapVector<Operation *, SmallVector<mha::LinearOp, 3>> qualified;
  func.walk([&](mha::AttentionOp attention) {
    if (auto projections = operandProjections(attention, widened); !projections.empty())
      qualified[attention] = projections;
  });
  for (bool dropped = true; dropped;) {
    dropped = false;
    for (auto it = qualified.begin(); it != qualified.end(); ++it) {
      bool sharedWithOther = llvm::any_of(it->second, [&](mha::LinearOp projection) {
        return llvm::any_of(projection->getUsers(),
                            [&](Operation *reader) { return !qualified.contains(reader); });
      });
      if (sharedWithOther) {
        qualified.erase(it);
        dropped = true;
        break;
      }
    }
  }
  Type bf16 = BFloat16Type::get(func.getContext());
  for (auto &[attention, projections] : qualified)
    for (mha::LinearOp projection : projections) {
      Value result = projection.getResult();
      result.setType(cast<RankedTensorType>(result.getType()).clone(bf16));
    }
}

struct WidenBf16LayerPass : impl::WidenBf16LayerBase<WidenBf16LayerPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    Type f32 = Float32Type::get(&getContext());
    auto widened = [&](Type type) {
      return isBf16Tensor(type) ? cast<RankedTensorType>(type).clone(f32) : type;
    };
    Block &entry = func.getBody().front();
    OpBuilder b = OpBuilder::atBlockBegin(&entry);
    for (BlockArgument arg : entry.getArguments()) {
      if (!isBf16Tensor(arg.getType()) || arg.use_empty())
        continue;
      bool parameter = llvm::any_of(arg.getUses(), mha::isParameterOperand);
      if (parameter)
        func.setArgAttr(arg.getArgNumber(), kParameterAttr, b.getUnitAttr());
      // The uses to redirect: those of the layer, not of the widening's own size queries.
      SmallVector<OpOperand *> uses;
      for (OpOperand &use : arg.getUses())
        uses.push_back(&use);
      Value wide = convertElements(b, arg.getLoc(), arg, f32,
                                   [&](OpBuilder &nested, Location at, Value element) -> Value {
                                     return arith::ExtFOp::create(nested, at, f32, element);
                                   });
      for (OpOperand *use : uses)
        use->set(wide);
    }
    llvm::DenseSet<Operation *> widenedProjections;
    func.walk([&](Operation *op) {
      if (!isa<mha::LinearOp, mha::AttentionOp, mha::RmsNormOp, mha::RopeOp>(op))
        return;
      if (isa<mha::LinearOp>(op) && isBf16Tensor(op->getResult(0).getType()))
        widenedProjections.insert(op);
      for (Value result : op->getResults())
        result.setType(widened(result.getType()));
    });
    if (bf16AttentionOperands)
      roundAttentionOperands(func, widenedProjections);
    func.walk([&](func::ReturnOp ret) {
      OpBuilder before(ret);
      for (OpOperand &operand : ret->getOpOperands()) {
        Type declared = func.getResultTypes()[operand.getOperandNumber()];
        if (!isBf16Tensor(declared) || operand.get().getType() == declared)
          continue;
        Type bf16 = cast<RankedTensorType>(declared).getElementType();
        // A projection the layer returns (and nothing else reads) stores its result rounded,
        // in its own tiles, instead of a pass over its f32 result.
        if (auto projection = operand.get().getDefiningOp<mha::LinearOp>();
            projection && operand.get().hasOneUse()) {
          operand.get().setType(declared);
          continue;
        }
        operand.set(convertElements(before, ret.getLoc(), operand.get(), bf16,
                                    [&](OpBuilder &nested, Location at, Value element) -> Value {
                                      return arith::TruncFOp::create(nested, at, bf16, element);
                                    }));
      }
    });
    if (failed(mlir::verify(func)))
      signalPassFailure();
  }
};

} // namespace
} // namespace mhac
