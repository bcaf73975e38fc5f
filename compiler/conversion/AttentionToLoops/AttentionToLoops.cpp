//===- AttentionToLoops.cpp - mha.attention to online-softmax loops -------===//
//
// Part of mhac.
//
// The loop nest, for each attention op (B batches, H heads, G = H / Hkv heads per kv head, QB
// query rows and KB keys per block). A block's rows are R positions of each of the G heads that
// share a key/value head (R = QB without grouping), so every key and value block is read once
// for the whole group:
//
//   parallel b < B, g < Hkv, i0 < S step R:                  one block of query rows
//     qT[Dh][QB] = scale * log2(e) * q[b, i0 + r % R, g * G + r / R, :]^T for rows r
//                                                            (0 past the last position)
//     o[QB][Dh] = 0;  m[QB] = -inf;  l[QB] = 0               (m, l: vectors over queries)
//     end = min(kvLen(b), causal limit of the block's last row)
//     for j0 < end step KB:                                  one block of keys
//       sT[KB][QB] = k[b, j0:j0+KB, g, :] . qT               (masked lanes: -inf)
//       m' = max(m, max_j sT[j]);  alpha = 2^(m - m');  pT[j] = 2^(sT[j] - m')
//       l = alpha * l + sum_j pT[j];  o = alpha * o + pT^T . v[b, j0:j0+KB, g, :]
//       m = m'
//     out[b, i0 + r % R, g * G + r / R, :] = o[r] / l[r]  (0 for a row without a valid key)
//
// Both products are register-blocked outer products, the micro-kernel of a GEMM: the scores as
// (a few key rows) x (a chunk of the query block, in vector registers) accumulating over the
// head, with the query block transposed once per task so that its columns are vectors; p.v as
// (a few query rows) x (a chunk of the head, in vector registers) accumulating over the keys.
// The scores are kept transposed, one vector per key over the block's queries, so the softmax's
// maxima and sums are vertical: no horizontal reduction anywhere.
//
// The scores are in base 2 (log2 e is folded into the query scale), so the softmax's
// exponentials are powers of two, computed in registers by exp2 below. Scores are only ever
// compared with and subtracted from their running maximum, so |s| up to 1e4 cannot overflow.
// While a row has seen no valid key its maximum is -inf; it is replaced by 0 where it is
// subtracted, so p and alpha are 2^-inf = 0 instead of NaN, l stays 0, and the row writes 0.
//
//===----------------------------------------------------------------------===//

#include "compiler/conversion/Passes.h"
#include "compiler/schedules/AttentionBlock.h"
#include "dialects/mha/IR/MhaOps.h"

#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <algorithm>
#include <limits>
#include <numeric>

namespace mhac {
#define GEN_PASS_DEF_CONVERTMHAATTENTIONTOLOOPS
#include "compiler/conversion/Passes.h.inc"
} // namespace mhac

using namespace mlir;

namespace mhac {
namespace {

constexpr double kLog2E = 1.4426950408889634;

/// A memref type any buffer of `tensorType`'s shape can be cast to: loops over it work whatever
/// layout bufferization chooses.
MemRefType anyLayoutMemRef(RankedTensorType tensorType) {
  MLIRContext *ctx = tensorType.getContext();
  SmallVector<int64_t> strides(tensorType.getRank(), ShapedType::kDynamic);
  auto layout = StridedLayoutAttr::get(ctx, ShapedType::kDynamic, strides);
  return MemRefType::get(tensorType.getShape(), tensorType.getElementType(), layout);
}

/// The sizes the loop nest is built from.
struct AttentionBlocking {
  int64_t queryBlock, keyBlock;
  /// The block's rows: `positions` consecutive positions of each of `heads` query heads that
  /// share a key/value head (heads * positions <= queryBlock; the rest are padding).
  int64_t heads, positions;
  /// Rows of the score tile (keys) and of the p.v tile (query rows).
  int64_t keyTile, queryTile;
  /// Columns of the score tile: the block's queries are scored in chunks this wide.
  int64_t queryChunk;
  /// Columns of the p.v tile: the head dimension is updated in chunks this wide (the last one
  /// may be narrower).
  int64_t valueChunk;
  /// f32 lanes of a vector register: the side of the square tiles the queries are transposed in.
  int64_t lanes;
  /// The queries are transposed in square register tiles (else element by element).
  bool transposeInTiles;
  /// Key tiles ahead that a score tile prefetches (0: none).
  int64_t keyPrefetchDistance;
  /// A score tile prefetches its value rows; the first key block prefetches the next task's
  /// queries and this block's output.
  bool prefetchValues, prefetchNextBlock;
};

/// Builds the loop nest of one mha.attention.
class AttentionLowering {
public:
  AttentionLowering(mha::AttentionOp op, OpBuilder &b, AttentionBlocking blocking)
      : op_(op), b_(b), loc_(op.getLoc()), blocking_(blocking), headDim_(op.getHeadDim()),
        f32_(b.getF32Type()), elementType_(op.getQuery().getType().getElementType()),
        laneVector_(VectorType::get({blocking.lanes}, f32_)),
        headVector_(VectorType::get({headDim_}, f32_)) {}

  /// Emits the loops and returns the tensor holding the result.
  Value build();

private:
  Value index(int64_t value) { return arith::ConstantIndexOp::create(b_, loc_, value); }
  Value f32(double value) {
    return arith::ConstantOp::create(b_, loc_, b_.getF32FloatAttr(static_cast<float>(value)));
  }
  Value splat(VectorType type, Value scalar) {
    return vector::BroadcastOp::create(b_, loc_, type, scalar);
  }
  Value minIndex(Value a, Value c) { return arith::MinSIOp::create(b_, loc_, a, c); }
  Value maxIndex(Value a, Value c) { return arith::MaxSIOp::create(b_, loc_, a, c); }
  Value add(Value a, Value c) { return arith::AddIOp::create(b_, loc_, a, c); }
  Value sub(Value a, Value c) { return arith::SubIOp::create(b_, loc_, a, c); }
  Value mul(Value a, Value c) { return arith::MulIOp::create(b_, loc_, a, c); }
  Value fma(Value a, Value x, Value acc) { return vector::FMAOp::create(b_, loc_, a, x, acc); }
  /// Loads one element of an input as f32.
  Value loadScalar(Value memref, ValueRange indices) {
    Value value = memref::LoadOp::create(b_, loc_, memref, indices);
    if (elementType_ == f32_)
      return value;
    return arith::ExtFOp::create(b_, loc_, f32_, value);
  }
  /// Reads `width` contiguous elements starting at `indices` as an f32 vector.
  Value readRow(int64_t width, Value memref, ValueRange indices) {
    auto type = VectorType::get({width}, elementType_);
    Value padding = arith::ConstantOp::create(b_, loc_, b_.getZeroAttr(elementType_));
    Value vector = vector::TransferReadOp::create(b_, loc_, type, memref, indices, padding,
                                                  ArrayRef<bool>{true});
    if (elementType_ == f32_)
      return vector;
    return arith::ExtFOp::create(b_, loc_, VectorType::get({width}, f32_), vector);
  }
  Value loadVector(VectorType type, Value memref, ValueRange indices) {
    return vector::LoadOp::create(b_, loc_, type, memref, indices);
  }
  void storeVector(Value vector, Value memref, ValueRange indices) {
    vector::StoreOp::create(b_, loc_, vector, memref, indices);
  }
  /// Emits `for (iv = lb; iv < ub; iv += step) body(iv)`.
  void forLoop(Value lb, Value ub, Value step, function_ref<void(Value)> body) {
    auto loop = scf::ForOp::create(b_, loc_, lb, ub, step);
    OpBuilder::InsertionGuard guard(b_);
    b_.setInsertionPointToStart(loop.getBody());
    body(loop.getInductionVar());
  }
  /// Emits `if (condition) body()`.
  void ifThen(Value condition, function_ref<void()> body) {
    auto ifOp = scf::IfOp::create(b_, loc_, condition, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b_);
    b_.setInsertionPointToStart(ifOp.thenBlock());
    body();
  }
  /// Emits a loop carrying `init` through `body(iv, carried) -> next` and returns the results.
  SmallVector<Value> forLoop(Value lb, Value ub, Value step, ValueRange init,
                             function_ref<SmallVector<Value>(Value, ValueRange)> body) {
    auto loop = scf::ForOp::create(b_, loc_, lb, ub, step, init);
    OpBuilder::InsertionGuard guard(b_);
    b_.setInsertionPointToStart(loop.getBody());
    scf::YieldOp::create(b_, loc_, body(loop.getInductionVar(), loop.getRegionIterArgs()));
    return loop.getResults();
  }

  /// 2^x for x <= 0, in eleven vector instructions: x = n + f with n = round(x) and |f| <= 1/2;
  /// 2^f by a degree-5 polynomial (relative error 2.3e-7 in f32), 2^n by writing n + 127 into
  /// the exponent bits. x is clamped to -127, whose exponent field 0 makes the result exactly 0.
  Value exp2(Value x);
  /// qT = scale * log2(e) * the block's query rows, transposed; zero in the columns of rows
  /// past the sequence's end (`rows` positions are valid) and of padding rows.
  void buildQueryTranspose(Value rows);
  /// Emits body(r, position, column of the row's head) for every valid row of the block.
  void forEachRow(Value rows, function_ref<void(Value, Value, Value)> body);
  /// sT[j][:] for the keys j0 + [0, cols) (and up to the end of their last tile): q.k, or -inf
  /// in the lanes of queries that cannot see the key where `crossesDiagonal` (causal: an i1
  /// telling whether the block reaches past its first row's last key; null otherwise).
  void buildScores(Value j0, Value cols, Value crossesDiagonal);
  /// o[i][:] = alpha[i] * o[i][:] + sum_{j < cols} pT[j][i] * v[j0 + j][:].
  void buildValueUpdate(Value j0, Value cols, Value rowsInUse);
  /// Sets nextBatch_, nextI0_ and nextQCol_ to the block of the parallel iteration after this
  /// one (`group` of `groups`); the last iteration's successor is clamped to the last batch.
  void locateNextBlock(Value group, int64_t groups, Value batchSize, Value seq);
  /// Prefetches the lines of the rows [rowTile, rowTile + queryTile) of the next iteration's
  /// query block, and of this block's output rows (for writing).
  void buildRowPrefetches(Value rowTile);

  mha::AttentionOp op_;
  OpBuilder &b_;
  Location loc_;
  AttentionBlocking blocking_;
  int64_t headDim_;
  Type f32_, elementType_;
  VectorType laneVector_, headVector_;
  // Inputs and the output, and what every iteration of the parallel loop shares.
  Value query_, key_, value_, out_, batch_, kvCol_, qCol_, i0_, diagonal_, lastKey_, lastPosition_;
  // Where the next iteration's block starts.
  Value nextBatch_, nextI0_, nextQCol_;
  // Scratch of one parallel iteration.
  Value queryT_, scores_, acc_, alpha_;
};

Value AttentionLowering::exp2(Value x) {
  auto type = cast<VectorType>(x.getType());
  auto bitsType = VectorType::get(type.getShape(), b_.getI32Type());
  auto constant = [&](double value) { return splat(type, f32(value)); };
  x = arith::MaximumFOp::create(b_, loc_, x, constant(-127));
  // Adding 1.5 * 2^23 + 127 rounds x to an integer, held with its bias in the low mantissa bits.
  Value magic = constant(12582912.0 + 127.0);
  Value biased = arith::AddFOp::create(b_, loc_, x, magic);
  Value n = arith::SubFOp::create(b_, loc_, biased, magic);
  Value f = arith::SubFOp::create(b_, loc_, x, n);
  // Minimax coefficients of 2^f on [-1/2, 1/2], highest degree first.
  static constexpr double kPowerOfTwo[] = {1.327646663e-3, 9.675540961e-3, 5.550713465e-2,
                                           2.402212024e-1, 6.931469440e-1, 1.000000119};
  Value p = constant(kPowerOfTwo[0]);
  for (double c : ArrayRef(kPowerOfTwo).drop_front())
    p = fma(p, f, constant(c));
  Value bits = arith::BitcastOp::create(b_, loc_, bitsType, biased);
  Value shift = arith::ConstantOp::create(b_, loc_, DenseIntElementsAttr::get(bitsType, 23));
  Value scale = arith::BitcastOp::create(b_, loc_, type, arith::ShLIOp::create(b_, loc_, bits, shift));
  return arith::MulFOp::create(b_, loc_, p, scale);
}

void AttentionLowering::forEachRow(Value rows, function_ref<void(Value, Value, Value)> body) {
  Value c0 = index(0), c1 = index(1);
  for (int64_t h = 0; h < blocking_.heads; ++h) {
    Value column = add(qCol_, index(h * headDim_));
    forLoop(c0, rows, c1, [&](Value p) { body(add(index(h * blocking_.positions), p), p, column); });
  }
}

void AttentionLowering::buildQueryTranspose(Value rows) {
  Value c0 = index(0), c1 = index(1), dh = index(headDim_);
  Value scale = f32(op_.getScaleAttr().getValueAsDouble() * kLog2E);
  int64_t lanes = blocking_.lanes;
  if (!blocking_.transposeInTiles) {
    // Element by element, zero in the columns of rows past the end and of padding rows.
    forLoop(c0, dh, c1, [&](Value d) {
      for (int64_t r = 0; r < blocking_.queryBlock; r += lanes)
        storeVector(splat(laneVector_, f32(0)), queryT_, {d, index(r)});
    });
    forEachRow(rows, [&](Value r, Value position, Value column) {
      Value row = add(i0_, position);
      forLoop(c0, dh, c1, [&](Value d) {
        Value q = loadScalar(query_, {batch_, row, add(column, d)});
        memref::StoreOp::create(b_, loc_, arith::MulFOp::create(b_, loc_, q, scale), queryT_,
                                ValueRange{d, r});
      });
    });
    return;
  }
  // Square tiles of lanes x lanes, transposed in registers (vector.transpose, lowered to
  // shuffles); rows past the end of the sequence read as zero.
  MLIRContext *ctx = b_.getContext();
  auto tileType = VectorType::get({lanes, lanes}, elementType_);
  auto f32Tile = VectorType::get({lanes, lanes}, f32_);
  AffineMap rowsAndColumns =
      AffineMap::get(3, 0, {getAffineDimExpr(1, ctx), getAffineDimExpr(2, ctx)}, ctx);
  Value padding = arith::ConstantOp::create(b_, loc_, b_.getZeroAttr(elementType_));
  Value scales = splat(f32Tile, scale);
  Value positions = index(blocking_.positions);
  forLoop(c0, index(blocking_.queryBlock), index(lanes), [&](Value r) {
    // Every tile of rows lies within one head's positions.
    Value position = arith::RemUIOp::create(b_, loc_, r, positions);
    Value column = add(qCol_, mul(arith::DivUIOp::create(b_, loc_, r, positions), dh));
    forLoop(c0, dh, index(lanes), [&](Value d) {
      Value tile = vector::TransferReadOp::create(
          b_, loc_, tileType, query_, ValueRange{batch_, add(i0_, position), add(column, d)},
          AffineMapAttr::get(rowsAndColumns), padding, /*mask=*/Value(),
          b_.getBoolArrayAttr({false, true}));
      if (elementType_ != f32_)
        tile = arith::ExtFOp::create(b_, loc_, f32Tile, tile);
      tile = arith::MulFOp::create(b_, loc_, tile, scales);
      Value transposed = vector::TransposeOp::create(b_, loc_, tile, ArrayRef<int64_t>{1, 0});
      vector::TransferWriteOp::create(b_, loc_, transposed, queryT_, ValueRange{d, r},
                                      ArrayRef<bool>{true, true});
    });
  });
}

void AttentionLowering::buildScores(Value j0, Value cols, Value crossesDiagonal) {
  int64_t tile = blocking_.keyTile, chunk = blocking_.queryChunk, lanes = blocking_.lanes;
  // A chunk is carried as its register-wide vectors, one by one: a chunk of three vectors as
  // one 48-lane vector came out of LLVM mostly scalarized (1280 instructions for 24 FMAs).
  int64_t chunkVectors = chunk / lanes;
  int64_t lineElements = 512 / elementType_.getIntOrFloatBitWidth(); // per 64-byte line
  Value c0 = index(0), c1 = index(1);
  auto laneType = VectorType::get({lanes}, b_.getI32Type());
  Value negInf = splat(laneVector_, f32(-std::numeric_limits<double>::infinity()));
  SmallVector<int32_t> offsets(lanes);
  std::iota(offsets.begin(), offsets.end(), 0);
  Value laneOffsets =
      arith::ConstantOp::create(b_, loc_, DenseIntElementsAttr::get(laneType, offsets));

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
      for (int64_t column = 0; column < headDim_; column += lineElements)
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
      SmallVector<Value> sums = forLoop(
          c0, index(headDim_), c1, init, [&](Value d, ValueRange partial) {
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
      // Stores the chunk's scores, each lane masked to -inf where its query cannot see the key.
      auto store = [&](bool masked) {
        // Causal: the query at position i0 + p sees key j0 + j when j0 + j <= i0 + p + diagonal,
        // so its valid lanes are those at positions from `first` on.
        SmallVector<Value> firstValid;
        if (masked)
          for (int64_t t = 0; t < tile; ++t) {
            Value first = maxIndex(c0, sub(sub(add(firstKey, index(t)), diagonal_), i0_));
            first = minIndex(first, index(blocking_.positions));
            firstValid.push_back(arith::IndexCastOp::create(b_, loc_, b_.getI32Type(), first));
          }
        for (int64_t v = 0; v < chunkVectors; ++v) {
          Value q = add(q0, index(v * lanes));
          Value lanePosition;
          if (masked) {
            // The position of each lane's query row within its head.
            Value firstLane =
                splat(laneType, arith::IndexCastOp::create(b_, loc_, b_.getI32Type(), q));
            lanePosition = arith::AddIOp::create(b_, loc_, laneOffsets, firstLane);
            if (blocking_.heads > 1) {
              Value positions = arith::ConstantIntOp::create(b_, loc_, blocking_.positions, 32);
              lanePosition =
                  arith::RemUIOp::create(b_, loc_, lanePosition, splat(laneType, positions));
            }
          }
          for (int64_t t = 0; t < tile; ++t) {
            Value sum = sums[t * chunkVectors + v];
            if (masked) {
              Value valid = arith::CmpIOp::create(b_, loc_, arith::CmpIPredicate::sge,
                                                  lanePosition, splat(laneType, firstValid[t]));
              sum = arith::SelectOp::create(b_, loc_, valid, sum, negInf);
            }
            storeVector(sum, scores_, {add(jt, index(t)), q});
          }
        }
      };
      if (!crossesDiagonal) {
        store(/*masked=*/false);
        return;
      }
      auto ifOp = scf::IfOp::create(b_, loc_, crossesDiagonal, /*withElseRegion=*/true);
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

void AttentionLowering::buildValueUpdate(Value j0, Value cols, Value rowsInUse) {
  int64_t tile = blocking_.queryTile;
  Value c0 = index(0), c1 = index(1);
  for (int64_t first = 0; first < headDim_; first += blocking_.valueChunk) {
    int64_t width = std::min(blocking_.valueChunk, headDim_ - first);
    auto chunkVector = VectorType::get({width}, f32_);
    Value column = index(first);
    forLoop(c0, rowsInUse, index(tile), [&](Value it) {
      // Spread over the first key block's p.v tiles, where they wait on no result.
      if (first == 0 && blocking_.prefetchNextBlock)
        ifThen(arith::CmpIOp::create(b_, loc_, arith::CmpIPredicate::eq, j0, c0),
               [&] { buildRowPrefetches(it); });
      SmallVector<Value> init;
      for (int64_t t = 0; t < tile; ++t) {
        Value row = add(it, index(t));
        Value alpha = memref::LoadOp::create(b_, loc_, alpha_, row);
        init.push_back(arith::MulFOp::create(
            b_, loc_, loadVector(chunkVector, acc_, {row, column}), splat(chunkVector, alpha)));
      }
      SmallVector<Value> rows = forLoop(c0, cols, c1, init, [&](Value j, ValueRange partial) {
        Value value = readRow(width, value_, {batch_, add(j0, j), add(kvCol_, column)});
        SmallVector<Value> next;
        for (int64_t t = 0; t < tile; ++t) {
          Value p = memref::LoadOp::create(b_, loc_, scores_, ValueRange{j, add(it, index(t))});
          next.push_back(fma(splat(chunkVector, p), value, partial[t]));
        }
        return next;
      });
      for (int64_t t = 0; t < tile; ++t)
        storeVector(rows[t], acc_, {add(it, index(t)), column});
    });
  }
}

void AttentionLowering::locateNextBlock(Value group, int64_t groups, Value batchSize,
                                        Value seq) {
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
}

void AttentionLowering::buildRowPrefetches(Value rowTile) {
  int64_t lineElements = 512 / elementType_.getIntOrFloatBitWidth();
  Value positions = index(blocking_.positions);
  for (int64_t t = 0; t < blocking_.queryTile; ++t) {
    // Row r of a block is position r % positions of its group's query head r / positions;
    // padding rows are clamped to the last head and position, so that every address is in
    // the buffers.
    Value r = add(rowTile, index(t));
    Value position = arith::RemUIOp::create(b_, loc_, r, positions);
    Value head = minIndex(arith::DivUIOp::create(b_, loc_, r, positions),
                          index(blocking_.heads - 1));
    Value headColumn = mul(head, index(headDim_));
    Value nextRow = minIndex(add(nextI0_, position), lastPosition_);
    Value row = minIndex(add(i0_, position), lastPosition_);
    for (int64_t column = 0; column < headDim_; column += lineElements) {
      Value offset = add(headColumn, index(column));
      memref::PrefetchOp::create(b_, loc_, query_,
                                 ValueRange{nextBatch_, nextRow, add(nextQCol_, offset)},
                                 /*isWrite=*/false, /*localityHint=*/3, /*isDataCache=*/true);
      memref::PrefetchOp::create(b_, loc_, out_, ValueRange{batch_, row, add(qCol_, offset)},
                                 /*isWrite=*/true, /*localityHint=*/3, /*isDataCache=*/true);
    }
  }
}

Value AttentionLowering::build() {
  auto queryType = op_.getQuery().getType();
  auto keyType = op_.getKey().getType();
  query_ = bufferization::ToBufferOp::create(b_, loc_, anyLayoutMemRef(queryType),
                                             op_.getQuery(), /*read_only=*/true);
  key_ = bufferization::ToBufferOp::create(b_, loc_, anyLayoutMemRef(keyType), op_.getKey(),
                                           /*read_only=*/true);
  value_ = bufferization::ToBufferOp::create(b_, loc_, anyLayoutMemRef(keyType), op_.getValue(),
                                             /*read_only=*/true);
  Value kvLens;
  if (Value lens = op_.getKvLens())
    kvLens = bufferization::ToBufferOp::create(
        b_, loc_, anyLayoutMemRef(cast<RankedTensorType>(lens.getType())), lens,
        /*read_only=*/true);

  int64_t queryBlock = blocking_.queryBlock, keyBlock = blocking_.keyBlock;
  Value c0 = index(0), c1 = index(1), dh = index(headDim_);
  Value batchSize = memref::DimOp::create(b_, loc_, query_, 0);
  Value seq = memref::DimOp::create(b_, loc_, query_, 1);
  Value kvSeq = memref::DimOp::create(b_, loc_, key_, 1);

  // The output; each parallel iteration below has its own scratch.
  SmallVector<Value> dynamicSizes;
  for (int64_t i = 0; i < queryType.getRank(); ++i)
    if (queryType.isDynamicDim(i))
      dynamicSizes.push_back(memref::DimOp::create(b_, loc_, query_, i));
  auto outType = MemRefType::get(queryType.getShape(), elementType_);
  out_ = memref::AllocOp::create(b_, loc_, outType, dynamicSizes, b_.getI64IntegerAttr(64));
  Value negInf = f32(-std::numeric_limits<double>::infinity());
  Value zero = f32(0);
  diagonal_ = sub(kvSeq, seq); // key j is visible to query i when j <= i + diagonal
  lastKey_ = sub(kvSeq, c1);
  lastPosition_ = sub(seq, c1);
  Value positions = index(blocking_.positions);
  Value queryBlocks = arith::CeilDivSIOp::create(b_, loc_, seq, positions);

  // One parallel iteration per (batch, key/value head with its group of query heads, block of
  // positions): independent, and each with its own scratch, so the runtime's threads can share
  // them out.
  int64_t groups = op_.getHeads() / blocking_.heads;
  auto parallel = scf::ParallelOp::create(b_, loc_, ValueRange{c0, c0, c0},
                                          ValueRange{batchSize, index(groups), queryBlocks},
                                          ValueRange{c1, c1, c1});
  OpBuilder::InsertionGuard guard(b_);
  b_.setInsertionPointToStart(parallel.getBody());
  batch_ = parallel.getInductionVars()[0];
  Value group = parallel.getInductionVars()[1];
  i0_ = mul(parallel.getInductionVars()[2], positions);
  auto scratch = [&](ArrayRef<int64_t> shape) {
    return memref::AllocaOp::create(b_, loc_, MemRefType::get(shape, f32_), ValueRange{},
                                    b_.getI64IntegerAttr(64));
  };
  queryT_ = scratch({headDim_, queryBlock});
  scores_ = scratch({keyBlock, queryBlock});
  acc_ = scratch({queryBlock, headDim_});
  alpha_ = scratch({queryBlock});

  Value kvLen = kvSeq;
  if (kvLens) {
    // The entry point has checked 0 <= kv_lens[b] <= Skv.
    Value len = memref::LoadOp::create(b_, loc_, kvLens, batch_);
    kvLen = arith::IndexCastOp::create(b_, loc_, b_.getIndexType(), len);
  }
  qCol_ = mul(group, index(blocking_.heads * headDim_));
  kvCol_ = mul(group, dh);
  // Valid positions of each head in the block.
  Value rows = minIndex(positions, sub(seq, i0_));
  // Rows of the p.v tiles in use: up to the last head's valid rows, in whole tiles.
  Value tile = index(blocking_.queryTile);
  Value lastRow = add(index((blocking_.heads - 1) * blocking_.positions), rows);
  Value rowsInUse = mul(arith::CeilDivSIOp::create(b_, loc_, lastRow, tile), tile);

  buildQueryTranspose(rows);
  // A thread runs the iterations of its share in order (the runtime's pool), so the next one
  // is mostly this one's successor. Its query rows and this block's output rows are fetched
  // during the first key block (where the schedule asks): they would otherwise be misses
  // waited on one by one, in the transpose and the final write.
  locateNextBlock(group, groups, batchSize, seq);
  forLoop(c0, index(queryBlock), c1, [&](Value r) {
    storeVector(splat(headVector_, zero), acc_, {r, c0});
  });

  // Keys past the block's last row's limit are masked for every row of the block.
  Value blockEnd = kvLen;
  if (op_.getCausal())
    blockEnd = minIndex(kvLen, maxIndex(c0, add(add(i0_, rows), diagonal_)));

  // The softmax's state is carried as the block's vectors of queries, one by one: a block of
  // 48 queries is six ymm registers, where one 48-lane vector would not be legal for LLVM.
  int64_t blockVectors = queryBlock / blocking_.lanes;
  auto vectorOffset = [&](int64_t v) { return index(v * blocking_.lanes); };
  Value zeros = splat(laneVector_, zero), negInfs = splat(laneVector_, negInf);
  SmallVector<Value> initial(blockVectors, negInfs);
  initial.append(blockVectors, zeros);
  SmallVector<Value> state = forLoop(
      c0, blockEnd, index(keyBlock), initial, [&](Value j0, ValueRange carried) {
        ValueRange oldMax = carried.take_front(blockVectors);
        ValueRange oldSum = carried.drop_front(blockVectors);
        Value cols = minIndex(index(keyBlock), sub(blockEnd, j0));
        // Only blocks past the diagonal of the block's first row need masks.
        Value crossesDiagonal;
        if (op_.getCausal())
          crossesDiagonal = arith::CmpIOp::create(b_, loc_, arith::CmpIPredicate::sgt,
                                                  add(j0, cols), add(add(i0_, diagonal_), c1));
        buildScores(j0, cols, crossesDiagonal);

        // m' = max(m, max_j sT[j]) over the block's keys (the rows of its last tile past cols
        // are never read). The maximum is `s > m ? s : m`, one vmaxps (arith.maximumf's NaN
        // propagation takes four instructions on x86): a NaN score is passed over here and
        // still reaches the row's output through its p.
        SmallVector<Value> newMax = forLoop(c0, cols, c1, oldMax, [&](Value j, ValueRange partial) {
          SmallVector<Value> next;
          for (int64_t v = 0; v < blockVectors; ++v) {
            Value scores = loadVector(laneVector_, scores_, {j, vectorOffset(v)});
            Value greater =
                arith::CmpFOp::create(b_, loc_, arith::CmpFPredicate::OGT, scores, partial[v]);
            next.push_back(arith::SelectOp::create(b_, loc_, greater, scores, partial[v]));
          }
          return next;
        });
        SmallVector<Value> shift, alpha;
        for (int64_t v = 0; v < blockVectors; ++v) {
          Value isEmpty =
              arith::CmpFOp::create(b_, loc_, arith::CmpFPredicate::OEQ, newMax[v], negInfs);
          shift.push_back(arith::SelectOp::create(b_, loc_, isEmpty, zeros, newMax[v]));
          alpha.push_back(exp2(arith::SubFOp::create(b_, loc_, oldMax[v], shift[v])));
          storeVector(alpha[v], alpha_, {vectorOffset(v)});
        }

        // pT = 2^(sT - m'), in place; l = alpha * l + sum_j pT[j]. One vector of the block at a
        // time: the eight constants of exp2 and one running sum stay in registers, where six
        // sums and six maxima beside them spilled.
        SmallVector<Value> blockSum;
        for (int64_t v = 0; v < blockVectors; ++v)
          blockSum.push_back(forLoop(c0, cols, c1, {zeros}, [&](Value j, ValueRange partial) {
            Value scores = loadVector(laneVector_, scores_, {j, vectorOffset(v)});
            Value p = exp2(arith::SubFOp::create(b_, loc_, scores, shift[v]));
            storeVector(p, scores_, {j, vectorOffset(v)});
            return SmallVector<Value>{arith::AddFOp::create(b_, loc_, partial[0], p)};
          })[0]);
        SmallVector<Value> next = newMax;
        for (int64_t v = 0; v < blockVectors; ++v)
          next.push_back(fma(alpha[v], oldSum[v], blockSum[v]));

        buildValueUpdate(j0, cols, rowsInUse);
        return next;
      });

  // out = o / l, or 0 for a row that saw no valid key.
  Value ones = splat(laneVector_, f32(1));
  for (int64_t v = 0; v < blockVectors; ++v) {
    Value sums = state[blockVectors + v];
    Value positive = arith::CmpFOp::create(b_, loc_, arith::CmpFPredicate::OGT, sums, zeros);
    Value inverse = arith::SelectOp::create(b_, loc_, positive,
                                            arith::DivFOp::create(b_, loc_, ones, sums), zeros);
    storeVector(inverse, alpha_, {vectorOffset(v)});
  }
  auto outVector = VectorType::get({headDim_}, elementType_);
  forEachRow(rows, [&](Value r, Value position, Value column) {
    Value scaleRow = splat(headVector_, memref::LoadOp::create(b_, loc_, alpha_, r));
    Value result = arith::MulFOp::create(b_, loc_, loadVector(headVector_, acc_, {r, c0}), scaleRow);
    if (elementType_ != f32_)
      result = arith::TruncFOp::create(b_, loc_, outVector, result);
    vector::TransferWriteOp::create(b_, loc_, result, out_,
                                    ValueRange{batch_, add(i0_, position), column},
                                    ArrayRef<bool>{true});
  });

  b_.setInsertionPointAfter(parallel);
  return bufferization::ToTensorOp::create(b_, loc_, queryType, out_, /*restrict=*/true,
                                           /*writable=*/true);
}

struct ConvertMhaAttentionToLoopsPass
    : impl::ConvertMhaAttentionToLoopsBase<ConvertMhaAttentionToLoopsPass> {
  using Base::Base;

  /// The blocking of `op`. The tile options are upper bounds: each op takes the largest
  /// values up to them that make whole tiles of its block (mhac's schedule validator has
  /// already made them exact for the layer it compiles; mhac-opt may run one set of options
  /// over functions with different blocks).
  AttentionBlocking blockingOf(mha::AttentionOp op) {
    AttentionBlock block = attentionBlock(op.getGroupSize(), op.getQuery().getType().getDimSize(1),
                                          queryBlock, groupedQueryBlock, vectorLanes);
    auto largestDivisor = [](int64_t extent, int64_t bound) {
      int64_t divisor = std::min(extent, bound);
      while (extent % divisor != 0)
        --divisor;
      return divisor;
    };
    return AttentionBlocking{
        block.rows,
        keyBlock,
        block.heads,
        block.positions,
        largestDivisor(keyBlock, scoreTileKeys),
        largestDivisor(block.rows, valueTileRows),
        largestDivisor(block.vectors(vectorLanes), scoreTileVectors) * vectorLanes,
        valueTileVectors * vectorLanes,
        vectorLanes,
        transposeInTiles && block.transposesInTiles(op.getHeadDim(), vectorLanes),
        keyPrefetchDistance,
        prefetchValues,
        prefetchNextBlock};
  }

  void runOnOperation() override {
    if (queryBlock < 1 || groupedQueryBlock < 1 || keyBlock < 1 || vectorLanes < 1 ||
        queryBlock % vectorLanes != 0 || groupedQueryBlock % vectorLanes != 0 ||
        scoreTileKeys < 1 || scoreTileVectors < 1 || valueTileRows < 1 ||
        valueTileVectors < 1 || keyPrefetchDistance < 0) {
      getOperation().emitError("query-block and grouped-query-block must be positive multiples "
                               "of vector-lanes; key-block, vector-lanes and the tiles' rows, "
                               "keys and vectors positive; key-prefetch-distance not negative");
      return signalPassFailure();
    }
    SmallVector<mha::AttentionOp> ops;
    getOperation().walk([&](mha::AttentionOp op) { ops.push_back(op); });
    for (mha::AttentionOp op : ops) {
      AttentionBlocking blocking = blockingOf(op);
      OpBuilder builder(op);
      Value result = AttentionLowering(op, builder, blocking).build();
      op.getResult().replaceAllUsesWith(result);
      op.erase();
    }
    // Fold the index arithmetic of static shapes, so that loop bounds read as constants.
    if (!ops.empty() &&
        failed(applyPatternsGreedily(getOperation(), RewritePatternSet(&getContext()))))
      signalPassFailure();
  }
};

} // namespace
} // namespace mhac
