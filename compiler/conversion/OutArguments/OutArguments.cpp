//===- OutArguments.cpp - layer results into caller-owned buffers ---------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "compiler/conversion/Passes.h"

#include "mlir/Interfaces/DestinationStyleOpInterface.h"

namespace mhac {
#define GEN_PASS_DEF_LAYERRESULTSTOOUTARGUMENTS
#include "compiler/conversion/Passes.h.inc"
} // namespace mhac

using namespace mlir;

namespace mhac {
namespace {

/// The use of a tensor.empty of `result`'s type that `result` is computed in, found by walking
/// back through the ops that write their destination in place: reshapes (their source),
/// destination-style ops such as insert_slice and the tiles' linalg ops (their tied init) and
/// scf.forall (its shared output). Null when the walk ends anywhere else.
OpOperand *findResultTensor(Value result) {
  OpOperand *use = nullptr;
  Value value = result;
  while (Operation *op = value.getDefiningOp()) {
    if (isa<tensor::EmptyOp>(op))
      return value.getType() == result.getType() ? use : nullptr;
    auto opResult = cast<OpResult>(value);
    if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(op))
      use = &op->getOpOperand(0);
    else if (auto forall = dyn_cast<scf::ForallOp>(op))
      use = forall.getTiedOpOperand(opResult);
    else if (auto destination = dyn_cast<DestinationStyleOpInterface>(op))
      use = destination.getTiedOpOperand(opResult);
    else
      return nullptr;
    value = use->get();
  }
  return nullptr;
}

struct LayerResultsToOutArgumentsPass
    : impl::LayerResultsToOutArgumentsBase<LayerResultsToOutArgumentsPass> {
  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (func.isExternal() || func.getNumResults() == 0)
        continue;
      SmallVector<Type> results(func.getResultTypes());
      SmallVector<BlockArgument> outs;
      for (Type result : results) {
        auto tensorType = dyn_cast<RankedTensorType>(result);
        if (!tensorType) {
          func.emitError("layer results must be ranked tensors");
          return signalPassFailure();
        }
        auto memrefType = MemRefType::get(tensorType.getShape(), tensorType.getElementType());
        // insertArgument keeps the argument attributes in step with the arguments.
        unsigned index = func.getNumArguments();
        if (failed(func.insertArgument(
                index, memrefType, DictionaryAttr::get(&getContext()),
                NameLoc::get(StringAttr::get(&getContext(), "out"), func.getLoc()))))
          return signalPassFailure();
        outs.push_back(func.getArgument(index));
      }
      func.setFunctionType(FunctionType::get(&getContext(), func.getArgumentTypes(), {}));
      func.walk([&](func::ReturnOp ret) {
        OpBuilder b(ret);
        for (auto [value, out] : llvm::zip(ret.getOperands(), outs)) {
          auto materialize = bufferization::MaterializeInDestinationOp::create(
              b, ret.getLoc(), TypeRange{}, value, out);
          materialize.setWritable(true);
          // A result computed in a fresh tensor of its own type is computed in `out` itself:
          // that tensor becomes `out`'s (its to_tensor takes over `restrict`), and
          // bufferization leaves nothing to copy. eliminate-empty-tensors would not find it
          // behind the reshapes of a projection's weight panels.
          OpOperand *resultTensor = findResultTensor(value);
          if (!resultTensor) {
            materialize.setRestrict(true);
            continue;
          }
          OpBuilder atEntry = OpBuilder::atBlockBegin(&func.getBody().front());
          resultTensor->set(bufferization::ToTensorOp::create(atEntry, func.getLoc(),
                                                              value.getType(), out,
                                                              /*restrict=*/true,
                                                              /*writable=*/true));
        }
        func::ReturnOp::create(b, ret.getLoc());
        ret.erase();
      });
    }
  }
};

} // namespace
} // namespace mhac
