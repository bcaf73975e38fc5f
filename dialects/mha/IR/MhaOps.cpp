//===- MhaOps.cpp - mha dialect operations --------------------------------===//
//
// Part of mhac. Verifiers: a layer's IR is checked here once, so that every lowering may rely on
// consistent shapes instead of re-checking them.
//
//===----------------------------------------------------------------------===//

#include "dialects/mha/IR/MhaOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

#include <cmath>

using namespace mlir;
using namespace mhac::mha;

#define GET_OP_CLASSES
#include "dialects/mha/IR/MhaOps.cpp.inc"

/// Prints a dimension the way MLIR types do: a number, or `?` when dynamic.
static std::string formatDim(int64_t dim) {
  return ShapedType::isDynamic(dim) ? std::string("?") : std::to_string(dim);
}

/// Two dimensions are compatible when they are equal or one of them is only known at run time.
static bool areCompatibleDims(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

//===----------------------------------------------------------------------===//
// LinearOp
//===----------------------------------------------------------------------===//

LogicalResult LinearOp::verify() {
  auto inputType = getInput().getType();
  auto weightType = getWeight().getType();
  auto resultType = getResult().getType();
  Type elementType = inputType.getElementType();

  if (weightType.getElementType() != elementType ||
      (getBias() && getBias().getType().getElementType() != elementType))
    return emitOpError("requires input, weight and bias to share one element type");
  if (resultType.getElementType() != elementType && !resultType.getElementType().isBF16())
    return emitOpError("requires a result of the input's element type, or bf16");

  if (!weightType.hasStaticShape())
    return emitOpError("requires a weight of static shape, got ") << weightType;
  int64_t outFeatures = weightType.getDimSize(0);
  int64_t inFeatures = weightType.getDimSize(1);

  int64_t rank = inputType.getRank();
  if (rank < 1)
    return emitOpError("requires an input of rank 1 or more");
  if (inputType.getDimSize(rank - 1) != inFeatures)
    return emitOpError("input features (")
           << formatDim(inputType.getDimSize(rank - 1))
           << ") must equal the weight's second dimension (" << inFeatures << ")";

  if (getBias() && getBias().getType().getDimSize(0) != outFeatures)
    return emitOpError("bias size (")
           << formatDim(getBias().getType().getDimSize(0))
           << ") must equal the weight's first dimension (" << outFeatures << ")";

  if (resultType.getRank() != rank)
    return emitOpError("result rank (")
           << resultType.getRank() << ") must equal the input rank (" << rank << ")";
  for (int64_t i = 0; i + 1 < rank; ++i)
    if (resultType.getDimSize(i) != inputType.getDimSize(i))
      return emitOpError("result dimension ")
             << i << " (" << formatDim(resultType.getDimSize(i)) << ") must equal the input's ("
             << formatDim(inputType.getDimSize(i)) << ")";
  if (resultType.getDimSize(rank - 1) != outFeatures)
    return emitOpError("result features (")
           << formatDim(resultType.getDimSize(rank - 1))
           << ") must equal the weight's first dimension (" << outFeatures << ")";
  return success();
}

//===----------------------------------------------------------------------===//
// AttentionOp
//===----------------------------------------------------------------------===//

LogicalResult AttentionOp::verify() {
  auto queryType = getQuery().getType();
  auto keyType = getKey().getType();
  int64_t heads = getHeads();
  int64_t kvHeads = getKvHeads();
  int64_t headDim = getHeadDim();

  if (queryType.getElementType() != keyType.getElementType())
    return emitOpError("requires query, key and value to share one element type");
  if (heads % kvHeads != 0)
    return emitOpError("kv_heads (") << kvHeads << ") must divide heads (" << heads << ")";

  float scale = getScale().convertToFloat();
  if (!std::isfinite(scale))
    return emitOpError("requires a finite scale");

  if (queryType.getDimSize(2) != heads * headDim)
    return emitOpError("query width (")
           << formatDim(queryType.getDimSize(2)) << ") must equal heads * head_dim (" << heads
           << " * " << headDim << ")";
  if (keyType.getDimSize(2) != kvHeads * headDim)
    return emitOpError("key and value width (")
           << formatDim(keyType.getDimSize(2)) << ") must equal kv_heads * head_dim (" << kvHeads
           << " * " << headDim << ")";

  int64_t batch = queryType.getDimSize(0);
  if (!areCompatibleDims(batch, keyType.getDimSize(0)))
    return emitOpError("query batch (")
           << formatDim(batch) << ") does not match key and value batch ("
           << formatDim(keyType.getDimSize(0)) << ")";
  if (getKvLens() && !areCompatibleDims(batch, getKvLens().getType().getDimSize(0)))
    return emitOpError("kv_lens size (")
           << formatDim(getKvLens().getType().getDimSize(0)) << ") does not match the batch ("
           << formatDim(batch) << ")";
  return success();
}
