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
// Where the keys are known at run time only and calls with many keys take taller blocks
// (long-keys), the nest is built twice, each with its blocks, and a test of the call's keys
// chooses: the output, the call's AMX operands and the masks' limits are shared.
//
// The scores are in base 2 (log2 e is folded into the query scale), so the softmax's
// exponentials are powers of two, computed in registers by exp2 below. bf16 products leave
// the queries unscaled and scale the scores in the softmax instead (scoreScale): a scaled
// query rounded to bf16 would err by 2^-9 of the whole scaled score. Scores are only ever
// compared with and subtracted from their running maximum, so |s| up to 1e4 cannot overflow.
// While a row has seen no valid key its maximum is -inf; it is replaced by 0 where it is
// subtracted, so p and alpha are 2^-inf = 0 instead of NaN, l stays 0, and the row writes 0.
//
//===----------------------------------------------------------------------===//

#include "compiler/conversion/AttentionToLoops/AttentionLowering.h"
#include "compiler/conversion/Passes.h"
#include "compiler/schedules/AttentionBlock.h"
#include "compiler/target/CpuTarget.h"

#include "mlir/Dialect/AMX/AMXDialect.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/Support/MathExtras.h"

#include <limits>

namespace mhac {
#define GEN_PASS_DEF_CONVERTMHAATTENTIONTOLOOPS
#include "compiler/conversion/Passes.h.inc"
} // namespace mhac

using namespace mlir;

namespace mhac {
namespace {

/// A memref type any buffer of `tensorType`'s shape can be cast to: loops over it work whatever
/// layout bufferization chooses.
MemRefType anyLayoutMemRef(RankedTensorType tensorType) {
  MLIRContext *ctx = tensorType.getContext();
  SmallVector<int64_t> strides(tensorType.getRank(), ShapedType::kDynamic);
  auto layout = StridedLayoutAttr::get(ctx, ShapedType::kDynamic, strides);
  return MemRefType::get(tensorType.getShape(), tensorType.getElementType(), layout);
}

} // namespace

Value AttentionLowering::build() {
  auto queryType = op_.getQuery().getType();
  auto readOnly = [&](Value tensor) -> Value {
    if (!tensor)
      return {};
    return bufferization::ToBufferOp::create(
        b_, loc_, anyLayoutMemRef(cast<RankedTensorType>(tensor.getType())), tensor,
        /*read_only=*/true);
  };
  query_ = readOnly(op_.getQuery());
  if (op_.readsCache()) {
    // The caches [B, N, Hkv, Dh], seen as rows of packed heads like a projection's keys.
    auto rows = [&](Value cache) -> Value {
      return memref::CollapseShapeOp::create(b_, loc_, cache,
                                             ArrayRef<ReassociationIndices>{{0}, {1}, {2, 3}});
    };
    key_ = rows(op_.getKey());
    value_ = rows(op_.getValue());
  } else {
    key_ = readOnly(op_.getKey());
    value_ = readOnly(op_.getValue());
  }
  Value kvLens = readOnly(op_.getKvLens());
  cacheLen_ = readOnly(op_.getCacheLen());
  sinks_ = readOnly(op_.getSinks());

  Value c1 = index(1);
  Value batchSize = memref::DimOp::create(b_, loc_, query_, 0);
  Value seq = memref::DimOp::create(b_, loc_, query_, 1);
  Value kvSeq = memref::DimOp::create(b_, loc_, key_, 1);

  // The output; each parallel iteration below has its own scratch.
  SmallVector<Value> dynamicSizes;
  for (int64_t i = 0; i < queryType.getRank(); ++i)
    if (queryType.isDynamicDim(i))
      dynamicSizes.push_back(memref::DimOp::create(b_, loc_, query_, i));
  auto outType = MemRefType::get(queryType.getShape(), resultElementType_);
  out_ = memref::AllocOp::create(b_, loc_, outType, dynamicSizes, b_.getI64IntegerAttr(64));
  diagonal_ = sub(kvSeq, seq); // key j is visible to query i when j <= i + diagonal
  lastKey_ = sub(kvSeq, c1);
  lastPosition_ = sub(seq, c1);
  if (blocking_.bf16Products())
    buildAmxOperands(batchSize, kvSeq, op_.getHeads() / blocking_.heads);

  // The same loops two or three times, each with its blocks, where the call's sizes choose:
  // few queries take the short calls' blocks, many keys the long calls'.
  AttentionBlocking blocking = blocking_;
  auto choose = [&](Value condition, const AttentionBlocking &then,
                    llvm::function_ref<void()> otherwise) {
    auto ifOp = scf::IfOp::create(b_, loc_, condition, /*withElseRegion=*/true);
    OpBuilder::InsertionGuard guard(b_);
    b_.setInsertionPointToStart(ifOp.thenBlock());
    blocking_ = then;
    buildBlocks(batchSize, seq, kvSeq, kvLens);
    b_.setInsertionPointToStart(ifOp.elseBlock());
    blocking_ = blocking;
    otherwise();
  };
  auto byKeys = [&] {
    if (!longCalls_)
      return buildBlocks(batchSize, seq, kvSeq, kvLens);
    choose(arith::CmpIOp::create(b_, loc_, arith::CmpIPredicate::sge, kvSeq,
                                 index(longCalls_->keys)),
           longCalls_->blocking, [&] { buildBlocks(batchSize, seq, kvSeq, kvLens); });
  };
  auto byPositions = [&] {
    if (!shortCalls_)
      return byKeys();
    choose(arith::CmpIOp::create(b_, loc_, arith::CmpIPredicate::sle, seq,
                                 index(shortCalls_->positions)),
           shortCalls_->blocking, byKeys);
  };
  // Decode steps (few positions against a cache) take the split-cache nest.
  int64_t staticSeq = queryType.getDimSize(1);
  if (!decode_)
    byPositions();
  else if (!ShapedType::isDynamic(staticSeq))
    staticSeq <= decode_->positions ? buildDecode(batchSize, seq) : byPositions();
  else
    ifThenElse(arith::CmpIOp::create(b_, loc_, arith::CmpIPredicate::sle, seq,
                                     index(decode_->positions)),
               [&] { buildDecode(batchSize, seq); }, byPositions);
  return bufferization::ToTensorOp::create(b_, loc_, op_.getResult().getType(), out_,
                                           /*restrict=*/true,
                                           /*writable=*/true);
}

void AttentionLowering::buildBlocks(Value batchSize, Value seq, Value kvSeq, Value kvLens) {
  int64_t queryBlock = blocking_.queryBlock, keyBlock = blocking_.keyBlock;
  Value c0 = index(0), c1 = index(1), dh = index(headDim_);
  Value negInf = f32(-std::numeric_limits<double>::infinity());
  Value zero = f32(0);
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
  Value group = group_ = parallel.getInductionVars()[1];
  i0_ = mul(parallel.getInductionVars()[2], positions);
  auto scratch = [&](ArrayRef<int64_t> shape, Type element) {
    return memref::AllocaOp::create(b_, loc_, MemRefType::get(shape, element), ValueRange{},
                                    b_.getI64IntegerAttr(64));
  };
  if (!blocking_.bf16Products())
    queryT_ = scratch({headDim_, queryBlock}, f32_);
  scores_ = scratch({keyBlock, queryBlock}, f32_);
  acc_ = scratch({queryBlock, headDim_}, f32_);
  alpha_ = scratch({queryBlock}, f32_);
  if (blocking_.bf16Products()) {
    // AMX's scores reduce over the head in whole steps: its queries' rows are padded.
    Type bf16 = b_.getBF16Type();
    queryPairs_ = scratch({amxPaddedHead(headDim_) / 2, 2 * queryBlock}, bf16);
    probabilityPairs_ = scratch({keyBlock / 2, 2 * queryBlock}, bf16);
    accT_ = scratch({headDim_, queryBlock}, f32_);
  }

  Value kvLen = kvSeq;
  if (kvLens) {
    // The entry point has checked 0 <= kv_lens[b] <= Skv.
    Value len = memref::LoadOp::create(b_, loc_, kvLens, batch_);
    kvLen = arith::IndexCastOp::create(b_, loc_, b_.getIndexType(), len);
  }
  if (cacheLen_) {
    // The block's rows have positions cache_len[b] + i, and see the cache's first
    // cache_len[b] + S rows (the entry point has checked that they are in it); no row past
    // them is read, not even by a partial tile.
    Value past = arith::IndexCastOp::create(b_, loc_, b_.getIndexType(),
                                            memref::LoadOp::create(b_, loc_, cacheLen_, batch_));
    diagonal_ = past;
    kvLen = add(past, seq);
    lastKey_ = sub(kvLen, c1);
  }
  qCol_ = mul(group, index(blocking_.heads * headDim_));
  kvCol_ = mul(group, dh);
  // Valid positions of each head in the block.
  Value rows = minIndex(positions, sub(seq, i0_));
  // Rows of the p.v tiles in use: up to the last head's valid rows, in whole tiles.
  Value tile = index(blocking_.queryTile);
  Value lastRow = add(index((blocking_.heads - 1) * blocking_.positions), rows);
  Value rowsInUse = mul(arith::CeilDivSIOp::create(b_, loc_, lastRow, tile), tile);

  // The softmax's state is carried as the block's vectors of queries, one by one: a block of
  // 48 queries is six ymm registers, where one 48-lane vector would not be legal for LLVM.
  int64_t blockVectors = queryBlock / blocking_.lanes;
  zeros_ = splat(laneVector_, zero);
  negInfs_ = splat(laneVector_, negInf);

  buildQueryTranspose(rows);
  // A thread runs the iterations of its share in order (the runtime's pool), so the next one
  // is mostly this one's successor. Its query rows and this block's output rows are fetched
  // (where the schedule asks): they would otherwise be misses waited on one by one, in the
  // transpose and the final write. The f32 products spread the fetches over the first key
  // block's p.v tiles, into L1; the bf16 products, whose p.v tiles are not per query row,
  // fetch them here, into L2, where the block's own operands do not evict them.
  locateNextBlock(group, groups, batchSize, seq);
  if (blocking_.bf16Products() && blocking_.prefetchNextBlock)
    forLoop(c0, rowsInUse, tile,
            [&](Value rowTile) { buildRowPrefetches(rowTile, /*queryLocality=*/2); });
  if (readsKeysInPlace() && blocking_.prefetchNextBlock)
    buildKeyPrefetches(nextBatch_, c0, minIndex(index(blocking_.keyBlock), kvSeq), nextKvCol_);
  if (blocking_.bf16Products())
    forLoop(c0, dh, c1, [&](Value d) {
      for (int64_t v = 0; v < blockVectors; ++v)
        storeVector(zeros_, accT_, {d, vectorOffset(v)});
    });
  else
    forLoop(c0, index(queryBlock), c1, [&](Value r) {
      storeVector(splat(headVector_, zero), acc_, {r, c0});
    });

  // Keys past the block's last row's limit are masked for every row of the block, and keys
  // before its first row's window: those key blocks are never visited, so a windowed layer's
  // cost grows with S x W. The first block visited starts on a whole key block (the bf16
  // products' layouts are in whole blocks) and is masked below the window.
  Value blockEnd = kvLen;
  if (op_.getCausal())
    blockEnd = minIndex(kvLen, maxIndex(c0, add(add(i0_, rows), diagonal_)));
  Value blockStart = c0, windowStart;
  if (window_) {
    Value firstKey = maxIndex(c0, sub(add(i0_, diagonal_), index(window_ - 1)));
    blockStart = mul(arith::DivSIOp::create(b_, loc_, firstKey, index(keyBlock)), index(keyBlock));
    // The first key the block's last row sees: blocks starting before it need the mask.
    windowStart = sub(add(add(i0_, sub(rows, c1)), diagonal_), index(window_ - 1));
  }
  if (sinks_) {
    // Each row's sink logit, in the units of the softmax's state (log2 e joins it, and the
    // bf16 products' unscaled scores divide by the scale).
    sinkRows_ = scratch({queryBlock}, f32_);
    double units = unscaledScores() ? 1 / op_.getScale().convertToDouble() : kLog2E;
    Value firstHead = mul(group, index(blocking_.heads));
    forLoop(c0, index(queryBlock), c1, [&](Value r) {
      Value head = minIndex(arith::DivUIOp::create(b_, loc_, r, positions),
                            index(blocking_.heads - 1));
      Value sink = loadScalar(sinks_, ValueRange{add(firstHead, head)});
      memref::StoreOp::create(b_, loc_, arith::MulFOp::create(b_, loc_, sink, f32(units)),
                              sinkRows_, r);
    });
  }

  SmallVector<Value> initial(blockVectors, negInfs_);
  initial.append(blockVectors, zeros_);
  SmallVector<Value> state =
      forLoop(blockStart, blockEnd, index(keyBlock), initial, [&](Value j0, ValueRange carried) {
        ValueRange oldMax = carried.take_front(blockVectors);
        ValueRange oldSum = carried.drop_front(blockVectors);
        Value cols = minIndex(index(keyBlock), sub(blockEnd, j0));
        // Only blocks past the diagonal of the block's first row, or before the window of its
        // last, need masks.
        Value needsMask;
        if (op_.getCausal())
          needsMask = arith::CmpIOp::create(b_, loc_, arith::CmpIPredicate::sgt, add(j0, cols),
                                            add(add(i0_, diagonal_), c1));
        if (windowStart) {
          Value belowWindow =
              arith::CmpIOp::create(b_, loc_, arith::CmpIPredicate::slt, j0, windowStart);
          needsMask =
              needsMask ? arith::OrIOp::create(b_, loc_, needsMask, belowWindow) : belowWindow;
        }
        if (!blocking_.bf16Products()) {
          buildScores(j0, cols, needsMask);
          SmallVector<Value> next = buildSoftmax(cols, oldMax, oldSum);
          buildValueUpdate(j0, cols, rowsInUse);
          return next;
        }
        if (readsKeysInPlace() && blocking_.keyPrefetchDistance > 0) {
          Value next = add(j0, index(keyBlock));
          buildKeyPrefetches(batch_, next, minIndex(add(next, index(keyBlock)), blockEnd), kvCol_);
        }
        buildAmxScores(j0, cols);
        if (op_.getSoftcap())
          capScores(cols);
        if (needsMask)
          ifThen(needsMask, [&] { maskScores(j0, cols); });
        SmallVector<Value> next = buildSoftmax(cols, oldMax, oldSum);
        buildAmxValueUpdate(j0, cols);
        return next;
      });

  if (blocking_.bf16Products())
    transposeAccumulators();
  SmallVector<Value> sums(ValueRange(state).drop_front(blockVectors));
  if (sinks_)
    addSinks(ValueRange(state).take_front(blockVectors), sums);
  buildOutput(rows, sums);
}

namespace {

struct ConvertMhaAttentionToLoopsPass
    : impl::ConvertMhaAttentionToLoopsBase<ConvertMhaAttentionToLoopsPass> {
  using Base::Base;

  /// What computes the products, from the options.
  AttentionProducts products() {
    if (amx)
      return emulateAmx ? AttentionProducts::AmxInVectors : AttentionProducts::AmxTiles;
    return dot ? AttentionProducts::Dot : AttentionProducts::F32;
  }

  /// The blocking of `op`. The tile options are upper bounds: each op takes the largest
  /// values up to them that make whole tiles of its block (mhac's schedule validator has
  /// already made them exact for the layer it compiles; mhac-opt may run one set of options
  /// over functions with different blocks).
  /// `seq` bounds the positions of a block: the op's static sequence, or a short call's.
  AttentionBlocking blockingOf(mha::AttentionOp op, int64_t growth, int64_t seq) {
    AttentionBlock block = attentionBlock(op.getGroupSize(), seq, growth * queryBlock,
                                          growth * groupedQueryBlock, vectorLanes);
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
        transposeInTiles,
        keyPrefetchDistance,
        prefetchValues,
        prefetchNextBlock,
        products()};
  }

  void runOnOperation() override {
    if (amx && dot) {
      getOperation().emitError("amx and dot are two ways of computing the same products: "
                               "choose one");
      return signalPassFailure();
    }
    if (queryBlock < 1 || groupedQueryBlock < 1 || keyBlock < 1 || vectorLanes < 1 ||
        queryBlock % vectorLanes != 0 || groupedQueryBlock % vectorLanes != 0 ||
        scoreTileKeys < 1 || scoreTileVectors < 1 || valueTileRows < 1 || valueTileVectors < 1 ||
        keyPrefetchDistance < 0 || longKeys < 0 || longBlockGrowth < 1) {
      getOperation().emitError("query-block and grouped-query-block must be positive multiples "
                               "of vector-lanes; key-block, vector-lanes, long-block-growth and "
                               "the tiles' rows, keys and vectors positive; long-keys and "
                               "key-prefetch-distance not negative");
      return signalPassFailure();
    }
    if (decodePositions < 0 || decodeChunk < 1 || decodeKeyBlock < 1 ||
        decodeKeyBlock % vectorLanes != 0 || !llvm::isPowerOf2_64(vectorLanes)) {
      getOperation().emitError("decode-positions must not be negative, decode-chunk must be "
                               "positive and decode-key-block a positive multiple of "
                               "vector-lanes, a power of two");
      return signalPassFailure();
    }
    SmallVector<mha::AttentionOp> ops;
    getOperation().walk([&](mha::AttentionOp op) { ops.push_back(op); });
    for (mha::AttentionOp op : ops) {
      SmallVector<AttentionBlocking, 2> blockings;
      // A cache's length is its capacity, not a call's keys: its calls take one blocking.
      int64_t keys = op.readsCache() ? ShapedType::kDynamic
                                     : cast<ShapedType>(op.getKey().getType()).getDimSize(1);
      int64_t seq = op.getQuery().getType().getDimSize(1);
      for (int64_t growth :
           blockGrowths(keys, op.readsCache() ? 0 : longKeys, longBlockGrowth))
        blockings.push_back(blockingOf(op, growth, seq));
      // Calls of at most one vector of query rows (lanes / G positions, at least one), where
      // the sequence is known at run time only (a static one sizes its blocks already) and
      // the blocks would be taller.
      std::optional<ShortCallBlocking> shortCalls;
      int64_t shortPositions = std::max<int64_t>(1, vectorLanes / op.getGroupSize());
      if (ShapedType::isDynamic(seq)) {
        AttentionBlocking shortBlocking = blockingOf(op, 1, shortPositions);
        if (shortBlocking.queryBlock < blockings[0].queryBlock)
          shortCalls = ShortCallBlocking{shortBlocking.positions, shortBlocking};
      }
      SmallVector<AttentionBlocking, 3> checked(blockings.begin(), blockings.end());
      if (shortCalls)
        checked.push_back(shortCalls->blocking);
      for (const AttentionBlocking &blocking : checked) {
        if (blocking.bf16Products() && op.readsCache()) {
          op.emitError("attention's bf16 products lay out a call's keys and values, and do not "
                       "read caches: use f32 products (attention_compute = f32)");
          return signalPassFailure();
        }
        int64_t headStep = bf16ProductsHeadStep(blocking.products != AttentionProducts::Dot);
        if (blocking.bf16Products() &&
            (vectorLanes != kAmxTileRows || blocking.queryBlock % kAmxTileRows != 0 ||
             blocking.keyBlock % (2 * kAmxTileRows) != 0 || op.getHeadDim() % headStep != 0)) {
          op.emitError("attention's bf16 products need 16 vector lanes, query blocks of whole "
                       "16-row tiles, key blocks of whole steps of 32 keys and heads of whole "
                       "16-row tiles (any head with dot)");
          return signalPassFailure();
        }
      }
      // A short static sequence fills no taller block than it already does.
      std::optional<LongCallBlocking> longCalls;
      if (blockings.size() == 2 && blockings[1].queryBlock > blockings[0].queryBlock)
        longCalls = LongCallBlocking{longKeys, blockings[1]};
      // Decode steps against a cache (the f32 products: the only ones that read caches).
      std::optional<DecodeBlocking> decode;
      // A static sequence bounds a task's rows.
      if (op.readsCache() && decodePositions > 0)
        decode = DecodeBlocking{ShapedType::isDynamic(seq) ? decodePositions
                                                           : std::min<int64_t>(decodePositions, seq),
                                decodeChunk,
                                decodeKeyBlock,
                                valueTileRows,
                                valueTileVectors,
                                vectorLanes};
      OpBuilder builder(op);
      Value result =
          AttentionLowering(op, builder, blockings[0], longCalls, shortCalls, decode).build();
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
