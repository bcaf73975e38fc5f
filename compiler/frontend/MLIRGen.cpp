//===- MLIRGen.cpp - from checked layers to the mha dialect ---------------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "compiler/frontend/MLIRGen.h"

#include "compiler/target/LayerABI.h"
#include "dialects/mha/IR/MhaOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

using namespace mlir;

namespace mhac {
namespace {

/// Converts a spec's size to an MLIR dimension.
int64_t toDim(int64_t size) { return size == kDynamicSize ? ShapedType::kDynamic : size; }

class LayerBuilder {
public:
  LayerBuilder(OpBuilder &builder, const LayerSpec &spec, StringRef fileName)
      : builder_(builder), spec_(spec),
        loc_(FileLineColLoc::get(builder.getContext(), fileName, spec.loc.line, spec.loc.column)) {}

  func::FuncOp build();

private:
  /// A location that names a value: printed as its SSA name with `printNameLocAsPrefix`.
  Location named(StringRef name) { return NameLoc::get(builder_.getStringAttr(name), loc_); }

  /// Gives the layer function one argument per input tensor of the ABI, in its order.
  void addArguments(const LayerABI &abi);

  /// The argument for the ABI's tensor `name`, or null when the layer has none.
  Value argument(StringRef name) const { return arguments_.lookup(name); }

  /// Applies projection `prefix` (its weight and bias arguments) to `input`; the result is
  /// named `resultName`, or `prefix`.
  Value project(StringRef prefix, Value input, StringRef resultName = {});

  /// `t` (the q or k projection of `heads` heads) as attention reads it: RMS-normalized with
  /// the weight `normWeight` (qk_norm), then rotated (rope), at the rows' positions.
  Value prepareHeads(Value t, int64_t heads, StringRef normWeight, StringRef name);

  OpBuilder &builder_;
  const LayerSpec &spec_;
  Location loc_;
  Block *entry_ = nullptr;
  Type elementType_;
  llvm::StringMap<Value> arguments_;
};

void LayerBuilder::addArguments(const LayerABI &abi) {
  for (const TensorABI &tensor : abi.tensors) {
    if (tensor.isOutput)
      continue;
    SmallVector<int64_t> shape = llvm::map_to_vector(tensor.shape, toDim);
    Type element = tensor.isInt32 ? builder_.getI32Type() : elementType_;
    // Caches are memory the call writes in place; every other argument is a value.
    Type type = tensor.isCache ? Type(MemRefType::get(shape, element))
                               : Type(RankedTensorType::get(shape, element));
    arguments_[tensor.name] = entry_->addArgument(type, named(tensor.name));
  }
}

Value LayerBuilder::project(StringRef prefix, Value input, StringRef resultName) {
  Value weight = argument(("w" + prefix).str());
  Value bias = argument(("b" + prefix).str());
  auto inputType = cast<RankedTensorType>(input.getType());
  SmallVector<int64_t> shape(inputType.getShape());
  shape.back() = cast<RankedTensorType>(weight.getType()).getDimSize(0);
  auto resultType = RankedTensorType::get(shape, elementType_);
  return mha::LinearOp::create(builder_, named(resultName.empty() ? prefix : resultName),
                               resultType, input, weight, bias);
}

Value LayerBuilder::prepareHeads(Value t, int64_t heads, StringRef normWeight, StringRef name) {
  auto i64 = [&](int64_t value) { return builder_.getI64IntegerAttr(value); };
  auto f64 = [&](double value) { return builder_.getF64FloatAttr(value); };
  if (spec_.qkNorm)
    t = mha::RmsNormOp::create(builder_, named((name + "_normed").str()), t.getType(), t,
                               argument(normWeight), i64(heads), i64(spec_.headDim),
                               f64(spec_.qkNormEps));
  const RopeSpec &rope = spec_.rope;
  if (!rope.enabled())
    return t;
  auto op = mha::RopeOp::create(
      builder_, named((name + "_rotated").str()), t.getType(), t, argument("cache_len"),
      i64(heads), i64(spec_.headDim),
      mha::RopeKindAttr::get(builder_.getContext(), rope.kind == RopeKind::Half
                                                          ? mha::RopeKind::half
                                                          : mha::RopeKind::interleaved),
      i64(rope.dim), f64(rope.base), mha::RopeScalingAttr(), FloatAttr(), FloatAttr(),
      FloatAttr(), IntegerAttr(), FloatAttr(), FloatAttr(), BoolAttr(), FloatAttr());
  MLIRContext *context = builder_.getContext();
  switch (rope.scaling) {
  case RopeScaling::None:
    return op;
  case RopeScaling::Linear:
    op.setScaling(mha::RopeScaling::linear);
    op.setFactorAttr(f64(rope.factor));
    return op;
  case RopeScaling::Llama3:
    op.setScaling(mha::RopeScaling::llama3);
    op.setFactorAttr(f64(rope.factor));
    op.setLowFreqFactorAttr(f64(rope.lowFreqFactor));
    op.setHighFreqFactorAttr(f64(rope.highFreqFactor));
    op.setOriginalMaxAttr(i64(rope.originalMax));
    return op;
  case RopeScaling::Yarn:
    op.setScaling(mha::RopeScaling::yarn);
    op.setFactorAttr(f64(rope.factor));
    op.setOriginalMaxAttr(i64(rope.originalMax));
    op.setBetaFastAttr(f64(rope.betaFast));
    op.setBetaSlowAttr(f64(rope.betaSlow));
    op.setTruncateAttr(BoolAttr::get(context, rope.truncate));
    if (rope.attentionFactor > 0)
      op.setAttentionFactorAttr(f64(rope.attentionFactor));
    return op;
  }
  return op;
}

func::FuncOp LayerBuilder::build() {
  MLIRContext *context = builder_.getContext();
  elementType_ = spec_.dtype == DType::BF16 ? Type(BFloat16Type::get(context))
                                            : Type(Float32Type::get(context));
  auto func = func::FuncOp::create(builder_, loc_, spec_.name, builder_.getFunctionType({}, {}));
  entry_ = func.addEntryBlock();
  OpBuilder::InsertionGuard guard(builder_);
  builder_.setInsertionPointToStart(entry_);
  addArguments(describeLayer(spec_));

  Value x = argument("x");
  Value memory = spec_.cross ? argument("memory") : x;
  Value q = prepareHeads(project("q", x), spec_.heads, "q_norm", "q");
  Value k = prepareHeads(project("k", memory), spec_.kvHeads, "k_norm", "k");
  Value v = project("v", memory);
  Value keys = k, values = v;
  if (spec_.kvCache) {
    // The new tokens' keys and values join the caches, which attention then reads.
    Value cacheLen = argument("cache_len");
    mha::CacheWriteOp::create(builder_, loc_, k, argument("k_cache"), cacheLen);
    mha::CacheWriteOp::create(builder_, loc_, v, argument("v_cache"), cacheLen);
    keys = argument("k_cache");
    values = argument("v_cache");
  }
  Value attention = mha::AttentionOp::create(
      builder_, named("attention"), q.getType(), q, keys, values, argument("kv_lens"),
      argument("cache_len"), argument("sinks"), builder_.getI64IntegerAttr(spec_.heads),
      builder_.getI64IntegerAttr(spec_.kvHeads), builder_.getI64IntegerAttr(spec_.headDim),
      builder_.getF32FloatAttr(static_cast<float>(spec_.scale)),
      spec_.causal ? builder_.getUnitAttr() : UnitAttr(),
      spec_.window ? builder_.getI64IntegerAttr(spec_.window) : IntegerAttr(),
      spec_.softcap > 0 ? builder_.getF32FloatAttr(static_cast<float>(spec_.softcap))
                        : FloatAttr());
  Value out = project("o", attention, "out");
  func::ReturnOp::create(builder_, loc_, out);

  func.setFunctionType(builder_.getFunctionType(entry_->getArgumentTypes(), {out.getType()}));
  return func;
}

} // namespace

OwningOpRef<ModuleOp> buildModule(MLIRContext &context, ArrayRef<LayerSpec> layers,
                                  StringRef fileName) {
  context.loadDialect<func::FuncDialect, mha::MhaDialect>();
  OpBuilder builder(&context);
  OwningOpRef<ModuleOp> module = ModuleOp::create(FileLineColLoc::get(&context, fileName, 1, 1));
  builder.setInsertionPointToEnd(module->getBody());
  for (const LayerSpec &spec : layers)
    LayerBuilder(builder, spec, fileName).build();
  return module;
}

} // namespace mhac
