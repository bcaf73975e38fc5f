//===- ConvertElements.cpp - a tensor converted element by element --------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "compiler/conversion/Utils/ConvertElements.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;

namespace mhac {

Value convertElements(OpBuilder &b, Location loc, Value value, Type element,
                      function_ref<Value(OpBuilder &, Location, Value)> convert) {
  auto type = cast<RankedTensorType>(value.getType());
  SmallVector<Value> dynamicSizes;
  for (int64_t i = 0; i < type.getRank(); ++i)
    if (type.isDynamicDim(i))
      dynamicSizes.push_back(tensor::DimOp::create(b, loc, value, i));
  Value empty = tensor::EmptyOp::create(b, loc, type.getShape(), element, dynamicSizes);
  return convertElementsInto(b, loc, value, empty, convert);
}

Value convertElementsInto(OpBuilder &b, Location loc, Value value, Value destination,
                          function_ref<Value(OpBuilder &, Location, Value)> convert) {
  int64_t rank = cast<RankedTensorType>(value.getType()).getRank();
  AffineMap identity = AffineMap::getMultiDimIdentityMap(rank, b.getContext());
  SmallVector<utils::IteratorType> parallel(rank, utils::IteratorType::parallel);
  return linalg::GenericOp::create(b, loc, destination.getType(), ValueRange{value},
                                   ValueRange{destination},
                                   ArrayRef<AffineMap>{identity, identity}, parallel,
                                   [&](OpBuilder &nested, Location at, ValueRange args) {
                                     linalg::YieldOp::create(nested, at,
                                                             convert(nested, at, args[0]));
                                   })
      .getResult(0);
}

} // namespace mhac
