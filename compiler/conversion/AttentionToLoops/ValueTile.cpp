//===- ValueTile.cpp - the p.v register tiles and prefetches --------------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "compiler/conversion/AttentionToLoops/AttentionLowering.h"

#include <algorithm>

namespace mhac {

void AttentionLowering::buildValueUpdate(Value j0, Value cols, Value rowsInUse) {
  int64_t tile = blocking_.queryTile;
  Value c0 = index(0), c1 = index(1);
  for (int64_t first = 0; first < headDim_; first += blocking_.valueChunk) {
    int64_t width = std::min(blocking_.valueChunk, headDim_ - first);
    // A row's accumulators are vectors of one register each (the last one shorter where the
    // head is no whole number of vectors): a vector of 3 or 5 registers' lanes is no power of
    // two, and LLVM widens it to 4 or 8 registers, which spills a full tile.
    SmallVector<int64_t> offsets;
    SmallVector<VectorType> pieces;
    for (int64_t at = 0; at < width; at += blocking_.lanes) {
      offsets.push_back(first + at);
      pieces.push_back(VectorType::get({std::min(blocking_.lanes, width - at)}, f32_));
    }
    size_t count = pieces.size();
    forLoop(c0, rowsInUse, index(tile), [&](Value it) {
      // Spread over the first key block's p.v tiles, where they wait on no result.
      if (first == 0 && blocking_.prefetchNextBlock)
        ifThen(arith::CmpIOp::create(b_, loc_, arith::CmpIPredicate::eq, j0, c0),
               [&] { buildRowPrefetches(it, /*queryLocality=*/3); });
      SmallVector<Value> init;
      for (int64_t t = 0; t < tile; ++t) {
        Value row = add(it, index(t));
        Value alpha = memref::LoadOp::create(b_, loc_, alpha_, row);
        for (size_t v = 0; v < count; ++v)
          init.push_back(arith::MulFOp::create(
              b_, loc_, loadVector(pieces[v], acc_, {row, index(offsets[v])}),
              splat(pieces[v], alpha)));
      }
      SmallVector<Value> rows = forLoop(c0, cols, c1, init, [&](Value j, ValueRange partial) {
        SmallVector<Value> values;
        for (size_t v = 0; v < count; ++v)
          values.push_back(readRow(pieces[v].getNumElements(), value_,
                                   {batch_, add(j0, j), add(kvCol_, index(offsets[v]))}));
        SmallVector<Value> next;
        for (int64_t t = 0; t < tile; ++t) {
          Value p = memref::LoadOp::create(b_, loc_, scores_, ValueRange{j, add(it, index(t))});
          for (size_t v = 0; v < count; ++v)
            next.push_back(fma(splat(pieces[v], p), values[v], partial[t * count + v]));
        }
        return next;
      });
      for (int64_t t = 0; t < tile; ++t)
        for (size_t v = 0; v < count; ++v)
          storeVector(rows[t * count + v], acc_, {add(it, index(t)), index(offsets[v])});
    });
  }
}

void AttentionLowering::locateNextBlock(Value group, int64_t groups, Value batchSize, Value seq) {
  Value c0 = index(0), c1 = index(1);
  auto select = [&](Value condition, Value a, Value c) {
    return arith::SelectOp::create(b_, loc_, condition, a, c);
  };
  Value next = add(i0_, index(blocking_.positions));
  Value pastEnd = arith::CmpIOp::create(b_, loc_, arith::CmpIPredicate::sge, next, seq);
  Value lastGroup =
      arith::CmpIOp::create(b_, loc_, arith::CmpIPredicate::eq, group, index(groups - 1));
  nextI0_ = select(pastEnd, c0, next);
  Value nextGroupColumn = add(qCol_, index(blocking_.heads * headDim_));
  nextQCol_ = select(pastEnd, select(lastGroup, c0, nextGroupColumn), qCol_);
  nextBatch_ = select(arith::AndIOp::create(b_, loc_, pastEnd, lastGroup),
                      minIndex(add(batch_, c1), sub(batchSize, c1)), batch_);
  nextKvCol_ = select(pastEnd, select(lastGroup, c0, add(kvCol_, index(headDim_))), kvCol_);
}

void AttentionLowering::buildKeyPrefetches(Value batch, Value first, Value end, Value column) {
  forLoop(first, end, index(1), [&](Value key) {
    for (int64_t offset = 0; offset < headDim_; offset += lineElements(keyElementType_))
      memref::PrefetchOp::create(b_, loc_, key_, ValueRange{batch, key, add(column, index(offset))},
                                 /*isWrite=*/false, /*localityHint=*/2, /*isDataCache=*/true);
  });
}

void AttentionLowering::buildRowPrefetches(Value rowTile, int64_t queryLocality) {
  Value positions = index(blocking_.positions);
  for (int64_t t = 0; t < blocking_.queryTile; ++t) {
    // Row r of a block is position r % positions of its group's query head r / positions;
    // padding rows are clamped to the last head and position, so that every address is in
    // the buffers.
    Value r = add(rowTile, index(t));
    Value position = arith::RemUIOp::create(b_, loc_, r, positions);
    Value head =
        minIndex(arith::DivUIOp::create(b_, loc_, r, positions), index(blocking_.heads - 1));
    Value headColumn = mul(head, index(headDim_));
    Value nextRow = minIndex(add(nextI0_, position), lastPosition_);
    Value row = minIndex(add(i0_, position), lastPosition_);
    Value queryColumn = add(nextQCol_, headColumn), resultColumn = add(qCol_, headColumn);
    for (int64_t column = 0; column < headDim_; column += lineElements(elementType_))
      memref::PrefetchOp::create(b_, loc_, query_,
                                 ValueRange{nextBatch_, nextRow, add(queryColumn, index(column))},
                                 /*isWrite=*/false, queryLocality, /*isDataCache=*/true);
    for (int64_t column = 0; column < headDim_; column += lineElements(resultElementType_))
      memref::PrefetchOp::create(b_, loc_, out_,
                                 ValueRange{batch_, row, add(resultColumn, index(column))},
                                 /*isWrite=*/true, /*localityHint=*/3, /*isDataCache=*/true);
  }
}

} // namespace mhac
