//===- QueryTranspose.cpp - a block's queries, transposed -----------------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "compiler/conversion/AttentionToLoops/AttentionLowering.h"

#include "compiler/schedules/AttentionBlock.h"

#include "mlir/Dialect/X86Vector/X86VectorDialect.h"

#include <numeric>

namespace mhac {


double AttentionLowering::scoreScale() { return op_.getScaleAttr().getValueAsDouble() * kLog2E; }

void AttentionLowering::forEachRow(Value rows, function_ref<void(Value, Value, Value)> body) {
  Value c0 = index(0), c1 = index(1);
  for (int64_t h = 0; h < blocking_.heads; ++h) {
    Value column = add(qCol_, index(h * headDim_));
    forLoop(c0, rows, c1,
            [&](Value p) { body(add(index(h * blocking_.positions), p), p, column); });
  }
}

void AttentionLowering::buildQueryTranspose(Value rows) {
  Value c0 = index(0), c1 = index(1), dh = index(headDim_);
  Value scale = f32(scoreScale());
  bool scaled = !unscaledScores(), pairs = blocking_.bf16Products();
  int64_t lanes = blocking_.lanes;
  if (!blocking_.transposeInTiles) {
    // Element by element, zero in the columns of rows past the end and of padding rows (and,
    // for the pairs, past the head); each feature of a valid row stored rounded to bf16.
    if (pairs) {
      auto pairRow = VectorType::get({2 * lanes}, b_.getBF16Type());
      Value zeroPairs = arith::ConstantOp::create(b_, loc_, pairRow, b_.getZeroAttr(pairRow));
      forLoop(c0, index(amxPaddedHead(headDim_) / 2), c1, [&](Value k) {
        for (int64_t r = 0; r < blocking_.queryBlock; r += lanes)
          storeVector(zeroPairs, queryPairs_, {k, index(2 * r)});
      });
      // Feature d of row r is half d % 2 of pair d / 2 (an odd head's last pair: it and a zero).
      Value c2 = index(2);
      forEachRow(rows, [&](Value r, Value position, Value column) {
        Value row = add(i0_, position);
        forLoop(c0, dh, c1, [&](Value d) {
          Value query = loadScalar(query_, {batch_, row, add(column, d)});
          Value pair = arith::DivUIOp::create(b_, loc_, d, c2);
          Value half = arith::RemUIOp::create(b_, loc_, d, c2);
          memref::StoreOp::create(b_, loc_,
                                  arith::TruncFOp::create(b_, loc_, b_.getBF16Type(), query),
                                  queryPairs_, ValueRange{pair, add(mul(r, c2), half)});
        });
      });
      return;
    }
    // f32: then scaled a vector at a time, so that no scalar arithmetic is left in the loops
    // (on AVX-512 a sixteenth of the multiplies).
    forLoop(c0, dh, c1, [&](Value d) {
      for (int64_t r = 0; r < blocking_.queryBlock; r += lanes)
        storeVector(splat(laneVector_, f32(0)), queryT_, {d, index(r)});
    });
    forEachRow(rows, [&](Value r, Value position, Value column) {
      Value row = add(i0_, position);
      forLoop(c0, dh, c1, [&](Value d) {
        memref::StoreOp::create(b_, loc_, loadScalar(query_, {batch_, row, add(column, d)}),
                                queryT_, ValueRange{d, r});
      });
    });
    if (!scaled)
      return;
    Value scales = splat(laneVector_, scale);
    forLoop(c0, dh, c1, [&](Value d) {
      for (int64_t r = 0; r < blocking_.queryBlock; r += lanes) {
        Value scaled = arith::MulFOp::create(
            b_, loc_, loadVector(laneVector_, queryT_, {d, index(r)}), scales);
        storeVector(scaled, queryT_, {d, index(r)});
      }
    });
    return;
  }
  // Square tiles of lanes x lanes, transposed in registers (vector.transpose, lowered to
  // shuffles). A tile's rows are any `lanes` consecutive rows of the block, within one head or
  // across heads (a grouped-query block of fewer positions than lanes): each is read as a
  // vector of its own, from a row index kept in bounds, and zeroed where the row is past the
  // sequence's end or padding. A head that is no whole number of vectors ends in a narrower
  // tile (lanes x the rest), transposed the same way.
  Value positions = index(blocking_.positions);
  int64_t realRows = blocking_.heads * blocking_.positions;
  auto below = [&](Value a, Value bound) {
    return arith::CmpIOp::create(b_, loc_, arith::CmpIPredicate::ult, a, bound);
  };
  forLoop(c0, index(blocking_.queryBlock), index(lanes), [&](Value r) {
    SmallVector<Value> sourceRows, columns, valid;
    for (int64_t i = 0; i < lanes; ++i) {
      Value row = add(r, index(i));
      Value position = arith::RemUIOp::create(b_, loc_, row, positions);
      valid.push_back(below(position, rows));
      if (realRows < blocking_.queryBlock)
        valid.back() = arith::AndIOp::create(b_, loc_, valid.back(), below(row, index(realRows)));
      sourceRows.push_back(
          arith::SelectOp::create(b_, loc_, valid.back(), add(i0_, position), i0_));
      columns.push_back(
          add(qCol_, mul(arith::DivUIOp::create(b_, loc_, row, positions), dh)));
    }
    if (pairs) {
      // Features 2k and 2k + 1 of a query, in bf16, are one 32-bit word of its row, and row k
      // of queryPairs_ is word k of every query: the block's rows transposed as words. So a
      // tile is `lanes` rows of 2 x lanes features, rounded, transposed as lanes x lanes i32
      // (half the shuffles of f32 tiles, and no pass interleaving rows into pairs); the head's
      // padding to whole steps of AMX's reduction is zeros, read from no feature past the head.
      auto wordTile = VectorType::get({lanes, lanes}, b_.getI32Type());
      auto words = VectorType::get({lanes}, b_.getI32Type());
      auto pairRow = VectorType::get({2 * lanes}, b_.getBF16Type());
      auto halfRow = VectorType::get({lanes}, b_.getBF16Type());
      Value zeroHalf = arith::ConstantOp::create(b_, loc_, halfRow, b_.getZeroAttr(halfRow));
      Value zeroWords = arith::ConstantOp::create(b_, loc_, words, b_.getZeroAttr(words));
      SmallVector<int64_t> concatenation(2 * lanes);
      std::iota(concatenation.begin(), concatenation.end(), 0);
      // `width` features of a query from `feature` on (bf16 queries).
      auto readBf16 = [&](VectorType type, Value row, Value feature) {
        return vector::TransferReadOp::create(
                   b_, loc_, type, query_, ValueRange{batch_, row, feature},
                   arith::ConstantOp::create(b_, loc_, b_.getZeroAttr(elementType_)),
                   ArrayRef<bool>{true})
            .getResult();
      };
      // `width` (at most `lanes`) features of a query from `feature` on, rounded to bf16, zero
      // past them: a head no whole number of vectors reads no feature past its end.
      auto roundedHalf = [&](Value row, Value feature, int64_t width) -> Value {
        if (width == 0)
          return zeroHalf;
        if (elementType_ != f32_) {
          if (width == lanes)
            return readBf16(halfRow, row, feature);
          return vector::InsertStridedSliceOp::create(
              b_, loc_, readBf16(VectorType::get({width}, b_.getBF16Type()), row, feature),
              zeroHalf, ArrayRef<int64_t>{0}, ArrayRef<int64_t>{1});
        }
        Value features = readRow(width, query_, {batch_, row, feature});
        if (width < lanes)
          features =
              vector::InsertStridedSliceOp::create(b_, loc_, features, splat(laneVector_, f32(0)),
                                                   ArrayRef<int64_t>{0}, ArrayRef<int64_t>{1});
        return x86vector::CvtPackedF32ToBF16Op::create(b_, loc_, halfRow, features).getResult();
      };
      // The words of the pairs of `width` features (at most 2 x `lanes`) from `feature` on:
      // one read of a bf16 row where they are a whole step.
      auto rowWords = [&](Value row, Value feature, int64_t width) {
        if (width == 2 * lanes && elementType_ != f32_)
          return vector::BitCastOp::create(b_, loc_, words, readBf16(pairRow, row, feature))
              .getResult();
        Value low = roundedHalf(row, feature, std::min(width, lanes));
        Value high =
            roundedHalf(row, add(feature, index(lanes)), std::max<int64_t>(0, width - lanes));
        return vector::BitCastOp::create(
                   b_, loc_, words, vector::ShuffleOp::create(b_, loc_, low, high, concatenation))
            .getResult();
      };
      auto transposeWords = [&](Value d, int64_t width) {
        Value tile = arith::ConstantOp::create(b_, loc_, wordTile, b_.getZeroAttr(wordTile));
        for (int64_t i = 0; i < lanes; ++i) {
          Value row = rowWords(sourceRows[i], add(columns[i], d), width);
          row = arith::SelectOp::create(b_, loc_, valid[i], row, zeroWords);
          tile = vector::InsertOp::create(b_, loc_, row, tile, i);
        }
        Value transposed = vector::TransposeOp::create(b_, loc_, tile, ArrayRef<int64_t>{1, 0});
        Value firstPair = arith::DivUIOp::create(b_, loc_, d, index(2));
        for (int64_t k = 0; k < lanes; ++k) {
          Value pair = vector::BitCastOp::create(
              b_, loc_, pairRow, vector::ExtractOp::create(b_, loc_, transposed, k));
          storeVector(pair, queryPairs_, {add(firstPair, index(k)), mul(r, index(2))});
        }
      };
      int64_t step = 2 * lanes, wholeSteps = headDim_ / step * step;
      forLoop(c0, index(wholeSteps), index(step), [&](Value d) { transposeWords(d, step); });
      if (wholeSteps < headDim_)
        transposeWords(index(wholeSteps), headDim_ - wholeSteps);
      return;
    }
    // The tile of the head's features [d, d + width).
    auto transposeTile = [&](Value d, int64_t width) {
      auto tileType = VectorType::get({lanes, width}, f32_);
      auto rowType = VectorType::get({width}, f32_);
      Value zeroRow = splat(rowType, f32(0));
      Value tile = splat(tileType, f32(0));
      for (int64_t i = 0; i < lanes; ++i) {
        Value vector = readRow(width, query_, {batch_, sourceRows[i], add(columns[i], d)});
        vector = arith::SelectOp::create(b_, loc_, valid[i], vector, zeroRow);
        tile = vector::InsertOp::create(b_, loc_, vector, tile, i);
      }
      if (scaled)
        tile = arith::MulFOp::create(b_, loc_, tile, splat(tileType, scale));
      Value transposed = vector::TransposeOp::create(b_, loc_, tile, ArrayRef<int64_t>{1, 0});
      vector::TransferWriteOp::create(b_, loc_, transposed, queryT_, ValueRange{d, r},
                                      ArrayRef<bool>{true, true});
    };
    int64_t wholeColumns = headDim_ / lanes * lanes;
    forLoop(c0, index(wholeColumns), index(lanes), [&](Value d) { transposeTile(d, lanes); });
    if (wholeColumns < headDim_)
      transposeTile(index(wholeColumns), headDim_ - wholeColumns);
  });
}

} // namespace mhac
