//===- HeadsToLoops.cpp - q/k norm, rotary embeddings and cache writes ----===//
//
// Part of mhac.
//
// The chains of a decoder layer's per-head operations, each one loop nest over the rows of the
// projection it starts from:
//
//   parallel b < B, i < S:                                    one row of the projection
//     p = i (+ positions[b])                                  the row's position
//     C[d], Sn[d] = cos, +-sin(p * inv_freq[pair(d)]) * f   (rope: one table for every head)
//     for each head h:
//       t = x[b, i, h]                                        (f32)
//       t = t / sqrt(mean(t^2) + eps) * w                     (rms_norm)
//       t[d] = t[d] C[d] + t[partner(d)] Sn[d], d < dim       (rope)
//       dest[b, i (or positions[b] + i), h] = t               (the result, or the cache's row)
//
// The table is laid out per feature, so that a head is rotated with whole vectors: for `half`
// C = [cos, cos] and Sn = [-sin, sin] over the two halves, the partner of a vector the one
// dim/2 away; for `interleaved` C = [c0, c0, c1, c1, ...], Sn = [-s0, s0, -s1, s1, ...], the
// partner the same vector with its pairs swapped (one shuffle).
//
//===----------------------------------------------------------------------===//

#include "compiler/conversion/Passes.h"
#include "dialects/mha/IR/MhaOps.h"
#include "runtime/reference/Rope.h"

#include "mlir/IR/BuiltinAttributes.h"

#include <numeric>

namespace mhac {
#define GEN_PASS_DEF_CONVERTMHAHEADSTOLOOPS
#include "compiler/conversion/Passes.h.inc"
} // namespace mhac

using namespace mlir;

namespace mhac {
namespace {

/// A chain of per-head operations: the rows of `input`, RMS-normalized (norm), rotated (rope),
/// then stored into a fresh tensor that replaces `last`'s result, or into a cache (write).
struct HeadChain {
  mha::RmsNormOp norm;
  mha::RopeOp rope;
  mha::CacheWriteOp write;
  /// The op whose result the chain computes (when it does not end in a cache write).
  Operation *last = nullptr;

  Value input() {
    if (norm)
      return norm.getInput();
    if (rope)
      return rope.getInput();
    return write.getInput();
  }
  int64_t heads() { return norm ? norm.getHeads() : rope ? rope.getHeads() : 0; }
  Operation *first() {
    return norm ? norm.getOperation() : rope ? rope.getOperation() : write.getOperation();
  }
};

/// Whether `value` is read by one op only, of type OpT.
template <typename OpT> OpT soleUser(Value value) {
  if (!value.hasOneUse())
    return {};
  return dyn_cast<OpT>(*value.getUsers().begin());
}

/// The chains of `func`, in program order: each chain's producer (a chain it reads) first.
SmallVector<HeadChain> findChains(func::FuncOp func) {
  SmallVector<HeadChain> chains;
  func.walk([&](Operation *op) {
    HeadChain chain;
    if (auto norm = dyn_cast<mha::RmsNormOp>(op)) {
      // A norm the rope or the cache write alone reads is the start of theirs.
      if (soleUser<mha::RopeOp>(norm.getResult()) || soleUser<mha::CacheWriteOp>(norm.getResult()))
        return;
      chain.norm = norm;
      chain.last = norm;
    } else if (auto rope = dyn_cast<mha::RopeOp>(op)) {
      if (soleUser<mha::CacheWriteOp>(rope.getResult()))
        return;
      chain.rope = rope;
      chain.norm = soleUser<mha::RopeOp>(rope.getInput()) ? rope.getInput().getDefiningOp<mha::RmsNormOp>()
                                                          : mha::RmsNormOp();
      chain.last = rope;
    } else if (auto write = dyn_cast<mha::CacheWriteOp>(op)) {
      chain.write = write;
      Value input = write.getInput();
      if (input.hasOneUse())
        chain.rope = input.getDefiningOp<mha::RopeOp>();
      Value beforeRope = chain.rope ? chain.rope.getInput() : input;
      if (beforeRope.hasOneUse())
        chain.norm = beforeRope.getDefiningOp<mha::RmsNormOp>();
    } else {
      return;
    }
    chains.push_back(chain);
  });
  return chains;
}

/// A memref type any buffer of `tensorType`'s shape can be cast to.
MemRefType anyLayoutMemRef(RankedTensorType tensorType) {
  SmallVector<int64_t> strides(tensorType.getRank(), ShapedType::kDynamic);
  auto layout = StridedLayoutAttr::get(tensorType.getContext(), ShapedType::kDynamic, strides);
  return MemRefType::get(tensorType.getShape(), tensorType.getElementType(), layout);
}

/// The widest power of two up to `lanes` that divides `extent`: the vectors a range of
/// `extent` features is read in, all whole.
int64_t vectorWidth(int64_t extent, int64_t lanes) {
  int64_t width = 1;
  while (width * 2 <= lanes && extent % (width * 2) == 0)
    width *= 2;
  return width;
}

class HeadsLowering {
public:
  HeadsLowering(HeadChain chain, OpBuilder &b, int64_t lanes)
      : chain_(chain), b_(b), loc_(chain.first()->getLoc()), lanes_(lanes), f32_(b.getF32Type()),
        f64_(b.getF64Type()) {}

  /// Emits the loop nest before the chain's last op; returns the chain's result tensor (null
  /// for a cache write).
  Value build();

private:
  Value index(int64_t value) { return arith::ConstantIndexOp::create(b_, loc_, value); }
  Value f32(double value) {
    return arith::ConstantOp::create(b_, loc_, b_.getF32FloatAttr(static_cast<float>(value)));
  }
  Value f64(double value) { return arith::ConstantOp::create(b_, loc_, b_.getF64FloatAttr(value)); }
  Value add(Value x, Value y) { return arith::AddIOp::create(b_, loc_, x, y); }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b_, loc_, x, y); }
  Value fadd(Value x, Value y) { return arith::AddFOp::create(b_, loc_, x, y); }
  Value fsub(Value x, Value y) { return arith::SubFOp::create(b_, loc_, x, y); }
  Value fmul(Value x, Value y) { return arith::MulFOp::create(b_, loc_, x, y); }
  Value splat(VectorType type, Value scalar) {
    return vector::BroadcastOp::create(b_, loc_, type, scalar);
  }
  void forLoop(int64_t lb, int64_t ub, int64_t step, function_ref<void(Value)> body) {
    auto loop = scf::ForOp::create(b_, loc_, index(lb), index(ub), index(step));
    OpBuilder::InsertionGuard guard(b_);
    b_.setInsertionPointToStart(loop.getBody());
    body(loop.getInductionVar());
  }
  Value readOnly(Value tensor) {
    return bufferization::ToBufferOp::create(
        b_, loc_, anyLayoutMemRef(cast<RankedTensorType>(tensor.getType())), tensor,
        /*read_only=*/true);
  }
  /// `width` elements of `memref` from `indices`, as f32.
  Value read(Value memref, ValueRange indices, int64_t width) {
    Type element = cast<MemRefType>(memref.getType()).getElementType();
    Value padding = arith::ConstantOp::create(b_, loc_, b_.getZeroAttr(element));
    Value vector = vector::TransferReadOp::create(b_, loc_, VectorType::get({width}, element),
                                                  memref, indices, padding, ArrayRef<bool>{true});
    if (element == f32_)
      return vector;
    return arith::ExtFOp::create(b_, loc_, VectorType::get({width}, f32_), vector);
  }
  /// Stores the f32 vector `vector` into `memref` at `indices`, rounded to its element type.
  void write(Value vector, Value memref, ValueRange indices) {
    Type element = cast<MemRefType>(memref.getType()).getElementType();
    if (element != f32_)
      vector = arith::TruncFOp::create(
          b_, loc_, VectorType::get(cast<VectorType>(vector.getType()).getShape(), element),
          vector);
    vector::TransferWriteOp::create(b_, loc_, vector, memref, indices, ArrayRef<bool>{true});
  }

  /// cos and sin (f64) of a non-negative f64 angle: reduced by the nearest multiple n of pi/2
  /// (pi/2 in three parts, exact products for n < 2^20: angles up to 1.6 million radians),
  /// then polynomials on [-pi/4, pi/4] (errors below 1e-11), swapped by n mod 4.
  std::pair<Value, Value> cosSin(Value angle);
  /// Fills the rotation table (C and Sn, [dim] f32 each) of `position` (f64).
  void buildTable(Value position, Value frequencies);
  /// Normalizes and rotates head `column` of `inputRow` (indices b, i) into the destination.
  void buildHead(Value input, ValueRange inputRow, Value dest, ValueRange destRow, Value column);

  HeadChain chain_;
  OpBuilder &b_;
  Location loc_;
  int64_t lanes_;
  Type f32_, f64_;
  reference::RopeParameters rope_;
  Value weight_, table_, sines_, head_;
};

std::pair<Value, Value> HeadsLowering::cosSin(Value angle) {
  // Three 33-bit parts of pi/2 (fdlibm's __ieee754_rem_pio2 constants, medium range).
  constexpr double kPio2Part1 = 1.57079632673412561417e+00;
  constexpr double kPio2Part2 = 6.07710050630396597660e-11;
  constexpr double kPio2Part3 = 2.02226624871116645580e-21;
  constexpr double kTwoOverPi = 6.36619772367581382433e-01;
  Type i64 = b_.getI64Type();
  Value n = arith::FPToSIOp::create(b_, loc_, i64, fadd(fmul(angle, f64(kTwoOverPi)), f64(0.5)));
  Value nf = arith::SIToFPOp::create(b_, loc_, f64_, n);
  Value r = fsub(angle, fmul(nf, f64(kPio2Part1)));
  r = fsub(r, fmul(nf, f64(kPio2Part2)));
  r = fsub(r, fmul(nf, f64(kPio2Part3)));
  Value r2 = fmul(r, r);
  // Taylor series to r^11 (sin) and r^12 (cos).
  auto horner = [&](ArrayRef<double> coefficients) {
    Value p = f64(coefficients.back());
    for (double c : llvm::reverse(coefficients.drop_back()))
      p = fadd(fmul(p, r2), f64(c));
    return p;
  };
  Value sinR = fmul(r, horner({1.0, -1.0 / 6, 1.0 / 120, -1.0 / 5040, 1.0 / 362880,
                               -1.0 / 39916800}));
  Value cosR = horner({1.0, -1.0 / 2, 1.0 / 24, -1.0 / 720, 1.0 / 40320, -1.0 / 3628800,
                       1.0 / 479001600});
  // Quadrant q = n mod 4: (cos, sin) = (c, s), (-s, c), (-c, -s), (s, -c).
  Value quadrant = arith::AndIOp::create(b_, loc_, n, arith::ConstantIntOp::create(b_, loc_, i64, 3));
  auto is = [&](int64_t q) {
    return arith::CmpIOp::create(b_, loc_, arith::CmpIPredicate::eq, quadrant,
                                 arith::ConstantIntOp::create(b_, loc_, i64, q));
  };
  auto select = [&](Value condition, Value x, Value y) {
    return arith::SelectOp::create(b_, loc_, condition, x, y);
  };
  Value odd = arith::TruncIOp::create(b_, loc_, b_.getI1Type(), quadrant);
  Value negCos = arith::OrIOp::create(b_, loc_, is(1), is(2));
  Value negSin = arith::OrIOp::create(b_, loc_, is(2), is(3));
  Value c = select(odd, sinR, cosR), s = select(odd, cosR, sinR);
  c = select(negCos, arith::NegFOp::create(b_, loc_, c), c);
  s = select(negSin, arith::NegFOp::create(b_, loc_, s), s);
  return {c, s};
}

void HeadsLowering::buildTable(Value position, Value frequencies) {
  int64_t half = rope_.dim / 2;
  double factor = reference::ropeFrequencies(rope_).attentionFactor;
  forLoop(0, half, 1, [&](Value k) {
    Value angle = fmul(position, memref::LoadOp::create(b_, loc_, frequencies, ValueRange{k}));
    auto [c, s] = cosSin(angle);
    Value cosine = arith::TruncFOp::create(b_, loc_, f32_, fmul(c, f64(factor)));
    Value sine = arith::TruncFOp::create(b_, loc_, f32_, fmul(s, f64(factor)));
    Value negSine = arith::NegFOp::create(b_, loc_, sine);
    // The two features of pair k: (k, k + dim/2) or (2k, 2k + 1).
    Value first = rope_.kind == reference::RopeKind::Half ? k : mul(k, index(2));
    Value second = rope_.kind == reference::RopeKind::Half ? add(k, index(half))
                                                           : add(first, index(1));
    for (auto [feature, cosValue, sinValue] :
         {std::tuple{first, cosine, negSine}, std::tuple{second, cosine, sine}}) {
      memref::StoreOp::create(b_, loc_, cosValue, table_, ValueRange{feature});
      memref::StoreOp::create(b_, loc_, sinValue, sines_, ValueRange{feature});
    }
  });
}

void HeadsLowering::buildHead(Value input, ValueRange inputRow, Value dest, ValueRange destRow,
                              Value column) {
  int64_t headDim =
      chain_.norm ? chain_.norm.getHeadDim() : chain_.rope ? chain_.rope.getHeadDim() : 0;
  auto at = [&](ValueRange row, Value offset) {
    return SmallVector<Value>{row[0], row[1], add(column, offset)};
  };
  int64_t width = vectorWidth(headDim, lanes_);
  auto vectorType = VectorType::get({width}, f32_);
  // The head into head_ (f32), its sum of squares on the way for the norm.
  Value squares = splat(vectorType, f32(0));
  {
    auto loop = scf::ForOp::create(b_, loc_, index(0), index(headDim), index(width),
                                   ValueRange{squares});
    OpBuilder::InsertionGuard guard(b_);
    b_.setInsertionPointToStart(loop.getBody());
    Value d = loop.getInductionVar();
    Value x = read(input, at(inputRow, d), width);
    vector::StoreOp::create(b_, loc_, x, head_, ValueRange{d});
    scf::YieldOp::create(b_, loc_,
                         ValueRange{vector::FMAOp::create(b_, loc_, x, x, loop.getRegionIterArgs()[0])});
    squares = loop.getResult(0);
  }
  if (chain_.norm) {
    Value sum = vector::ReductionOp::create(b_, loc_, vector::CombiningKind::ADD, squares);
    double eps = chain_.norm.getEps().convertToDouble();
    Value mean = fadd(fmul(sum, f32(1.0 / static_cast<double>(headDim))), f32(eps));
    Value inverse = arith::DivFOp::create(b_, loc_, f32(1), math::SqrtOp::create(b_, loc_, mean));
    forLoop(0, headDim, width, [&](Value d) {
      Value x = vector::LoadOp::create(b_, loc_, vectorType, head_, ValueRange{d});
      Value w = read(weight_, ValueRange{d}, width);
      vector::StoreOp::create(b_, loc_, fmul(fmul(x, splat(vectorType, inverse)), w), head_,
                              ValueRange{d});
    });
  }
  int64_t rotated = chain_.rope ? rope_.dim : 0;
  if (rotated > 0) {
    bool half = rope_.kind == reference::RopeKind::Half;
    int64_t ropeWidth = vectorWidth(half ? rotated / 2 : rotated, lanes_);
    auto ropeType = VectorType::get({ropeWidth}, f32_);
    SmallVector<int64_t> swapPairs;
    for (int64_t lane = 0; lane < ropeWidth; ++lane)
      swapPairs.push_back(lane ^ 1);
    forLoop(0, rotated, ropeWidth, [&](Value d) {
      Value x = vector::LoadOp::create(b_, loc_, ropeType, head_, ValueRange{d});
      Value partner;
      if (half) {
        // The vector dim/2 away, forwards from the first half and back from the second.
        Value inFirstHalf = arith::CmpIOp::create(b_, loc_, arith::CmpIPredicate::slt, d,
                                                  index(rotated / 2));
        Value offset = arith::SelectOp::create(b_, loc_, inFirstHalf, index(rotated / 2),
                                               index(-rotated / 2));
        partner = vector::LoadOp::create(b_, loc_, ropeType, head_, ValueRange{add(d, offset)});
      } else {
        partner = vector::ShuffleOp::create(b_, loc_, x, x, swapPairs);
      }
      Value c = vector::LoadOp::create(b_, loc_, ropeType, table_, ValueRange{d});
      Value s = vector::LoadOp::create(b_, loc_, ropeType, sines_, ValueRange{d});
      write(vector::FMAOp::create(b_, loc_, partner, s, fmul(x, c)), dest, at(destRow, d));
    });
  }
  // The features past the rotated ones, as they are.
  if (rotated < headDim) {
    int64_t tailWidth = vectorWidth(headDim - rotated, lanes_);
    auto tailType = VectorType::get({tailWidth}, f32_);
    forLoop(rotated, headDim, tailWidth, [&](Value d) {
      write(vector::LoadOp::create(b_, loc_, tailType, head_, ValueRange{d}), dest,
            at(destRow, d));
    });
  }
}

Value HeadsLowering::build() {
  Value inputTensor = chain_.input();
  auto inputType = cast<RankedTensorType>(inputTensor.getType());
  int64_t width = inputType.getDimSize(2);
  Value input = readOnly(inputTensor);
  Value c0 = index(0), c1 = index(1);
  Value batch = memref::DimOp::create(b_, loc_, input, 0);
  Value seq = memref::DimOp::create(b_, loc_, input, 1);

  // Where the rows go: a fresh buffer, or the cache seen as [B, N, Hkv * Dh].
  Value dest, positions;
  if (chain_.write) {
    dest = memref::CollapseShapeOp::create(b_, loc_, chain_.write.getCache(),
                                           ArrayRef<ReassociationIndices>{{0}, {1}, {2, 3}});
    positions = readOnly(chain_.write.getPositions());
  } else {
    auto resultType = cast<RankedTensorType>(chain_.last->getResult(0).getType());
    SmallVector<Value> dynamicSizes;
    if (resultType.isDynamicDim(0))
      dynamicSizes.push_back(batch);
    if (resultType.isDynamicDim(1))
      dynamicSizes.push_back(seq);
    dest = memref::AllocOp::create(
        b_, loc_, MemRefType::get(resultType.getShape(), resultType.getElementType()),
        dynamicSizes, b_.getI64IntegerAttr(64));
  }
  if (chain_.rope) {
    rope_ = chain_.rope.getParameters();
    if (Value p = chain_.rope.getPositions())
      positions = readOnly(p);
  }
  if (chain_.norm)
    weight_ = readOnly(chain_.norm.getWeight());
  Value frequencies;
  if (chain_.rope) {
    std::vector<double> inverse = reference::ropeFrequencies(rope_).inverse;
    auto tableType = RankedTensorType::get({static_cast<int64_t>(inverse.size())}, f64_);
    Value constant = arith::ConstantOp::create(
        b_, loc_, DenseElementsAttr::get(tableType, ArrayRef<double>(inverse)));
    frequencies = readOnly(constant);
  }

  auto parallel =
      scf::ParallelOp::create(b_, loc_, ValueRange{c0, c0}, ValueRange{batch, seq}, ValueRange{c1, c1});
  {
    OpBuilder::InsertionGuard guard(b_);
    b_.setInsertionPointToStart(parallel.getBody());
    Value b = parallel.getInductionVars()[0], i = parallel.getInductionVars()[1];
    // The row's position: its index, after the row's cache_len where there is one; the
    // cache write stores it at that position.
    Value position = i;
    if (positions)
      position = add(i, arith::IndexCastOp::create(b_, loc_, b_.getIndexType(),
                                                   memref::LoadOp::create(b_, loc_, positions, b)));
    Value destRow = chain_.write ? position : i;
    if (!chain_.norm && !chain_.rope) {
      // A plain cache write: the row's features as they are.
      int64_t step = vectorWidth(width, lanes_);
      forLoop(0, width, step, [&](Value d) {
        write(read(input, ValueRange{b, i, d}, step), dest, ValueRange{b, destRow, d});
      });
    } else {
      int64_t headDim = width / chain_.heads();
      auto scratch = [&](int64_t size) {
        return memref::AllocaOp::create(b_, loc_, MemRefType::get({size}, f32_), ValueRange{},
                                        b_.getI64IntegerAttr(64));
      };
      head_ = scratch(headDim);
      if (chain_.rope) {
        table_ = scratch(rope_.dim);
        sines_ = scratch(rope_.dim);
        buildTable(arith::UIToFPOp::create(
                       b_, loc_, f64_, arith::IndexCastUIOp::create(b_, loc_, b_.getI64Type(), position)),
                   frequencies);
      }
      forLoop(0, chain_.heads(), 1, [&](Value h) {
        buildHead(input, ValueRange{b, i}, dest, ValueRange{b, destRow}, mul(h, index(headDim)));
      });
    }
  }
  if (chain_.write)
    return {};
  return bufferization::ToTensorOp::create(b_, loc_, chain_.last->getResult(0).getType(), dest,
                                           /*restrict=*/true, /*writable=*/true);
}

struct ConvertMhaHeadsToLoopsPass
    : impl::ConvertMhaHeadsToLoopsBase<ConvertMhaHeadsToLoopsPass> {
  using Base::Base;

  void runOnOperation() override {
    if (vectorLanes < 1) {
      getOperation().emitError("vector-lanes must be positive");
      return signalPassFailure();
    }
    for (HeadChain &chain : findChains(getOperation())) {
      Operation *end = chain.write ? chain.write.getOperation() : chain.last;
      OpBuilder builder(end);
      Value result = HeadsLowering(chain, builder, vectorLanes).build();
      if (result)
        chain.last->getResult(0).replaceAllUsesWith(result);
      end->erase();
      if (chain.rope && chain.rope.getOperation() != end)
        chain.rope->erase();
      if (chain.norm && chain.norm.getOperation() != end)
        chain.norm->erase();
    }
  }
};

} // namespace
} // namespace mhac
