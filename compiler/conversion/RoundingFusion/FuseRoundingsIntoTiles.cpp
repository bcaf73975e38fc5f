//===- FuseRoundingsIntoTiles.cpp - bf16 results rounded in their tiles ----===//
//
// Part of mhac. A projection with a bf16 result accumulates in f32 and rounds once, at the
// end (convert-mha-to-linalg marks that rounding). Left as a pass of its own, it would read
// the whole f32 result back from memory; fused into the projection's cache tiles, it reads
// each tile's accumulators while they are still in L2, and only the bf16 result leaves them.
//
//===----------------------------------------------------------------------===//

#include "compiler/conversion/Passes.h"

#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"

namespace mhac {
#define GEN_PASS_DEF_FUSEROUNDINGSINTOTILES
#include "compiler/conversion/Passes.h.inc"
} // namespace mhac

using namespace mlir;

namespace mhac {
namespace {

/// Vectorizes an elementwise `op` a row at a time: tiles of one element in every dimension but
/// the last, which must be static (a panel's columns).
LogicalResult vectorizeRows(RewriterBase &rewriter, linalg::LinalgOp op) {
  int64_t rank = op.getNumLoops();
  SmallVector<OpFoldResult> sizes(rank, rewriter.getIndexAttr(1));
  sizes.back() = rewriter.getIndexAttr(0);
  rewriter.setInsertionPoint(op);
  FailureOr<scf::SCFTilingResult> rows =
      scf::tileUsingSCF(rewriter, cast<TilingInterface>(op.getOperation()),
                        scf::SCFTilingOptions().setTileSizes(sizes));
  if (failed(rows))
    return failure();
  rewriter.replaceOp(op, rows->replacements);
  Operation *row = rows->tiledOps.back();
  FailureOr<linalg::VectorizationResult> vectorized = linalg::vectorize(rewriter, row);
  if (failed(vectorized))
    return failure();
  rewriter.replaceOp(row, vectorized->replacements);
  return success();
}

/// Whether `value` is a view of a tensor.empty (its contents undefined).
bool isEmptyView(Value value) {
  while (Operation *op = value.getDefiningOp()) {
    if (isa<tensor::EmptyOp>(op))
      return true;
    if (!isa<tensor::ExtractSliceOp, tensor::ExpandShapeOp, tensor::CollapseShapeOp>(op))
      return false;
    value = op->getOperand(0);
  }
  return false;
}

/// Makes the accumulators `tiles` computes into its shared output `accumulators` each tile's
/// own, where nothing reads that output once the rounding is fused: a tile's scratch, which
/// stays in L2, instead of a whole f32 result written out to memory and never read. The
/// tiles' slices of it become fresh tensors, and the canonicalizer drops the output. Only
/// where that output starts undefined (the tiles start from the bias themselves, as the
/// schedule's tiling fuses it): an output a tiling script left initialized is kept.
void privatizeAccumulators(RewriterBase &rewriter, scf::ForallOp tiles, OpResult accumulators) {
  OpOperand *initial = tiles.getTiedOpOperand(accumulators);
  if (!accumulators.use_empty() || !isEmptyView(initial->get()))
    return;
  BlockArgument shared = tiles.getTiedBlockArgument(initial);
  for (Operation *user : llvm::make_early_inc_range(shared.getUsers())) {
    auto slice = dyn_cast<tensor::ExtractSliceOp>(user);
    if (!slice)
      continue;
    rewriter.setInsertionPoint(slice);
    SmallVector<OpFoldResult> sizes;
    for (auto [i, size] : llvm::enumerate(slice.getMixedSizes()))
      if (!slice.getDroppedDims().test(i))
        sizes.push_back(size);
    rewriter.replaceOpWithNewOp<tensor::EmptyOp>(slice, sizes, slice.getType().getElementType());
  }
}

struct FuseRoundingsIntoTilesPass : impl::FuseRoundingsIntoTilesBase<FuseRoundingsIntoTilesPass> {
  void runOnOperation() override {
    SmallVector<linalg::GenericOp> roundings;
    getOperation().walk([&](linalg::GenericOp op) {
      if (op->hasAttr(kRoundingAttr))
        roundings.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::GenericOp rounding : roundings) {
      // A projection a user's tiling script left without cache tiles keeps its rounding whole.
      auto tiles = rounding.getDpsInputs()[0].getDefiningOp<scf::ForallOp>();
      if (!tiles)
        continue;
      unsigned accumulators = cast<OpResult>(rounding.getDpsInputs()[0]).getResultNumber();
      SmallVector<LoopLikeOpInterface> loops = {tiles};
      FailureOr<scf::SCFFuseConsumerOfSliceResult> fused =
          scf::tileAndFuseConsumer(rewriter, rounding, loops);
      if (failed(fused)) {
        rounding.emitError("internal error: cannot fuse the rounding into the projection's tiles");
        return signalPassFailure();
      }
      if (rounding->use_empty())
        rewriter.eraseOp(rounding);
      // The fusion rebuilt the loop, with the rounding's result added to its outputs.
      auto fusedTiles = fused->tiledOps.front()->getParentOfType<scf::ForallOp>();
      privatizeAccumulators(rewriter, fusedTiles, fusedTiles->getResult(accumulators));
      for (Operation *tile : fused->tiledOps)
        if (failed(vectorizeRows(rewriter, cast<linalg::LinalgOp>(tile)))) {
          tile->emitError("internal error: cannot vectorize the rounding of a tile");
          return signalPassFailure();
        }
    }
  }
};

} // namespace
} // namespace mhac
