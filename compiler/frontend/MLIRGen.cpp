//===- MLIRGen.cpp - from checked layers to the mha dialect ---------------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "compiler/frontend/MLIRGen.h"

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

  /// Appends an argument named `name` to the layer function and returns it.
  Value addArgument(StringRef name, ArrayRef<int64_t> shape, Type elementType) {
    auto type = RankedTensorType::get(shape, elementType);
    argumentTypes_.push_back(type);
    return entry_->addArgument(type, named(name));
  }
  Value addArgument(StringRef name, ArrayRef<int64_t> shape) {
    return addArgument(name, shape, elementType_);
  }

  /// Adds the weight (and bias, when the layer has them) of one projection as arguments and
  /// applies it to `input`.
  Value project(StringRef prefix, Value input, int64_t outFeatures, int64_t inFeatures);

  OpBuilder &builder_;
  const LayerSpec &spec_;
  Location loc_;
  Block *entry_ = nullptr;
  Type elementType_;
  SmallVector<Type> argumentTypes_;
};

Value LayerBuilder::project(StringRef prefix, Value input, int64_t outFeatures,
                            int64_t inFeatures) {
  Value weight = addArgument(("w" + prefix).str(), {outFeatures, inFeatures});
  Value bias = spec_.bias ? addArgument(("b" + prefix).str(), {outFeatures}) : Value();
  auto inputType = cast<RankedTensorType>(input.getType());
  SmallVector<int64_t> shape(inputType.getShape());
  shape.back() = outFeatures;
  auto resultType = RankedTensorType::get(shape, elementType_);
  return mha::LinearOp::create(builder_, named(prefix), resultType, input, weight, bias);
}

func::FuncOp LayerBuilder::build() {
  MLIRContext *context = builder_.getContext();
  elementType_ = spec_.dtype == DType::BF16 ? Type(BFloat16Type::get(context))
                                            : Type(Float32Type::get(context));
  int64_t batch = toDim(spec_.batch);
  int64_t seq = toDim(spec_.seq);
  int64_t kvSeq = toDim(spec_.kvSeq);
  int64_t queryWidth = spec_.heads * spec_.headDim;
  int64_t kvWidth = spec_.kvHeads * spec_.headDim;

  auto func = func::FuncOp::create(builder_, loc_, spec_.name, builder_.getFunctionType({}, {}));
  entry_ = func.addEntryBlock();
  OpBuilder::InsertionGuard guard(builder_);
  builder_.setInsertionPointToStart(entry_);

  Value x = addArgument("x", {batch, seq, spec_.modelDim});
  Value memory = spec_.cross ? addArgument("memory", {batch, kvSeq, spec_.kvDim}) : x;
  Value q = project("q", x, queryWidth, spec_.modelDim);
  Value k = project("k", memory, kvWidth, spec_.kvDim);
  Value v = project("v", memory, kvWidth, spec_.kvDim);
  // The output projection's weight follows the attention in the argument list, as in the ABI.
  Value wo = addArgument("wo", {spec_.modelDim, queryWidth});
  Value bo = spec_.bias ? addArgument("bo", {spec_.modelDim}) : Value();
  Value kvLens = spec_.kvLens ? addArgument("kv_lens", {batch}, builder_.getI32Type()) : Value();

  Value attention = mha::AttentionOp::create(
      builder_, named("attention"), q.getType(), q, k, v, kvLens,
      builder_.getI64IntegerAttr(spec_.heads), builder_.getI64IntegerAttr(spec_.kvHeads),
      builder_.getI64IntegerAttr(spec_.headDim),
      builder_.getF32FloatAttr(static_cast<float>(spec_.scale)),
      spec_.causal ? builder_.getUnitAttr() : UnitAttr());
  auto outType = RankedTensorType::get({batch, seq, spec_.modelDim}, elementType_);
  Value out = mha::LinearOp::create(builder_, named("out"), outType, attention, wo, bo);
  func::ReturnOp::create(builder_, loc_, out);

  func.setFunctionType(builder_.getFunctionType(argumentTypes_, {outType}));
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
