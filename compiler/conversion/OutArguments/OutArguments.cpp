//===- OutArguments.cpp - layer results into caller-owned buffers ---------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "compiler/conversion/Passes.h"

namespace mhac {
#define GEN_PASS_DEF_LAYERRESULTSTOOUTARGUMENTS
#include "compiler/conversion/Passes.h.inc"
} // namespace mhac

using namespace mlir;

namespace mhac {
namespace {

struct LayerResultsToOutArgumentsPass
    : impl::LayerResultsToOutArgumentsBase<LayerResultsToOutArgumentsPass> {
  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (func.isExternal() || func.getNumResults() == 0)
        continue;
      SmallVector<Type> inputs(func.getArgumentTypes());
      SmallVector<BlockArgument> outs;
      for (Type result : func.getResultTypes()) {
        auto tensorType = dyn_cast<RankedTensorType>(result);
        if (!tensorType) {
          func.emitError("layer results must be ranked tensors");
          return signalPassFailure();
        }
        auto memrefType = MemRefType::get(tensorType.getShape(), tensorType.getElementType());
        inputs.push_back(memrefType);
        outs.push_back(func.getBody().addArgument(
            memrefType, NameLoc::get(StringAttr::get(&getContext(), "out"), func.getLoc())));
      }
      func.setFunctionType(FunctionType::get(&getContext(), inputs, {}));
      func.walk([&](func::ReturnOp ret) {
        OpBuilder b(ret);
        for (auto [value, out] : llvm::zip(ret.getOperands(), outs)) {
          auto materialize = bufferization::MaterializeInDestinationOp::create(
              b, ret.getLoc(), TypeRange{}, value, out);
          materialize.setRestrict(true);
          materialize.setWritable(true);
        }
        func::ReturnOp::create(b, ret.getLoc());
        ret.erase();
      });
    }
  }
};

} // namespace
} // namespace mhac
