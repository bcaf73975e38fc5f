//===- PrefetchWeightBlocks.cpp - fetch the next weight block ahead -------===//
//
// Part of mhac.
//
// A projection's cache tile walks its packed weight panels block by block, in memory order, and
// every row tile of a block re-reads the same block. The first row tile of each block would wait
// for it to arrive from L3 (the hardware prefetchers stop at every 4 KiB page), so each row tile
// prefetches a slice of the block that comes next: by the time the last row tile finishes, the
// next block is in L1. The prefetches run in a loop of their own before the row tile's
// reduction, which is left with nothing but its loads and FMAs.
//
//===----------------------------------------------------------------------===//

#include "compiler/conversion/Passes.h"

#include "mlir/Dialect/MemRef/Utils/MemRefUtils.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/SmallPtrSet.h"

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
    // A reduction unrolled by a factor that does not divide it leaves a second marked loop
    // (its remainder) under the same row tile: the row tile's share is prefetched once.
    llvm::SmallPtrSet<Operation *, 8> prefetchedRows;
    for (scf::ForOp stream : streams) {
      stream->removeAttr(kWeightStreamAttr);
      if (prefetchedRows.insert(stream->getParentOp()).second)
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

    // Row tile t of T prefetches lines [t * per, min((t + 1) * per, lines)) of the next block,
    // per = ceil(lines / T), in a loop of its own just before its reduction: the reduction's
    // steps are a dozen FMAs each, and a prefetch inside them (with its address arithmetic)
    // cost as many scalar instructions as FMAs on AVX2, and issued the row tile's last line
    // again for every step past its share.
    Value tiles =
        ceilDiv(b, loc, arith::SubIOp::create(b, loc, rows.getUpperBound(), rows.getLowerBound()),
                rows.getStep());
    tiles = arith::MaxUIOp::create(b, loc, tiles, index(1));
    Value perTile = ceilDiv(b, loc, lines, tiles);

    b.setInsertionPoint(stream);
    Value tile = arith::DivUIOp::create(
        b, loc, arith::SubIOp::create(b, loc, rows.getInductionVar(), rows.getLowerBound()),
        rows.getStep());
    Value firstLine = arith::MulIOp::create(b, loc, tile, perTile);
    Value endLine =
        arith::MinUIOp::create(b, loc, arith::AddIOp::create(b, loc, firstLine, perTile), lines);
    auto prefetches = scf::ForOp::create(b, loc, firstLine, endLine, index(1));
    b.setInsertionPointToStart(prefetches.getBody());
    Value element = arith::MinUIOp::create(
        b, loc,
        arith::AddIOp::create(
            b, loc, nextBlock,
            arith::MulIOp::create(b, loc, prefetches.getInductionVar(), index(lineElements))),
        last);
    memref::PrefetchOp::create(b, loc, flat, ValueRange{element}, /*isWrite=*/false,
                               /*localityHint=*/3, /*isDataCache=*/true);
  }
};

} // namespace
} // namespace mhac
