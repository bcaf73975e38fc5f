//===- LoweredLayer.cpp - what the pipeline leaves of a layer -------------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "compiler/target/LoweredLayer.h"

#include "compiler/conversion/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;

namespace mhac {

std::string kernelSymbol(const LayerABI &layer) { return "mhac_kernel_" + layer.name; }

std::string preparationSymbol(const LayerABI &layer) {
  return (kPreparationPrefix + layer.name).str();
}

LogicalResult readPreparedLayout(ModuleOp module, std::vector<LayerABI> &layers) {
  for (LayerABI &layer : layers) {
    auto prepare = module.lookupSymbol<func::FuncOp>(preparationSymbol(layer));
    if (!prepare)
      return module.emitError("no preparation function for layer '") << layer.name << "'";
    ArrayRef<Type> prepared = prepare.getResultTypes();
    layer.preparedBytes = 0;
    size_t next = 0;
    for (TensorABI &tensor : layer.tensors) {
      if (!tensor.isParameter)
        continue;
      auto type = next < prepared.size() ? dyn_cast<RankedTensorType>(prepared[next]) : nullptr;
      if (!type || !type.hasStaticShape())
        return prepare.emitError("prepared parameters do not match the layer's");
      ++next;
      appendPrepared(layer, tensor, std::vector<int64_t>(type.getShape()),
                     type.getElementTypeBitWidth() / 8);
    }
    if (next != prepared.size())
      return prepare.emitError("prepared parameters do not match the layer's");
  }
  return success();
}

} // namespace mhac
