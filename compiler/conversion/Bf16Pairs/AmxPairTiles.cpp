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
#include "compiler/target/CpuTarget.h"

#include "mlir/Dialect/AMX/AMXDialect.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"

namespace mhac {
#define GEN_PASS_DEF_AMXPAIRTILES
#include "compiler/conversion/Passes.h.inc"
} // namespace mhac

using namespace mlir;

namespace mhac {
namespace {

/// Rows of an AMX tile, f32 results per tile row, and input pairs per step (a tile row of bf16).
constexpr int64_t kTileRows = kAmxTileRows;
constexpr int64_t kTileColumns = kAmxTileRowBytes / 4;
constexpr int64_t kStepPairs = kAmxTileRowBytes / 4;

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
  auto viewType = memref::SubViewOp::inferRankReducedResultType(shape, type, offsets, sizes,
                                                                strides);
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

/// The tile operations, on AMX or in vectors (`vectors`: vector transfers and vdpbf16ps). A
/// tile is 2-D: `rows` x `columns` elements of a 2-D memref whose rows are contiguous.
class TileWriter {
public:
  TileWriter(OpBuilder &b, Location loc, bool vectors) : b_(b), loc_(loc), vectors_(vectors) {}

  Value load(Value memref, Value row, Value column, int64_t rows, int64_t columns) {
    Type element = cast<MemRefType>(memref.getType()).getElementType();
    if (!vectors_)
      return amx::TileLoadOp::create(b_, loc_, amx::TileType::get({rows, columns}, element),
                                     memref, ValueRange{row, column});
    Value padding = arith::ConstantOp::create(b_, loc_, b_.getZeroAttr(element));
    return vector::TransferReadOp::create(b_, loc_, VectorType::get({rows, columns}, element),
                                          memref, ValueRange{row, column}, padding,
                                          ArrayRef<bool>{true, true});
  }

  void store(Value tile, Value memref, Value row, Value column) {
    if (!vectors_) {
      amx::TileStoreOp::create(b_, loc_, memref, ValueRange{row, column}, tile);
      return;
    }
    vector::TransferWriteOp::create(b_, loc_, tile, memref, ValueRange{row, column},
                                    ArrayRef<bool>{true, true});
  }

  /// acc += the pair products of inputs (rows x 2k bf16) and weights (k x 2 columns bf16).
  Value multiply(Value inputs, Value weights, Value acc) {
    if (!vectors_)
      return amx::TileMulFOp::create(b_, loc_, acc.getType(), inputs, weights, acc);
    // What tdpbf16ps computes, row by row: each of the row's 16 input pairs broadcast and
    // multiplied with a row of 16 weight pairs by vdpbf16ps (the same pair sums in f32).
    int64_t rows = cast<VectorType>(acc.getType()).getDimSize(0);
    auto words = VectorType::get({kStepPairs}, b_.getI32Type());
    auto pairRow = VectorType::get({2 * kStepPairs}, b_.getBF16Type());
    for (int64_t m = 0; m < rows; ++m) {
      Value sums = vector::ExtractOp::create(b_, loc_, acc, ArrayRef<int64_t>{m});
      Value row = vector::BitCastOp::create(
          b_, loc_, words, vector::ExtractOp::create(b_, loc_, inputs, ArrayRef<int64_t>{m}));
      for (int64_t k = 0; k < kStepPairs; ++k) {
        Value pair = vector::ExtractOp::create(b_, loc_, row, ArrayRef<int64_t>{k});
        Value broadcast = vector::BitCastOp::create(
            b_, loc_, pairRow, vector::BroadcastOp::create(b_, loc_, words, pair));
        Value weightRow = vector::ExtractOp::create(b_, loc_, weights, ArrayRef<int64_t>{k});
        sums = x86vector::DotBF16Op::create(b_, loc_, sums.getType(), sums, broadcast, weightRow);
      }
      acc = vector::InsertOp::create(b_, loc_, sums, acc, ArrayRef<int64_t>{m});
    }
    return acc;
  }

private:
  OpBuilder &b_;
  Location loc_;
  bool vectors_;
};

/// The 2-D views of one tile's operands, each row contiguous, as tile loads and stores take
/// them: inputs [R][2K], weights [K][2P], accumulators [R][P].
struct TileViews {
  Value inputRows, weightRows, accRows;
  int64_t pairs, columnTiles;
};

/// Accumulates rows [first, first + count) of a tile, whole 16-row tiles or one band of fewer,
/// each step of 16 pairs loading a weight tile per 16 columns and an input tile per 16 rows.
/// On AMX (`vectors` false) the steps are unrolled: LLVM allocates the tile registers of
/// straight-line code (the reduction is one panel reduction block, tens of steps), while tiles
/// carried by a loop would be block arguments, which the conversion to LLVM does not type.
/// In vectors they stay a loop.
void accumulateRows(OpBuilder &b, Location loc, const TileViews &views, int64_t first,
                    int64_t count, bool vectors) {
  TileWriter tiles(b, loc, vectors);
  auto index = [&](OpBuilder &at, int64_t value) {
    return arith::ConstantIndexOp::create(at, loc, value);
  };
  SmallVector<int64_t> rowOffsets;
  for (int64_t r = first; r < first + count; r += kTileRows)
    rowOffsets.push_back(r);
  auto height = [&](int64_t r) { return std::min(kTileRows, first + count - r); };
  int64_t columnTiles = views.columnTiles;

  SmallVector<Value> sums;
  for (int64_t r : rowOffsets)
    for (int64_t c = 0; c < columnTiles; ++c)
      sums.push_back(tiles.load(views.accRows, index(b, r), index(b, c * kTileColumns), height(r),
                                kTileColumns));
  // One step of 16 pairs from `pair` on: the accumulators after it. Every operand tile is
  // loaded before the first product, each into a register of its own: tile registers are not
  // renamed, so an input tile loaded into the register the previous one's products still
  // read would wait for them, its load latency exposed.
  auto step = [&](OpBuilder &at, Value pair, ValueRange carried) {
    TileWriter tiles(at, loc, vectors);
    Value column = arith::MulIOp::create(at, loc, pair, index(at, 2));
    SmallVector<Value> inputTiles, weightTiles;
    for (int64_t r : rowOffsets)
      inputTiles.push_back(
          tiles.load(views.inputRows, index(at, r), column, height(r), 2 * kStepPairs));
    for (int64_t c = 0; c < columnTiles; ++c)
      weightTiles.push_back(tiles.load(views.weightRows, pair, index(at, 2 * c * kTileColumns),
                                       kStepPairs, 2 * kTileColumns));
    SmallVector<Value> next;
    for (auto [i, inputTile] : llvm::enumerate(inputTiles))
      for (int64_t c = 0; c < columnTiles; ++c)
        next.push_back(tiles.multiply(inputTile, weightTiles[c], carried[i * columnTiles + c]));
    return next;
  };
  if (vectors) {
    auto loop = scf::ForOp::create(
        b, loc, index(b, 0), index(b, views.pairs), index(b, kStepPairs), sums,
        [&](OpBuilder &nested, Location, Value pair, ValueRange carried) {
          scf::YieldOp::create(nested, loc, step(nested, pair, carried));
        });
    sums = loop.getResults();
  } else {
    for (int64_t pair = 0; pair < views.pairs; pair += kStepPairs)
      sums = step(b, index(b, pair), sums);
  }
  for (auto [i, r] : llvm::enumerate(rowOffsets))
    for (int64_t c = 0; c < columnTiles; ++c)
      tiles.store(sums[i * columnTiles + c], views.accRows, index(b, r),
                  index(b, c * kTileColumns));
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
      inputType.getDimSize(1) % kStepPairs != 0 || weightType.getDimSize(2) % kTileColumns != 0)
    return tile.emitOpError("is not an AMX tile of bf16 pairs: expected inputs [R][16k][2], "
                            "weights [1][16k][16n][2] and accumulators [R][1][16n]");
  int64_t rows = inputType.getDimSize(0);

  OpBuilder b(tile);
  Location loc = tile.getLoc();
  TileViews views{mergePairs(b, loc, inputs), mergePairs(b, loc, dropUnitDim(b, loc, weights, 0)),
                  dropUnitDim(b, loc, acc, 1), inputType.getDimSize(1),
                  weightType.getDimSize(2) / kTileColumns};
  // Whole 16-row tiles on AMX; the rows past them (an edge tile's) in vectors: AMX tiles of
  // fewer rows would be a second tile shape, and LLVM configures each tile register with one
  // shape per function, which leaves fewer registers for each and spills.
  int64_t wholeRows = rows / kTileRows * kTileRows;
  if (wholeRows > 0)
    accumulateRows(b, loc, views, 0, wholeRows, emulate);
  if (rows > wholeRows)
    accumulateRows(b, loc, views, wholeRows, rows - wholeRows, /*vectors=*/true);
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
