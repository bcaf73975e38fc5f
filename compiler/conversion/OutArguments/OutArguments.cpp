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
