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

#include "dialects/mha/IR/MhaEnums.cpp.inc"

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
  int64_t heads = getHeads();
  int64_t kvHeads = getKvHeads();
  int64_t headDim = getHeadDim();

  if (heads % kvHeads != 0)
    return emitOpError("kv_heads (") << kvHeads << ") must divide heads (" << heads << ")";

  float scale = getScale().convertToFloat();
  if (!std::isfinite(scale))
    return emitOpError("requires a finite scale");
  if (getSoftcap()) {
    float softcap = getSoftcap()->convertToFloat();
    if (!(softcap > 0) || !std::isfinite(softcap))
      return emitOpError("requires a positive finite softcap");
  }

  if (queryType.getDimSize(2) != heads * headDim)
    return emitOpError("query width (")
           << formatDim(queryType.getDimSize(2)) << ") must equal heads * head_dim (" << heads
           << " * " << headDim << ")";

  // Keys: a tensor [B, Skv, kv_heads * head_dim], or a cache [B, N, kv_heads, head_dim] with
  // cache_len.
  auto keyType = cast<ShapedType>(getKey().getType());
  int64_t batch = queryType.getDimSize(0);
  if (readsCache()) {
    if (!getCacheLen())
      return emitOpError("reads its keys and values from caches, and needs cache_len");
    if (getKvLens())
      return emitOpError("takes cache_len or kv_lens, not both");
    if (keyType.getDimSize(2) != kvHeads || keyType.getDimSize(3) != headDim)
      return emitOpError("caches [B, N, ")
             << formatDim(keyType.getDimSize(2)) << ", " << formatDim(keyType.getDimSize(3))
             << "] must have kv_heads (" << kvHeads << ") and head_dim (" << headDim
             << ") as their last dimensions";
    if (ShapedType::isDynamic(keyType.getDimSize(1)))
      return emitOpError("requires caches of a static length");
  } else {
    if (getCacheLen())
      return emitOpError("takes cache_len only with caches (memrefs) as keys and values");
    if (queryType.getElementType() != keyType.getElementType())
      return emitOpError("requires query, key and value to share one element type");
    if (keyType.getDimSize(2) != kvHeads * headDim)
      return emitOpError("key and value width (")
             << formatDim(keyType.getDimSize(2)) << ") must equal kv_heads * head_dim ("
             << kvHeads << " * " << headDim << ")";
  }

  if (!areCompatibleDims(batch, keyType.getDimSize(0)))
    return emitOpError("query batch (")
           << formatDim(batch) << ") does not match key and value batch ("
           << formatDim(keyType.getDimSize(0)) << ")";
  for (Value lengths : {getKvLens(), getCacheLen()})
    if (lengths && !areCompatibleDims(batch, cast<ShapedType>(lengths.getType()).getDimSize(0)))
      return emitOpError(lengths == getKvLens() ? "kv_lens" : "cache_len")
             << " size (" << formatDim(cast<ShapedType>(lengths.getType()).getDimSize(0))
             << ") does not match the batch (" << formatDim(batch) << ")";
  if (getSinks() && getSinks().getType().getDimSize(0) != heads)
    return emitOpError("sinks size (")
           << formatDim(getSinks().getType().getDimSize(0)) << ") must equal heads (" << heads
           << ")";
  return success();
}

void AttentionOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>> &effects) {
  // Tensors are values; a decoder layer's caches are memory the op reads.
  for (OpOperand &operand : getOperation()->getOpOperands())
    if (isa<MemRefType>(operand.get().getType()))
      effects.emplace_back(MemoryEffects::Read::get(), &operand,
                           SideEffects::DefaultResource::get());
}

//===----------------------------------------------------------------------===//
// RmsNormOp
//===----------------------------------------------------------------------===//

LogicalResult RmsNormOp::verify() {
  int64_t width = getInput().getType().getDimSize(2);
  if (width != static_cast<int64_t>(getHeads() * getHeadDim()))
    return emitOpError("input width (") << formatDim(width) << ") must equal heads * head_dim ("
                                        << getHeads() << " * " << getHeadDim() << ")";
  if (getWeight().getType().getDimSize(0) != static_cast<int64_t>(getHeadDim()))
    return emitOpError("weight size (")
           << formatDim(getWeight().getType().getDimSize(0)) << ") must equal head_dim ("
           << getHeadDim() << ")";
  double eps = getEps().convertToDouble();
  if (!(eps > 0) || !std::isfinite(eps))
    return emitOpError("requires a positive finite eps");
  return success();
}

//===----------------------------------------------------------------------===//
// RopeOp
//===----------------------------------------------------------------------===//

mhac::reference::RopeParameters RopeOp::getParameters() {
  namespace reference = mhac::reference;
  reference::RopeParameters rope;
  rope.kind = getKind() == RopeKind::half ? reference::RopeKind::Half
                                          : reference::RopeKind::Interleaved;
  rope.base = getBase().convertToDouble();
  rope.dim = getDim();
  switch (getScaling().value_or(RopeScaling::none)) {
  case RopeScaling::none:
    rope.scaling = reference::RopeScaling::None;
    break;
  case RopeScaling::linear:
    rope.scaling = reference::RopeScaling::Linear;
    break;
  case RopeScaling::llama3:
    rope.scaling = reference::RopeScaling::Llama3;
    break;
  case RopeScaling::yarn:
    rope.scaling = reference::RopeScaling::Yarn;
    break;
  }
  auto number = [](std::optional<APFloat> value) {
    return value ? value->convertToDouble() : 0.0;
  };
  rope.factor = number(getFactor());
  rope.lowFreqFactor = number(getLowFreqFactor());
  rope.highFreqFactor = number(getHighFreqFactor());
  rope.originalMax = static_cast<int64_t>(getOriginalMax().value_or(0));
  rope.betaFast = number(getBetaFast());
  rope.betaSlow = number(getBetaSlow());
  rope.truncate = getTruncate().value_or(true);
  rope.attentionFactor = number(getAttentionFactor());
  return rope;
}

LogicalResult RopeOp::verify() {
  int64_t width = getInput().getType().getDimSize(2);
  if (width != static_cast<int64_t>(getHeads() * getHeadDim()))
    return emitOpError("input width (") << formatDim(width) << ") must equal heads * head_dim ("
                                        << getHeads() << " * " << getHeadDim() << ")";
  if (getDim() % 2 != 0 || getDim() > getHeadDim())
    return emitOpError("dim (") << getDim() << ") must be even and at most head_dim ("
                                << getHeadDim() << ")";
  double base = getBase().convertToDouble();
  if (!(base > 0) || !std::isfinite(base))
    return emitOpError("requires a positive finite base");
  if (getPositions() && !areCompatibleDims(getInput().getType().getDimSize(0),
                                           getPositions().getType().getDimSize(0)))
    return emitOpError("positions size (")
           << formatDim(getPositions().getType().getDimSize(0)) << ") does not match the batch ("
           << formatDim(getInput().getType().getDimSize(0)) << ")";

  // Each scaling's parameters, exactly: those it needs given and positive, no others.
  RopeScaling scaling = getScaling().value_or(RopeScaling::none);
  struct Parameter {
    StringRef name;
    bool given, positive, usedBy[4];
  };
  auto positive = [](std::optional<APFloat> value) {
    return !value || (value->convertToDouble() > 0 && value->isFinite());
  };
  //                                 none   linear llama3 yarn
  Parameter parameters[] = {
      {"factor", bool(getFactor()), positive(getFactor()), {false, true, true, true}},
      {"low_freq_factor", bool(getLowFreqFactor()), positive(getLowFreqFactor()),
       {false, false, true, false}},
      {"high_freq_factor", bool(getHighFreqFactor()), positive(getHighFreqFactor()),
       {false, false, true, false}},
      {"original_max", bool(getOriginalMax()), true, {false, false, true, true}},
      {"beta_fast", bool(getBetaFast()), positive(getBetaFast()), {false, false, false, true}},
      {"beta_slow", bool(getBetaSlow()), positive(getBetaSlow()), {false, false, false, true}},
  };
  auto index = static_cast<size_t>(scaling);
  for (const Parameter &parameter : parameters) {
    if (parameter.usedBy[index] && !parameter.given)
      return emitOpError("scaling ") << stringifyRopeScaling(scaling) << " needs "
                                     << parameter.name;
    if (!parameter.usedBy[index] && parameter.given)
      return emitOpError(parameter.name)
             << " is not a parameter of scaling " << stringifyRopeScaling(scaling);
    if (!parameter.positive)
      return emitOpError("requires a positive finite ") << parameter.name;
  }
  if (scaling != RopeScaling::yarn && (getTruncate() || getAttentionFactor()))
    return emitOpError("truncate and attention_factor are parameters of scaling yarn");
  if (!positive(getAttentionFactor()))
    return emitOpError("requires a positive finite attention_factor");
  if (scaling == RopeScaling::llama3 &&
      !(getHighFreqFactor()->convertToDouble() > getLowFreqFactor()->convertToDouble()))
    return emitOpError("requires high_freq_factor above low_freq_factor");
  return success();
}

//===----------------------------------------------------------------------===//
// CacheWriteOp
//===----------------------------------------------------------------------===//

LogicalResult CacheWriteOp::verify() {
  auto inputType = getInput().getType();
  MemRefType cacheType = getCache().getType();
  int64_t rowWidth = cacheType.getDimSize(2) * cacheType.getDimSize(3);
  if (ShapedType::isDynamic(cacheType.getDimSize(1)) ||
      ShapedType::isDynamic(cacheType.getDimSize(2)) ||
      ShapedType::isDynamic(cacheType.getDimSize(3)))
    return emitOpError("requires a cache of static positions, heads and head width");
  if (inputType.getDimSize(2) != rowWidth)
    return emitOpError("input width (")
           << formatDim(inputType.getDimSize(2)) << ") must equal the cache's kv_heads * "
           << "head_dim (" << rowWidth << ")";
  int64_t batch = inputType.getDimSize(0);
  if (!areCompatibleDims(batch, cacheType.getDimSize(0)) ||
      !areCompatibleDims(batch, getPositions().getType().getDimSize(0)))
    return emitOpError("input, cache and positions must share one batch");
  return success();
}

//===----------------------------------------------------------------------===//
// Parameters
//===----------------------------------------------------------------------===//

bool mhac::mha::isParameterOperand(OpOperand &use) {
  Operation *owner = use.getOwner();
  if (auto linear = dyn_cast<LinearOp>(owner))
    return use.get() == linear.getWeight() || use.get() == linear.getBias();
  if (auto norm = dyn_cast<RmsNormOp>(owner))
    return use.get() == norm.getWeight();
  if (auto attention = dyn_cast<AttentionOp>(owner))
    return use.get() == attention.getSinks();
  return false;
}
