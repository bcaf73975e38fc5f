//===- AmxProducts.cpp - both products of attention on AMX's tiles --------===//
//
// Part of mhac. With AMX, a block's two products are tile products (Utils/AmxTiles.h), bf16 by
// bf16 into f32, with the scores and accumulators kept transposed as in the vector kernels
// (with AVX512-BF16 alone, the same operands make vdpbf16ps register tiles):
//
//   sT[KB][QB]  = keys[KB][Dp] . qT          a: the keys' rows; b: qT's rows in pairs
//   accT[Dh][QB] += vT[Dh][KB] . pT          a: the values, transposed; b: pT's rows in pairs
//
// so the softmax between them is the vector kernels' (Softmax.cpp), vertical over the block's
// queries, and rounding its result to bf16 pairs is one conversion and one interleave per two
// vectors. The keys and values are rounded to bf16 once per call, into buffers laid out as the
// tiles load them (the values transposed) and padded with zeros to whole key blocks and whole
// steps of the head: every tile of a block is then whole, and the steps unroll into
// straight-line code, as AMX's tile registers need. vdpbf16ps register tiles read bf16 keys
// where they are (readsKeysInPlace). FlashAttention does the same rounding of
// the probabilities; the softmax's state and every sum stay in f32.
//
//===----------------------------------------------------------------------===//

#include "compiler/conversion/AttentionToLoops/AttentionLowering.h"
#include "compiler/conversion/Utils/AmxTiles.h"
#include "compiler/schedules/AttentionBlock.h"

#include "mlir/Dialect/X86Vector/X86VectorDialect.h"

namespace mhac {
namespace {

/// Result tiles of one band of tile products: 2 x 2, which with their 2 + 2 operand tiles
/// fill AMX's 8 registers.
constexpr int64_t kBandTiles = 2;

/// bf16 elements of padding after each row of the transposed values: one 64-byte line.
constexpr int64_t kValueRowPadding = 32;

/// The tile products c += a . b over `pairs`, for c's `rows` x `columns`: on AMX (or in
/// vectors) in bands of kBandTiles x kBandTiles whole tiles (`rows` and `columns` whole tiles);
/// or in vdpbf16ps register tiles of any rows (a head of 40), only as far as `inUse` (the keys
/// of a block's valid columns: a short last key block costs what its keys do, not a whole
/// block's).
void accumulateInBands(OpBuilder &b, Location loc, const TileOperands &operands, int64_t rows,
                       int64_t columns, int64_t pairs, TileStart start, AttentionProducts products,
                       PairsInUse inUse) {
  if (products == AttentionProducts::Dot) {
    accumulatePairsInRegisters(b, loc, operands, rows, columns, pairs, start, inUse);
    return;
  }
  bool vectors = products == AttentionProducts::AmxInVectors;
  int64_t rowTiles = rows / kAmxTileRows, columnTiles = columns / kAmxTileColumns;
  for (int64_t r0 = 0; r0 < rowTiles; r0 += kBandTiles)
    for (int64_t c0 = 0; c0 < columnTiles; c0 += kBandTiles) {
      SmallVector<TileRows> rows;
      for (int64_t r = r0; r < std::min(rowTiles, r0 + kBandTiles); ++r)
        rows.push_back({r * kAmxTileRows, kAmxTileRows});
      SmallVector<int64_t> columns;
      for (int64_t c = c0; c < std::min(columnTiles, c0 + kBandTiles); ++c)
        columns.push_back(c * kAmxTileColumns);
      accumulateTiles(b, loc, operands, rows, columns, pairs, start, vectors);
    }
}

} // namespace

void AttentionLowering::buildAmxOperands(Value batchSize, Value kvSeq, int64_t groups) {
  int64_t lanes = blocking_.lanes, paddedHead = amxPaddedHead(headDim_);
  Value c0 = index(0), c1 = index(1), lanesValue = index(lanes);
  Value keyBlock = index(blocking_.keyBlock);
  Value keyRows = mul(arith::CeilDivSIOp::create(b_, loc_, kvSeq, keyBlock), keyBlock);
  auto bf16 = b_.getBF16Type();
  bool keysInPlace = readsKeysInPlace();
  if (!keysInPlace)
    keysBf16_ = memref::AllocOp::create(
        b_, loc_,
        MemRefType::get({ShapedType::kDynamic, groups, ShapedType::kDynamic, paddedHead}, bf16),
        ValueRange{batchSize, keyRows}, b_.getI64IntegerAttr(64));
  // A value row is padded by one cache line: rows of a power of two of bytes (1 KiB at 512
  // keys) would map a tile's 16 rows onto a few of L1's sets, and evict each other.
  Value valueRowLength = add(keyRows, index(kValueRowPadding));
  valuesT_ = memref::AllocOp::create(
      b_, loc_,
      MemRefType::get({ShapedType::kDynamic, groups, headDim_, ShapedType::kDynamic}, bf16),
      ValueRange{batchSize, valueRowLength}, b_.getI64IntegerAttr(64));

  // One task per (batch, key/value head, lanes keys): lanes x lanes tiles of keys (unless read
  // in place) and values, read as zero past the last key, rounded to bf16; the values
  // transposed in registers. AMX's whole tiles read whole key blocks, zeros past the last key;
  // register tiles read no value past a block's last valid pair, so `dot` lays out the tiles
  // of valid keys alone (a decoding step's one key: one tile, not a block's six).
  Value keyTiles = blocking_.products == AttentionProducts::Dot
                       ? arith::CeilDivSIOp::create(b_, loc_, kvSeq, lanesValue).getResult()
                       : arith::DivSIOp::create(b_, loc_, keyRows, lanesValue).getResult();
  auto parallel = scf::ParallelOp::create(b_, loc_, ValueRange{c0, c0, c0},
                                          ValueRange{batchSize, index(groups), keyTiles},
                                          ValueRange{c1, c1, c1});
  OpBuilder::InsertionGuard guard(b_);
  b_.setInsertionPointToStart(parallel.getBody());
  Value batch = parallel.getInductionVars()[0], group = parallel.getInductionVars()[1];
  Value key = mul(parallel.getInductionVars()[2], lanesValue);
  Value column = mul(group, index(headDim_));
  MLIRContext *ctx = b_.getContext();
  AffineMap rowsAndColumns =
      AffineMap::get(3, 0, {getAffineDimExpr(1, ctx), getAffineDimExpr(2, ctx)}, ctx);
  auto bf16Row = VectorType::get({lanes}, bf16);
  Value padding = arith::ConstantOp::create(b_, loc_, b_.getZeroAttr(elementType_));
  // A tile of `width` features (`lanes`, or fewer at the end of a head that is no whole number
  // of vectors) of `lanes` keys. `whole`: the tile's rows are all keys, read as they are; else
  // each row is checked (and read as zero past the last key), which is a branch per row.
  auto readTile = [&](Value memref, Value d, bool whole, int64_t width) {
    Value tile = vector::TransferReadOp::create(
        b_, loc_, VectorType::get({lanes, width}, elementType_), memref,
        ValueRange{batch, key, add(column, d)}, AffineMapAttr::get(rowsAndColumns), padding,
        /*mask=*/Value(), b_.getBoolArrayAttr({whole, true}));
    return elementType_ == f32_
               ? tile
               : arith::ExtFOp::create(b_, loc_, VectorType::get({lanes, width}, f32_), tile);
  };
  auto round = [&](Value row) {
    return x86vector::CvtPackedF32ToBF16Op::create(b_, loc_, bf16Row, row);
  };
  Value zeroLanes = splat(laneVector_, f32(0));
  auto roundTile = [&](Value d, bool whole, int64_t width) {
    Value keys = keysInPlace ? Value() : readTile(key_, d, whole, width);
    Value values = vector::TransposeOp::create(b_, loc_, readTile(value_, d, whole, width),
                                               ArrayRef<int64_t>{1, 0});
    // A narrower row of keys is stored whole, zero past the head, as the padded buffer wants.
    for (int64_t r = 0; keys && r < lanes; ++r) {
      Value keyRow = vector::ExtractOp::create(b_, loc_, keys, ArrayRef<int64_t>{r});
      if (width < lanes)
        keyRow = vector::InsertStridedSliceOp::create(b_, loc_, keyRow, zeroLanes,
                                                      ArrayRef<int64_t>{0}, ArrayRef<int64_t>{1});
      storeVector(round(keyRow), keysBf16_, {batch, group, add(key, index(r)), d});
    }
    for (int64_t r = 0; r < width; ++r) {
      Value valueRow = vector::ExtractOp::create(b_, loc_, values, ArrayRef<int64_t>{r});
      storeVector(round(valueRow), valuesT_, {batch, group, add(d, index(r)), key});
    }
  };
  int64_t wholeColumns = headDim_ / lanes * lanes;
  auto roundTiles = [&](bool whole) {
    forLoop(c0, index(wholeColumns), lanesValue, [&](Value d) { roundTile(d, whole, lanes); });
    if (wholeColumns < headDim_)
      roundTile(index(wholeColumns), whole, headDim_ - wholeColumns);
  };
  // The next task's rows (a thread runs its tasks in order: the next keys of this head),
  // fetched into L2 while this one is rounded: each row is a model row from the next, and read
  // a tile at a time they were misses waited on one after another.
  SmallVector<Value> sources;
  if (!keysInPlace)
    sources.push_back(key_);
  sources.push_back(value_);
  for (int64_t r = 0; r < lanes; ++r) {
    Value row = minIndex(add(key, index(lanes + r)), sub(kvSeq, c1));
    for (int64_t d = 0; d < headDim_; d += lineElements(elementType_))
      for (Value source : sources)
        memref::PrefetchOp::create(b_, loc_, source, ValueRange{batch, row, add(column, index(d))},
                                   /*isWrite=*/false, /*localityHint=*/2, /*isDataCache=*/true);
  }
  ifThenElse(
      arith::CmpIOp::create(b_, loc_, arith::CmpIPredicate::sle, add(key, lanesValue), kvSeq),
      [&] { roundTiles(/*whole=*/true); }, [&] { roundTiles(/*whole=*/false); });
  if (keysInPlace)
    return;
  Value zeroRow = arith::ConstantOp::create(b_, loc_, bf16Row, b_.getZeroAttr(bf16Row));
  for (int64_t d = vectorsFor(headDim_, lanes) * lanes; d < paddedHead; d += lanes)
    for (int64_t r = 0; r < lanes; ++r)
      storeVector(zeroRow, keysBf16_, {batch, group, add(key, index(r)), index(d)});
}

/// The pair of bf16 rows interleaved, [a0, b0, a1, b1, ...]: a row of AMX's VNNI layout.
static Value interleaveRounded(OpBuilder &b, Location loc, Value a, Value c) {
  auto bf16Row = VectorType::get({cast<VectorType>(a.getType()).getDimSize(0)}, b.getBF16Type());
  return vector::InterleaveOp::create(b, loc,
                                      x86vector::CvtPackedF32ToBF16Op::create(b, loc, bf16Row, a),
                                      x86vector::CvtPackedF32ToBF16Op::create(b, loc, bf16Row, c));
}

Value AttentionLowering::buildProbabilityPairs(int64_t v, Value cols, Value shift) {
  Value c0 = index(0), c1 = index(1), c2 = index(2);
  Value column = index(2 * v * blocking_.lanes);
  // The pairs that hold a valid key; past them, for AMX, zeros to the end of the block (a
  // block's last pairs are only in use in its last key block: not worth an exponential each).
  Value usedPairs = arith::CeilDivSIOp::create(b_, loc_, cols, c2);
  // scale * s - scale * shift in one fma: the product's rounding is that of f32 scores.
  Value scale = splat(laneVector_, f32(scoreScale()));
  Value scaledShift =
      arith::NegFOp::create(b_, loc_, arith::MulFOp::create(b_, loc_, shift, scale));
  Value sum = forLoop(c0, usedPairs, c1, {zeros_}, [&](Value k, ValueRange partial) {
    SmallVector<Value> halves;
    Value sum = partial[0];
    for (int64_t h = 0; h < 2; ++h) {
      Value row = add(mul(k, c2), index(h));
      Value p =
          exp2(fma(loadVector(laneVector_, scores_, {row, vectorOffset(v)}), scale, scaledShift),
               /*forBf16=*/true);
      // The odd row past cols holds what an earlier block left (any bits, NaN included):
      // selected away, not multiplied by zero.
      if (h == 1)
        p = arith::SelectOp::create(
            b_, loc_, arith::CmpIOp::create(b_, loc_, arith::CmpIPredicate::slt, row, cols), p,
            zeros_);
      sum = arith::AddFOp::create(b_, loc_, sum, p);
      halves.push_back(p);
    }
    storeVector(interleaveRounded(b_, loc_, halves[0], halves[1]), probabilityPairs_, {k, column});
    return SmallVector<Value>{sum};
  })[0];
  // vdpbf16ps register tiles read only the pairs in use; AMX's whole tiles read them all.
  if (blocking_.products == AttentionProducts::Dot)
    return sum;
  auto pairRow = VectorType::get({2 * blocking_.lanes}, b_.getBF16Type());
  Value zeroPairs = arith::ConstantOp::create(b_, loc_, pairRow, b_.getZeroAttr(pairRow));
  forLoop(usedPairs, index(blocking_.keyBlock / 2), c1, [&](Value k) {
    storeVector(zeroPairs, probabilityPairs_, {k, column});
  });
  return sum;
}

/// The [rows][columns] window of a [B][Hkv][*][*] buffer at (batch, group, row, column).
static Value window(OpBuilder &b, Location loc, Value buffer, Value batch, Value group, Value row,
                    int64_t rows, OpFoldResult column, int64_t columns) {
  auto type = cast<MemRefType>(buffer.getType());
  SmallVector<OpFoldResult> offsets{batch, group, row, column};
  SmallVector<OpFoldResult> sizes{b.getIndexAttr(1), b.getIndexAttr(1), b.getIndexAttr(rows),
                                  b.getIndexAttr(columns)};
  SmallVector<OpFoldResult> strides(4, b.getIndexAttr(1));
  auto viewType =
      memref::SubViewOp::inferRankReducedResultType({rows, columns}, type, offsets, sizes, strides);
  return memref::SubViewOp::create(b, loc, cast<MemRefType>(viewType), buffer, offsets, sizes,
                                   strides);
}

/// The [rows][columns] window of a [B][S][D] input at (batch, row, column), `rows` known at run
/// time.
static Value inputWindow(OpBuilder &b, Location loc, Value input, Value batch, Value row,
                         Value rows, Value column, int64_t columns) {
  auto type = cast<MemRefType>(input.getType());
  SmallVector<OpFoldResult> offsets{batch, row, column};
  SmallVector<OpFoldResult> sizes{b.getIndexAttr(1), rows, b.getIndexAttr(columns)};
  SmallVector<OpFoldResult> strides(3, b.getIndexAttr(1));
  auto viewType = memref::SubViewOp::inferRankReducedResultType({ShapedType::kDynamic, columns},
                                                                type, offsets, sizes, strides);
  return memref::SubViewOp::create(b, loc, cast<MemRefType>(viewType), input, offsets, sizes,
                                   strides);
}

void AttentionLowering::buildAmxScores(Value j0, Value cols) {
  int64_t paddedHead = amxPaddedHead(headDim_), keyBlock = blocking_.keyBlock;
  Value keys = readsKeysInPlace() ? inputWindow(b_, loc_, key_, batch_, j0, cols, kvCol_, headDim_)
                                  : window(b_, loc_, keysBf16_, batch_, group_, j0, keyBlock,
                                           b_.getIndexAttr(0), paddedHead);
  // AMX's tiles take whole steps of 32 features; register tiles stop at the head's last pair
  // (a head of 80: 40 pairs, not 48; of 75: 38, the last of one feature and a zero, so that a
  // key read in place never reads the next head's first feature).
  bool dot = blocking_.products == AttentionProducts::Dot;
  int64_t pairs = dot ? (headDim_ + 1) / 2 : paddedHead / 2;
  accumulateInBands(b_, loc_, TileOperands{keys, queryPairs_, scores_}, keyBlock,
                    blocking_.queryBlock, pairs, TileStart::Zero, blocking_.products,
                    PairsInUse{cols, Value(), readsKeysInPlace() && headDim_ % 2 == 1});
}

void AttentionLowering::maskScores(Value j0, Value cols) {
  int64_t vectors = blocking_.queryBlock / blocking_.lanes;
  SmallVector<Value> positions;
  for (int64_t v = 0; v < vectors; ++v)
    positions.push_back(queryPositions(vectorOffset(v)));
  forLoop(index(0), cols, index(1), [&](Value j) {
    for (int64_t v = 0; v < vectors; ++v) {
      Value sees = seesKey(positions[v], add(j0, j));
      Value scores = loadVector(laneVector_, scores_, {j, vectorOffset(v)});
      storeVector(arith::SelectOp::create(b_, loc_, sees, scores, negInfs_), scores_,
                  {j, vectorOffset(v)});
    }
  });
}

void AttentionLowering::capScores(Value cols) {
  int64_t vectors = blocking_.queryBlock / blocking_.lanes;
  forLoop(index(0), cols, index(1), [&](Value j) {
    for (int64_t v = 0; v < vectors; ++v) {
      Value scores = loadVector(laneVector_, scores_, {j, vectorOffset(v)});
      storeVector(softcapScores(scores), scores_, {j, vectorOffset(v)});
    }
  });
}

void AttentionLowering::buildAmxValueUpdate(Value j0, Value cols) {
  int64_t vectors = blocking_.queryBlock / blocking_.lanes, keyBlock = blocking_.keyBlock;
  // accT *= alpha, a vector of the block's queries per row of the head.
  SmallVector<Value> alpha;
  for (int64_t v = 0; v < vectors; ++v)
    alpha.push_back(loadVector(laneVector_, alpha_, {vectorOffset(v)}));
  forLoop(index(0), index(headDim_), index(1), [&](Value d) {
    for (int64_t v = 0; v < vectors; ++v) {
      Value acc = loadVector(laneVector_, accT_, {d, vectorOffset(v)});
      storeVector(arith::MulFOp::create(b_, loc_, acc, alpha[v]), accT_, {d, vectorOffset(v)});
    }
  });
  Value values = window(b_, loc_, valuesT_, batch_, group_, index(0), headDim_, j0, keyBlock);
  accumulateInBands(b_, loc_, TileOperands{values, probabilityPairs_, accT_}, headDim_,
                    blocking_.queryBlock, keyBlock / 2, TileStart::Load, blocking_.products,
                    PairsInUse{Value(), arith::CeilDivSIOp::create(b_, loc_, cols, index(2))});
}

void AttentionLowering::transposeAccumulators() {
  int64_t lanes = blocking_.lanes;
  Value padding = f32(0);
  // Tiles of `width` features of the head (the last one narrower where the head is no whole
  // number of vectors) by `lanes` queries.
  auto transposeTiles = [&](Value d, int64_t width) {
    auto tileType = VectorType::get({width, lanes}, f32_);
    for (int64_t q = 0; q < blocking_.queryBlock; q += lanes) {
      Value tile = vector::TransferReadOp::create(
          b_, loc_, tileType, accT_, ValueRange{d, index(q)}, padding, ArrayRef<bool>{true, true});
      Value transposed = vector::TransposeOp::create(b_, loc_, tile, ArrayRef<int64_t>{1, 0});
      vector::TransferWriteOp::create(b_, loc_, transposed, acc_, ValueRange{index(q), d},
                                      ArrayRef<bool>{true, true});
    }
  };
  int64_t wholeRows = headDim_ / lanes * lanes;
  forLoop(index(0), index(wholeRows), index(lanes), [&](Value d) { transposeTiles(d, lanes); });
  if (wholeRows < headDim_)
    transposeTiles(index(wholeRows), headDim_ - wholeRows);
}

} // namespace mhac
