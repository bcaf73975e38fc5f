//===- VectorizeBf16Pairs.cpp - bf16 pair tiles onto vdpbf16ps ------------===//
//
// Part of mhac. A register tile of a projection of bf16 pairs (convert-mha-to-linalg's
// bf16-pairs, tiled by the schedule to one pair of inputs a step) computes
//
//   acc[r][c] += x[r][2k] * w[c][2k] + x[r][2k + 1] * w[c][2k + 1]
//
// for R rows and a panel of P columns: per row, one broadcast of the row's pair (32 bits) and
// P / 16 vdpbf16ps, each multiplying it with 16 columns' pairs (one 64-byte row of the packed
// panel) into 16 f32 accumulators. The linalg vectorizer would widen both operands to f32 and
// add the pair's two products separately; this pass writes the dot products directly, in the
// x86vector dialect.
//
//===----------------------------------------------------------------------===//

#include "compiler/conversion/Passes.h"
#include "compiler/target/CpuTarget.h"

#include "mlir/Dialect/X86Vector/X86VectorDialect.h"
#include "mlir/Transforms/LoopInvariantCodeMotionUtils.h"

namespace mhac {
#define GEN_PASS_DEF_VECTORIZEBF16PAIRS
#include "compiler/conversion/Passes.h.inc"
} // namespace mhac

using namespace mlir;

namespace mhac {
namespace {

LogicalResult vectorizeTile(linalg::GenericOp tile) {
  SmallVector<int64_t> ranges = tile.getStaticLoopRanges();
  if (ranges.size() != 5 || ranges[1] != 1 || ranges[3] != 1 || ranges[4] != 2 ||
      ShapedType::isDynamic(ranges[0]) || ShapedType::isDynamic(ranges[2]) ||
      ranges[2] % kBf16PairLanes != 0 || !tile.hasPureTensorSemantics())
    return tile.emitOpError("is not a register tile of bf16 pairs (rows x 1 x 16k columns x 1 "
                            "pair x 2 halves)");
  int64_t rows = ranges[0], columns = ranges[2];
  OpBuilder b(tile);
  Location loc = tile.getLoc();
  Type bf16 = b.getBF16Type(), i32 = b.getI32Type();
  // Constants defined outside the loops, one zero index for every access: the accumulators'
  // read and write are then recognizably the same loop-invariant subset, which
  // hoistLoopInvariantSubsets moves out.
  auto function = tile->getParentOfType<FunctionOpInterface>();
  OpBuilder atEntry = OpBuilder::atBlockBegin(&function.getFunctionBody().front());
  Value zero = arith::ConstantIndexOp::create(atEntry, loc, 0);
  auto read = [&](Value tensor) {
    auto shaped = cast<RankedTensorType>(tensor.getType());
    SmallVector<Value> zeros(shaped.getRank(), zero);
    Value padding =
        arith::ConstantOp::create(atEntry, loc, atEntry.getZeroAttr(shaped.getElementType()));
    SmallVector<bool> inBounds(shaped.getRank(), true);
    return vector::TransferReadOp::create(
               b, loc, VectorType::get(shaped.getShape(), shaped.getElementType()), tensor, zeros,
               padding, inBounds)
        .getResult();
  };
  // Operands as the tile holds them: x [R][1][2], the panel row [1][1][P][2], the
  // accumulators [R][1][P]. Every vector LLVM sees is a power of two wide (a row of P
  // accumulators, not all R x P of them as one vector, which LLVM would widen and spill).
  Value acc = tile.getDpsInits()[0];
  Value pairs = read(tile.getDpsInputs()[0]);
  // The panel row is contiguous: read as one vector (as [P][2], LLVM would load its pairs one
  // by one).
  Value panelRow = read(tensor::CollapseShapeOp::create(
      b, loc, tile.getDpsInputs()[1], ArrayRef<ReassociationIndices>{{0, 1, 2, 3}}));
  Value sums = read(acc);
  auto sliceType = VectorType::get({2 * kBf16PairLanes}, bf16);
  SmallVector<Value> weightSlices;
  for (int64_t c = 0; c < columns; c += kBf16PairLanes)
    weightSlices.push_back(vector::ExtractStridedSliceOp::create(
        b, loc, panelRow, ArrayRef<int64_t>{2 * c}, ArrayRef<int64_t>{2 * kBf16PairLanes},
        ArrayRef<int64_t>{1}));
  for (int64_t r = 0; r < rows; ++r) {
    // The row's pair as one 32-bit word, broadcast to every lane.
    Value pair = vector::ExtractOp::create(b, loc, pairs, ArrayRef<int64_t>{r, 0});
    Value word = vector::ExtractOp::create(
        b, loc, vector::BitCastOp::create(b, loc, VectorType::get({1}, i32), pair),
        ArrayRef<int64_t>{0});
    Value broadcast = vector::BitCastOp::create(
        b, loc, sliceType,
        vector::BroadcastOp::create(b, loc, VectorType::get({kBf16PairLanes}, i32), word));
    Value row = vector::ExtractOp::create(b, loc, sums, ArrayRef<int64_t>{r, 0});
    for (int64_t c = 0; c < columns; c += kBf16PairLanes) {
      Value partial = vector::ExtractStridedSliceOp::create(b, loc, row, ArrayRef<int64_t>{c},
                                                            ArrayRef<int64_t>{kBf16PairLanes},
                                                            ArrayRef<int64_t>{1});
      Value dot = x86vector::DotBF16Op::create(b, loc, partial.getType(), partial, broadcast,
                                               weightSlices[c / kBf16PairLanes]);
      row = vector::InsertStridedSliceOp::create(b, loc, dot, row, ArrayRef<int64_t>{c},
                                                 ArrayRef<int64_t>{1});
    }
    sums = vector::InsertOp::create(b, loc, row, sums, ArrayRef<int64_t>{r, 0});
  }
  auto accType = cast<RankedTensorType>(acc.getType());
  SmallVector<Value> zeros(accType.getRank(), zero);
  SmallVector<bool> inBounds(accType.getRank(), true);
  auto written = vector::TransferWriteOp::create(b, loc, sums, acc, zeros, inBounds);
  tile->getResult(0).replaceAllUsesWith(written.getResult());
  tile->erase();
  return success();
}

struct VectorizeBf16PairsPass : impl::VectorizeBf16PairsBase<VectorizeBf16PairsPass> {
  void runOnOperation() override {
    SmallVector<linalg::GenericOp> tiles;
    getOperation().walk([&](linalg::GenericOp op) {
      if (op->hasAttr(kBf16PairsAttr) && !op->hasAttr(kAmxTileAttr))
        tiles.push_back(op);
    });
    SetVector<LoopLikeOpInterface> loops;
    for (linalg::GenericOp tile : tiles) {
      if (auto loop = tile->getParentOfType<LoopLikeOpInterface>())
        loops.insert(loop);
      if (failed(vectorizeTile(tile)))
        return signalPassFailure();
    }
    // The accumulators leave their reduction loops: read before, carried as loop values,
    // written after (the schedule's tiling hoisted them for the f32 tiles, vectorized
    // before it ran).
    IRRewriter rewriter(&getContext());
    for (LoopLikeOpInterface loop : loops)
      hoistLoopInvariantSubsets(rewriter, loop);
  }
};

} // namespace
} // namespace mhac
