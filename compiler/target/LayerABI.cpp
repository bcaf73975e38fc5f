//===- LayerABI.cpp - the C interface of a compiled layer -----------------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "compiler/target/LayerABI.h"

#include "compiler/conversion/Passes.h"
#include "dialects/mha/IR/MhaOps.h"

using namespace mlir;

namespace mhac {

bool LayerABI::hasDynamicSizes() const {
  return ShapedType::isDynamic(batch) || ShapedType::isDynamic(seq) || ShapedType::isDynamic(kvSeq);
}

std::string kernelSymbol(const LayerABI &layer) { return "mhac_kernel_" + layer.name; }

std::string preparationSymbol(const LayerABI &layer) {
  return (kPreparationPrefix + layer.name).str();
}

std::vector<int> entryPointers(const LayerABI &layer, EntryKind kind) {
  std::vector<int> pointers;
  bool preparedListed = false;
  for (size_t i = 0; i < layer.tensors.size(); ++i) {
    bool parameter = layer.tensors[i].isParameter;
    if (kind == EntryKind::RunPrepared && parameter) {
      if (!preparedListed)
        pointers.push_back(kPreparedBlock);
      preparedListed = true;
    } else if (kind == EntryKind::Run || (kind == EntryKind::Prepare) == parameter) {
      pointers.push_back(static_cast<int>(i));
    }
  }
  if (kind == EntryKind::Prepare)
    pointers.push_back(kPreparedBlock);
  return pointers;
}

/// Parameters start on a cache line of the prepared block.
constexpr int64_t kPreparedAlignment = 64;

LogicalResult readPreparedLayout(ModuleOp module, std::vector<LayerABI> &layers) {
  for (LayerABI &layer : layers) {
    auto prepare = module.lookupSymbol<func::FuncOp>(preparationSymbol(layer));
    if (!prepare)
      return module.emitError("no preparation function for layer '") << layer.name << "'";
    ArrayRef<Type> prepared = prepare.getResultTypes();
    int64_t offset = 0;
    size_t next = 0;
    for (TensorABI &tensor : layer.tensors) {
      if (!tensor.isParameter)
        continue;
      auto type = next < prepared.size() ? dyn_cast<RankedTensorType>(prepared[next]) : nullptr;
      if (!type || !type.hasStaticShape())
        return prepare.emitError("prepared parameters do not match the layer's");
      ++next;
      tensor.preparedShape.assign(type.getShape().begin(), type.getShape().end());
      tensor.preparedOffset = offset;
      offset += llvm::alignTo(type.getNumElements() * type.getElementTypeBitWidth() / 8,
                               kPreparedAlignment);
    }
    if (next != prepared.size())
      return prepare.emitError("prepared parameters do not match the layer's");
    layer.preparedBytes = offset;
  }
  return success();
}

/// The name MLIRGen gave a value through its location (`loc("wq")`).
static std::string nameOf(Value value) {
  if (auto named = dyn_cast<NameLoc>(value.getLoc()))
    return named.getName().str();
  return "";
}

static TensorABI describeTensor(std::string name, RankedTensorType type,
                                ArrayRef<RuntimeSize> roles) {
  TensorABI tensor;
  tensor.name = std::move(name);
  tensor.shape.assign(type.getShape().begin(), type.getShape().end());
  tensor.isInt32 = type.getElementType().isInteger(32);
  for (int64_t i = 0; i < type.getRank(); ++i)
    tensor.dynamicAs.push_back(type.isDynamicDim(i) && i < static_cast<int64_t>(roles.size())
                                   ? roles[i]
                                   : RuntimeSize::None);
  return tensor;
}

static FailureOr<LayerABI> readLayerABI(func::FuncOp func) {
  mha::AttentionOp attention;
  SmallVector<mha::LinearOp> linears;
  func.walk([&](Operation *op) {
    if (auto a = dyn_cast<mha::AttentionOp>(op))
      attention = a;
    if (auto l = dyn_cast<mha::LinearOp>(op))
      linears.push_back(l);
  });
  if (!attention || linears.size() != 4 || func.getNumResults() != 1 || func.getNumArguments() == 0)
    return func.emitError("not an mhac layer: expected four mha.linear around one mha.attention");

  auto keyProjection = attention.getKey().getDefiningOp<mha::LinearOp>();
  auto outProjection = dyn_cast<mha::LinearOp>(*attention->getUsers().begin());
  if (!keyProjection || !outProjection)
    return func.emitError("not an mhac layer: attention must read and feed projections");

  LayerABI layer;
  layer.name = func.getSymName().str();
  auto xType = cast<RankedTensorType>(func.getArgument(0).getType());
  auto memoryType = cast<RankedTensorType>(keyProjection.getInput().getType());
  layer.bf16 = xType.getElementType().isBF16();
  layer.modelDim = xType.getDimSize(2);
  layer.heads = attention.getHeads();
  layer.kvHeads = attention.getKvHeads();
  layer.headDim = attention.getHeadDim();
  layer.scale = attention.getScale().convertToFloat();
  layer.causal = attention.getCausal();
  layer.kvLens = static_cast<bool>(attention.getKvLens());
  layer.bias = static_cast<bool>(keyProjection.getBias());
  layer.cross = keyProjection.getInput() != func.getArgument(0);
  layer.kvDim = memoryType.getDimSize(2);
  layer.batch = xType.getDimSize(0);
  layer.seq = xType.getDimSize(1);
  layer.kvSeq = memoryType.getDimSize(1);

  const RuntimeSize activation[] = {RuntimeSize::Batch, RuntimeSize::Seq};
  const RuntimeSize memory[] = {RuntimeSize::Batch, RuntimeSize::KvSeq};
  for (BlockArgument arg : func.getArguments()) {
    std::string name = nameOf(arg);
    auto type = cast<RankedTensorType>(arg.getType());
    ArrayRef<RuntimeSize> roles;
    if (arg.getArgNumber() == 0)
      roles = activation;
    else if (layer.cross && arg == keyProjection.getInput())
      roles = memory;
    else if (layer.kvLens && arg == attention.getKvLens())
      roles = ArrayRef<RuntimeSize>(activation).take_front(1);
    layer.tensors.push_back(describeTensor(
        name.empty() ? "arg" + std::to_string(arg.getArgNumber()) : name, type, roles));
    layer.tensors.back().isParameter = llvm::any_of(linears, [&](mha::LinearOp linear) {
      return arg == linear.getWeight() || arg == linear.getBias();
    });
  }
  TensorABI out =
      describeTensor("out", cast<RankedTensorType>(func.getResultTypes()[0]), activation);
  out.isOutput = true;
  layer.tensors.push_back(std::move(out));
  return layer;
}

FailureOr<std::vector<LayerABI>> readLayerABIs(ModuleOp module) {
  std::vector<LayerABI> layers;
  for (auto func : module.getOps<func::FuncOp>()) {
    FailureOr<LayerABI> layer = readLayerABI(func);
    if (failed(layer))
      return failure();
    layers.push_back(std::move(*layer));
  }
  return layers;
}

} // namespace mhac
