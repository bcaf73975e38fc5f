//===- SplitCache.cpp - the split-cache decode nest -----------------------===//
//
// Part of mhac.
//
// A decode step is a few query positions against a long cache: the prefill nest's blocks
// (queries in vector lanes) would fill a vector's lanes with G x S rows, and its parallel loop
// over (batch, key/value head) leaves cores idle where there are fewer of those than threads.
// This nest turns both around (G = H / Hkv query heads a key/value head, S positions,
// R = G x S rows, L lanes, C = ceil(Dh / L) vectors of a head, KB keys a softmax block):
//
//   parallel b < B, g < Hkv, c < chunks:                 one chunk of a row's keys
//     [first, last) = chunk c of the keys the rows of b see
//     q~[R][C L] = scale * log2(e) * q[b, r % S, g G + r / S, :] (0 past the head)
//     o[R][C L] = 0;  m[R] = -inf;  l[R] = 0               (per row: scalars)
//     for j0 in [first, last) step KB:
//       for each L keys j .. j + L, for each row r:      the L keys stay in L1 for all rows
//         s[r][j:j+L] = (sum of the lanes of q~[r] * k[b, j + t, g, :])_t   (masked: -inf)
//       per row: m' = max(m, max s[r]);  p = 2^(s - m');  l = 2^(m - m') l + sum p;  m = m'
//       o = 2^(m - m') o + p . v[b, j0:j0+KB, g, :]      (register tiles of rows x vectors)
//     partial[b, g, c] = (o, m, l)
//   parallel b < B, g < Hkv:                             the merge
//     M = max_c m_c;  out = (sum_c 2^(m_c - M) o_c) / (sum_c 2^(m_c - M) l_c [+ 2^(sink - M)])
//
// Every key row of the chunk is read once for all G heads and S positions of its group, the
// scores need no transposed keys, and the chunks are parallel tasks whatever B and Hkv are: a
// thread takes them from a shared pool, so rows of one batch with different cache lengths
// balance (a short row's chunks past its keys are empty tasks). The merge is exact: the same
// sums in another order.
//
//===----------------------------------------------------------------------===//

#include "compiler/conversion/AttentionToLoops/AttentionLowering.h"

#include "llvm/Support/MathExtras.h"

#include <limits>

namespace mhac {

Value AttentionLowering::scalarExp2(Value x) {
  auto one = VectorType::get({1}, f32_);
  return vector::ExtractOp::create(b_, loc_, exp2(splat(one, x)), ArrayRef<int64_t>{0});
}

Value AttentionLowering::sumLanesOfEach(ArrayRef<Value> vectors) {
  int64_t lanes = static_cast<int64_t>(vectors.size());
  assert(llvm::isPowerOf2_64(lanes) && "a power of two of lanes");
  // Each level adds the two halves of every block of lanes, pairing vectors: after level k a
  // vector holds 2^k consecutive rows' sums in blocks of lanes / 2^k partial sums, in order.
  SmallVector<Value> level(vectors);
  for (int64_t block = lanes; block > 1; block /= 2) {
    SmallVector<Value> next;
    for (size_t v = 0; v < level.size(); v += 2) {
      SmallVector<int64_t> low, high;
      for (int64_t operand = 0; operand < 2; ++operand)
        for (int64_t start = operand * lanes; start < (operand + 1) * lanes; start += block)
          for (int64_t lane = 0; lane < block / 2; ++lane) {
            low.push_back(start + lane);
            high.push_back(start + block / 2 + lane);
          }
      Value a = vector::ShuffleOp::create(b_, loc_, level[v], level[v + 1], low);
      Value c = vector::ShuffleOp::create(b_, loc_, level[v], level[v + 1], high);
      next.push_back(arith::AddFOp::create(b_, loc_, a, c));
    }
    level = std::move(next);
  }
  return level.front();
}

Value AttentionLowering::loadHeadVector(Value memref, Value batch, Value row, Value column,
                                        int64_t c) {
  int64_t lanes = decode_->lanes;
  int64_t width = std::min(lanes, headDim_ - c * lanes);
  Value part = readRow(width, memref, {batch, row, add(column, index(c * lanes))});
  if (width == lanes)
    return part;
  // The head's last vector: its features past the head stay 0 (they would be the next head's,
  // or past the cache's last row).
  return vector::InsertStridedSliceOp::create(b_, loc_, part, splat(laneVector_, f32(0)),
                                              ArrayRef<int64_t>{0}, ArrayRef<int64_t>{1});
}

DecodeKeys AttentionLowering::decodeKeys(Value batch, Value seq) {
  // The entry point has checked 0 <= cache_len[b] and cache_len[b] + S <= N.
  Value past = arith::IndexCastOp::create(b_, loc_, b_.getIndexType(),
                                          memref::LoadOp::create(b_, loc_, cacheLen_, batch));
  Value first = index(0);
  if (window_)
    first = maxIndex(first, sub(past, index(window_ - 1)));
  return {past, first, add(past, seq)};
}

void AttentionLowering::buildDecode(Value batchSize, Value seq) {
  const DecodeBlocking &d = *decode_;
  Value c0 = index(0), c1 = index(1);
  int64_t heads = op_.getGroupSize(), kvHeads = op_.getKvHeads();
  int64_t width = decodeHeadVectors() * d.lanes;
  int64_t maxRows = heads * d.positions;

  // The chunks of the batch whose rows see the most keys bound the parallel loop.
  Value chunk = index(d.chunk);
  Value longest = forLoop(c0, batchSize, c1, {c0}, [&](Value b, ValueRange carried) {
    DecodeKeys keys = decodeKeys(b, seq);
    return SmallVector<Value>{maxIndex(carried[0], sub(keys.end, keys.first))};
  })[0];
  Value chunks = arith::CeilDivSIOp::create(b_, loc_, longest, chunk);
  auto partial = [&](ArrayRef<int64_t> inner) {
    SmallVector<int64_t> shape{ShapedType::kDynamic, kvHeads, ShapedType::kDynamic};
    shape.append(inner.begin(), inner.end());
    return memref::AllocOp::create(b_, loc_, MemRefType::get(shape, f32_),
                                   ValueRange{batchSize, chunks}, b_.getI64IntegerAttr(64));
  };
  Value partialAcc = partial({maxRows, width});
  Value partialMax = partial({maxRows}), partialSum = partial({maxRows});

  // The key/value heads vary fastest: a thread takes consecutive tasks (the runtime's pool),
  // which then read the same cache rows, each its head's part of them, while the rows are in
  // L2 (a task per head's part alone would have the prefetchers fetch the other heads' parts
  // for nothing).
  auto chunkLoop = scf::ParallelOp::create(b_, loc_, ValueRange{c0, c0, c0},
                                           ValueRange{batchSize, chunks, index(kvHeads)},
                                           ValueRange{c1, c1, c1});
  {
    OpBuilder::InsertionGuard guard(b_);
    b_.setInsertionPointToStart(chunkLoop.getBody());
    batch_ = chunkLoop.getInductionVars()[0];
    Value c = chunkLoop.getInductionVars()[1];
    group_ = chunkLoop.getInductionVars()[2];
    DecodeKeys keys = decodeKeys(batch_, seq);
    diagonal_ = keys.past;
    Value chunkFirst = add(keys.first, mul(c, chunk));
    ifThen(arith::CmpIOp::create(b_, loc_, arith::CmpIPredicate::slt, chunkFirst, keys.end), [&] {
      buildDecodeChunk(seq, chunkFirst, minIndex(keys.end, add(chunkFirst, chunk)), c,
                       partialAcc, partialMax, partialSum);
    });
  }

  auto mergeLoop = scf::ParallelOp::create(b_, loc_, ValueRange{c0, c0},
                                           ValueRange{batchSize, index(kvHeads)},
                                           ValueRange{c1, c1});
  OpBuilder::InsertionGuard guard(b_);
  b_.setInsertionPointToStart(mergeLoop.getBody());
  batch_ = mergeLoop.getInductionVars()[0];
  group_ = mergeLoop.getInductionVars()[1];
  DecodeKeys keys = decodeKeys(batch_, seq);
  Value rowChunks =
      arith::CeilDivSIOp::create(b_, loc_, maxIndex(c0, sub(keys.end, keys.first)), chunk);
  buildDecodeMerge(seq, rowChunks, partialAcc, partialMax, partialSum);
}

void AttentionLowering::buildDecodeChunk(Value seq, Value first, Value last, Value chunk,
                                         Value partialAcc, Value partialMax, Value partialSum) {
  const DecodeBlocking &d = *decode_;
  int64_t lanes = d.lanes, heads = op_.getGroupSize();
  int64_t vectors = decodeHeadVectors(), width = vectors * lanes;
  int64_t maxRows = heads * d.positions;
  Value c0 = index(0), c1 = index(1);
  Value negInf = f32(-std::numeric_limits<double>::infinity());
  auto scratch = [&](ArrayRef<int64_t> shape) {
    return memref::AllocaOp::create(b_, loc_, MemRefType::get(shape, f32_), ValueRange{},
                                    b_.getI64IntegerAttr(64));
  };
  Value queries = scratch({maxRows, width}), acc = scratch({maxRows, width});
  Value scores = scratch({maxRows, d.keyBlock});
  Value products = scratch({maxRows, lanes, lanes});
  Value maxes = scratch({maxRows}), sums = scratch({maxRows}), alphas = scratch({maxRows});
  auto rowVector = VectorType::get({width}, f32_);
  Value rows = mul(index(heads), seq);
  Value kvColumn = mul(group_, index(headDim_));
  Value queryColumn = mul(group_, index(heads * headDim_));

  // The rows' queries, scaled into the softmax's base-2 units and zero past the head.
  forLoop(c0, rows, c1, [&](Value r) {
    Value head = arith::DivUIOp::create(b_, loc_, r, seq);
    Value position = arith::RemUIOp::create(b_, loc_, r, seq);
    Value q = readRow(headDim_, query_,
                      {batch_, position, add(queryColumn, mul(head, index(headDim_)))});
    q = arith::MulFOp::create(b_, loc_, q, splat(headVector_, f32(scoreScale())));
    storeVector(splat(rowVector, f32(0)), queries, {r, c0});
    vector::TransferWriteOp::create(b_, loc_, q, queries, ValueRange{r, c0},
                                    ArrayRef<bool>{true});
    storeVector(splat(rowVector, f32(0)), acc, {r, c0});
    memref::StoreOp::create(b_, loc_, negInf, maxes, r);
    memref::StoreOp::create(b_, loc_, f32(0), sums, r);
  });

  // The keys each lane of a vector of scores stands for, as i32 offsets from its first key.
  auto laneIndices = VectorType::get({lanes}, b_.getI32Type());
  SmallVector<int32_t> offsets;
  for (int64_t t = 0; t < lanes; ++t)
    offsets.push_back(static_cast<int32_t>(t));
  Value laneOffsets = arith::ConstantOp::create(
      b_, loc_, laneIndices, DenseIntElementsAttr::get(laneIndices, ArrayRef(offsets)));
  auto asI32 = [&](Value value) {
    return arith::IndexCastOp::create(b_, loc_, b_.getI32Type(), value);
  };
  auto laneTest = [&](arith::CmpIPredicate predicate, Value keys, Value bound) {
    return arith::CmpIOp::create(b_, loc_, predicate, keys, splat(laneIndices, asI32(bound)));
  };

  Value keyBlock = index(d.keyBlock);
  forLoop(first, last, keyBlock, [&](Value j0) {
    Value cols = minIndex(keyBlock, sub(last, j0));
    Value keyVectors = arith::CeilDivSIOp::create(b_, loc_, cols, index(lanes));

    // Scores, `lanes` keys at a time for every row. Lanes past the chunk's keys read its last
    // key again (no row past it is read) and are masked.
    forLoop(c0, keyVectors, c1, [&](Value jv) {
      Value firstKey = add(j0, mul(jv, index(lanes)));
      SmallVector<Value> keyRows;
      for (int64_t t = 0; t < lanes; ++t)
        keyRows.push_back(minIndex(add(firstKey, index(t)), sub(last, c1)));
      Value keys = arith::AddIOp::create(b_, loc_, splat(laneIndices, asI32(firstKey)),
                                         laneOffsets);
      // The cache's rows of a head are a head's width apart from their neighbours' rows
      // (the other heads' in between): into L2, these keys' values for this block's p.v and
      // the keys as far ahead as a block for the next block's scores.
      for (int64_t t = 0; t < lanes; ++t) {
        Value ahead = minIndex(add(keyRows[t], keyBlock), sub(last, c1));
        for (int64_t offset = 0; offset < headDim_; offset += lineElements(keyElementType_)) {
          Value column = add(kvColumn, index(offset));
          memref::PrefetchOp::create(b_, loc_, value_, ValueRange{batch_, keyRows[t], column},
                                     /*isWrite=*/false, /*localityHint=*/2,
                                     /*isDataCache=*/true);
          memref::PrefetchOp::create(b_, loc_, key_, ValueRange{batch_, ahead, column},
                                     /*isWrite=*/false, /*localityHint=*/2,
                                     /*isDataCache=*/true);
        }
      }
      // Each key's row is read once into registers and multiplied with every row's
      // queries (from L1) into `products`; holding all the keys' vectors across a loop over
      // the rows instead spilled them.
      for (int64_t t = 0; t < lanes; ++t) {
        SmallVector<Value> k;
        for (int64_t c = 0; c < vectors; ++c)
          k.push_back(loadHeadVector(key_, batch_, keyRows[t], kvColumn, c));
        forLoop(c0, rows, c1, [&](Value r) {
          Value sum = arith::MulFOp::create(
              b_, loc_, loadVector(laneVector_, queries, {r, c0}), k[0]);
          for (int64_t c = 1; c < vectors; ++c)
            sum = fma(loadVector(laneVector_, queries, {r, index(c * lanes)}), k[c], sum);
          storeVector(sum, products, {r, index(t), c0});
        });
      }
      forLoop(c0, rows, c1, [&](Value r) {
        SmallVector<Value> rowProducts;
        for (int64_t t = 0; t < lanes; ++t)
          rowProducts.push_back(loadVector(laneVector_, products, {r, index(t), c0}));
        Value s = sumLanesOfEach(rowProducts);
        if (op_.getSoftcap())
          s = softcapScores(s);
        Value visible = laneTest(arith::CmpIPredicate::slt, keys, last);
        Value position = add(diagonal_, arith::RemUIOp::create(b_, loc_, r, seq));
        if (op_.getCausal())
          visible = arith::AndIOp::create(b_, loc_, visible,
                                          laneTest(arith::CmpIPredicate::sle, keys, position));
        if (window_)
          visible = arith::AndIOp::create(
              b_, loc_, visible,
              laneTest(arith::CmpIPredicate::sge, keys, sub(position, index(window_ - 1))));
        s = arith::SelectOp::create(b_, loc_, visible, s, splat(laneVector_, negInf));
        storeVector(s, scores, {r, mul(jv, index(lanes))});
      });
    });

    // The online softmax of each row over the block: its scores become probabilities.
    forLoop(c0, rows, c1, [&](Value r) {
      auto vectorAt = [&](Value jv) { return mul(jv, index(lanes)); };
      Value blockMax =
          forLoop(c0, keyVectors, c1, {splat(laneVector_, negInf)}, [&](Value jv, ValueRange m) {
            Value s = loadVector(laneVector_, scores, {r, vectorAt(jv)});
            Value greater = arith::CmpFOp::create(b_, loc_, arith::CmpFPredicate::OGT, s, m[0]);
            return SmallVector<Value>{arith::SelectOp::create(b_, loc_, greater, s, m[0])};
          })[0];
      Value oldMax = memref::LoadOp::create(b_, loc_, maxes, r);
      Value newMax = arith::MaxNumFOp::create(
          b_, loc_, oldMax,
          vector::ReductionOp::create(b_, loc_, vector::CombiningKind::MAXNUMF, blockMax));
      // A row that has seen no visible key keeps the maximum -inf: 0 stands in for it.
      Value isEmpty = arith::CmpFOp::create(b_, loc_, arith::CmpFPredicate::OEQ, newMax, negInf);
      Value shift = arith::SelectOp::create(b_, loc_, isEmpty, f32(0), newMax);
      Value alpha = scalarExp2(arith::SubFOp::create(b_, loc_, oldMax, shift));
      Value blockSum =
          forLoop(c0, keyVectors, c1, {splat(laneVector_, f32(0))}, [&](Value jv, ValueRange partialSum) {
            Value s = loadVector(laneVector_, scores, {r, vectorAt(jv)});
            Value p = exp2(arith::SubFOp::create(b_, loc_, s, splat(laneVector_, shift)));
            storeVector(p, scores, {r, vectorAt(jv)});
            return SmallVector<Value>{arith::AddFOp::create(b_, loc_, partialSum[0], p)};
          })[0];
      Value sum = vector::ReductionOp::create(b_, loc_, vector::CombiningKind::ADD, blockSum);
      Value oldSum = memref::LoadOp::create(b_, loc_, sums, r);
      memref::StoreOp::create(b_, loc_, arith::AddFOp::create(
                                            b_, loc_, arith::MulFOp::create(b_, loc_, alpha, oldSum), sum),
                              sums, r);
      memref::StoreOp::create(b_, loc_, newMax, maxes, r);
      memref::StoreOp::create(b_, loc_, alpha, alphas, r);
    });

    // o = alpha o + p . v, in register tiles of rows x vectors of the head; a last tile's
    // rows past the block's repeat its last row (the same sums, stored twice).
    int64_t tileRows = std::min(d.valueTileRows, maxRows);
    for (int64_t v0 = 0; v0 < vectors; v0 += d.valueTileVectors) {
      int64_t tileVectors = std::min(d.valueTileVectors, vectors - v0);
      forLoop(c0, rows, index(tileRows), [&](Value r0) {
        SmallVector<Value> tileRow;
        for (int64_t t = 0; t < tileRows; ++t)
          tileRow.push_back(minIndex(add(r0, index(t)), sub(rows, c1)));
        SmallVector<Value> init;
        for (int64_t t = 0; t < tileRows; ++t) {
          Value alpha = splat(laneVector_, memref::LoadOp::create(b_, loc_, alphas, tileRow[t]));
          for (int64_t v = 0; v < tileVectors; ++v)
            init.push_back(arith::MulFOp::create(
                b_, loc_, loadVector(laneVector_, acc, {tileRow[t], index((v0 + v) * lanes)}),
                alpha));
        }
        SmallVector<Value> tile = forLoop(c0, cols, c1, init, [&](Value j, ValueRange o) {
          SmallVector<Value> values;
          for (int64_t v = 0; v < tileVectors; ++v)
            values.push_back(loadHeadVector(value_, batch_, add(j0, j), kvColumn, v0 + v));
          SmallVector<Value> next;
          for (int64_t t = 0; t < tileRows; ++t) {
            Value p = splat(laneVector_, memref::LoadOp::create(b_, loc_, scores,
                                                                 ValueRange{tileRow[t], j}));
            for (int64_t v = 0; v < tileVectors; ++v)
              next.push_back(fma(p, values[v], o[t * tileVectors + v]));
          }
          return next;
        });
        for (int64_t t = 0; t < tileRows; ++t)
          for (int64_t v = 0; v < tileVectors; ++v)
            storeVector(tile[t * tileVectors + v], acc, {tileRow[t], index((v0 + v) * lanes)});
      });
    }
  });

  // The chunk's partial states.
  forLoop(c0, rows, c1, [&](Value r) {
    SmallVector<Value> at{batch_, group_, chunk, r};
    storeVector(loadVector(rowVector, acc, {r, c0}), partialAcc, {batch_, group_, chunk, r, c0});
    memref::StoreOp::create(b_, loc_, memref::LoadOp::create(b_, loc_, maxes, r), partialMax,
                            at);
    memref::StoreOp::create(b_, loc_, memref::LoadOp::create(b_, loc_, sums, r), partialSum,
                            at);
  });
}

void AttentionLowering::buildDecodeMerge(Value seq, Value chunks, Value partialAcc,
                                         Value partialMax, Value partialSum) {
  int64_t heads = op_.getGroupSize();
  int64_t width = decodeHeadVectors() * decode_->lanes;
  auto rowVector = VectorType::get({width}, f32_);
  Value c0 = index(0), c1 = index(1);
  Value negInf = f32(-std::numeric_limits<double>::infinity());
  Value queryColumn = mul(group_, index(heads * headDim_));
  forLoop(c0, mul(index(heads), seq), c1, [&](Value r) {
    Value head = arith::DivUIOp::create(b_, loc_, r, seq);
    Value position = arith::RemUIOp::create(b_, loc_, r, seq);
    auto at = [&](Value c) { return SmallVector<Value>{batch_, group_, c, r}; };
    Value max = forLoop(c0, chunks, c1, {negInf}, [&](Value c, ValueRange m) {
      Value chunkMax = memref::LoadOp::create(b_, loc_, partialMax, at(c));
      return SmallVector<Value>{arith::MaxNumFOp::create(b_, loc_, m[0], chunkMax)};
    })[0];
    Value isEmpty = arith::CmpFOp::create(b_, loc_, arith::CmpFPredicate::OEQ, max, negInf);
    Value shift = arith::SelectOp::create(b_, loc_, isEmpty, f32(0), max);
    SmallVector<Value> merged =
        forLoop(c0, chunks, c1, {f32(0), splat(rowVector, f32(0))}, [&](Value c, ValueRange s) {
          Value chunkMax = memref::LoadOp::create(b_, loc_, partialMax, at(c));
          Value weight = scalarExp2(arith::SubFOp::create(b_, loc_, chunkMax, shift));
          Value chunkSum = memref::LoadOp::create(b_, loc_, partialSum, at(c));
          SmallVector<Value> index = at(c);
          index.push_back(c0);
          Value chunkAcc = loadVector(rowVector, partialAcc, index);
          return SmallVector<Value>{
              arith::AddFOp::create(b_, loc_, s[0],
                                    arith::MulFOp::create(b_, loc_, weight, chunkSum)),
              fma(splat(rowVector, weight), chunkAcc, s[1])};
        });
    Value sum = merged[0];
    if (sinks_) {
      // The sink in the softmax's units, clamped where 2^x stays finite (as addSinks does).
      Value sink = loadScalar(sinks_, ValueRange{add(mul(group_, index(heads)), head)});
      Value exponent = arith::SubFOp::create(
          b_, loc_, arith::MulFOp::create(b_, loc_, sink, f32(kLog2E)), shift);
      exponent = arith::MinimumFOp::create(b_, loc_, exponent, f32(127));
      sum = arith::AddFOp::create(b_, loc_, sum, scalarExp2(exponent));
    }
    // out = o / l, or 0 for a row that saw no visible key.
    Value positive = arith::CmpFOp::create(b_, loc_, arith::CmpFPredicate::OGT, sum, f32(0));
    Value inverse = arith::SelectOp::create(b_, loc_, positive,
                                            arith::DivFOp::create(b_, loc_, f32(1), sum), f32(0));
    Value result = arith::MulFOp::create(b_, loc_, merged[1], splat(rowVector, inverse));
    if (width != headDim_)
      result = vector::ExtractStridedSliceOp::create(b_, loc_, result, ArrayRef<int64_t>{0},
                                                     ArrayRef<int64_t>{headDim_},
                                                     ArrayRef<int64_t>{1});
    if (resultElementType_ != f32_)
      result = arith::TruncFOp::create(
          b_, loc_, VectorType::get({headDim_}, resultElementType_), result);
    vector::TransferWriteOp::create(
        b_, loc_, result, out_,
        ValueRange{batch_, position, add(queryColumn, mul(head, index(headDim_)))},
        ArrayRef<bool>{true});
  });
}

} // namespace mhac
