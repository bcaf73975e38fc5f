//===- Schedule.h - how a layer is computed, as one value -------*- C++ -*-===//
//
// Part of mhac. A schedule holds every decision that changes how fast a layer runs and never
// what it computes. It is plain data: read from a schedule file or from the target's default
// file (ScheduleFile.h), checked against the knob table (Knobs.h), and handed to the lowering.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_COMPILER_SCHEDULES_SCHEDULE_H
#define MHAC_COMPILER_SCHEDULES_SCHEDULE_H

#include <cstdint>
#include <string>

namespace mhac {

/// What generates a layer's code: MLIR's CPU pipeline (the main backend), Halide
/// (`--backend halide`), or MLIR's GPU pipeline, which `--target cuda:*` selects. Each has knobs
/// of its own.
enum class Backend { Mlir, Halide, Cuda };

/// How a block's query rows are transposed so that its columns become vectors.
enum class QueryTranspose {
  Tiles,    ///< lanes x lanes tiles transposed in registers (the last one narrower)
  Elements, ///< element by element
};

/// How those register tiles are transposed (MLIR's vector.transpose lowerings).
enum class TransposeLowering {
  Shuffle16x16, ///< the 16 x 16 shuffle network (other shapes: as Shuffle1D)
  Shuffle1D,    ///< one shuffle per row
  Elements,     ///< one element move each
};

/// What attention's two products multiply.
enum class AttentionCompute {
  /// f32 on the FMAs (bf16 inputs widened as they are loaded).
  F32,
  /// bf16 pairs on AVX512-BF16's vdpbf16ps with f32 sums, in register tiles: the queries, keys
  /// and values rounded to bf16, and the probabilities too (as FlashAttention does), the
  /// softmax in f32.
  Dot,
  /// As Dot, on AMX's tiles.
  Amx,
};

/// How a bf16 layer computes (f32 layers: always f32).
enum class Bf16Compute {
  /// Its tensors widened to f32 once at the layer's edges (inputs per call, weights in their
  /// preparation), the f32 kernels, intermediates in f32, the result rounded to bf16.
  F32,
  /// bf16 in memory throughout: the kernels widen each element they load, and the queries,
  /// keys, values and attention output are rounded to bf16.
  Bf16,
  /// As F32, but the projections multiply bf16 by bf16 on AVX512-BF16's pair dot products
  /// (vdpbf16ps, f32 sums): their inputs stay bf16 (the attention output is rounded to bf16
  /// first), their weights are prepared as bf16 pairs.
  Dot,
  /// As Dot, on AMX's tiles: each register tile of the projections is 16 x 16 output tiles
  /// accumulated by tdpbf16ps, 16 input pairs a step (rows at the edges on vdpbf16ps).
  Amx,
};

/// Tiling of the four projections, as matmuls [M = rows, N = out features, K = in features].
struct ProjectionSchedule {
  /// Cache tiles over [M, N]: the parallel tasks. A tile's rows and one weight panel at a time
  /// stay in L2 while the register tiles pass over them.
  int64_t cacheRows = 0, cacheCols = 0;
  /// Register tiles over [M, N]: rows x columns of f32 accumulators, over the whole reduction.
  /// `registerCols` is also the width of a packed weight panel.
  int64_t registerRows = 0, registerCols = 0;
  /// Projections whose weights are not packed (widths that are no whole number of panels)
  /// split a cache tile's reduction into blocks of this many input features.
  int64_t reductionBlock = 0;
  /// Panel projections split a cache tile's reduction into blocks of this many input features
  /// (0: one block, the whole reduction), so that a block of a panel stays in L2 while every
  /// register tile of the cache tile passes over it.
  int64_t panelReductionBlock = 0;
  /// Steps of a panel register tile's reduction loop per iteration (unrolled).
  int64_t reductionUnroll = 0;
  /// Splits a projection's last cache tile off into a projection of its own, whose edge rows
  /// are then a static register tile.
  bool splitLastCacheTile = false;
  /// The register tiles over a block of a weight panel prefetch, shared out between them, the
  /// block the thread reads next (mhac-prefetch-weight-panels).
  bool prefetchNextBlock = false;
  /// Elements of padding after each row of keys, values and unpacked transposed weights whose
  /// width is a multiple of 256 (rows 1 KiB apart share L1 cache sets); 0 pads nothing.
  int64_t rowPadding = 0;
  /// Side of the square tiles the unpacked weights are transposed in (preparation only).
  int64_t transposeTile = 0;
};

/// Blocking of attention (see convert-mha-attention-to-loops).
struct AttentionSchedule {
  /// Query rows of a block (fewer when the sequence is shorter), and of a block whose rows are
  /// the heads of a group (grouped-query layers).
  int64_t queryBlock = 0, groupedQueryBlock = 0;
  /// Calls with at least this many keys run blocks `longBlockGrowth` times as tall (0: none
  /// do), so that each key and value row read from L3 serves that many more queries. A layer
  /// whose keys are known at run time only gets both loop nests and chooses per call.
  int64_t longKeys = 0, longBlockGrowth = 1;
  /// Keys per block of scores.
  int64_t keyBlock = 0;
  /// The score tile: keys x vectors of the block's queries.
  int64_t scoreTileKeys = 0, scoreTileVectors = 0;
  /// The p.v tile: query rows x vectors of the head.
  int64_t valueTileRows = 0, valueTileVectors = 0;
  QueryTranspose queryTranspose = QueryTranspose::Tiles;
  TransposeLowering transposeLowering = TransposeLowering::Shuffle16x16;
  /// Key tiles ahead that a score tile prefetches (0: none).
  int64_t keyPrefetchDistance = 0;
  /// A score tile prefetches the value rows of its keys.
  bool prefetchValues = false;
  /// The first key block prefetches the next task's query rows and this block's output rows.
  bool prefetchNextBlock = false;
  /// Calls of at most this many query positions against a KV cache take the split-cache
  /// decode nest (0: none do), whose tasks are chunks of `decodeChunk` keys of one row with an
  /// online softmax over blocks of `decodeKeyBlock` keys.
  int64_t decodePositions = 0, decodeChunk = 0, decodeKeyBlock = 0;
  AttentionCompute compute = AttentionCompute::F32;
};

/// One of Halide's autoschedulers, in place of the Halide backend's knobs.
enum class HalideAutoscheduler { None, Mullapudi2016, Adams2019, Li2018, Anderson2021 };

/// The Halide backend's schedule (mhac-halide's HalideScheduling.cpp): register-tiled matrix
/// products, Halide's idiom, for the projections and both products of attention.
struct HalideSchedule {
  /// A projection's register tile (vectors of output features x rows), and the rows of one of
  /// its parallel tasks.
  int64_t projectionVectors = 0, projectionRows = 0, projectionTaskRows = 0;
  /// Input features per reduction block: the block of a weight panel stays in L1.
  int64_t projectionReductionBlock = 0;
  /// Query rows of an attention task.
  int64_t queryBlock = 0;
  /// The score tile (vectors of keys x query rows) and the p.v tile (vectors of a head's
  /// features x query rows).
  int64_t scoreVectors = 0, scoreRows = 0, valueVectors = 0, valueRows = 0;
  /// Keys per block of p.v: the block's values stay in L1.
  int64_t keyBlock = 0;
  /// Not None: that autoscheduler schedules the pipeline, and the knobs above are unused.
  HalideAutoscheduler autoscheduler = HalideAutoscheduler::None;
};

/// The CUDA target's kernels (compiler/gpu/kernels): f32 arithmetic on CUDA cores and bf16
/// products on tensor cores, tiled through shared memory. Zero on CPU targets, whose schedules
/// never read them.
struct CudaSchedule {
  /// A projection block's tile of the output (rows x columns), the input features it stages
  /// in shared memory at a time, and one thread's tile of it, held in registers.
  int64_t projectionBlockRows = 0, projectionBlockCols = 0, projectionKBlock = 0;
  int64_t projectionThreadRows = 0, projectionThreadCols = 0;
  /// Query rows of an attention block, keys per shared-memory tile, and threads per query row
  /// (each holds a strided slice of the head).
  int64_t attentionQueryBlock = 0, attentionKeyBlock = 0, attentionRowThreads = 0;
  /// The tensor-core projections of bf16 layers (mma.sync): a block's tile of the output, its
  /// grid of warps, and the shared-memory buffers the reduction streams through.
  int64_t mmaBlockRows = 0, mmaBlockCols = 0, mmaWarpRows = 0, mmaWarpCols = 0, mmaStages = 0;
  /// Tensor-core attention of bf16 layers: warps of a block (16 query rows each), heads of a
  /// grouped-query group that a block takes together (their warps share the key and value
  /// tiles), and keys per shared-memory tile.
  int64_t mmaAttentionWarps = 0, mmaAttentionGroupHeads = 0, mmaAttentionKeyBlock = 0;
};

struct Schedule {
  ProjectionSchedule projection;
  AttentionSchedule attention;
  HalideSchedule halide;
  CudaSchedule cuda;
  Bf16Compute bf16Compute = Bf16Compute::F32;
  /// The expert's escape hatch: a transform-dialect file that replaces the projections' tiling
  /// script (transforms/tiling.mlir), tied to MLIR 22's transform ops. Empty: the library's.
  /// Not a knob: nothing enumerates or fits it, and the projection knobs still reach the
  /// script as parameters.
  std::string projectionTransform;

  /// Whether the projections multiply bf16 pairs (`dot` or `amx`): their weights are prepared
  /// as bf16, in the pair layout.
  bool pairProducts() const {
    return bf16Compute == Bf16Compute::Dot || bf16Compute == Bf16Compute::Amx;
  }

  bool operator==(const Schedule &other) const;
  bool operator!=(const Schedule &other) const { return !(*this == other); }
};

} // namespace mhac

#endif // MHAC_COMPILER_SCHEDULES_SCHEDULE_H
