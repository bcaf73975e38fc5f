//===- AttentionLowering.h - the loop nest of one mha.attention -*- C++ -*-===//
//
// Part of mhac. The builder of convert-mha-attention-to-loops, one kind of tile per file:
// QueryTranspose.cpp (the block's queries, transposed), ScoreTile.cpp (the scores' register
// tiles), Softmax.cpp (the online softmax and the output), ValueTile.cpp (the p.v register
// tiles and the next block's prefetches), AmxProducts.cpp (both products on AMX's tiles);
// AttentionToLoops.cpp assembles the loop nest.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_COMPILER_CONVERSION_ATTENTIONTOLOOPS_ATTENTIONLOWERING_H
#define MHAC_COMPILER_CONVERSION_ATTENTIONTOLOOPS_ATTENTIONLOWERING_H

#include "dialects/mha/IR/MhaOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <optional>

namespace mhac {

using namespace mlir;

/// log2(e): the softmax is computed in base 2.
inline constexpr double kLog2E = 1.4426950408889634;

/// What computes attention's two products.
enum class AttentionProducts {
  F32,          ///< f32 register tiles on the FMAs (ScoreTile.cpp, ValueTile.cpp)
  AmxTiles,     ///< bf16 tile products on AMX (AmxProducts.cpp)
  AmxInVectors, ///< the same tiles in vector operations, for CPUs without AMX (tests)
  Dot,          ///< the same bf16 operands in vdpbf16ps register tiles (AVX512-BF16)
};

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
  /// f32 lanes of a vector register: the rows of the tiles the queries are transposed in.
  int64_t lanes;
  /// The queries are transposed in register tiles (else element by element).
  bool transposeInTiles;
  /// Key tiles ahead that a score tile prefetches (0: none).
  int64_t keyPrefetchDistance;
  /// A score tile prefetches its value rows; the first key block prefetches the next task's
  /// queries and this block's output.
  bool prefetchValues, prefetchNextBlock;
  AttentionProducts products;

  /// The products multiply bf16 operands in AMX's layouts (AmxProducts.cpp).
  bool bf16Products() const { return products != AttentionProducts::F32; }
};

/// The blocking of calls with many keys, where an op's keys are known at run time only.
struct LongCallBlocking {
  /// Calls with at least this many keys take `blocking`.
  int64_t keys;
  AttentionBlocking blocking;
};

/// The blocking of calls with few queries (a decode step), where an op's sequence is known at
/// run time only: blocks of one vector of rows, so that a step's G query heads of one position
/// fill a vector rather than a sixteenth of a taller block.
struct ShortCallBlocking {
  /// Calls with at most this many query positions take `blocking`.
  int64_t positions;
  AttentionBlocking blocking;
};

/// The split-cache decode nest (SplitCache.cpp) of calls with few query positions against a
/// cache: the scores of each query row with lanes over keys, each row's keys split into chunks
/// that are parallel tasks, and their partial softmax states merged.
struct DecodeBlocking {
  /// Calls with at most this many query positions take the decode nest.
  int64_t positions;
  /// Keys of one parallel task (a chunk of a row's keys), and of one block of its online
  /// softmax (a multiple of `lanes`).
  int64_t chunk, keyBlock;
  /// The p.v register tile: query rows x vectors of the head.
  int64_t valueTileRows, valueTileVectors;
  /// f32 lanes of a vector register: the keys of one vector of scores.
  int64_t lanes;
};

/// The keys a decode step's rows of one batch see together: the cache's rows [first, end),
/// up to the last position, from the first position's window on; `past` is its cache_len.
struct DecodeKeys {
  Value past, first, end;
};

/// Builds the loop nest of one mha.attention.
class AttentionLowering {
public:
  AttentionLowering(mha::AttentionOp op, OpBuilder &b, AttentionBlocking blocking,
                    std::optional<LongCallBlocking> longCalls = std::nullopt,
                    std::optional<ShortCallBlocking> shortCalls = std::nullopt,
                    std::optional<DecodeBlocking> decode = std::nullopt)
      : op_(op), b_(b), loc_(op.getLoc()), blocking_(blocking), longCalls_(longCalls),
        shortCalls_(shortCalls), decode_(decode),
        headDim_(op.getHeadDim()), window_(static_cast<int64_t>(op.getWindow().value_or(0))),
        f32_(b.getF32Type()), elementType_(op.getQuery().getType().getElementType()),
        keyElementType_(cast<ShapedType>(op.getKey().getType()).getElementType()),
        resultElementType_(op.getResult().getType().getElementType()),
        laneVector_(VectorType::get({blocking.lanes}, f32_)),
        headVector_(VectorType::get({headDim_}, f32_)) {}

  /// Emits the loops and returns the tensor holding the result.
  Value build();

private:
  /// scale * log2(e): the factor that makes scores base-2 exponents. The f32 products fold
  /// it into the transposed queries; bf16 products multiply unscaled queries, exact in bf16,
  /// and the softmax applies it in f32 (a query scaled, then rounded to bf16, would carry
  /// bf16's relative error of 2^-9 into the whole score: about 4 units of a score of 2000).
  double scoreScale();
  /// Whether the scores still lack scoreScale() when the softmax reads them.
  bool unscaledScores() const { return blocking_.bf16Products(); }

  /// The parallel loop over the blocks of query rows, with blocking_, writing into out_.
  void buildBlocks(Value batchSize, Value seq, Value kvSeq, Value kvLens);

  // The split-cache decode nest (SplitCache.cpp).
  /// The decode nest: a parallel loop over (batch, key/value head, chunk of keys) computing
  /// partial states, then one over (batch, key/value head) merging them into out_.
  void buildDecode(Value batchSize, Value seq);
  /// The keys the rows of batch `batch` see together.
  DecodeKeys decodeKeys(Value batch, Value seq);
  /// The online softmax of the chunk [first, last) of batch_'s keys for the `rows` query rows
  /// (row r is position r % seq of head r / seq of the group), into the partial states at
  /// `chunk`.
  void buildDecodeChunk(Value seq, Value first, Value last, Value chunk, Value partialAcc,
                        Value partialMax, Value partialSum);
  /// out_ for batch_'s rows of the group from its `chunks` partial states.
  void buildDecodeMerge(Value seq, Value chunks, Value partialAcc, Value partialMax,
                        Value partialSum);
  /// Vectors of a head in the decode nest's rows (the last one zero past the head).
  int64_t decodeHeadVectors() const { return (headDim_ + decode_->lanes - 1) / decode_->lanes; }
  /// Vector `c` of a key or value row, as f32 (the head's last vector masked past its end).
  Value loadHeadVector(Value memref, Value batch, Value row, Value column, int64_t c);
  /// The vector whose lane t is the sum of the lanes of `vectors[t]` (as many vectors as
  /// lanes): a tree of shuffles and adds, log2(lanes) levels, with no horizontal reduction.
  Value sumLanesOfEach(ArrayRef<Value> vectors);
  /// 2^x of a scalar.
  Value scalarExp2(Value x);

  /// The offset of vector `v` of the block's queries.
  Value vectorOffset(int64_t v) { return index(v * blocking_.lanes); }
  /// Elements of `type` in a 64-byte cache line: the step of a row's prefetches.
  static int64_t lineElements(Type type) { return 512 / type.getIntOrFloatBitWidth(); }
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
  /// Loads one element of an input (of its memref's element type) as f32.
  Value loadScalar(Value memref, ValueRange indices) {
    Value value = memref::LoadOp::create(b_, loc_, memref, indices);
    if (value.getType() == f32_)
      return value;
    return arith::ExtFOp::create(b_, loc_, f32_, value);
  }
  /// Reads `width` contiguous elements starting at `indices` as an f32 vector.
  Value readRow(int64_t width, Value memref, ValueRange indices) {
    Type element = cast<MemRefType>(memref.getType()).getElementType();
    auto type = VectorType::get({width}, element);
    Value padding = arith::ConstantOp::create(b_, loc_, b_.getZeroAttr(element));
    Value vector = vector::TransferReadOp::create(b_, loc_, type, memref, indices, padding,
                                                  ArrayRef<bool>{true});
    if (element == f32_)
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
  /// Emits `if (condition) then() else otherwise()`.
  void ifThenElse(Value condition, function_ref<void()> then, function_ref<void()> otherwise) {
    auto ifOp = scf::IfOp::create(b_, loc_, condition, /*withElseRegion=*/true);
    OpBuilder::InsertionGuard guard(b_);
    b_.setInsertionPointToStart(ifOp.thenBlock());
    then();
    b_.setInsertionPointToStart(ifOp.elseBlock());
    otherwise();
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
  /// `forBf16`: a result about to be rounded to bf16, in nine instructions (degree 3, 7.5e-5).
  Value exp2(Value x, bool forBf16 = false);
  /// qT = scoreScale() * the block's query rows, transposed; zero in the columns of rows past
  /// the sequence's end (`rows` positions are valid) and of padding rows. With bf16 products,
  /// the rows alone (unscaledScores()), rounded and transposed as pairs of features into
  /// queryPairs_ (queryPairs_[k][2c + h] = q[c][2k + h], zero past the head).
  void buildQueryTranspose(Value rows);
  /// Emits body(r, position, column of the row's head) for every valid row of the block.
  void forEachRow(Value rows, function_ref<void(Value, Value, Value)> body);
  /// sT[j][:] for the keys j0 + [0, cols) (and up to the end of their last tile): q.k (capped
  /// with a softcap), or -inf in the lanes of queries that cannot see the key where `needsMask`
  /// (an i1 telling whether the block crosses a causal or window limit of its rows; null for a
  /// layer with neither).
  void buildScores(Value j0, Value cols, Value needsMask);
  /// c * tanh(s / c) of the scores `x` (a vector, in the units the softmax reads: base-2 and
  /// scaled for the f32 products, unscaled for the bf16 ones), for the softcap c.
  Value softcapScores(Value x);
  /// The lanes of the block's queries (positions `lanePositions`, i32) that see `key`: those
  /// at or past firstSeeingPosition with causal, and up to lastSeeingPosition with a window.
  Value seesKey(Value lanePositions, Value key);
  /// sums += 2^(sink - m) for each row, in the softmax's units (sinks): the sink logit of the
  /// row's head joins its denominator. `maxes` are the rows' running maxima.
  void addSinks(ValueRange maxes, SmallVectorImpl<Value> &sums);
  /// The online softmax of one key block, over the block's vectors of queries: m' = max(m,
  /// max_j sT[j]) (`oldMax` is m); alpha = 2^(m - m') into alpha_; pT = 2^(sT - m') in place
  /// (with AMX: into probabilityPairs_); returns m' and then l' = alpha * l + sum_j pT[j]
  /// (`oldSum` is l).
  SmallVector<Value> buildSoftmax(Value cols, ValueRange oldMax, ValueRange oldSum);
  /// o[i][:] = alpha[i] * o[i][:] + sum_{j < cols} pT[j][i] * v[j0 + j][:].
  void buildValueUpdate(Value j0, Value cols, Value rowsInUse);
  /// out = o / l for the block's valid rows (`sums` is l), or 0 for a row that saw no key.
  void buildOutput(Value rows, ValueRange sums);
  /// Sets nextBatch_, nextI0_ and nextQCol_ to the block of the parallel iteration after this
  /// one (`group` of `groups`); the last iteration's successor is clamped to the last batch.
  void locateNextBlock(Value group, int64_t groups, Value batchSize, Value seq);
  /// Prefetches the lines of the rows [rowTile, rowTile + queryTile) of the next iteration's
  /// query block (with `queryLocality`, memref.prefetch's: 3 to L1, 2 to L2), and of this
  /// block's output rows (for writing).
  void buildRowPrefetches(Value rowTile, int64_t queryLocality);
  /// Prefetches into L2 the key rows [first, end) of `batch` at `column`, where the score
  /// tiles read the keys in place (readsKeysInPlace()): those of the next iteration's first key
  /// block, which the projection left in L3, and those of the next key block.
  void buildKeyPrefetches(Value batch, Value first, Value end, Value column);
  /// The positions within their heads of the block's queries q .. q + lanes, as i32 lanes.
  Value queryPositions(Value q);
  /// The first position (i32) of the block's rows that sees `key`: lanes at positions from it
  /// on see it.
  Value firstSeeingPosition(Value key);
  /// The last position (i32) of the block's rows whose window holds `key` (-1: none).
  Value lastSeeingPosition(Value key);

  // bf16 products (AmxProducts.cpp). The keys and values of the whole call are first rounded
  // to bf16 into buffers laid out for AMX's tiles, which every query block then reads.
  /// keysBf16_ [B][Hkv][Skv'][Dp] and valuesT_ [B][Hkv][Dh][Skv'] (transposed), zero past the
  /// keys and past the head (Skv' = Skv in whole key blocks, Dp = amxPaddedHead); no keysBf16_
  /// where readsKeysInPlace(). `dot` fills valuesT_ only as far as the last key's tile.
  void buildAmxOperands(Value batchSize, Value kvSeq, int64_t groups);
  /// vdpbf16ps register tiles of bf16 keys read them where they are: the tiles need neither
  /// whole key blocks nor a padded head, and their rows past a block's valid keys read the
  /// last valid one (PairsInUse), so only the values are laid out again (transposed).
  bool readsKeysInPlace() const {
    return blocking_.products == AttentionProducts::Dot && elementType_.isBF16();
  }
  /// The softmax's probabilities of vector `v` of the block's queries, of unscaled scores:
  /// 2^(scoreScale() * (sT[j] - shift)) for j < cols and 0 past them (to the end of the key
  /// block for AMX's whole tiles), rounded into probabilityPairs_; returns their sum.
  Value buildProbabilityPairs(int64_t v, Value cols, Value shift);
  /// sT = the block's keys . qT, on tiles: keys from j0 on, KB of them on AMX, the tiles that
  /// hold the `cols` valid ones in vdpbf16ps (past `cols`, scores that the softmax does not
  /// read).
  void buildAmxScores(Value j0, Value cols);
  /// sT[j] = -inf in the lanes of queries that cannot see key j0 + j, for j < cols.
  void maskScores(Value j0, Value cols);
  /// sT[j] = softcapScores(sT[j]) for j < cols.
  void capScores(Value cols);
  /// accT = alpha * accT + v^T . pT: on tiles, from probabilityPairs_ (on AMX the whole key
  /// block, in vdpbf16ps the pairs that hold the `cols` valid keys).
  void buildAmxValueUpdate(Value j0, Value cols);
  /// acc = accT^T (for buildOutput).
  void transposeAccumulators();

  mha::AttentionOp op_;
  OpBuilder &b_;
  Location loc_;
  /// The blocking of the nest being built: the one given, longCalls_'s or shortCalls_'s.
  AttentionBlocking blocking_;
  std::optional<LongCallBlocking> longCalls_;
  std::optional<ShortCallBlocking> shortCalls_;
  std::optional<DecodeBlocking> decode_;
  int64_t headDim_;
  /// The sliding window's keys per query (0: none).
  int64_t window_;
  /// f32, the queries' element type, the keys' and values' (a bf16 cache's under f32 queries)
  /// and the result's (bf16 where the result is stored rounded).
  Type f32_, elementType_, keyElementType_, resultElementType_;
  VectorType laneVector_, headVector_;
  // Inputs and the output, and what every iteration of the parallel loop shares.
  Value query_, key_, value_, out_, batch_, group_, kvCol_, qCol_, i0_, diagonal_, lastKey_,
      lastPosition_;
  // A decoder layer's cache lengths and sinks, where it has them.
  Value cacheLen_, sinks_;
  // Where the next iteration's block starts, and its keys' column.
  Value nextBatch_, nextI0_, nextQCol_, nextKvCol_;
  // Scratch of one parallel iteration (sinkRows_: each row's sink, in the softmax's units).
  Value queryT_, scores_, acc_, alpha_, sinkRows_;
  // Vectors of the block's lanes: all 0, all -inf.
  Value zeros_, negInfs_;
  // AMX: the call's keys and values in bf16 (buildAmxOperands); a task's queries and
  // probabilities as bf16 pairs, and its accumulators transposed ([Dh][QB]).
  Value keysBf16_, valuesT_, queryPairs_, probabilityPairs_, accT_;
};

} // namespace mhac

#endif // MHAC_COMPILER_CONVERSION_ATTENTIONTOLOOPS_ATTENTIONLOWERING_H
