//===- AmxPairTiles.cpp - bf16 pair tiles onto AMX ------------------------===//
//
// Part of mhac. A register tile of a projection of bf16 pairs that the schedule's tiling
// marked `mhac.amx_tile` (bf16_compute = amx) computes, over its whole reduction of K pairs,
//
//   acc[r][c] += sum_k x[r][2k] * w[c][2k] + x[r][2k + 1] * w[c][2k + 1]
//
// for R rows and a panel of P columns, with x a row-major [R][K][2] view of the inputs and w
// the panel's [K][P][2] (the pair layout the weight preparation writes, which is AMX's VNNI
// layout of B). This pass writes it as AMX tiles: the accumulators as 16 x 16 f32 tiles,
// loaded before the reduction and stored after it; each step of 16 pairs loads one input tile
// per 16 rows (16 rows x 32 bf16) and one weight tile per 16 columns (16 pairs x 16 columns x
// 2), and multiplies every pair of them with tdpbf16ps into the accumulator tiles, which stay
// in tile registers across the steps (unrolled: straight-line code of a panel reduction
// block).
//
// With `emulate`, each tile operation is written in vector operations instead (transfers, and
// the products as AVX512-BF16's vdpbf16ps, one row of pairs at a time): the same views, steps
// and indices, runnable on a CPU without AMX, so that the tests check what AMX would compute.
//
//===----------------------------------------------------------------------===//

#include "compiler/conversion/Passes.h"
#include "compiler/conversion/Utils/AmxTiles.h"

#include "mlir/Dialect/AMX/AMXDialect.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"

namespace mhac {
#define GEN_PASS_DEF_AMXPAIRTILES
#include "compiler/conversion/Passes.h.inc"
} // namespace mhac

using namespace mlir;

namespace mhac {
namespace {

/// A view of `memref` with `dropped` (a dimension of size 1) removed.
Value dropUnitDim(OpBuilder &b, Location loc, Value memref, int64_t dropped) {
  auto type = cast<MemRefType>(memref.getType());
  int64_t rank = type.getRank();
  SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0)), strides(rank, b.getIndexAttr(1)),
      sizes;
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d) {
    sizes.push_back(b.getIndexAttr(type.getDimSize(d)));
    if (d != dropped)
      shape.push_back(type.getDimSize(d));
  }
  auto viewType =
      memref::SubViewOp::inferRankReducedResultType(shape, type, offsets, sizes, strides);
  return memref::SubViewOp::create(b, loc, cast<MemRefType>(viewType), memref, offsets, sizes,
                                   strides);
}

/// `memref`'s last two dimensions (a pair's halves, contiguous) as one.
Value mergePairs(OpBuilder &b, Location loc, Value memref) {
  int64_t rank = cast<MemRefType>(memref.getType()).getRank();
  SmallVector<ReassociationIndices> groups;
  for (int64_t d = 0; d < rank - 2; ++d)
    groups.push_back({d});
  groups.push_back({rank - 2, rank - 1});
  return memref::CollapseShapeOp::create(b, loc, memref, groups);
}

/// Accumulates rows [first, first + count) of a tile, whole 16-row tiles or one band of fewer,
/// over every column tile of its panel: `operands` are its inputs [R][2K], weights [K][2P] and
/// accumulators [R][P].
void accumulateRows(OpBuilder &b, Location loc, const TileOperands &operands, int64_t pairs,
                    int64_t columnTiles, int64_t first, int64_t count, bool vectors) {
  SmallVector<TileRows> rows;
  for (int64_t r = first; r < first + count; r += kAmxTileRows)
    rows.push_back({r, std::min(kAmxTileRows, first + count - r)});
  SmallVector<int64_t> columns;
  for (int64_t c = 0; c < columnTiles; ++c)
    columns.push_back(c * kAmxTileColumns);
  accumulateTiles(b, loc, operands, rows, columns, pairs, TileStart::Load, vectors);
}

LogicalResult rewriteTile(linalg::GenericOp tile, bool emulate) {
  if (!tile.hasPureBufferSemantics() || tile.getNumDpsInputs() != 2 || tile.getNumDpsInits() != 1)
    return tile.emitOpError("is not an AMX tile of bf16 pairs on buffers");
  Value inputs = tile.getDpsInputs()[0], weights = tile.getDpsInputs()[1],
        acc = tile.getDpsInits()[0];
  auto inputType = cast<MemRefType>(inputs.getType());
  auto weightType = cast<MemRefType>(weights.getType());
  auto accType = cast<MemRefType>(acc.getType());
  // inputs [R][K][2], weights [1][K][P][2], accumulators [R][1][P].
  if (inputType.getRank() != 3 || weightType.getRank() != 4 || accType.getRank() != 3 ||
      !inputType.hasStaticShape() || !weightType.hasStaticShape() || !accType.hasStaticShape() ||
      weightType.getDimSize(0) != 1 || accType.getDimSize(1) != 1 ||
      inputType.getDimSize(1) % kAmxStepPairs != 0 ||
      weightType.getDimSize(2) % kAmxTileColumns != 0)
    return tile.emitOpError("is not an AMX tile of bf16 pairs: expected inputs [R][16k][2], "
                            "weights [1][16k][16n][2] and accumulators [R][1][16n]");
  int64_t rows = inputType.getDimSize(0);

  OpBuilder b(tile);
  Location loc = tile.getLoc();
  TileOperands operands{mergePairs(b, loc, inputs),
                        mergePairs(b, loc, dropUnitDim(b, loc, weights, 0)),
                        dropUnitDim(b, loc, acc, 1)};
  int64_t pairs = inputType.getDimSize(1), columnTiles = weightType.getDimSize(2) / kAmxTileColumns;
  // Whole 16-row tiles on AMX; the rows past them (an edge tile's) in vectors: AMX tiles of
  // fewer rows would be a second tile shape, and LLVM configures each tile register with one
  // shape per function, which leaves fewer registers for each and spills.
  int64_t wholeRows = rows / kAmxTileRows * kAmxTileRows;
  if (wholeRows > 0)
    accumulateRows(b, loc, operands, pairs, columnTiles, 0, wholeRows, emulate);
  if (rows > wholeRows)
    accumulateRows(b, loc, operands, pairs, columnTiles, wholeRows, rows - wholeRows,
                   /*vectors=*/true);
  tile->erase();
  return success();
}

struct AmxPairTilesPass : impl::AmxPairTilesBase<AmxPairTilesPass> {
  using AmxPairTilesBase::AmxPairTilesBase;

  void runOnOperation() override {
    SmallVector<linalg::GenericOp> marked;
    getOperation().walk([&](linalg::GenericOp op) {
      if (op->hasAttr(kAmxTileAttr))
        marked.push_back(op);
    });
    for (linalg::GenericOp tile : marked)
      if (failed(rewriteTile(tile, emulate)))
        return signalPassFailure();
  }
};

} // namespace
} // namespace mhac
