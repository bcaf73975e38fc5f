//===- RoundToBf16WithAvx512.cpp - f32 to bf16 in vcvtneps2bf16 -----------===//
//
// Part of mhac.
//
// arith-expand rounds f32 to bf16 with integer operations (about eight instructions per vector:
// the rounding bias, the NaN check, the shift and the narrowing), which every target can run.
// Where the target has AVX512-BF16, one vcvtneps2bf16 rounds 16 values the same way (to
// nearest, ties to even). In a bf16 layer every projection rounds its whole output so
// (bench/RESULTS.md: 0.7% of a BERT-base call on a Zen 4).
//
//===----------------------------------------------------------------------===//

#include "compiler/conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mhac {
#define GEN_PASS_DEF_ROUNDTOBF16WITHAVX512
#include "compiler/conversion/Passes.h.inc"
} // namespace mhac

using namespace mlir;

namespace mhac {
namespace {

/// f32 lanes of vcvtneps2bf16's widest form (a zmm in, a ymm out).
constexpr int64_t kLanes = 16;

/// arith.truncf of a vector of f32 to bf16, of whole 16-lane vectors, rounding to nearest
/// even: the vector flattened, each 16 lanes rounded by vcvtneps2bf16, the result reshaped.
struct RoundWithVcvtneps2bf16 : OpRewritePattern<arith::TruncFOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(arith::TruncFOp op, PatternRewriter &rewriter) const override {
    auto source = dyn_cast<VectorType>(op.getIn().getType());
    auto result = dyn_cast<VectorType>(op.getType());
    if (!source || source.isScalable() || !source.getElementType().isF32() ||
        !result.getElementType().isBF16() || source.getNumElements() % kLanes != 0)
      return failure();
    if (std::optional<arith::RoundingMode> mode = op.getRoundingmode();
        mode && *mode != arith::RoundingMode::to_nearest_even)
      return failure();
    Location loc = op.getLoc();
    int64_t count = source.getNumElements();
    Type bf16 = rewriter.getBF16Type();
    auto flatBf16 = VectorType::get({count}, bf16);
    Value flat = vector::ShapeCastOp::create(
        rewriter, loc, VectorType::get({count}, rewriter.getF32Type()), op.getIn());
    Value rounded =
        arith::ConstantOp::create(rewriter, loc, flatBf16, rewriter.getZeroAttr(flatBf16));
    for (int64_t at = 0; at < count; at += kLanes) {
      Value lanes = vector::ExtractStridedSliceOp::create(rewriter, loc, flat, ArrayRef{at},
                                                          ArrayRef{kLanes}, ArrayRef<int64_t>{1});
      Value part = x86vector::CvtPackedF32ToBF16Op::create(rewriter, loc,
                                                           VectorType::get({kLanes}, bf16), lanes);
      rounded = vector::InsertStridedSliceOp::create(rewriter, loc, part, rounded, ArrayRef{at},
                                                     ArrayRef<int64_t>{1});
    }
    rewriter.replaceOpWithNewOp<vector::ShapeCastOp>(op, result, rounded);
    return success();
  }
};

struct RoundToBf16WithAvx512Pass : impl::RoundToBf16WithAvx512Base<RoundToBf16WithAvx512Pass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<RoundWithVcvtneps2bf16>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
} // namespace mhac
