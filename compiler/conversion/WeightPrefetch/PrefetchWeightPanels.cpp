//===- PrefetchWeightPanels.cpp - the next weight block, fetched early ----===//
//
// Part of mhac. A projection's register tiles pass over one block of a weight panel (KB inputs
// x P columns, contiguous in the [N / P][K][P] layout; [N / P][K / 2][P][2] for bf16 pairs)
// while the rows of their cache tile go by. Where few rows share a block (a 128-token prompt on
// a wide model), the first tile over each block waits for it from memory: it asks for the
// whole block at the rate of its FMAs, several times what one core's memory stream delivers,
// and the hardware prefetcher does not look a block ahead. This pass has every tile over a
// block fetch a share of the next block into L2 while it computes: with T tiles in the loop
// and R elements to a row of the block (P, or 2 P for pairs), tile t prefetches, one prefetch
// a reduction step, elements [t KB s, (t + 1) KB s) of the next block, s = ceil(R / T); tiles
// whose share is past its end prefetch the row they read. The next block is the one the
// thread reads next: the next panel's, where a loop over a cache tile's panels runs inside
// the loop over reduction blocks, else the memory that follows (the panel's next block, or
// the next panel's first).
//
//===----------------------------------------------------------------------===//

#include "compiler/conversion/Passes.h"
#include "compiler/schedules/TransformScripts.h"

#include "mlir/Dialect/Utils/StaticValueUtils.h"

namespace mhac {
#define GEN_PASS_DEF_PREFETCHWEIGHTPANELS
#include "compiler/conversion/Passes.h.inc"
} // namespace mhac

using namespace mlir;

namespace mhac {
namespace {

/// The memref a chain of subviews starts from.
Value rootOf(Value memref) {
  while (auto view = memref.getDefiningOp<memref::SubViewOp>())
    memref = view.getSource();
  return memref;
}

/// Elements of a weight block's row at least: a panel is a whole vector wide, while a row tile
/// of one row reads its inputs as [1][KB][2] pairs.
constexpr int64_t kMinRowElements = 8;

/// The view of the weight block that `reduction`'s body slices one input row a step from: a
/// [1][KB][P] view of f32 (or [1][KB / 2][P][2] of bf16 pairs), its rows contiguous, taken
/// outside the loop; null for a tile of another kind (AMX's).
Value weightBlockOf(scf::ForOp reduction) {
  for (Operation &op : reduction.getBody()->without_terminator()) {
    auto row = dyn_cast<memref::SubViewOp>(op);
    if (!row || !reduction.isDefinedOutsideOfLoop(row.getSource()))
      continue;
    auto type = cast<MemRefType>(row.getSource().getType());
    Type element = type.getElementType();
    if (type.getRank() < 3 || !type.hasStaticShape() || type.getDimSize(0) != 1 ||
        !(element.isF32() || element.isBF16()))
      continue;
    // Rows contiguous: each stride is the elements of the dimensions after it.
    auto [strides, offset] = type.getStridesAndOffset();
    int64_t contiguous = 1;
    for (int64_t d = type.getRank() - 1; d >= 1 && strides[d] == contiguous; --d)
      contiguous *= type.getDimSize(d);
    if (contiguous == type.getNumElements() && contiguous / type.getDimSize(1) >= kMinRowElements)
      return row.getSource();
  }
  return {};
}

/// Adds the prefetches to the reduction loop of one full register tile, if it is one.
void prefetchNextBlock(scf::ForOp reduction) {
  Value block = weightBlockOf(reduction);
  auto rows = dyn_cast<scf::ForOp>(reduction->getParentOp());
  if (!block || !rows || reduction.getInitArgs().size() != 1)
    return;
  // The loop over register tiles steps by the tile's rows (an edge tile's parent does not).
  auto tile = dyn_cast<VectorType>(reduction.getInitArgs()[0].getType());
  std::optional<int64_t> rowStep = getConstantIntValue(rows.getStep());
  if (!tile || tile.getRank() < 1 || rowStep != tile.getDimSize(0) ||
      getConstantIntValue(reduction.getLowerBound()) != 0 ||
      getConstantIntValue(reduction.getStep()) != 1)
    return;
  auto rootType = cast<MemRefType>(rootOf(block).getType());
  if (!rootType.hasStaticShape())
    return;
  auto blockType = cast<MemRefType>(block.getType());
  // A block's rows: one input (f32) or one pair of inputs (bf16) a step.
  int64_t keys = blockType.getDimSize(1);
  int64_t rowElements = blockType.getNumElements() / keys;
  int64_t total = rootType.getNumElements();
  // The next block: the next panel's, where a loop over a cache tile's panels runs inside the
  // loop over reduction blocks (the view's panel offset varies), else the memory after this
  // block (the panel's next block, or the next panel's first).
  auto view = block.getDefiningOp<memref::SubViewOp>();
  bool panelLoop = view && view.isDynamicOffset(0);
  int64_t distance = panelLoop ? blockType.getStridesAndOffset().first[0] : keys * rowElements;

  Location loc = reduction.getLoc();
  OpBuilder b(reduction);
  auto index = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); };
  auto add = [&](Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); };
  auto mul = [&](Value x, Value y) { return arith::MulIOp::create(b, loc, x, y); };
  auto ceilDiv = [&](Value x, Value y) { return arith::CeilDivUIOp::create(b, loc, x, y); };
  // The whole buffer, flat: every prefetch stays inside it.
  auto metadata = memref::ExtractStridedMetadataOp::create(b, loc, block);
  Value flat = memref::ReinterpretCastOp::create(
      b, loc, MemRefType::get({total}, blockType.getElementType()), metadata.getBaseBuffer(),
      /*offset=*/0, /*sizes=*/ArrayRef<int64_t>{total}, /*strides=*/ArrayRef<int64_t>{1});
  // The next block's elements, spread evenly over the loop's tiles: `spread` a step.
  Value tiles = ceilDiv(arith::SubIOp::create(b, loc, rows.getUpperBound(), rows.getLowerBound()),
                        rows.getStep());
  Value t = arith::DivUIOp::create(
      b, loc, arith::SubIOp::create(b, loc, rows.getInductionVar(), rows.getLowerBound()),
      rows.getStep());
  Value spread = ceilDiv(index(rowElements), tiles);
  // Tiles whose share is past the next block's end, or past the buffer's (the last block),
  // prefetch the row they read (in L1 already): every index stays inside the buffer.
  Value ahead = add(metadata.getOffset(), add(index(distance), mul(t, mul(index(keys), spread))));
  Value last = add(ahead, mul(index(keys - 1), spread));
  Value prefetching = arith::AndIOp::create(
      b, loc,
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, mul(t, spread), index(rowElements)),
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, last, index(total)));
  Value start = arith::SelectOp::create(b, loc, prefetching, ahead, metadata.getOffset());
  Value stride = arith::SelectOp::create(b, loc, prefetching, spread, index(rowElements));

  b.setInsertionPointToStart(reduction.getBody());
  Value at = add(start, mul(reduction.getInductionVar(), stride));
  memref::PrefetchOp::create(b, loc, flat, ValueRange{at}, /*isWrite=*/false,
                             /*localityHint=*/2, /*isDataCache=*/true);
}

struct PrefetchWeightPanelsPass : impl::PrefetchWeightPanelsBase<PrefetchWeightPanelsPass> {
  void runOnOperation() override {
    SmallVector<scf::ForOp> reductions;
    getOperation().walk([&](scf::ForOp loop) {
      if (loop->hasAttr(kPanelReductionAttr))
        reductions.push_back(loop);
    });
    for (scf::ForOp reduction : reductions)
      prefetchNextBlock(reduction);
  }
};

} // namespace
} // namespace mhac
