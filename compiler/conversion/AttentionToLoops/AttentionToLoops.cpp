//===- AttentionToLoops.cpp - mha.attention to online-softmax loops -------===//
//
// Part of mhac.
//
// The loop nest, for each attention op (B batches, H heads, G = H / Hkv heads per kv head):
//
//   parallel b < B, h < H, i0 < S step QB:              one block of query rows
//     acc[QB][Dh] = 0, m[QB] = -inf, l[QB] = 0
//     end = min(kvLen(b), causal limit of the block's last row)
//     for j0 < end step KB:                             one block of keys
//       for each row i of the block with valid keys in [j0, j0 + KB):
//         s[c] = scale * q[b,i,h,:] . k[b,j0+c,h/G,:]    (valid keys only)
//         m' = max(m[i], max_c s[c]);  p[c] = exp(s[c] - m');  alpha = exp(m[i] - m')
//         l[i] = alpha * l[i] + sum_c p[c];  acc[i,:] = alpha * acc[i,:] + sum_c p[c]
//         v[b,j0+c,h/G,:]
//     out[b,i,h,:] = acc[i,:] / l[i]  (0 for a row without any valid key)
//
// Scores are only ever compared with and subtracted from their running maximum, so |s| up to
// 1e4 cannot overflow, and a fully masked row keeps l = 0 and writes 0.
//
//===----------------------------------------------------------------------===//

#include "compiler/conversion/Passes.h"
#include "dialects/mha/IR/MhaOps.h"

#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

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

/// Builds the loop nest of one mha.attention.
class AttentionLowering {
public:
  AttentionLowering(mha::AttentionOp op, OpBuilder &b, int64_t queryBlock, int64_t keyBlock)
      : op_(op), b_(b), loc_(op.getLoc()), queryBlock_(queryBlock), keyBlock_(keyBlock),
        headDim_(op.getHeadDim()), f32_(b.getF32Type()),
        elementType_(op.getQuery().getType().getElementType()) {}

  /// Emits the loops and returns the tensor holding the result.
  Value build();

private:
  Value index(int64_t value) { return arith::ConstantIndexOp::create(b_, loc_, value); }
  Value f32(double value) {
    return arith::ConstantOp::create(b_, loc_, b_.getF32FloatAttr(static_cast<float>(value)));
  }
  Value minIndex(Value a, Value c) { return arith::MinSIOp::create(b_, loc_, a, c); }
  Value maxIndex(Value a, Value c) { return arith::MaxSIOp::create(b_, loc_, a, c); }
  Value add(Value a, Value c) { return arith::AddIOp::create(b_, loc_, a, c); }
  Value sub(Value a, Value c) { return arith::SubIOp::create(b_, loc_, a, c); }
  Value mul(Value a, Value c) { return arith::MulIOp::create(b_, loc_, a, c); }
  /// Reads head_dim contiguous elements starting at `indices` as an f32 vector.
  Value readHead(Value memref, ValueRange indices) {
    auto type = VectorType::get({headDim_}, elementType_);
    Value padding = arith::ConstantOp::create(b_, loc_, b_.getZeroAttr(elementType_));
    Value vector = vector::TransferReadOp::create(b_, loc_, type, memref, indices, padding,
                                                  ArrayRef<bool>{true});
    if (elementType_ == f32_)
      return vector;
    return arith::ExtFOp::create(b_, loc_, VectorType::get({headDim_}, f32_), vector);
  }
  /// Emits `for (iv = lb; iv < ub; iv += step) body(iv)`.
  void forLoop(Value lb, Value ub, Value step, function_ref<void(Value)> body) {
    auto loop = scf::ForOp::create(b_, loc_, lb, ub, step);
    OpBuilder::InsertionGuard guard(b_);
    b_.setInsertionPointToStart(loop.getBody());
    body(loop.getInductionVar());
  }

  /// Processes key block [j0, j0 + cols) for query row `row` of the block (row index `i`).
  void buildRowUpdate(Value batch, Value i, Value row, Value qCol, Value kvCol, Value j0,
                      Value validCols);

  mha::AttentionOp op_;
  OpBuilder &b_;
  Location loc_;
  int64_t queryBlock_, keyBlock_, headDim_;
  Type f32_, elementType_;
  Value query_, key_, value_;
  Value acc_, rowMax_, rowSum_, scores_;
};

void AttentionLowering::buildRowUpdate(Value batch, Value i, Value row, Value qCol, Value kvCol,
                                       Value j0, Value validCols) {
  Value c0 = index(0), c1 = index(1);
  Value negInf = f32(-std::numeric_limits<double>::infinity());
  Value scale = arith::ConstantOp::create(b_, loc_, op_.getScaleAttr());
  auto headType = VectorType::get({headDim_}, f32_);
  auto blockType = VectorType::get({keyBlock_}, f32_);
  auto fast = arith::FastMathFlagsAttr::get(b_.getContext(), arith::FastMathFlags::reassoc |
                                                                 arith::FastMathFlags::contract);

  // The query row, as one vector over the head.
  Value query = readHead(query_, {batch, i, qCol});

  // Scores of the valid keys: a vector product with each key row, summed in any order.
  forLoop(c0, validCols, c1, [&](Value c) {
    Value key = readHead(key_, {batch, add(j0, c), kvCol});
    Value products = arith::MulFOp::create(b_, loc_, query, key);
    Value dot = vector::ReductionOp::create(b_, loc_, vector::CombiningKind::ADD, products, Value(),
                                            fast.getValue());
    memref::StoreOp::create(b_, loc_, arith::MulFOp::create(b_, loc_, dot, scale), scores_, c);
  });

  // The block of scores as one vector; lanes past the valid keys read -inf, which the maximum
  // ignores and exp turns into 0.
  Value laneMask = vector::CreateMaskOp::create(
      b_, loc_, VectorType::get({keyBlock_}, b_.getI1Type()), ValueRange{validCols});
  Value scores = vector::TransferReadOp::create(b_, loc_, blockType, scores_, ValueRange{c0},
                                                b_.getMultiDimIdentityMap(1), negInf, laneMask,
                                                b_.getBoolArrayAttr({true}));
  Value blockMax = vector::ReductionOp::create(b_, loc_, vector::CombiningKind::MAXIMUMF, scores);

  // New running maximum; alpha rescales what was accumulated under the old one.
  Value oldMax = memref::LoadOp::create(b_, loc_, rowMax_, row);
  Value newMax = arith::MaximumFOp::create(b_, loc_, oldMax, blockMax);
  Value alpha = math::ExpOp::create(b_, loc_, arith::SubFOp::create(b_, loc_, oldMax, newMax));
  memref::StoreOp::create(b_, loc_, newMax, rowMax_, row);

  // p = exp(s - max), kept in place of the scores; l = alpha * l + sum(p).
  Value shifted = arith::SubFOp::create(b_, loc_, scores,
                                        vector::BroadcastOp::create(b_, loc_, blockType, newMax));
  Value probabilities = math::ExpOp::create(b_, loc_, shifted);
  vector::TransferWriteOp::create(b_, loc_, probabilities, scores_, ValueRange{c0},
                                  ArrayRef<bool>{true});
  Value blockSum = vector::ReductionOp::create(b_, loc_, vector::CombiningKind::ADD, probabilities,
                                               Value(), fast.getValue());
  Value oldSum = memref::LoadOp::create(b_, loc_, rowSum_, row);
  memref::StoreOp::create(b_, loc_, math::FmaOp::create(b_, loc_, alpha, oldSum, blockSum), rowSum_,
                          row);

  // acc = alpha * acc + sum_c p[c] * v[j0 + c], the accumulator row carried as a vector.
  Value accRow = vector::TransferReadOp::create(b_, loc_, headType, acc_, ValueRange{row, c0},
                                                f32(0), ArrayRef<bool>{true});
  accRow = arith::MulFOp::create(b_, loc_, accRow,
                                 vector::BroadcastOp::create(b_, loc_, headType, alpha));
  auto update = scf::ForOp::create(b_, loc_, c0, validCols, c1, ValueRange{accRow});
  {
    OpBuilder::InsertionGuard guard(b_);
    b_.setInsertionPointToStart(update.getBody());
    Value c = update.getInductionVar();
    Value p = memref::LoadOp::create(b_, loc_, scores_, c);
    Value value = readHead(value_, {batch, add(j0, c), kvCol});
    Value next = vector::FMAOp::create(b_, loc_, vector::BroadcastOp::create(b_, loc_, headType, p),
                                       value, update.getRegionIterArgs()[0]);
    scf::YieldOp::create(b_, loc_, next);
  }
  vector::TransferWriteOp::create(b_, loc_, update.getResult(0), acc_, ValueRange{row, c0},
                                  ArrayRef<bool>{true});
}

Value AttentionLowering::build() {
  auto queryType = op_.getQuery().getType();
  auto keyType = op_.getKey().getType();
  query_ = bufferization::ToBufferOp::create(b_, loc_, anyLayoutMemRef(queryType), op_.getQuery(),
                                             /*read_only=*/true);
  key_ = bufferization::ToBufferOp::create(b_, loc_, anyLayoutMemRef(keyType), op_.getKey(),
                                           /*read_only=*/true);
  value_ = bufferization::ToBufferOp::create(b_, loc_, anyLayoutMemRef(keyType), op_.getValue(),
                                             /*read_only=*/true);
  Value kvLens;
  if (Value lens = op_.getKvLens())
    kvLens = bufferization::ToBufferOp::create(
        b_, loc_, anyLayoutMemRef(cast<RankedTensorType>(lens.getType())), lens,
        /*read_only=*/true);

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
  Value out = memref::AllocOp::create(b_, loc_, outType, dynamicSizes, b_.getI64IntegerAttr(64));
  Value negInf = f32(-std::numeric_limits<double>::infinity());
  Value zero = f32(0);
  Value groupSize = index(op_.getGroupSize());
  Value diagonal = sub(kvSeq, seq); // key j is visible to query i when j <= i + diagonal
  Value queryBlocks = arith::CeilDivSIOp::create(b_, loc_, seq, index(queryBlock_));

  // One parallel iteration per (batch, head, query block): independent, and each with its own
  // scratch, so the runtime's threads can share them out.
  auto parallel = scf::ParallelOp::create(b_, loc_, ValueRange{c0, c0, c0},
                                          ValueRange{batchSize, index(op_.getHeads()), queryBlocks},
                                          ValueRange{c1, c1, c1});
  OpBuilder::InsertionGuard guard(b_);
  b_.setInsertionPointToStart(parallel.getBody());
  Value batch = parallel.getInductionVars()[0];
  Value head = parallel.getInductionVars()[1];
  Value i0 = mul(parallel.getInductionVars()[2], index(queryBlock_));
  acc_ = memref::AllocaOp::create(b_, loc_, MemRefType::get({queryBlock_, headDim_}, f32_));
  rowMax_ = memref::AllocaOp::create(b_, loc_, MemRefType::get({queryBlock_}, f32_));
  rowSum_ = memref::AllocaOp::create(b_, loc_, MemRefType::get({queryBlock_}, f32_));
  scores_ = memref::AllocaOp::create(b_, loc_, MemRefType::get({keyBlock_}, f32_));

  Value kvLen = kvSeq;
  if (kvLens) {
    // The entry point has checked 0 <= kv_lens[b] <= Skv.
    Value len = memref::LoadOp::create(b_, loc_, kvLens, batch);
    kvLen = arith::IndexCastOp::create(b_, loc_, b_.getIndexType(), len);
  }
  Value qCol = mul(head, dh);
  Value kvCol = mul(arith::DivUIOp::create(b_, loc_, head, groupSize), dh);
  Value rows = minIndex(index(queryBlock_), sub(seq, i0));
  forLoop(c0, rows, c1, [&](Value r) {
    memref::StoreOp::create(b_, loc_, negInf, rowMax_, r);
    memref::StoreOp::create(b_, loc_, zero, rowSum_, r);
    forLoop(c0, dh, c1, [&](Value d) {
      memref::StoreOp::create(b_, loc_, zero, acc_, ValueRange{r, d});
    });
  });

  // Keys past the block's last row's limit are masked for every row of the block.
  Value blockEnd = kvLen;
  if (op_.getCausal())
    blockEnd = minIndex(kvLen, maxIndex(c0, add(add(i0, rows), diagonal)));

  forLoop(c0, blockEnd, index(keyBlock_), [&](Value j0) {
    Value cols = minIndex(index(keyBlock_), sub(blockEnd, j0));
    forLoop(c0, rows, c1, [&](Value r) {
      Value i = add(i0, r);
      Value validCols = cols;
      if (op_.getCausal()) {
        Value rowEnd = add(add(i, diagonal), c1);
        validCols = maxIndex(c0, minIndex(cols, sub(rowEnd, j0)));
      }
      Value any = arith::CmpIOp::create(b_, loc_, arith::CmpIPredicate::sgt, validCols, c0);
      auto ifOp = scf::IfOp::create(b_, loc_, any, /*withElseRegion=*/false);
      OpBuilder::InsertionGuard inner(b_);
      b_.setInsertionPointToStart(ifOp.thenBlock());
      buildRowUpdate(batch, i, r, qCol, kvCol, j0, validCols);
    });
  });

  // out = acc / l, or 0 for a row that saw no valid key.
  forLoop(c0, rows, c1, [&](Value r) {
    Value sum = memref::LoadOp::create(b_, loc_, rowSum_, r);
    Value positive = arith::CmpFOp::create(b_, loc_, arith::CmpFPredicate::OGT, sum, zero);
    Value inverse = arith::SelectOp::create(b_, loc_, positive,
                                            arith::DivFOp::create(b_, loc_, f32(1), sum), zero);
    Value i = add(i0, r);
    forLoop(c0, dh, c1, [&](Value d) {
      Value a = memref::LoadOp::create(b_, loc_, acc_, ValueRange{r, d});
      Value result = arith::MulFOp::create(b_, loc_, a, inverse);
      if (elementType_ != f32_)
        result = arith::TruncFOp::create(b_, loc_, elementType_, result);
      memref::StoreOp::create(b_, loc_, result, out, ValueRange{batch, i, add(qCol, d)});
    });
  });

  b_.setInsertionPointAfter(parallel);
  return bufferization::ToTensorOp::create(b_, loc_, queryType, out, /*restrict=*/true,
                                           /*writable=*/true);
}

struct ConvertMhaAttentionToLoopsPass
    : impl::ConvertMhaAttentionToLoopsBase<ConvertMhaAttentionToLoopsPass> {
  using Base::Base;

  void runOnOperation() override {
    if (queryBlock < 1 || keyBlock < 1) {
      getOperation().emitError("query-block and key-block must be positive");
      return signalPassFailure();
    }
    SmallVector<mha::AttentionOp> ops;
    getOperation().walk([&](mha::AttentionOp op) { ops.push_back(op); });
    for (mha::AttentionOp op : ops) {
      OpBuilder builder(op);
      Value result = AttentionLowering(op, builder, queryBlock, keyBlock).build();
      op.getResult().replaceAllUsesWith(result);
      op.erase();
    }
    if (ops.empty())
      return;
    // exp as a polynomial in vector registers rather than one libm call per lane.
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(
        patterns, [](StringRef name) { return name == math::ExpOp::getOperationName(); });
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
} // namespace mhac
