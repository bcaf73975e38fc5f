//===- Schedule.cpp - default schedules and their transform scripts -------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "compiler/schedules/Schedule.h"

#include "llvm/Support/FormatVariadic.h"

namespace mhac {

Schedule defaultSchedule(const CpuTarget &target) {
  Schedule schedule;
  // A register tile of rows x (2 vectors) f32 accumulators: 8 x 32 fills 16 of the 32 zmm
  // registers on AVX-512; 6 x 16 fills 12 of the 16 ymm registers on AVX2.
  if (target.vectorBits >= 512)
    schedule.projection.registerTile = {8, 32, 1};
  else
    schedule.projection.registerTile = {6, 16, 1};
  return schedule;
}

std::string buildTransformScript(const Schedule &schedule) {
  const ProjectionSchedule &p = schedule.projection;
  // Tile each projection matmul into cache tiles, pulling its accumulator initialization (the
  // bias broadcast or zero fill) into the tile; the cache tiles form an scf.forall, run by the
  // runtime's thread pool. Then into register tiles, which are vectorized
  // with masks so that row counts that are not multiples of the tile (dynamic batch, S = 197)
  // still get vector code. The initialization tiles stay scalar loops for LLVM to vectorize:
  // MLIR 22's masked vectorizer fails on a broadcast read whose tile is partly dynamic.
  // Masked transfers become transfers with a mask operand before any canonicalization, which
  // would otherwise fold tensor casts into vector.mask regions and break them.
  return llvm::formatv(R"mlir(
module attributes {{transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {{transform.readonly}) {
    %matmuls = transform.structured.match ops{{["linalg.matmul"]} in %root
        : (!transform.any_op) -> !transform.any_op
    transform.foreach %matmuls : !transform.any_op {{
    ^bb0(%matmul: !transform.any_op):
      %tiled, %loop = transform.structured.fuse %matmul tile_sizes [{0}, {1}, 0] {{use_forall}
          : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
      %init = transform.get_producer_of_operand %tiled[2]
          : (!transform.any_op) -> !transform.any_op
      %micro, %microLoops:3 = transform.structured.tile_using_for %tiled
          tile_sizes [{2}, {3}, {4}]
          : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op,
                                    !transform.any_op)
      %initTile, %initLoops:2 = transform.structured.tile_using_for %init tile_sizes [{2}, {3}]
          : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op)
      transform.structured.vectorize %micro vector_sizes [{2}, {3}, {4}] : !transform.any_op
      transform.yield
    }
    %funcs = transform.structured.match ops{{["func.func"]} in %root
        : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %funcs {{
      transform.apply_patterns.vector.lower_masked_transfers
    } : !transform.any_op
    transform.apply_patterns to %funcs {{
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.yield
  }
}
)mlir",
                       p.cacheTile[0], p.cacheTile[1], p.registerTile[0], p.registerTile[1],
                       p.registerTile[2])
      .str();
}

} // namespace mhac
