//===- SplitWeightPreparation.cpp - weight packing into its own function --===//
//
// Part of mhac.
//
// convert-mha-to-linalg marks the arguments that hold a layer's parameters (`mhac.parameter`)
// and the values that rearrange a weight into the layout its kernel reads
// (`mhac.prepared_weight`). For a layer @NAME this pass moves those rearrangements into
//
//   func.func @mhac_prepare_NAME(parameters...) -> (prepared parameters...)
//
// and makes @NAME take each weight in its prepared layout, in the argument position of the
// original (a parameter that needs no preparation, a bias, is returned as it is). A program
// then prepares its weights once and runs the layer many times.
//
//===----------------------------------------------------------------------===//

#include "compiler/conversion/Passes.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/IR/IRMapping.h"

namespace mhac {
#define GEN_PASS_DEF_SPLITWEIGHTPREPARATION
#include "compiler/conversion/Passes.h.inc"
} // namespace mhac

using namespace mlir;

namespace mhac {
namespace {

/// The preparation of one weight: the ops computing `prepared` from `weight`, in order.
struct Preparation {
  BlockArgument weight;
  Value prepared;
  SetVector<Operation *> slice;
};

/// Finds the preparation of every marked value of `layer`; fails if one depends on anything but
/// a single parameter and operand-free ops (tensor.empty, constants), or if a prepared weight
/// has another use.
FailureOr<SmallVector<Preparation>> findPreparations(func::FuncOp layer) {
  SmallVector<Preparation> preparations;
  WalkResult walk = layer.walk([&](Operation *op) {
    if (!op->hasAttr(kPreparedWeightAttr))
      return WalkResult::advance();
    Preparation preparation;
    preparation.prepared = op->getResult(0);
    BackwardSliceOptions options;
    options.inclusive = true;
    if (failed(getBackwardSlice(op, &preparation.slice, options)))
      return WalkResult(op->emitError("cannot follow the preparation of this weight"));
    for (Operation *member : preparation.slice) {
      for (Value operand : member->getOperands()) {
        auto arg = dyn_cast<BlockArgument>(operand);
        if (!arg)
          continue;
        if (!layer.getArgAttr(arg.getArgNumber(), kParameterAttr) ||
            (preparation.weight && preparation.weight != arg))
          return WalkResult(op->emitError("a weight preparation must read one parameter only"));
        preparation.weight = arg;
      }
    }
    if (!preparation.weight)
      return WalkResult(op->emitError("a weight preparation must read a parameter"));
    for (Operation *user : preparation.weight.getUsers())
      if (!preparation.slice.contains(user))
        return WalkResult(user->emitError("a prepared weight is also read unprepared"));
    preparations.push_back(std::move(preparation));
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  return preparations;
}

LogicalResult split(func::FuncOp layer) {
  FailureOr<SmallVector<Preparation>> preparations = findPreparations(layer);
  if (failed(preparations))
    return failure();

  // The preparation function: every parameter in, each prepared (or as it is) out.
  MLIRContext *ctx = layer.getContext();
  SmallVector<BlockArgument> parameters;
  for (BlockArgument arg : layer.getArguments())
    if (layer.getArgAttr(arg.getArgNumber(), kParameterAttr))
      parameters.push_back(arg);
  SmallVector<Type> inputTypes;
  SmallVector<Location> inputLocs;
  for (BlockArgument parameter : parameters) {
    inputTypes.push_back(parameter.getType());
    inputLocs.push_back(parameter.getLoc());
  }
  OpBuilder moduleBuilder(layer);
  std::string name = (kPreparationPrefix + layer.getSymName()).str();
  auto prepare = func::FuncOp::create(moduleBuilder, layer.getLoc(), name,
                                      FunctionType::get(ctx, inputTypes, {}));
  Block *entry = prepare.addEntryBlock();
  for (auto [arg, loc] : llvm::zip(entry->getArguments(), inputLocs))
    arg.setLoc(loc);
  OpBuilder b = OpBuilder::atBlockBegin(entry);
  IRMapping mapping;
  for (auto [parameter, arg] : llvm::zip(parameters, entry->getArguments()))
    mapping.map(parameter, arg);
  SmallVector<Value> results;
  for (auto [parameter, arg] : llvm::zip(parameters, entry->getArguments())) {
    const Preparation *preparation =
        llvm::find_if(*preparations, [weight = Value(parameter)](const Preparation &p) {
          return p.weight == weight;
        });
    if (preparation == preparations->end()) {
      results.push_back(arg);
      continue;
    }
    for (Operation *op : preparation->slice)
      if (!mapping.contains(op->getResult(0)))
        b.clone(*op, mapping);
    Value prepared = mapping.lookup(preparation->prepared);
    prepared.getDefiningOp()->removeAttr(kPreparedWeightAttr);
    results.push_back(prepared);
  }
  func::ReturnOp::create(b, layer.getLoc(), results);
  prepare.setFunctionType(FunctionType::get(ctx, inputTypes, ValueRange(results).getTypes()));

  // The layer reads each prepared weight straight from its argument.
  for (Preparation &preparation : *preparations) {
    preparation.weight.setType(preparation.prepared.getType());
    preparation.prepared.replaceAllUsesWith(preparation.weight);
    for (Operation *op : llvm::reverse(preparation.slice))
      if (op->use_empty())
        op->erase();
  }
  layer.setFunctionType(
      FunctionType::get(ctx, layer.getBody().getArgumentTypes(), layer.getResultTypes()));
  // The marks have served: the preparation function now says which arguments are parameters.
  layer.removeArgAttrsAttr();
  return success();
}

struct SplitWeightPreparationPass
    : impl::SplitWeightPreparationBase<SplitWeightPreparationPass> {
  void runOnOperation() override {
    SmallVector<func::FuncOp> layers;
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      bool hasParameters = false;
      for (unsigned i = 0; i < func.getNumArguments(); ++i)
        hasParameters |= static_cast<bool>(func.getArgAttr(i, kParameterAttr));
      if (!func.isExternal() && hasParameters)
        layers.push_back(func);
    }
    for (func::FuncOp layer : layers)
      if (failed(split(layer)))
        return signalPassFailure();
  }
};

} // namespace
} // namespace mhac
