//===- ScoreTile.cpp - the scores' register tiles -------------------------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "compiler/conversion/AttentionToLoops/AttentionLowering.h"

#include <limits>
#include <numeric>

namespace mhac {

Value AttentionLowering::queryPositions(Value q) {
  int64_t lanes = blocking_.lanes;
  auto laneType = VectorType::get({lanes}, b_.getI32Type());
  SmallVector<int32_t> offsets(lanes);
  std::iota(offsets.begin(), offsets.end(), 0);
  Value laneOffsets =
      arith::ConstantOp::create(b_, loc_, DenseIntElementsAttr::get(laneType, offsets));
  Value firstLane = splat(laneType, arith::IndexCastOp::create(b_, loc_, b_.getI32Type(), q));
  Value positions = arith::AddIOp::create(b_, loc_, laneOffsets, firstLane);
  if (blocking_.heads == 1)
    return positions;
  Value perHead = arith::ConstantIntOp::create(b_, loc_, blocking_.positions, 32);
  return arith::RemUIOp::create(b_, loc_, positions, splat(laneType, perHead));
}

Value AttentionLowering::firstSeeingPosition(Value key) {
  // Causal: the query at position i0 + p sees key j when j <= i0 + p + diagonal.
  Value first = maxIndex(index(0), sub(sub(key, diagonal_), i0_));
  first = minIndex(first, index(blocking_.positions));
  return arith::IndexCastOp::create(b_, loc_, b_.getI32Type(), first);
}

Value AttentionLowering::lastSeeingPosition(Value key) {
  // Window: the query at position i0 + p sees key j when j > i0 + p + diagonal - window.
  Value last = sub(add(sub(key, diagonal_), index(window_ - 1)), i0_);
  last = minIndex(maxIndex(last, index(-1)), index(blocking_.positions));
  return arith::IndexCastOp::create(b_, loc_, b_.getI32Type(), last);
}

Value AttentionLowering::seesKey(Value lanePositions, Value key) {
  auto laneType = cast<VectorType>(lanePositions.getType());
  Value sees;
  if (op_.getCausal())
    sees = arith::CmpIOp::create(b_, loc_, arith::CmpIPredicate::sge, lanePositions,
                                 splat(laneType, firstSeeingPosition(key)));
  if (window_) {
    Value inWindow = arith::CmpIOp::create(b_, loc_, arith::CmpIPredicate::sle, lanePositions,
                                           splat(laneType, lastSeeingPosition(key)));
    sees = sees ? arith::AndIOp::create(b_, loc_, sees, inWindow) : inWindow;
  }
  return sees;
}

Value AttentionLowering::softcapScores(Value x) {
  // In the softmax's units a score is u * s: log2(e) for the f32 products, 1 / scale for the
  // unscaled bf16 ones. c * tanh(s / c) is then k * tanh(x / k) with k = u * c, and
  // tanh(y) = sign(y) (1 - t) / (1 + t) with t = e^(-2 |y|) = 2^(-2 log2(e) |y|), at most 1:
  // exp2's range. Its error (2.3e-7 relative) moves a capped score by about c * 2.3e-7.
  auto type = cast<VectorType>(x.getType());
  double units = unscaledScores() ? 1 / op_.getScale().convertToDouble() : kLog2E;
  double k = units * op_.getSoftcap()->convertToDouble();
  Value y = arith::MulFOp::create(b_, loc_, x, splat(type, f32(1 / k)));
  Value magnitude = arith::MaximumFOp::create(b_, loc_, y, arith::NegFOp::create(b_, loc_, y));
  Value t = exp2(arith::MulFOp::create(b_, loc_, magnitude, splat(type, f32(-2 * kLog2E))));
  Value one = splat(type, f32(1));
  Value ratio = arith::DivFOp::create(b_, loc_, arith::SubFOp::create(b_, loc_, one, t),
                                      arith::AddFOp::create(b_, loc_, one, t));
  Value negative = arith::CmpFOp::create(b_, loc_, arith::CmpFPredicate::OLT, y,
                                         splat(type, f32(0)));
  Value tanh = arith::SelectOp::create(b_, loc_, negative,
                                       arith::NegFOp::create(b_, loc_, ratio), ratio);
  return arith::MulFOp::create(b_, loc_, tanh, splat(type, f32(k)));
}

void AttentionLowering::buildScores(Value j0, Value cols, Value needsMask) {
  int64_t tile = blocking_.keyTile, chunk = blocking_.queryChunk, lanes = blocking_.lanes;
  // A chunk is carried as its register-wide vectors, one by one: a chunk of three vectors as
  // one 48-lane vector came out of LLVM mostly scalarized (1280 instructions for 24 FMAs).
  int64_t chunkVectors = chunk / lanes;
  Value c0 = index(0), c1 = index(1);
  Value negInf = splat(laneVector_, f32(-std::numeric_limits<double>::infinity()));

  // One tile of keys from j0 + jt on. A whole tile reads its rows as they are, at constant
  // offsets from one row address. Only the last key block of a query block can end in a
  // partial tile (cols not a multiple of the tile, at the end of the keys, of kv_lens or of
  // the causal limit); it clamps its rows past `cols` to a row that exists and masks nothing
  // there: the softmax and p.v loops stop at `cols`. Clamping every tile's rows cost some 250
  // scalar instructions per tile of 64 x 24 FMAs (eight row addresses computed, spilled and
  // stepped), which on Intel cores share the FMAs' ports.
  auto scoreTile = [&](Value jt, bool clampRows) {
    Value firstKey = add(j0, jt);
    SmallVector<Value> keyRows;
    for (int64_t t = 0; t < tile; ++t) {
      Value row = add(firstKey, index(t));
      keyRows.push_back(clampRows ? minIndex(row, lastKey_) : row);
    }
    // A later tile's key rows, fetched to L1 while this one is computed: their lines would
    // otherwise arrive one by one as the head dimension is walked, each a miss the first chunk
    // waits for (long sequences keep a head's keys in L3). Only a whole tile is fetched, so
    // that its rows need no clamping; a partial tile has no successor. And this tile's value
    // rows, which the p.v update reads after the block's scores and softmax: a head's values
    // come from L3 for its first query block.
    auto prefetch = [&](Value memref, Value row) {
      for (int64_t column = 0; column < headDim_; column += lineElements(keyElementType_))
        memref::PrefetchOp::create(b_, loc_, memref,
                                   ValueRange{batch_, row, add(kvCol_, index(column))},
                                   /*isWrite=*/false, /*localityHint=*/3, /*isDataCache=*/true);
    };
    if (!clampRows && blocking_.keyPrefetchDistance > 0) {
      Value nextKey = add(firstKey, index(tile * blocking_.keyPrefetchDistance));
      Value nextIsWhole = arith::CmpIOp::create(b_, loc_, arith::CmpIPredicate::sle,
                                                add(nextKey, index(tile)), add(lastKey_, c1));
      ifThen(nextIsWhole, [&] {
        for (int64_t t = 0; t < tile; ++t)
          prefetch(key_, add(nextKey, index(t)));
      });
    }
    if (blocking_.prefetchValues)
      for (int64_t t = 0; t < tile; ++t)
        prefetch(value_, keyRows[t]);
    // The tile's keys against each chunk of the block's queries in turn, while they are in L1.
    auto scoreChunk = [&](Value q0) {
      // sums[t * chunkVectors + v]: key row t against vector v of the chunk.
      SmallVector<Value> init(tile * chunkVectors, splat(laneVector_, f32(0)));
      SmallVector<Value> sums =
          forLoop(c0, index(headDim_), c1, init, [&](Value d, ValueRange partial) {
            SmallVector<Value> queries;
            for (int64_t v = 0; v < chunkVectors; ++v)
              queries.push_back(loadVector(laneVector_, queryT_, {d, add(q0, index(v * lanes))}));
            Value column = add(kvCol_, d);
            SmallVector<Value> next;
            for (int64_t t = 0; t < tile; ++t) {
              Value key = splat(laneVector_, loadScalar(key_, {batch_, keyRows[t], column}));
              for (int64_t v = 0; v < chunkVectors; ++v)
                next.push_back(fma(key, queries[v], partial[t * chunkVectors + v]));
            }
            return next;
          });
      // The softcap, in registers.
      if (op_.getSoftcap())
        for (Value &sum : sums)
          sum = softcapScores(sum);
      // Stores the chunk's scores, each lane masked to -inf where its query cannot see the key.
      auto store = [&](bool masked) {
        for (int64_t v = 0; v < chunkVectors; ++v) {
          Value q = add(q0, index(v * lanes));
          Value lanePosition = masked ? queryPositions(q) : Value();
          for (int64_t t = 0; t < tile; ++t) {
            Value sum = sums[t * chunkVectors + v];
            if (masked)
              sum = arith::SelectOp::create(
                  b_, loc_, seesKey(lanePosition, add(firstKey, index(t))), sum, negInf);
            storeVector(sum, scores_, {add(jt, index(t)), q});
          }
        }
      };
      if (!needsMask) {
        store(/*masked=*/false);
        return;
      }
      auto ifOp = scf::IfOp::create(b_, loc_, needsMask, /*withElseRegion=*/true);
      OpBuilder::InsertionGuard guard(b_);
      b_.setInsertionPointToStart(ifOp.thenBlock());
      store(/*masked=*/true);
      b_.setInsertionPointToStart(ifOp.elseBlock());
      store(/*masked=*/false);
    };
    // The block's queries in chunks (one, the whole block, when a tile spans it).
    if (chunk == blocking_.queryBlock)
      scoreChunk(c0);
    else
      forLoop(c0, index(blocking_.queryBlock), index(chunk), scoreChunk);
  };

  Value tileSize = index(tile);
  Value wholeKeys = mul(arith::DivSIOp::create(b_, loc_, cols, tileSize), tileSize);
  forLoop(c0, wholeKeys, tileSize, [&](Value jt) { scoreTile(jt, /*clampRows=*/false); });
  ifThen(arith::CmpIOp::create(b_, loc_, arith::CmpIPredicate::slt, wholeKeys, cols),
         [&] { scoreTile(wholeKeys, /*clampRows=*/true); });
}

} // namespace mhac
