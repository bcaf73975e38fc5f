//===- PrefetchWeightBlocks.cpp - fetch the next weight block ahead -------===//
//
// Part of mhac.
//
// A projection's cache tile walks its packed weight panels block by block, in memory order, and
// every row tile of a block re-reads the same block. The first row tile of each block would wait
// for it to arrive from L3 (the hardware prefetchers stop at every 4 KiB page), so each row tile
// prefetches a slice of the block that comes next: by the time the last row tile finishes, the
// next block is in L1. One prefetch per reduction step, spread evenly over the row tiles.
//
//===----------------------------------------------------------------------===//

#include "compiler/conversion/Passes.h"

#include "mlir/Dialect/MemRef/Utils/MemRefUtils.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mhac {
#define GEN_PASS_DEF_PREFETCHWEIGHTBLOCKS
#include "compiler/conversion/Passes.h.inc"
} // namespace mhac

using namespace mlir;

namespace mhac {
namespace {

/// The contiguous block of memory `stream` reads through a subview taken inside it, from a
/// buffer defined outside `rows`: the data every row tile shares.
memref::SubViewOp findSharedBlockRead(scf::ForOp stream, scf::ForOp rows) {
  for (auto read : stream.getBody()->getOps<vector::TransferReadOp>()) {
    auto view = read.getBase().getDefiningOp<memref::SubViewOp>();
    if (!view || view->getParentOp() != stream || !rows.isDefinedOutsideOfLoop(view.getSource()))
      continue;
    auto block = cast<MemRefType>(view.getSource().getType());
    if (block.hasStaticShape() && memref::isStaticShapeAndContiguousRowMajor(block))
      return view;
  }
  return {};
}

/// The buffer `view` is a view of, through any chain of views.
Value rootOf(Value view) {
  while (auto viewLike = view.getDefiningOp<ViewLikeOpInterface>())
    view = viewLike.getViewSource();
  return view;
}

Value ceilDiv(OpBuilder &b, Location loc, Value a, Value d) {
  return arith::CeilDivUIOp::create(b, loc, a, d);
}

struct PrefetchWeightBlocksPass : impl::PrefetchWeightBlocksBase<PrefetchWeightBlocksPass> {
  void runOnOperation() override {
    SmallVector<scf::ForOp> streams;
    getOperation().walk([&](scf::ForOp loop) {
      if (loop->hasAttr(kWeightStreamAttr))
        streams.push_back(loop);
    });
    for (scf::ForOp stream : streams) {
      stream->removeAttr(kWeightStreamAttr);
      prefetchNextBlock(stream);
    }
  }

  /// Adds the prefetches to `stream` where it has the expected shape; a lone tile (the rows
  /// left over after the row-tile loop, whose loop folded away) has no row tiles to share
  /// the work and gets none.
  void prefetchNextBlock(scf::ForOp stream) {
    auto rows = dyn_cast<scf::ForOp>(stream->getParentOp());
    if (!rows)
      return;
    memref::SubViewOp view = findSharedBlockRead(stream, rows);
    if (!view)
      return;
    Value block = view.getSource(), root = rootOf(block);
    auto blockType = cast<MemRefType>(block.getType());
    auto rootType = dyn_cast<MemRefType>(root.getType());
    if (!rootType || !rootType.getLayout().isIdentity())
      return;

    Location loc = stream.getLoc();
    OpBuilder b(rows);
    auto index = [&](int64_t value) -> Value {
      return arith::ConstantIndexOp::create(b, loc, value);
    };
    int64_t elementBytes = blockType.getElementTypeBitWidth() / 8;
    int64_t lineElements = std::max<int64_t>(1, 64 / elementBytes);
    int64_t blockElements = blockType.getNumElements();
    Value lines = index(llvm::divideCeil(blockElements, lineElements));

    // The whole buffer as one dimension, to address the block after `block` (and never past the
    // buffer's end: the last block of the last panel has none).
    auto metadata = memref::ExtractStridedMetadataOp::create(b, loc, block);
    Value extent = index(1);
    for (int64_t dim = 0; dim < rootType.getRank(); ++dim)
      extent = arith::MulIOp::create(b, loc, extent, memref::DimOp::create(b, loc, root, dim));
    auto flatType = MemRefType::get({ShapedType::kDynamic}, blockType.getElementType());
    Value flat = memref::ReinterpretCastOp::create(
        b, loc, flatType, metadata.getBaseBuffer(), OpFoldResult(b.getIndexAttr(0)),
        ArrayRef<OpFoldResult>{extent}, ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
    Value nextBlock = arith::AddIOp::create(b, loc, metadata.getOffset(), index(blockElements));
    Value last = arith::SubIOp::create(b, loc, extent, index(1));

    // Row tile t of T prefetches lines [t * per, (t + 1) * per) of the next block, per =
    // ceil(lines / T): one line per reduction step from its first one, then (where per < steps)
    // the last one again, which is already in L1. Everything but one add and one clamp per step
    // is computed once per row tile: the kernel's steps are a dozen FMAs, and on AVX2 the
    // earlier per-step division and two clamps were as many scalar instructions as FMAs.
    Value tiles =
        ceilDiv(b, loc, arith::SubIOp::create(b, loc, rows.getUpperBound(), rows.getLowerBound()),
                rows.getStep());
    tiles = arith::MaxUIOp::create(b, loc, tiles, index(1));
    Value perTile = ceilDiv(b, loc, lines, tiles);
    Value lineElementsValue = index(lineElements);

    b.setInsertionPointToStart(rows.getBody());
    Value tile = arith::DivUIOp::create(
        b, loc, arith::SubIOp::create(b, loc, rows.getInductionVar(), rows.getLowerBound()),
        rows.getStep());
    Value firstLine = arith::MulIOp::create(b, loc, tile, perTile);
    Value lastLine = arith::MinUIOp::create(
        b, loc,
        arith::SubIOp::create(b, loc, arith::AddIOp::create(b, loc, firstLine, perTile), index(1)),
        arith::SubIOp::create(b, loc, lines, index(1)));
    auto elementOf = [&](Value line) -> Value {
      return arith::AddIOp::create(b, loc, nextBlock,
                                   arith::MulIOp::create(b, loc, line, lineElementsValue));
    };
    Value first = elementOf(firstLine);
    Value limit = arith::MinUIOp::create(b, loc, elementOf(lastLine), last);

    b.setInsertionPointToStart(stream.getBody());
    Value step = arith::DivUIOp::create(
        b, loc, arith::SubIOp::create(b, loc, stream.getInductionVar(), stream.getLowerBound()),
        stream.getStep());
    Value element = arith::MinUIOp::create(
        b, loc,
        arith::AddIOp::create(b, loc, first,
                              arith::MulIOp::create(b, loc, step, lineElementsValue)),
        limit);
    memref::PrefetchOp::create(b, loc, flat, ValueRange{element}, /*isWrite=*/false,
                               /*localityHint=*/3, /*isDataCache=*/true);
  }
};

} // namespace
} // namespace mhac
