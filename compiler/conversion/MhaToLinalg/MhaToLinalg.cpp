//===- MhaToLinalg.cpp - mha.linear to linalg.matmul ----------------------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "compiler/conversion/Passes.h"
#include "dialects/mha/IR/MhaOps.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"

namespace mhac {
#define GEN_PASS_DEF_CONVERTMHATOLINALG
#include "compiler/conversion/Passes.h.inc"
} // namespace mhac

using namespace mlir;

namespace mhac {
namespace {

/// Widths (in elements) whose multiples make rows of W^T alias in the L1 cache, and the padding
/// that breaks the aliasing: one 64-byte line of f32.
constexpr int64_t kAliasingWidth = 256;
constexpr int64_t kRowPadding = 16;

/// Marks `value`, an argument of the layer function, as one of its parameters.
void markParameter(Value value) {
  auto arg = dyn_cast<BlockArgument>(value);
  if (!arg)
    return;
  if (auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp()))
    func.setArgAttr(arg.getArgNumber(), kParameterAttr, UnitAttr::get(func.getContext()));
}

struct LinearOpLowering : OpRewritePattern<mha::LinearOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(mha::LinearOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto inputType = op.getInput().getType();
    auto resultType = op.getResult().getType();
    Type elementType = inputType.getElementType();
    Type f32 = rewriter.getF32Type();
    int64_t rank = inputType.getRank();
    int64_t outFeatures = resultType.getDimSize(rank - 1);

    // Collapse the leading dimensions into one row dimension: [..., K] -> [M, K].
    Value input = op.getInput();
    int64_t rows = 1;
    for (int64_t i = 0; i + 1 < rank; ++i)
      rows = ShapedType::isDynamic(inputType.getDimSize(i)) || ShapedType::isDynamic(rows)
                 ? ShapedType::kDynamic
                 : rows * inputType.getDimSize(i);
    SmallVector<ReassociationIndices> reassociation;
    if (rank != 2) {
      ReassociationIndices leading;
      for (int64_t i = 0; i + 1 < rank; ++i)
        leading.push_back(i);
      reassociation = {leading, {rank - 1}};
      input = tensor::CollapseShapeOp::create(rewriter, loc, input, reassociation);
    }
    SmallVector<Value> dynamicRows;
    if (ShapedType::isDynamic(rows))
      dynamicRows.push_back(tensor::DimOp::create(rewriter, loc, input, 0));

    // The accumulator starts at the bias (broadcast over the rows, widened to f32) or at zero.
    auto accType = RankedTensorType::get({rows, outFeatures}, f32);
    Value empty = tensor::EmptyOp::create(rewriter, loc, accType.getShape(), f32, dynamicRows);
    Value init;
    if (Value bias = op.getBias()) {
      MLIRContext *ctx = rewriter.getContext();
      AffineMap biasMap = AffineMap::get(2, 0, {getAffineDimExpr(1, ctx)}, ctx);
      AffineMap outMap = AffineMap::getMultiDimIdentityMap(2, ctx);
      init = linalg::GenericOp::create(rewriter, loc, accType, ValueRange{bias}, ValueRange{empty},
                                       ArrayRef<AffineMap>{biasMap, outMap},
                                       ArrayRef<utils::IteratorType>{utils::IteratorType::parallel,
                                                                     utils::IteratorType::parallel},
                                       [&](OpBuilder &b, Location nested, ValueRange args) {
                                         Value value = args[0];
                                         if (value.getType() != f32)
                                           value = arith::ExtFOp::create(b, nested, f32, value);
                                         linalg::YieldOp::create(b, nested, value);
                                       })
                 .getResult(0);
    } else {
      Value zero = arith::ConstantOp::create(rewriter, loc, rewriter.getF32FloatAttr(0));
      init = linalg::FillOp::create(rewriter, loc, zero, empty).getResult(0);
    }

    // y = x * W^T + acc. W comes in PyTorch's [out, in] layout; the matmul reads it as
    // [in, out], so that a row of W^T (the outputs of one input feature) is contiguous and the
    // register tiles broadcast x and load W^T.
    auto weightType = op.getWeight().getType();
    int64_t in = weightType.getDimSize(1), out = weightType.getDimSize(0);
    Type weightElement = weightType.getElementType();
    // The rearranged weight (padded rows and all) depends on the weight alone: it is computed
    // once per set of weights by the layer's preparation function
    // (mhac-split-weight-preparation).
    auto prepare = [&](Value prepared) {
      prepared.getDefiningOp()->setAttr(kPreparedWeightAttr, rewriter.getUnitAttr());
    };
    Value transposed;
    if (out % kAliasingWidth != 0) {
      Value empty =
          tensor::EmptyOp::create(rewriter, loc, ArrayRef<int64_t>{in, out}, weightElement);
      transposed =
          linalg::TransposeOp::create(rewriter, loc, op.getWeight(), empty, ArrayRef<int64_t>{1, 0})
              .getResult()[0];
      prepare(transposed);
    } else {
      // Rows a multiple of 1 KiB apart map to the same L1 sets: the register tiles, which read
      // one row of W^T per step, would evict each other. The rows are padded by one cache line.
      Value padded = tensor::EmptyOp::create(
          rewriter, loc, ArrayRef<int64_t>{in, out + kRowPadding}, weightElement);
      SmallVector<OpFoldResult> zeros(2, rewriter.getIndexAttr(0));
      SmallVector<OpFoldResult> sizes = {rewriter.getIndexAttr(in), rewriter.getIndexAttr(out)};
      SmallVector<OpFoldResult> ones(2, rewriter.getIndexAttr(1));
      Value view = tensor::ExtractSliceOp::create(rewriter, loc, padded, zeros, sizes, ones);
      Value written =
          linalg::TransposeOp::create(rewriter, loc, op.getWeight(), view, ArrayRef<int64_t>{1, 0})
              .getResult()[0];
      Value whole =
          tensor::InsertSliceOp::create(rewriter, loc, written, padded, zeros, sizes, ones);
      prepare(whole);
      transposed = tensor::ExtractSliceOp::create(rewriter, loc, whole, zeros, sizes, ones);
    }
    markParameter(op.getWeight());
    if (Value bias = op.getBias())
      markParameter(bias);
    Value product = linalg::MatmulOp::create(rewriter, loc, TypeRange{accType},
                                             ValueRange{input, transposed}, ValueRange{init})
                        .getResult(0);

    // bf16 layers round the f32 accumulator once.
    Value result = product;
    if (elementType != f32) {
      auto roundedType = RankedTensorType::get(accType.getShape(), elementType);
      Value roundedEmpty =
          tensor::EmptyOp::create(rewriter, loc, roundedType.getShape(), elementType, dynamicRows);
      MLIRContext *ctx = rewriter.getContext();
      AffineMap identity = AffineMap::getMultiDimIdentityMap(2, ctx);
      result = linalg::GenericOp::create(
                   rewriter, loc, roundedType, ValueRange{product}, ValueRange{roundedEmpty},
                   ArrayRef<AffineMap>{identity, identity},
                   ArrayRef<utils::IteratorType>{utils::IteratorType::parallel,
                                                 utils::IteratorType::parallel},
                   [&](OpBuilder &b, Location nested, ValueRange args) {
                     Value rounded = arith::TruncFOp::create(b, nested, elementType, args[0]);
                     linalg::YieldOp::create(b, nested, rounded);
                   })
                   .getResult(0);
    }

    // Restore the leading dimensions: [M, N] -> [..., N].
    if (rank != 2) {
      SmallVector<OpFoldResult> outputShape;
      for (int64_t i = 0; i + 1 < rank; ++i)
        outputShape.push_back(tensor::getMixedSize(rewriter, loc, op.getInput(), i));
      outputShape.push_back(rewriter.getIndexAttr(outFeatures));
      if (resultType.getNumDynamicDims() <= 1) {
        result = tensor::ExpandShapeOp::create(rewriter, loc, resultType, result, reassociation,
                                               outputShape);
      } else {
        // MLIR 22's expand-strided-metadata crashes on a memref.expand_shape with two dynamic
        // dimensions; tensor.reshape bufferizes to memref.reshape, which avoids it.
        SmallVector<Value> shape;
        for (OpFoldResult size : outputShape)
          shape.push_back(getValueOrCreateConstantIndexOp(rewriter, loc, size));
        Value shapeTensor = tensor::FromElementsOp::create(rewriter, loc, shape);
        result = tensor::ReshapeOp::create(rewriter, loc, resultType, result, shapeTensor);
      }
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct ConvertMhaToLinalgPass : impl::ConvertMhaToLinalgBase<ConvertMhaToLinalgPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<LinearOpLowering>(&getContext());
    // One walk, without folding: each projection is rewritten exactly once, as written.
    walkAndApplyPatterns(getOperation(), std::move(patterns));
  }
};

} // namespace
} // namespace mhac
