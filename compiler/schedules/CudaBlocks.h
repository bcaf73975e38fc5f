//===- CudaBlocks.h - the shape of the CUDA kernels' blocks -----*- C++ -*-===//
//
// Part of mhac. The threads and shared memory of each CUDA kernel's blocks under a schedule:
// shared by the rules that check the cuda_* knobs (Knobs.cpp) and by the code that launches
// the kernels (compiler/gpu/CudaKernels.cpp), so the two can never disagree.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_COMPILER_SCHEDULES_CUDABLOCKS_H
#define MHAC_COMPILER_SCHEDULES_CUDABLOCKS_H

#include "compiler/schedules/Schedule.h"

#include <cstdint>

namespace mhac {

/// The f32 projection (kernels/projection.mlir): a grid of thread tiles; the staged inputs and
/// weights, k_block rows of each, every row padded by one f32.
inline int64_t projectionThreads(const CudaSchedule &s) {
  return (s.projectionBlockRows / s.projectionThreadRows) *
         (s.projectionBlockCols / s.projectionThreadCols);
}
inline int64_t projectionSharedBytes(const CudaSchedule &s) {
  return 4 * s.projectionKBlock * (s.projectionBlockRows + 1 + s.projectionBlockCols + 1);
}

/// f32 attention (kernels/attention.mlir): row_threads threads per query row; a tile of keys
/// and one of values.
inline int64_t attentionThreads(const CudaSchedule &s) {
  return s.attentionQueryBlock * s.attentionRowThreads;
}
inline int64_t attentionSharedBytes(const CudaSchedule &s, int64_t headDim) {
  return 2 * 4 * s.attentionKeyBlock * headDim;
}

/// The tensor-core projection (kernels/projection_mma.mlir): its warps; `stages` buffers of
/// block rows + block columns, each a row of 32 bf16 padded to 40.
inline int64_t mmaThreads(const CudaSchedule &s) { return 32 * s.mmaWarpRows * s.mmaWarpCols; }
inline int64_t mmaSharedBytes(const CudaSchedule &s) {
  return s.mmaStages * (s.mmaBlockRows + s.mmaBlockCols) * 40 * 2;
}

/// Tensor-core attention (kernels/attention_mma.mlir): its warps, 16 query rows each, split
/// over group_heads heads; the queries of every warp, then a tile of keys and one of values,
/// in rows of head + 8 bf16.
inline int64_t mmaAttentionThreads(const CudaSchedule &s) { return 32 * s.mmaAttentionWarps; }
inline int64_t mmaAttentionQueryRows(const CudaSchedule &s) {
  return 16 * s.mmaAttentionWarps / s.mmaAttentionGroupHeads;
}
inline int64_t mmaAttentionSharedBytes(const CudaSchedule &s, int64_t headDim) {
  return (16 * s.mmaAttentionWarps + 2 * s.mmaAttentionKeyBlock) * (headDim + 8) * 2;
}

} // namespace mhac

#endif // MHAC_COMPILER_SCHEDULES_CUDABLOCKS_H
