//===- Softmax.cpp - the online softmax and the output --------------------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "compiler/conversion/AttentionToLoops/AttentionLowering.h"

namespace mhac {

/// Minimax coefficients of 2^f on [-1/2, 1/2], highest degree first: degree 5 (the f32
/// kernels); degree 3 (relative error 7.5e-5) for probabilities rounded to bf16 (relative
/// steps of 3.9e-3) right after.
static constexpr double kPowerOfTwo[] = {1.327646663e-3, 9.675540961e-3, 5.550713465e-2,
                                         2.402212024e-1, 6.931469440e-1, 1.000000119};
static constexpr double kPowerOfTwoForBf16[] = {5.517163804e-2, 2.42611144e-1, 6.932609933e-1,
                                                9.999280724e-1};

Value AttentionLowering::exp2(Value x, bool forBf16) {
  auto type = cast<VectorType>(x.getType());
  auto bitsType = VectorType::get(type.getShape(), b_.getI32Type());
  auto constant = [&](double value) { return splat(type, f32(value)); };
  x = arith::MaximumFOp::create(b_, loc_, x, constant(-127));
  // Adding 1.5 * 2^23 + 127 rounds x to an integer, held with its bias in the low mantissa bits.
  Value magic = constant(12582912.0 + 127.0);
  Value biased = arith::AddFOp::create(b_, loc_, x, magic);
  Value n = arith::SubFOp::create(b_, loc_, biased, magic);
  Value f = arith::SubFOp::create(b_, loc_, x, n);
  ArrayRef<double> coefficients = forBf16 ? ArrayRef(kPowerOfTwoForBf16) : ArrayRef(kPowerOfTwo);
  Value p = constant(coefficients.front());
  for (double c : coefficients.drop_front())
    p = fma(p, f, constant(c));
  Value bits = arith::BitcastOp::create(b_, loc_, bitsType, biased);
  Value shift = arith::ConstantOp::create(b_, loc_, DenseIntElementsAttr::get(bitsType, 23));
  Value scale =
      arith::BitcastOp::create(b_, loc_, type, arith::ShLIOp::create(b_, loc_, bits, shift));
  return arith::MulFOp::create(b_, loc_, p, scale);
}

SmallVector<Value> AttentionLowering::buildSoftmax(Value cols, ValueRange oldMax,
                                                   ValueRange oldSum) {
  Value c0 = index(0), c1 = index(1);
  // The state is carried as the block's vectors of queries, one by one.
  int64_t blockVectors = blocking_.queryBlock / blocking_.lanes;
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
    Value isEmpty = arith::CmpFOp::create(b_, loc_, arith::CmpFPredicate::OEQ, newMax[v], negInfs_);
    shift.push_back(arith::SelectOp::create(b_, loc_, isEmpty, zeros_, newMax[v]));
    Value exponent = arith::SubFOp::create(b_, loc_, oldMax[v], shift[v]);
    if (unscaledScores())
      exponent = arith::MulFOp::create(b_, loc_, exponent, splat(laneVector_, f32(scoreScale())));
    alpha.push_back(exp2(exponent));
    storeVector(alpha[v], alpha_, {vectorOffset(v)});
  }

  // pT = 2^(sT - m'), in place; l = alpha * l + sum_j pT[j]. One vector of the block at a
  // time: the eight constants of exp2 and one running sum stay in registers, where six
  // sums and six maxima beside them spilled.
  SmallVector<Value> blockSum;
  for (int64_t v = 0; v < blockVectors; ++v) {
    if (blocking_.bf16Products()) {
      blockSum.push_back(buildProbabilityPairs(v, cols, shift[v]));
      continue;
    }
    blockSum.push_back(forLoop(c0, cols, c1, {zeros_}, [&](Value j, ValueRange partial) {
      Value scores = loadVector(laneVector_, scores_, {j, vectorOffset(v)});
      Value p = exp2(arith::SubFOp::create(b_, loc_, scores, shift[v]));
      storeVector(p, scores_, {j, vectorOffset(v)});
      return SmallVector<Value>{arith::AddFOp::create(b_, loc_, partial[0], p)};
    })[0]);
  }
  SmallVector<Value> next = newMax;
  for (int64_t v = 0; v < blockVectors; ++v)
    next.push_back(fma(alpha[v], oldSum[v], blockSum[v]));
  return next;
}

void AttentionLowering::addSinks(ValueRange maxes, SmallVectorImpl<Value> &sums) {
  // A row that saw no key has the maximum -inf, and its sum becomes 2^sink: its output is 0
  // either way (no value was accumulated). The exponent is clamped at 127, where 2^x stays
  // finite: a sink that large makes the row's probabilities vanish, as they do in float64.
  for (size_t v = 0; v < maxes.size(); ++v) {
    Value isEmpty = arith::CmpFOp::create(b_, loc_, arith::CmpFPredicate::OEQ, maxes[v], negInfs_);
    Value shift = arith::SelectOp::create(b_, loc_, isEmpty, zeros_, maxes[v]);
    Value sink = loadVector(laneVector_, sinkRows_, {vectorOffset(static_cast<int64_t>(v))});
    Value exponent = arith::SubFOp::create(b_, loc_, sink, shift);
    if (unscaledScores())
      exponent = arith::MulFOp::create(b_, loc_, exponent, splat(laneVector_, f32(scoreScale())));
    exponent = arith::MinimumFOp::create(b_, loc_, exponent, splat(laneVector_, f32(127)));
    sums[v] = arith::AddFOp::create(b_, loc_, sums[v], exp2(exponent));
  }
}

void AttentionLowering::buildOutput(Value rows, ValueRange sums) {
  Value c0 = index(0);
  int64_t blockVectors = blocking_.queryBlock / blocking_.lanes;
  // out = o / l, or 0 for a row that saw no valid key.
  Value ones = splat(laneVector_, f32(1));
  for (int64_t v = 0; v < blockVectors; ++v) {
    Value positive = arith::CmpFOp::create(b_, loc_, arith::CmpFPredicate::OGT, sums[v], zeros_);
    Value inverse = arith::SelectOp::create(b_, loc_, positive,
                                            arith::DivFOp::create(b_, loc_, ones, sums[v]), zeros_);
    storeVector(inverse, alpha_, {vectorOffset(v)});
  }
  auto outVector = VectorType::get({headDim_}, resultElementType_);
  forEachRow(rows, [&](Value r, Value position, Value column) {
    Value scaleRow = splat(headVector_, memref::LoadOp::create(b_, loc_, alpha_, r));
    Value result =
        arith::MulFOp::create(b_, loc_, loadVector(headVector_, acc_, {r, c0}), scaleRow);
    if (resultElementType_ != f32_)
      result = arith::TruncFOp::create(b_, loc_, outVector, result);
    vector::TransferWriteOp::create(b_, loc_, result, out_,
                                    ValueRange{batch_, add(i0_, position), column},
                                    ArrayRef<bool>{true});
  });
}

} // namespace mhac
