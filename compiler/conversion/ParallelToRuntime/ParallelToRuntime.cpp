//===- ParallelToRuntime.cpp - parallel loops through mhac_parallel_for ---===//
//
// Part of mhac.
//
// For an outermost parallel loop over buffers
//
//   scf.parallel (%i, %j) = (%c0, %c0) to (%n, %m) step (%c1, %c1) { body(%i, %j) }
//
// this emits
//
//   %closure = llvm.alloca : !llvm.struct<(captured values..., bounds...)>
//   llvm.store ...                                   one field per captured value
//   %task = func.constant @f_parallel_0
//   func.call @mhac_parallel_for(%task, %closure, %n * %m)
//
//   func.func private @f_parallel_0(%closure: !llvm.ptr, %index: i64) -> i32 {
//     loads of the captured values; %i, %j from %index; body(%i, %j); return 0
//   }
//
//===----------------------------------------------------------------------===//

#include "compiler/conversion/Passes.h"

#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/StringExtras.h"

namespace mhac {
#define GEN_PASS_DEF_CONVERTPARALLELTOMHACRUNTIME
#include "compiler/conversion/Passes.h.inc"
} // namespace mhac

using namespace mlir;

namespace mhac {
namespace {

/// The symbol of the runtime entry point; see mhac/runtime.h.
constexpr StringLiteral kParallelFor = "mhac_parallel_for";

/// The bounds and body of a parallel loop, whichever op it came from.
struct ParallelLoop {
  Operation *op;
  SmallVector<OpFoldResult> lowerBounds, upperBounds, steps;
  Block *body;
};

std::optional<ParallelLoop> asParallelLoop(Operation *op) {
  if (auto parallel = dyn_cast<scf::ParallelOp>(op)) {
    if (parallel.getNumResults() != 0)
      return std::nullopt;
    return ParallelLoop{op, getAsOpFoldResult(parallel.getLowerBound()),
                        getAsOpFoldResult(parallel.getUpperBound()),
                        getAsOpFoldResult(parallel.getStep()), parallel.getBody()};
  }
  if (auto forall = dyn_cast<scf::ForallOp>(op)) {
    if (forall.getNumResults() != 0 || forall.getMapping())
      return std::nullopt;
    return ParallelLoop{op, forall.getMixedLowerBound(), forall.getMixedUpperBound(),
                        forall.getMixedStep(), forall.getBody()};
  }
  return std::nullopt;
}

/// What a loop computes, from the name its location carries (MLIRGen names a layer's values:
/// `q`, `k`, `v`, `out`, `attention`; the tiled loops keep their op's location), for its task's
/// symbol; empty when it carries none.
std::string roleOf(Location loc) {
  std::string role;
  loc->walk([&](Location inner) {
    if (auto named = dyn_cast<NameLoc>(inner)) {
      role = named.getName().str();
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  for (char &c : role)
    if (!llvm::isAlnum(c) && c != '_')
      c = '_';
  return role;
}

class Outliner {
public:
  Outliner(ModuleOp module, const LLVMTypeConverter &converter)
      : module_(module), converter_(converter), ctx_(module.getContext()),
        ptrType_(LLVM::LLVMPointerType::get(ctx_)), i64_(IntegerType::get(ctx_, 64)),
        i32_(IntegerType::get(ctx_, 32)),
        taskType_(FunctionType::get(ctx_, {ptrType_, i64_}, {i32_})) {}

  LogicalResult outline(func::FuncOp parent, ParallelLoop loop, unsigned number);

private:
  func::FuncOp runtimeDeclaration();

  ModuleOp module_;
  const LLVMTypeConverter &converter_;
  MLIRContext *ctx_;
  Type ptrType_, i64_, i32_;
  FunctionType taskType_;
};

func::FuncOp Outliner::runtimeDeclaration() {
  if (auto existing = module_.lookupSymbol<func::FuncOp>(kParallelFor))
    return existing;
  OpBuilder b(module_.getBodyRegion());
  auto type = FunctionType::get(ctx_, {taskType_, ptrType_, i64_}, {i32_});
  auto decl = func::FuncOp::create(b, module_.getLoc(), kParallelFor, type);
  decl.setPrivate();
  return decl;
}

LogicalResult Outliner::outline(func::FuncOp parent, ParallelLoop loop, unsigned number) {
  Location loc = loop.op->getLoc();
  OpBuilder b(loop.op);
  auto index = [&](OpFoldResult value) { return getValueOrCreateConstantIndexOp(b, loc, value); };

  // Trip counts, and the total the runtime divides among threads.
  unsigned rank = loop.lowerBounds.size();
  SmallVector<Value> lowerBounds, steps, tripCounts;
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value total = arith::ConstantIndexOp::create(b, loc, 1);
  for (unsigned d = 0; d < rank; ++d) {
    Value lb = index(loop.lowerBounds[d]), ub = index(loop.upperBounds[d]);
    Value step = index(loop.steps[d]);
    Value span = arith::MaxSIOp::create(b, loc, arith::SubIOp::create(b, loc, ub, lb), zero);
    Value trips = arith::CeilDivSIOp::create(b, loc, span, step);
    lowerBounds.push_back(lb);
    steps.push_back(step);
    tripCounts.push_back(trips);
    total = arith::MulIOp::create(b, loc, total, trips);
  }

  // Values the body reads from above: constants are cloned, the rest go through the closure.
  SetVector<Value> above;
  getUsedValuesDefinedAbove(loop.op->getRegion(0), above);
  SmallVector<Value> captured, constants;
  for (Value value : above) {
    if (matchPattern(value, m_Constant()))
      constants.push_back(value);
    else
      captured.push_back(value);
  }
  captured.append(lowerBounds.begin(), lowerBounds.end());
  captured.append(steps.begin(), steps.end());
  captured.append(tripCounts.begin(), tripCounts.end());

  SmallVector<Type> fieldTypes;
  for (Value value : captured) {
    Type converted = converter_.convertType(value.getType());
    if (!converted)
      return loop.op->emitError("cannot pass a value of type ")
             << value.getType() << " to a parallel task";
    fieldTypes.push_back(converted);
  }
  auto closureType = LLVM::LLVMStructType::getLiteral(ctx_, fieldTypes);

  // The task function, right after its parent.
  OpBuilder moduleBuilder(ctx_);
  moduleBuilder.setInsertionPointAfter(parent);
  // NAME_q, NAME_attention, ... so that a profile or `--emit=asm` says which task is which;
  // NAME_parallel_N for a loop that carries no name, and a number after a repeated one.
  std::string role = roleOf(loop.op->getLoc());
  std::string base = (parent.getSymName() + "_" + (role.empty() ? "parallel" : role)).str();
  std::string name = role.empty() ? (base + "_" + Twine(number)).str() : base;
  for (unsigned repeat = 1; module_.lookupSymbol(name); ++repeat)
    name = (base + "_" + Twine(repeat)).str();
  auto task = func::FuncOp::create(moduleBuilder, loc, name, taskType_);
  task.setPrivate();
  // Internal: tasks are reached through the runtime, never by name from outside the object.
  task->setAttr("llvm.linkage", LLVM::LinkageAttr::get(ctx_, LLVM::Linkage::Internal));
  Block *entry = task.addEntryBlock();
  OpBuilder tb = OpBuilder::atBlockBegin(entry);
  IRMapping mapping;
  for (Value value : constants)
    mapping.map(value, tb.clone(*value.getDefiningOp())->getResult(0));
  for (auto [field, value] : llvm::enumerate(captured)) {
    Value address = LLVM::GEPOp::create(tb, loc, ptrType_, closureType, entry->getArgument(0),
                                        ArrayRef<LLVM::GEPArg>{0, static_cast<int32_t>(field)});
    Value loaded = LLVM::LoadOp::create(tb, loc, fieldTypes[field], address);
    Value restored = loaded;
    if (value.getType().isIndex())
      restored = arith::IndexCastOp::create(tb, loc, value.getType(), loaded);
    else if (loaded.getType() != value.getType())
      restored = UnrealizedConversionCastOp::create(tb, loc, value.getType(), loaded).getResult(0);
    mapping.map(value, restored);
  }
  // Induction variables from the linear index, innermost dimension fastest.
  Value linear = arith::IndexCastOp::create(tb, loc, tb.getIndexType(), entry->getArgument(1));
  SmallVector<Value> ivs(rank);
  for (unsigned d = rank; d-- > 0;) {
    Value trips = mapping.lookup(tripCounts[d]);
    Value position = d == 0 ? linear : arith::RemSIOp::create(tb, loc, linear, trips);
    if (d != 0)
      linear = arith::DivSIOp::create(tb, loc, linear, trips);
    Value offset = arith::MulIOp::create(tb, loc, position, mapping.lookup(steps[d]));
    ivs[d] = arith::AddIOp::create(tb, loc, mapping.lookup(lowerBounds[d]), offset);
  }
  for (unsigned d = 0; d < rank; ++d)
    mapping.map(loop.body->getArgument(d), ivs[d]);
  for (Operation &op : loop.body->without_terminator())
    tb.clone(op, mapping);
  func::ReturnOp::create(tb, loc, ValueRange{arith::ConstantIntOp::create(tb, loc, 0, 32)});

  // The caller fills the closure and hands the loop to the runtime.
  Value one = LLVM::ConstantOp::create(b, loc, i64_, b.getI64IntegerAttr(1));
  Value closure = LLVM::AllocaOp::create(b, loc, ptrType_, closureType, one);
  for (auto [field, value] : llvm::enumerate(captured)) {
    Value stored = value;
    if (value.getType().isIndex())
      stored = arith::IndexCastOp::create(b, loc, i64_, value);
    else if (fieldTypes[field] != value.getType())
      stored = UnrealizedConversionCastOp::create(b, loc, fieldTypes[field], value).getResult(0);
    Value address = LLVM::GEPOp::create(b, loc, ptrType_, closureType, closure,
                                        ArrayRef<LLVM::GEPArg>{0, static_cast<int32_t>(field)});
    LLVM::StoreOp::create(b, loc, stored, address);
  }
  Value taskRef = func::ConstantOp::create(b, loc, taskType_, task.getSymName());
  Value count = arith::IndexCastOp::create(b, loc, i64_, total);
  func::CallOp::create(b, loc, runtimeDeclaration(), ValueRange{taskRef, closure, count});
  loop.op->erase();
  return success();
}

struct ConvertParallelToMhacRuntimePass
    : impl::ConvertParallelToMhacRuntimeBase<ConvertParallelToMhacRuntimePass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    LLVMTypeConverter converter(&getContext());
    Outliner outliner(module, converter);
    SmallVector<func::FuncOp> funcs(module.getOps<func::FuncOp>());
    for (func::FuncOp func : funcs) {
      SmallVector<ParallelLoop> loops;
      func.walk<WalkOrder::PreOrder>([&](Operation *op) {
        if (std::optional<ParallelLoop> loop = asParallelLoop(op)) {
          loops.push_back(*loop);
          return WalkResult::skip(); // nested loops run inside the task
        }
        return WalkResult::advance();
      });
      for (auto [number, loop] : llvm::enumerate(loops))
        if (failed(outliner.outline(func, loop, number)))
          return signalPassFailure();
    }
  }
};

} // namespace
} // namespace mhac
