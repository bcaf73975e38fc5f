//===- MhaToLinalg.cpp - mha.linear to linalg.matmul ----------------------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "compiler/conversion/Passes.h"
#include "compiler/conversion/Utils/ConvertElements.h"
#include "compiler/schedules/ProjectionPanels.h"
#include "dialects/mha/IR/MhaOps.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"
#include "llvm/ADT/bit.h"

namespace mhac {
#define GEN_PASS_DEF_CONVERTMHATOLINALG
#include "compiler/conversion/Passes.h.inc"
} // namespace mhac

using namespace mlir;

namespace mhac {
namespace {

/// The elements of padding after each row of `width` elements of `element`, for `padding` (the
/// schedule's row padding, in 4-byte words): rows a multiple of 1 KiB apart share a quarter of
/// L1's sets, and are padded by that many bytes (one cache line by default) to break the
/// aliasing; other rows are not.
int64_t rowPaddingOf(int64_t width, Type element, int64_t padding) {
  int64_t bytes = element.getIntOrFloatBitWidth() / 8;
  return width * bytes % 1024 == 0 ? padding * 4 / bytes : 0;
}

/// Marks `value`, an argument of the layer function, as one of its parameters.
void markParameter(Value value) {
  auto arg = dyn_cast<BlockArgument>(value);
  if (!arg)
    return;
  if (auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp()))
    func.setArgAttr(arg.getArgNumber(), kParameterAttr, UnitAttr::get(func.getContext()));
}

/// Marks `prepared` as the weight in its kernel's layout, computed from the weight alone: the
/// layer's preparation function (mhac-split-weight-preparation) computes it once per set of
/// weights.
void markPrepared(Value prepared) {
  prepared.getDefiningOp()->setAttr(kPreparedWeightAttr, UnitAttr::get(prepared.getContext()));
}

/// The f32 accumulator of a projection, written into `empty` (of the accumulator's type):
/// `bias` (shaped as the trailing dimensions of the accumulator, widened to f32) broadcast over
/// the rows, or zero without a bias.
Value initAccumulator(PatternRewriter &rewriter, Location loc, Value bias, Value empty) {
  auto accType = cast<RankedTensorType>(empty.getType());
  Type f32 = rewriter.getF32Type();
  if (!bias) {
    Value zero = arith::ConstantOp::create(rewriter, loc, rewriter.getF32FloatAttr(0));
    return linalg::FillOp::create(rewriter, loc, zero, empty).getResult(0);
  }
  MLIRContext *ctx = rewriter.getContext();
  int64_t rank = accType.getRank();
  int64_t biasRank = cast<RankedTensorType>(bias.getType()).getRank();
  SmallVector<AffineExpr> biasDims;
  for (int64_t d = rank - biasRank; d < rank; ++d)
    biasDims.push_back(getAffineDimExpr(d, ctx));
  SmallVector<utils::IteratorType> iterators(rank, utils::IteratorType::parallel);
  return linalg::GenericOp::create(
             rewriter, loc, accType, ValueRange{bias}, ValueRange{empty},
             ArrayRef<AffineMap>{AffineMap::get(rank, 0, biasDims, ctx),
                                 AffineMap::getMultiDimIdentityMap(rank, ctx)},
             iterators,
             [&](OpBuilder &b, Location nested, ValueRange args) {
               Value value = args[0];
               if (value.getType() != f32)
                 value = arith::ExtFOp::create(b, nested, f32, value);
               linalg::YieldOp::create(b, nested, value);
             })
      .getResult(0);
}

/// The slice of rows [first, first + count) of a ranked tensor, as tensor.extract_slice and
/// tensor.insert_slice take it.
struct RowRange {
  RowRange(OpBuilder &b, Location loc, Value tensor, int64_t first, int64_t count)
      : offsets(cast<RankedTensorType>(tensor.getType()).getRank(), b.getIndexAttr(0)),
        sizes(tensor::getMixedSizes(b, loc, tensor)), strides(offsets.size(), b.getIndexAttr(1)) {
    offsets[0] = b.getIndexAttr(first);
    sizes[0] = b.getIndexAttr(count);
  }

  SmallVector<OpFoldResult> offsets, sizes, strides;
};

/// acc[m][p][c] = init[m][p][c] + sum_k x[m][k] * Wp[p][k][c], over loops (m, panel, column in
/// panel, k), with init the bias broadcast over the rows of `acc` (or zero): one panel
/// projection op, marked for the schedule. With weights packed in bf16 pairs
/// (Wp[p][k / 2][c][2], packPanels with pairs), the input is seen as x[m][k / 2][2] and the loops are
/// (m, panel, column in panel, pair, half), marked `mhac.bf16_pairs` too.
Value panelMultiply(PatternRewriter &rewriter, Location loc, Value input, Value packed,
                    Value bias, Value acc) {
  MLIRContext *ctx = rewriter.getContext();
  Type f32 = rewriter.getF32Type();
  Value init = initAccumulator(rewriter, loc, bias, acc);
  auto parallel = utils::IteratorType::parallel, reduction = utils::IteratorType::reduction;
  auto dim = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
  bool pairs = cast<RankedTensorType>(packed.getType()).getRank() == 4;
  SmallVector<AffineMap> maps = {AffineMap::get(4, 0, {dim(0), dim(3)}, ctx),
                                 AffineMap::get(4, 0, {dim(1), dim(3), dim(2)}, ctx),
                                 AffineMap::get(4, 0, {dim(0), dim(1), dim(2)}, ctx)};
  SmallVector<utils::IteratorType> iterators = {parallel, parallel, parallel, reduction};
  if (pairs) {
    auto inputType = cast<RankedTensorType>(input.getType());
    int64_t features = inputType.getDimSize(1);
    input = tensor::ExpandShapeOp::create(
        rewriter, loc,
        RankedTensorType::get({inputType.getDimSize(0), features / 2, 2},
                              inputType.getElementType()),
        input, ArrayRef<ReassociationIndices>{{0}, {1, 2}},
        ArrayRef<OpFoldResult>{tensor::getMixedSize(rewriter, loc, input, 0),
                               rewriter.getIndexAttr(features / 2), rewriter.getIndexAttr(2)});
    maps = {AffineMap::get(5, 0, {dim(0), dim(3), dim(4)}, ctx),
            AffineMap::get(5, 0, {dim(1), dim(3), dim(2), dim(4)}, ctx),
            AffineMap::get(5, 0, {dim(0), dim(1), dim(2)}, ctx)};
    iterators.push_back(reduction);
  }
  auto product = linalg::GenericOp::create(
      rewriter, loc, acc.getType(), ValueRange{input, packed}, ValueRange{init}, maps, iterators,
      [&](OpBuilder &b, Location nested, ValueRange args) {
        Value x = args[0], w = args[1];
        if (x.getType() != f32)
          x = arith::ExtFOp::create(b, nested, f32, x);
        if (w.getType() != f32)
          w = arith::ExtFOp::create(b, nested, f32, w);
        Value sum = arith::AddFOp::create(b, nested, args[2],
                                          arith::MulFOp::create(b, nested, x, w));
        linalg::YieldOp::create(b, nested, sum);
      });
  product->setAttr(kProjectionAttr, rewriter.getUnitAttr());
  if (pairs)
    product->setAttr(kBf16PairsAttr, rewriter.getUnitAttr());
  return product.getResult(0);
}

/// W [N, K] packed as column panels Wp[N / P][K][P] (P = `panel`): W viewed as [N / P][P][K],
/// transposed. With `pairs` (bf16), panels of input pairs Wp[N / P][K / 2][P][2]: a panel row
/// holds, for each of its P columns, two consecutive input features, as vdpbf16ps multiplies
/// them (with a broadcast pair of the input row).
Value packPanels(PatternRewriter &rewriter, Location loc, Value weight, int64_t panel,
                 bool pairs = false) {
  auto weightType = cast<RankedTensorType>(weight.getType());
  int64_t out = weightType.getDimSize(0), in = weightType.getDimSize(1);
  Type weightElement = weightType.getElementType();
  SmallVector<int64_t> split = {out / panel, panel, in}, packed = {out / panel, in, panel};
  SmallVector<ReassociationIndices> reassociation = {{0, 1}, {2}};
  SmallVector<int64_t> permutation = {0, 2, 1};
  if (pairs) {
    split = {out / panel, panel, in / 2, 2};
    packed = {out / panel, in / 2, panel, 2};
    reassociation = {{0, 1}, {2, 3}};
    permutation = {0, 2, 1, 3};
  }
  Value viewed = tensor::ExpandShapeOp::create(
      rewriter, loc, RankedTensorType::get(split, weightElement), weight, reassociation);
  Value packedEmpty = tensor::EmptyOp::create(rewriter, loc, packed, weightElement);
  return linalg::TransposeOp::create(rewriter, loc, viewed, packedEmpty, permutation)
      .getResult()[0];
}

/// `value` in bf16 for a projection of pairs: itself if it is; the bf16 tensor a widened layer
/// widened it from (mhac-widen-bf16-layer's linalg.generic of one arith.extf); an attention
/// read by this projection alone, retyped to store its result rounded (no f32 copy of it is
/// written, read and rounded again); or else `value` rounded to bf16.
Value inBf16(PatternRewriter &rewriter, Location loc, Value value) {
  Type bf16 = rewriter.getBF16Type();
  if (getElementTypeOrSelf(value.getType()) == bf16)
    return value;
  if (auto attention = value.getDefiningOp<mha::AttentionOp>(); attention && value.hasOneUse()) {
    rewriter.modifyOpInPlace(
        attention, [&] { value.setType(cast<RankedTensorType>(value.getType()).clone(bf16)); });
    return value;
  }
  if (auto widening = value.getDefiningOp<linalg::GenericOp>())
    if (widening.getNumDpsInputs() == 1 &&
        getElementTypeOrSelf(widening.getDpsInputs()[0].getType()) == bf16 &&
        llvm::hasSingleElement(widening.getBody()->without_terminator()) &&
        isa<arith::ExtFOp>(widening.getBody()->front()))
      return widening.getDpsInputs()[0];
  return convertElements(rewriter, loc, value, bf16, [&](OpBuilder &b, Location at, Value v) {
    return arith::TruncFOp::create(b, at, bf16, v).getResult();
  });
}

/// `accumulators` rounded to nearest even into `destination` (bf16, of their shape), element by
/// element.
Value roundAccumulators(OpBuilder &b, Location loc, Value accumulators, Value destination) {
  Type bf16 = getElementTypeOrSelf(destination.getType());
  return convertElementsInto(b, loc, accumulators, destination,
                             [&](OpBuilder &nested, Location at, Value element) -> Value {
                               return arith::TruncFOp::create(nested, at, bf16, element);
                             });
}

/// `matrix` [M][N] seen as [M][N / panel][panel] (a free reshape).
Value asPanels(OpBuilder &b, Location loc, Value matrix, int64_t panel) {
  auto type = cast<RankedTensorType>(matrix.getType());
  int64_t panels = type.getDimSize(1) / panel;
  return tensor::ExpandShapeOp::create(
      b, loc, RankedTensorType::get({type.getDimSize(0), panels, panel}, type.getElementType()),
      matrix, ArrayRef<ReassociationIndices>{{0}, {1, 2}},
      ArrayRef<OpFoldResult>{tensor::getMixedSize(b, loc, matrix, 0), b.getIndexAttr(panels),
                             b.getIndexAttr(panel)});
}

/// y[M, N] = x[M, K] W[N, K]^T + bias, accumulated in f32, with the weight prepared as column
/// panels (`packed`, in packPanels' layout): each panel is contiguous, so a
/// register tile streams one panel's rows from consecutive cache lines. The output is seen as
/// [M][N / P][P] (a free reshape) and the accumulator starts at the bias.
///
/// Where M is static and not a multiple of `rowTile` (the schedule's register tile rows), its
/// last cache tile (of `cacheRows`, the rest of M after whole cache tiles) is a projection of
/// its own: being the only cache tile of its rows, its size is static, and so is the register
/// tile its M % rowTile edge rows make, vectorized whole next to the full ones while the
/// panel is in L2. Left inside a tiled projection, those rows (a number the tiling cannot
/// prove) would go one at a time, each accumulator's FMAs a latency apart; split off as a
/// projection of their own rows alone, they would read every panel once more, from L3.
///
/// With `rounded` (bf16, [M, N]), each part's accumulators are rounded into it, marked for
/// mhac-fuse-roundings-into-tiles, and the result is `rounded`'s.
Value panelProduct(PatternRewriter &rewriter, Location loc, Value input, Value packed, Value bias,
                   Value destination, int64_t rowTile, int64_t cacheRows, Value rounded = Value()) {
  auto packedType = cast<RankedTensorType>(packed.getType());
  int64_t panels = packedType.getDimSize(0), panel = packedType.getDimSize(2);

  // The accumulator [M][N / P][P] (the destination [M][N] seen so), from the bias seen as
  // [N / P][P], or zero.
  int64_t rows = cast<RankedTensorType>(destination.getType()).getDimSize(0);
  Value acc = asPanels(rewriter, loc, destination, panel);
  // What the parts write into: the accumulators themselves, or their rounding.
  Value result = rounded ? asPanels(rewriter, loc, rounded, panel) : acc;
  auto finishPart = [&](Value product, Value resultRows) {
    if (!rounded)
      return product;
    Value roundedPart = roundAccumulators(rewriter, loc, product, resultRows);
    roundedPart.getDefiningOp()->setAttr(kRoundingAttr, rewriter.getUnitAttr());
    return roundedPart;
  };
  if (bias)
    bias = tensor::ExpandShapeOp::create(
        rewriter, loc,
        RankedTensorType::get({panels, panel},
                              cast<RankedTensorType>(bias.getType()).getElementType()),
        bias, ArrayRef<ReassociationIndices>{{0, 1}});

  // Rows [0, M - last) in whole cache tiles, then the last cache tile's rows.
  int64_t firstRows = rowTile > 1 && cacheRows > 0 && !ShapedType::isDynamic(rows) &&
                              rows % rowTile != 0
                          ? (rows - 1) / cacheRows * cacheRows
                          : 0;
  if (firstRows == 0) {
    result = finishPart(panelMultiply(rewriter, loc, input, packed, bias, acc), result);
  } else {
    // Each part written in place into its rows of `result`.
    for (auto [first, count] :
         {std::pair{int64_t(0), firstRows}, std::pair{firstRows, rows - firstRows}}) {
      RowRange inputRange(rewriter, loc, input, first, count);
      RowRange range(rewriter, loc, result, first, count);
      auto rowsOf = [&](Value tensor) {
        return tensor::ExtractSliceOp::create(rewriter, loc, tensor, range.offsets, range.sizes,
                                              range.strides);
      };
      Value inputRows = tensor::ExtractSliceOp::create(
          rewriter, loc, input, inputRange.offsets, inputRange.sizes, inputRange.strides);
      Value accRows = rowsOf(rounded ? acc : result);
      Value product = panelMultiply(rewriter, loc, inputRows, packed, bias, accRows);
      Value part = finishPart(product, rounded ? rowsOf(result).getResult() : Value());
      result = tensor::InsertSliceOp::create(rewriter, loc, part, result, range.offsets,
                                             range.sizes, range.strides);
    }
  }
  return tensor::CollapseShapeOp::create(rewriter, loc, result,
                                         ArrayRef<ReassociationIndices>{{0}, {1, 2}});
}

/// `value` extended with zeros to `size` (>= its own) along dimension `dim`. One tensor.pad,
/// its zero inside: a zero fill that CSE shared between the biases of a preparation would be
/// taken by eliminate-empty-tensors for one of the prepared results, and the others would be
/// built in it.
Value zeroExtended(OpBuilder &b, Location loc, Value value, int64_t dim, int64_t size) {
  auto type = cast<RankedTensorType>(value.getType());
  if (type.getDimSize(dim) == size)
    return value;
  SmallVector<int64_t> shape(type.getShape());
  shape[dim] = size;
  SmallVector<OpFoldResult> low(type.getRank(), b.getIndexAttr(0)), high = low;
  high[dim] = b.getIndexAttr(size - type.getDimSize(dim));
  auto pad = tensor::PadOp::create(b, loc, RankedTensorType::get(shape, type.getElementType()),
                                   value, low, high);
  SmallVector<Type> indices(type.getRank(), b.getIndexType());
  SmallVector<Location> locations(type.getRank(), loc);
  OpBuilder::InsertionGuard guard(b);
  b.createBlock(&pad.getRegion(), pad.getRegion().end(), indices, locations);
  tensor::YieldOp::create(b, loc,
                          arith::ConstantOp::create(b, loc, b.getZeroAttr(type.getElementType())));
  return pad;
}

/// The number of input features a projection of `in` reads: with bf16 pairs, whole pairs (an
/// odd last feature is paired with a zero, in the input and the weight alike).
int64_t pairedFeatures(int64_t in, bool pairs) { return pairs ? in + in % 2 : in; }

/// The widths of the column blocks a projection computing `computed` features (its width, or
/// its padded width) is computed in: whole panels of `panel` first, then the rest in
/// power-of-two blocks of at least kMinColumnBlock features, each a panel projection of its
/// own (a panel of 48 or 80 would be a register row of 3 or 5 vectors, which LLVM widens to 4
/// or 8 and spills). Empty when the rest is no multiple of kMinColumnBlock: those projections
/// are unpacked matmuls.
SmallVector<int64_t> columnBlocks(int64_t computed, int64_t panel) {
  SmallVector<int64_t> blocks;
  int64_t rest = panel > 0 ? computed % panel : 0;
  if (panel <= 0 || computed % kMinColumnBlock != 0 || rest % kMinColumnBlock != 0)
    return blocks;
  if (computed >= panel)
    blocks.push_back(computed / panel * panel);
  // The rest's binary digits, largest first: powers of two, of at least kMinColumnBlock as
  // rest is a multiple of it (halving a panel of 48 would give 24 and 12 instead).
  for (int64_t width = llvm::bit_floor(static_cast<uint64_t>(rest)); rest > 0; width /= 2)
    if (rest >= width) {
      blocks.push_back(width);
      rest -= width;
    }
  return blocks;
}

/// `value`'s slice [first, first + count) along dimension `dim` (of any rank).
Value sliceAlong(OpBuilder &b, Location loc, Value value, int64_t dim, int64_t first,
                 int64_t count) {
  auto type = cast<RankedTensorType>(value.getType());
  SmallVector<OpFoldResult> offsets(type.getRank(), b.getIndexAttr(0));
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, value);
  SmallVector<OpFoldResult> strides(type.getRank(), b.getIndexAttr(1));
  offsets[dim] = b.getIndexAttr(first);
  sizes[dim] = b.getIndexAttr(count);
  return tensor::ExtractSliceOp::create(b, loc, value, offsets, sizes, strides);
}

/// The panel products of a projection in column blocks (columnBlocks), each written into its
/// columns of `destination` [M, C]. One block may be wider than the projection (C, its padded
/// width): the weight's rows and the bias past its width are zeros, prepared with the weight.
/// Several blocks' panels are prepared as one weight: each block's packed panels, flattened,
/// one after the other. With `pairs` (one block), the product of bf16 pairs, `input` already
/// in bf16. With `rounded` and one block, the result is rounded into it (panelProduct); else
/// the result is f32.
Value blockedPanelProduct(PatternRewriter &rewriter, Location loc, Value input, mha::LinearOp op,
                          Value destination, ArrayRef<int64_t> blocks, int64_t panel,
                          int64_t rowTile, int64_t cacheRows, bool pairs, Value rounded) {
  Value weight = op.getWeight(), bias = op.getBias();
  if (blocks.size() == 1) {
    int64_t computed = blocks.front();
    int64_t in = cast<RankedTensorType>(weight.getType()).getDimSize(1);
    if (pairs)
      weight =
          zeroExtended(rewriter, loc, inBf16(rewriter, loc, weight), 1, pairedFeatures(in, pairs));
    Value packed = packPanels(rewriter, loc, zeroExtended(rewriter, loc, weight, 0, computed),
                              std::min(computed, panel), pairs);
    markPrepared(packed);
    if (bias && cast<RankedTensorType>(bias.getType()).getDimSize(0) != computed) {
      bias = zeroExtended(rewriter, loc, bias, 0, computed);
      markPrepared(bias);
    }
    return panelProduct(rewriter, loc, input, packed, bias, destination, rowTile, cacheRows,
                        rounded);
  }
  auto weightType = cast<RankedTensorType>(weight.getType());
  int64_t in = weightType.getDimSize(1);
  Type weightElement = weightType.getElementType();
  auto flatSlice = [&](int64_t first, int64_t width) {
    return std::pair{SmallVector<OpFoldResult>{rewriter.getIndexAttr(first * in)},
                     SmallVector<OpFoldResult>{rewriter.getIndexAttr(width * in)}};
  };
  SmallVector<OpFoldResult> unit = {rewriter.getIndexAttr(1)};
  auto flatType = [&](int64_t width) { return RankedTensorType::get({width * in}, weightElement); };
  Value prepared = tensor::EmptyOp::create(rewriter, loc, ArrayRef<int64_t>{weightType.getNumElements()},
                                           weightElement);
  int64_t first = 0;
  for (int64_t width : blocks) {
    Value packed = packPanels(rewriter, loc, sliceAlong(rewriter, loc, weight, 0, first, width),
                              std::min(width, panel));
    Value flat = tensor::CollapseShapeOp::create(rewriter, loc, flatType(width), packed,
                                                 ArrayRef<ReassociationIndices>{{0, 1, 2}});
    auto [offsets, sizes] = flatSlice(first, width);
    prepared = tensor::InsertSliceOp::create(rewriter, loc, flat, prepared, offsets, sizes, unit);
    first += width;
  }
  markPrepared(prepared);

  Value result = destination;
  first = 0;
  for (int64_t width : blocks) {
    int64_t blockPanel = std::min(width, panel);
    auto [offsets, sizes] = flatSlice(first, width);
    Value flat = tensor::ExtractSliceOp::create(rewriter, loc, flatType(width), prepared, offsets,
                                                sizes, unit);
    Value packed = tensor::ExpandShapeOp::create(
        rewriter, loc, RankedTensorType::get({width / blockPanel, in, blockPanel}, weightElement),
        flat, ArrayRef<ReassociationIndices>{{0, 1, 2}});
    Value blockBias = bias ? sliceAlong(rewriter, loc, bias, 0, first, width) : Value();
    Value columns = sliceAlong(rewriter, loc, result, 1, first, width);
    Value product = panelProduct(rewriter, loc, input, packed, blockBias, columns, rowTile,
                                 cacheRows);
    SmallVector<OpFoldResult> at = {rewriter.getIndexAttr(0), rewriter.getIndexAttr(first)};
    SmallVector<OpFoldResult> size = {tensor::getMixedSize(rewriter, loc, result, 0),
                                      rewriter.getIndexAttr(width)};
    SmallVector<OpFoldResult> ones(2, rewriter.getIndexAttr(1));
    result = tensor::InsertSliceOp::create(rewriter, loc, product, result, at, size, ones);
    first += width;
  }
  return result;
}

/// Whether every use of the projection's result is as the keys or values of an attention.
bool feedsKeysOrValues(mha::LinearOp op) {
  return llvm::all_of(op.getResult().getUses(), [](OpOperand &use) {
    auto attention = dyn_cast<mha::AttentionOp>(use.getOwner());
    return attention && (&use == &attention.getKeyMutable() || &use == &attention.getValueMutable());
  });
}

/// The tensor a projection writes its result to, [M, C] for the C columns it computes (its N
/// output features, and the padding columns of paddedProjectionWidth): a fresh allocation, a
/// fresh tensor of the result's shape collapsed to [M, N], or a view of an allocation whose
/// rows are longer (padding columns, or rows padded off L1-aliasing lengths). `finish` returns
/// the result's [M, N] as a view of that allocation, so that bufferization writes the
/// projection in place in it.
struct RowBuffer {
  RowBuffer(PatternRewriter &rewriter, Location loc, int64_t rows, int64_t columns,
            int64_t computedColumns, Type elementType, ArrayRef<Value> dynamicRows, int64_t padding)
      : rewriter(rewriter), loc(loc) {
    // Allocations rather than tensor.empty, which CSE would share between projections of the
    // same shape (the queries, keys and values): bufferization would then copy the first
    // one's result into the buffers of the others before they overwrite it.
    int64_t width = computedColumns + padding;
    Value whole = bufferization::AllocTensorOp::create(
        rewriter, loc, RankedTensorType::get({rows, width}, elementType), dynamicRows);
    if (width == columns) {
      destination = whole;
      return;
    }
    padded = whole;
    OpFoldResult rowCount = tensor::getMixedSize(rewriter, loc, padded, 0);
    sizes = {rowCount, rewriter.getIndexAttr(columns)};
    computedSizes = {rowCount, rewriter.getIndexAttr(computedColumns)};
    zeros.assign(2, rewriter.getIndexAttr(0));
    ones.assign(2, rewriter.getIndexAttr(1));
    destination = computedColumns == width ? padded : slice(padded, computedSizes);
  }

  /// A fresh tensor of `shape`, the result of a projection of `input` (whose leading sizes it
  /// shares), seen as [M, N] through `reassociation`.
  RowBuffer(PatternRewriter &rewriter, Location loc, RankedTensorType shape, Value input,
            ArrayRef<ReassociationIndices> reassociation)
      : rewriter(rewriter), loc(loc) {
    SmallVector<Value> dynamicSizes;
    for (int64_t i = 0; i + 1 < shape.getRank(); ++i)
      if (shape.isDynamicDim(i))
        dynamicSizes.push_back(tensor::DimOp::create(rewriter, loc, input, i));
    destination = tensor::CollapseShapeOp::create(
        rewriter, loc, tensor::EmptyOp::create(rewriter, loc, shape, dynamicSizes), reassociation);
  }

  /// The result's [M, N], from `written` (`destination` as the projection wrote it).
  Value finish(Value written) {
    if (!padded)
      return written;
    Value whole = written.getType() == padded.getType()
                      ? written
                      : tensor::InsertSliceOp::create(rewriter, loc, written, padded, zeros,
                                                      computedSizes, ones)
                            .getResult();
    return slice(whole, sizes);
  }

  /// [M, C], where the projection writes.
  Value destination;

private:
  Value slice(Value whole, ArrayRef<OpFoldResult> sliceSizes) {
    return tensor::ExtractSliceOp::create(rewriter, loc, whole, zeros, sliceSizes, ones);
  }

  PatternRewriter &rewriter;
  Location loc;
  Value padded;
  SmallVector<OpFoldResult> zeros, sizes, computedSizes, ones;
};

struct LinearOpLowering : OpRewritePattern<mha::LinearOp> {
  LinearOpLowering(MLIRContext *ctx, int64_t panelWidth, int64_t rowTile, int64_t cacheRows,
                   int64_t rowPadding, bool bf16Pairs, int64_t vectorLanes)
      : OpRewritePattern(ctx), panelWidth(panelWidth), rowTile(rowTile), cacheRows(cacheRows),
        rowPadding(rowPadding), bf16Pairs(bf16Pairs), vectorLanes(vectorLanes) {}

  LogicalResult matchAndRewrite(mha::LinearOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto inputType = op.getInput().getType();
    auto resultType = op.getResult().getType();
    Type elementType = resultType.getElementType();
    Type f32 = rewriter.getF32Type();
    int64_t rank = inputType.getRank();
    int64_t outFeatures = resultType.getDimSize(rank - 1);

    // Panel projections compute whole panels and column blocks, past the output width where
    // they would not fit it (paddedProjectionWidth); projections of bf16 pairs, one block of
    // whole panels, of bf16 inputs in whole pairs (pairedFeatures).
    int64_t computed = paddedProjectionWidth(outFeatures, this->panelWidth, vectorLanes, bf16Pairs);
    int64_t panelWidth = projectionPanelWidth(computed, this->panelWidth, vectorLanes);
    SmallVector<int64_t> blocks = columnBlocks(computed, panelWidth);
    if (blocks.empty())
      computed = outFeatures;
    bool pairs = bf16Pairs && blocks.size() == 1 && blocks.front() % panelWidth == 0;

    // Collapse the leading dimensions into one row dimension: [..., K] -> [M, K].
    Value input = pairs ? inBf16(rewriter, loc, op.getInput()) : op.getInput();
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
    // An odd input width's last feature paired with a zero: a copy of the input per call.
    input = zeroExtended(rewriter, loc, input, 1,
                         pairedFeatures(inputType.getDimSize(rank - 1), pairs));

    markParameter(op.getWeight());
    if (Value bias = op.getBias())
      markParameter(bias);
    // Keys and values are read again by every query block of their head: rows a multiple of
    // 1 KiB apart would crowd into a quarter of the sets of L1 and L2 (a head's 1 MiB of keys
    // and values at S = 2048 would not stay in L2), so their rows are padded (by default by
    // one cache line). (Not through tensor.reshape, which needs contiguous rows.)
    bool padRows = resultType.getNumDynamicDims() <= 1 && feedsKeysOrValues(op);
    // A result the layer returns is computed in a fresh tensor of its own shape, which
    // mhac-layer-results-to-out-arguments then makes the caller's out buffer. An [M, N] tensor
    // (not the out argument's type, as where padding columns are computed) gets a buffer of
    // its own, copied into `out` at the end on one thread.
    bool returned = rank != 2 && resultType.getNumDynamicDims() <= 1 && computed == outFeatures &&
                    llvm::all_of(op->getUsers(), llvm::IsaPred<func::ReturnOp>);
    RowBuffer resultBuffer =
        returned ? RowBuffer(rewriter, loc, resultType, op.getInput(), reassociation)
                 : RowBuffer(rewriter, loc, rows, outFeatures, computed, elementType, dynamicRows,
                             padRows ? rowPaddingOf(computed, elementType, rowPadding) : 0);
    Value accumulator =
        elementType == f32
            ? resultBuffer.destination
            : tensor::EmptyOp::create(rewriter, loc, ArrayRef<int64_t>{rows, computed}, f32,
                                      dynamicRows);
    Value product;
    if (!blocks.empty())
      product = blockedPanelProduct(rewriter, loc, input, op, accumulator, blocks, panelWidth,
                                    rowTile, cacheRows, pairs,
                                    elementType == f32 ? Value() : resultBuffer.destination);
    else
      product = matmulProduct(rewriter, loc, input, op, accumulator, rowPadding);

    // bf16 results round the f32 accumulator once (panel products already have).
    Value result = product;
    if (getElementTypeOrSelf(product.getType()) != elementType)
      result = roundAccumulators(rewriter, loc, product, resultBuffer.destination);
    result = resultBuffer.finish(result);

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
        // dimensions; tensor.reshape bufferizes to memref.reshape, which avoids it, but needs
        // contiguous rows: those of a projection that computed padding columns are copied.
        if (computed != outFeatures)
          result = linalg::CopyOp::create(
                       rewriter, loc, ValueRange{result},
                       ValueRange{bufferization::AllocTensorOp::create(
                           rewriter, loc, cast<RankedTensorType>(result.getType()), dynamicRows)})
                       .getResult(0);
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

  /// y = x * W^T + acc as a linalg.matmul on W^T [in, out] (rows padded where their length
  /// would alias in L1), for widths that are not a whole number of panels.
  static Value matmulProduct(PatternRewriter &rewriter, Location loc, Value input,
                             mha::LinearOp op, Value destination, int64_t rowPadding) {
    Value init = initAccumulator(rewriter, loc, op.getBias(), destination);
    auto accType = cast<RankedTensorType>(destination.getType());

    // y = x * W^T + acc. W comes in PyTorch's [out, in] layout; the matmul reads it as
    // [in, out], so that a row of W^T (the outputs of one input feature) is contiguous and the
    // register tiles broadcast x and load W^T.
    auto weightType = op.getWeight().getType();
    int64_t in = weightType.getDimSize(1), out = weightType.getDimSize(0);
    Type weightElement = weightType.getElementType();
    Value transposed;
    int64_t padding = rowPaddingOf(out, weightElement, rowPadding);
    if (padding == 0) {
      Value empty =
          tensor::EmptyOp::create(rewriter, loc, ArrayRef<int64_t>{in, out}, weightElement);
      transposed =
          linalg::TransposeOp::create(rewriter, loc, op.getWeight(), empty, ArrayRef<int64_t>{1, 0})
              .getResult()[0];
      markPrepared(transposed);
    } else {
      // Rows a multiple of 1 KiB apart map to the same L1 sets: the register tiles, which read
      // one row of W^T per step, would evict each other. The rows are padded.
      Value padded = tensor::EmptyOp::create(rewriter, loc, ArrayRef<int64_t>{in, out + padding},
                                             weightElement);
      SmallVector<OpFoldResult> zeros(2, rewriter.getIndexAttr(0));
      SmallVector<OpFoldResult> sizes = {rewriter.getIndexAttr(in), rewriter.getIndexAttr(out)};
      SmallVector<OpFoldResult> ones(2, rewriter.getIndexAttr(1));
      Value view = tensor::ExtractSliceOp::create(rewriter, loc, padded, zeros, sizes, ones);
      Value written =
          linalg::TransposeOp::create(rewriter, loc, op.getWeight(), view, ArrayRef<int64_t>{1, 0})
              .getResult()[0];
      Value whole =
          tensor::InsertSliceOp::create(rewriter, loc, written, padded, zeros, sizes, ones);
      markPrepared(whole);
      transposed = tensor::ExtractSliceOp::create(rewriter, loc, whole, zeros, sizes, ones);
    }
    auto matmul = linalg::MatmulOp::create(rewriter, loc, TypeRange{accType},
                                           ValueRange{input, transposed}, ValueRange{init});
    matmul->setAttr(kProjectionAttr, rewriter.getUnitAttr());
    return matmul.getResult(0);
  }

  int64_t panelWidth, rowTile, cacheRows, rowPadding;
  bool bf16Pairs;
  int64_t vectorLanes;
};

struct ConvertMhaToLinalgPass : impl::ConvertMhaToLinalgBase<ConvertMhaToLinalgPass> {
  using Base::Base;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    if (panelWidth < 0 || rowTile < 0 || cacheRows < 0 || rowPadding < 0 || vectorLanes < 0) {
      getOperation().emitError("panel-width, row-tile, cache-rows, row-padding and "
                               "vector-lanes must not be negative");
      return signalPassFailure();
    }
    // The parameters no projection reads (q/k norm weights, sinks) are marked here; the
    // projections mark theirs as they are lowered.
    for (BlockArgument arg : getOperation().getArguments())
      if (llvm::any_of(arg.getUses(), mha::isParameterOperand))
        markParameter(arg);
    patterns.add<LinearOpLowering>(&getContext(), panelWidth, rowTile, cacheRows, rowPadding,
                                   bf16Pairs, vectorLanes);
    // One walk, without folding: each projection is rewritten exactly once, as written.
    walkAndApplyPatterns(getOperation(), std::move(patterns));
    // Projections of bf16 pairs read the tensors a widened layer widened: the widenings they
    // left unused go, so that no weight is read both prepared and as it is.
    if (bf16Pairs) {
      SmallVector<Operation *> dead;
      getOperation().walk([&](linalg::GenericOp op) {
        if (isOpTriviallyDead(op))
          dead.push_back(op);
      });
      for (Operation *op : dead)
        op->erase();
    }
  }
};

} // namespace
} // namespace mhac
