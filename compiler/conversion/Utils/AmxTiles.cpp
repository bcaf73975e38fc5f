//===- AmxTiles.cpp - bf16 tile products on AMX, or in vectors ------------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "compiler/conversion/Utils/AmxTiles.h"

#include "mlir/Dialect/AMX/AMXDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"

using namespace mlir;

namespace mhac {
namespace {

/// The tile operations, on AMX or in vectors (`vectors`: vector transfers and vdpbf16ps). A
/// tile is 2-D: `rows` x `columns` elements of a 2-D memref whose rows are contiguous.
class TileWriter {
public:
  TileWriter(OpBuilder &b, Location loc, bool vectors) : b_(b), loc_(loc), vectors_(vectors) {}

  Value load(Value memref, Value row, Value column, int64_t rows, int64_t columns) {
    Type element = cast<MemRefType>(memref.getType()).getElementType();
    if (!vectors_)
      return amx::TileLoadOp::create(b_, loc_, amx::TileType::get({rows, columns}, element), memref,
                                     ValueRange{row, column});
    Value padding = arith::ConstantOp::create(b_, loc_, b_.getZeroAttr(element));
    return vector::TransferReadOp::create(b_, loc_, VectorType::get({rows, columns}, element),
                                          memref, ValueRange{row, column}, padding,
                                          ArrayRef<bool>{true, true});
  }

  Value zero(int64_t rows, int64_t columns) {
    if (!vectors_)
      return amx::TileZeroOp::create(b_, loc_,
                                     amx::TileType::get({rows, columns}, b_.getF32Type()));
    auto type = VectorType::get({rows, columns}, b_.getF32Type());
    return arith::ConstantOp::create(b_, loc_, type, b_.getZeroAttr(type));
  }

  void store(Value tile, Value memref, Value row, Value column) {
    if (!vectors_) {
      amx::TileStoreOp::create(b_, loc_, memref, ValueRange{row, column}, tile);
      return;
    }
    vector::TransferWriteOp::create(b_, loc_, tile, memref, ValueRange{row, column},
                                    ArrayRef<bool>{true, true});
  }

  /// acc += the pair products of a (rows x 2k bf16) and b (k x 2 columns bf16).
  Value multiply(Value a, Value b, Value acc) {
    if (!vectors_)
      return amx::TileMulFOp::create(b_, loc_, acc.getType(), a, b, acc);
    // What tdpbf16ps computes, row by row: each of the row's 16 pairs of a broadcast and
    // multiplied with a row of 16 pairs of b by vdpbf16ps (the same pair sums in f32).
    int64_t rows = cast<VectorType>(acc.getType()).getDimSize(0);
    auto words = VectorType::get({kAmxStepPairs}, b_.getI32Type());
    auto pairRow = VectorType::get({2 * kAmxStepPairs}, b_.getBF16Type());
    for (int64_t m = 0; m < rows; ++m) {
      Value sums = vector::ExtractOp::create(b_, loc_, acc, ArrayRef<int64_t>{m});
      Value row = vector::BitCastOp::create(
          b_, loc_, words, vector::ExtractOp::create(b_, loc_, a, ArrayRef<int64_t>{m}));
      for (int64_t k = 0; k < kAmxStepPairs; ++k) {
        Value pair = vector::ExtractOp::create(b_, loc_, row, ArrayRef<int64_t>{k});
        Value broadcast = vector::BitCastOp::create(
            b_, loc_, pairRow, vector::BroadcastOp::create(b_, loc_, words, pair));
        Value bRow = vector::ExtractOp::create(b_, loc_, b, ArrayRef<int64_t>{k});
        sums = x86vector::DotBF16Op::create(b_, loc_, sums.getType(), sums, broadcast, bRow);
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

} // namespace

void accumulateTiles(OpBuilder &b, Location loc, const TileOperands &operands,
                     ArrayRef<TileRows> rows, ArrayRef<int64_t> columns, int64_t pairs,
                     TileStart start, bool vectors) {
  TileWriter tiles(b, loc, vectors);
  auto index = [&](OpBuilder &at, int64_t value) {
    return arith::ConstantIndexOp::create(at, loc, value);
  };
  SmallVector<Value> sums;
  for (TileRows r : rows)
    for (int64_t c : columns)
      sums.push_back(start == TileStart::Zero ? tiles.zero(r.height, kAmxTileColumns)
                                              : tiles.load(operands.c, index(b, r.offset),
                                                           index(b, c), r.height, kAmxTileColumns));
  // One step of 16 pairs from `pair` on: the results after it.
  auto step = [&](OpBuilder &at, Value pair, ValueRange carried) {
    TileWriter tiles(at, loc, vectors);
    Value column = arith::MulIOp::create(at, loc, pair, index(at, 2));
    SmallVector<Value> aTiles, bTiles;
    for (TileRows r : rows)
      aTiles.push_back(
          tiles.load(operands.a, index(at, r.offset), column, r.height, 2 * kAmxStepPairs));
    for (int64_t c : columns)
      bTiles.push_back(
          tiles.load(operands.b, pair, index(at, 2 * c), kAmxStepPairs, 2 * kAmxTileColumns));
    SmallVector<Value> next;
    for (auto [i, aTile] : llvm::enumerate(aTiles))
      for (auto [j, bTile] : llvm::enumerate(bTiles))
        next.push_back(tiles.multiply(aTile, bTile, carried[i * columns.size() + j]));
    return next;
  };
  if (vectors) {
    auto loop =
        scf::ForOp::create(b, loc, index(b, 0), index(b, pairs), index(b, kAmxStepPairs), sums,
                           [&](OpBuilder &nested, Location, Value pair, ValueRange carried) {
                             scf::YieldOp::create(nested, loc, step(nested, pair, carried));
                           });
    sums = loop.getResults();
  } else {
    for (int64_t pair = 0; pair < pairs; pair += kAmxStepPairs)
      sums = step(b, index(b, pair), sums);
  }
  for (auto [i, r] : llvm::enumerate(rows))
    for (auto [j, c] : llvm::enumerate(columns))
      tiles.store(sums[i * columns.size() + j], operands.c, index(b, r.offset), index(b, c));
}

void accumulatePairsInRegisters(OpBuilder &b, Location loc, const TileOperands &operands,
                                int64_t rows, int64_t columns, int64_t pairs, TileStart start,
                                PairsInUse inUse) {
  constexpr int64_t kLanes = kAmxTileColumns, kMaxVectors = 4, kMaxRows = 8, kRegisters = 32;
  auto index = [&](OpBuilder &at, int64_t value) {
    return arith::ConstantIndexOp::create(at, loc, value);
  };
  auto sumsType = VectorType::get({kLanes}, b.getF32Type());
  auto pairRow = VectorType::get({2 * kLanes}, b.getBF16Type());
  auto pairType = VectorType::get({2}, b.getBF16Type());
  auto words = VectorType::get({kLanes}, b.getI32Type());
  auto word = VectorType::get({1}, b.getI32Type());
  // a's last row in use, which the tile rows past it read.
  Value lastRow = inUse.rows ? arith::SubIOp::create(b, loc, inUse.rows, index(b, 1)) : Value();
  int64_t vectors = columns / kLanes;
  for (int64_t v0 = 0; v0 < vectors; v0 += kMaxVectors) {
    int64_t chunk = std::min(kMaxVectors, vectors - v0);
    // Accumulators, the chunk's vectors of b and one broadcast, within the 32 zmm.
    int64_t tileRows = std::min(kMaxRows, (kRegisters - chunk - 1) / chunk);
    for (int64_t r0 = 0; r0 < rows; r0 += tileRows) {
      int64_t height = std::min(tileRows, rows - r0);
      OpBuilder::InsertionGuard guard(b);
      if (inUse.rows) {
        Value inLimit =
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, index(b, r0), inUse.rows);
        auto ifInUse = scf::IfOp::create(b, loc, inLimit, /*withElseRegion=*/false);
        b.setInsertionPointToStart(ifInUse.thenBlock());
      }
      SmallVector<Value> aRows;
      for (int64_t r = 0; r < height; ++r) {
        Value row = index(b, r0 + r);
        aRows.push_back(lastRow ? arith::MinSIOp::create(b, loc, row, lastRow) : row);
      }
      SmallVector<Value> init;
      for (int64_t r = 0; r < height; ++r)
        for (int64_t v = 0; v < chunk; ++v)
          init.push_back(
              start == TileStart::Zero
                  ? arith::ConstantOp::create(b, loc, sumsType, b.getZeroAttr(sumsType)).getResult()
                  : vector::LoadOp::create(
                        b, loc, sumsType, operands.c,
                        ValueRange{index(b, r0 + r), index(b, (v0 + v) * kLanes)})
                        .getResult());
      // One step of the reduction: `half`, a's pair is its last value and a zero.
      auto step = [&](OpBuilder &at, Value pair, ValueRange sums, bool half) {
        Value column = arith::MulIOp::create(at, loc, pair, index(at, 2));
        SmallVector<Value> bRows;
        for (int64_t v = 0; v < chunk; ++v)
          bRows.push_back(vector::LoadOp::create(
              at, loc, pairRow, operands.b, ValueRange{pair, index(at, 2 * (v0 + v) * kLanes)}));
        Value zero = arith::ConstantOp::create(at, loc, at.getZeroAttr(at.getBF16Type()));
        SmallVector<Value> next;
        for (int64_t r = 0; r < height; ++r) {
          // A transfer: a may be a view of strides known only after bufferization.
          Value aPair = half ? vector::FromElementsOp::create(
                                   at, loc, pairType,
                                   ValueRange{memref::LoadOp::create(at, loc, operands.a,
                                                                     ValueRange{aRows[r], column}),
                                              zero})
                                   .getResult()
                             : vector::TransferReadOp::create(at, loc, pairType, operands.a,
                                                              ValueRange{aRows[r], column}, zero,
                                                              ArrayRef<bool>{true})
                                   .getResult();
          Value bits = vector::ExtractOp::create(
              at, loc, vector::BitCastOp::create(at, loc, word, aPair), ArrayRef<int64_t>{0});
          Value broadcast = vector::BitCastOp::create(
              at, loc, pairRow, vector::BroadcastOp::create(at, loc, words, bits));
          for (int64_t v = 0; v < chunk; ++v)
            next.push_back(x86vector::DotBF16Op::create(at, loc, sumsType, sums[r * chunk + v],
                                                        broadcast, bRows[v]));
        }
        return next;
      };
      bool half = inUse.halfLastPair;
      Value end = inUse.pairs ? inUse.pairs : index(b, pairs);
      if (half)
        end = arith::SubIOp::create(b, loc, end, index(b, 1));
      auto loop =
          scf::ForOp::create(b, loc, index(b, 0), end, index(b, 1), init,
                             [&](OpBuilder &at, Location, Value pair, ValueRange sums) {
                               scf::YieldOp::create(at, loc, step(at, pair, sums, /*half=*/false));
                             });
      SmallVector<Value> results = loop.getResults();
      if (half)
        results = step(b, end, results, /*half=*/true);
      for (int64_t r = 0; r < height; ++r)
        for (int64_t v = 0; v < chunk; ++v)
          vector::StoreOp::create(b, loc, results[r * chunk + v], operands.c,
                                  ValueRange{index(b, r0 + r), index(b, (v0 + v) * kLanes)});
    }
  }
}

} // namespace mhac
