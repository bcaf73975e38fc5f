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
    arguments_[tensor.name] =
        entry_->addArgument(RankedTensorType::get(shape, element), named(tensor.name));
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
  Value q = project("q", x);
  Value k = project("k", memory);
  Value v = project("v", memory);
  Value attention = mha::AttentionOp::create(
      builder_, named("attention"), q.getType(), q, k, v, argument("kv_lens"),
      builder_.getI64IntegerAttr(spec_.heads), builder_.getI64IntegerAttr(spec_.kvHeads),
      builder_.getI64IntegerAttr(spec_.headDim),
      builder_.getF32FloatAttr(static_cast<float>(spec_.scale)),
      spec_.causal ? builder_.getUnitAttr() : UnitAttr());
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
