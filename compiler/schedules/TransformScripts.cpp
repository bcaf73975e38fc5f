//===- TransformScripts.cpp - a schedule's transform-dialect scripts ------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "compiler/schedules/TransformScripts.h"

#include "llvm/Support/FormatVariadic.h"

namespace mhac {

std::string buildTilingScript(const Schedule &schedule) {
  const ProjectionSchedule &p = schedule.projection;
  // Each projection matmul is tiled into cache tiles that form an scf.forall (run by the
  // runtime's thread pool), with its accumulator initialization (the bias broadcast or zero
  // fill) fused into each tile. Inside, register tiles: the row and column loops are peeled so
  // that every full tile has a static shape and vectorizes plainly, and the partial tiles at the
  // edges (dynamic batch, S = 197, odd widths) are vectorized with masks. The weight transposes
  // run as parallel tiles.
  return llvm::formatv(R"mlir(
module attributes {{transform.with_named_sequence} {{
  // Splits the full iterations of a loop from its last, partial one (fails on a loop whose
  // trip count divides evenly, which then needs nothing).
  transform.named_sequence @peel(%loop: !transform.any_op {{transform.readonly}) {{
    %for = transform.cast %loop : !transform.any_op to !transform.op<"scf.for">
    %main, %rest = transform.loop.peel %for
        : (!transform.op<"scf.for">) -> (!transform.any_op, !transform.any_op)
    transform.yield
  }

  // Matches a register tile of static shape: every loop range known.
  transform.named_sequence @match_full_tile(%op: !transform.any_op {{transform.readonly})
      -> !transform.any_op {{
    transform.match.operation_name %op ["linalg.matmul"] : !transform.any_op
    %m, %n, %k = transform.match.structured %op
        : (!transform.any_op) -> (!transform.param<i64>, !transform.param<i64>,
                                  !transform.param<i64>) {{
    ^bb0(%s: !transform.any_op):
      %d0 = transform.match.structured.dim %s[0] : (!transform.any_op) -> !transform.param<i64>
      %d1 = transform.match.structured.dim %s[1] : (!transform.any_op) -> !transform.param<i64>
      %d2 = transform.match.structured.dim %s[2] : (!transform.any_op) -> !transform.param<i64>
      transform.match.structured.yield %d0, %d1, %d2
          : !transform.param<i64>, !transform.param<i64>, !transform.param<i64>
    }
    %zero = transform.param.constant 0 : i64 -> !transform.param<i64>
    transform.match.param.cmpi ge %m, %zero : !transform.param<i64>
    transform.match.param.cmpi ge %n, %zero : !transform.param<i64>
    transform.match.param.cmpi ge %k, %zero : !transform.param<i64>
    transform.yield %op : !transform.any_op
  }

  // Matches a matmul whose reduction is deeper than one reduction block.
  transform.named_sequence @match_deep_reduction(%op: !transform.any_op {{transform.readonly})
      -> !transform.any_op {{
    transform.match.operation_name %op ["linalg.matmul"] : !transform.any_op
    %k = transform.match.structured %op : (!transform.any_op) -> !transform.param<i64> {{
    ^bb0(%s: !transform.any_op):
      %d2 = transform.match.structured.dim %s[2] : (!transform.any_op) -> !transform.param<i64>
      transform.match.structured.yield %d2 : !transform.param<i64>
    }
    %block = transform.param.constant {5} : i64 -> !transform.param<i64>
    transform.match.param.cmpi gt %k, %block : !transform.param<i64>
    transform.yield %op : !transform.any_op
  }

  // Splits the reduction into blocks, the last one peeled if partial.
  transform.named_sequence @block_reduction(%op: !transform.any_op {{transform.consumed}) {{
    %blocked, %depth = transform.structured.tile_using_for %op tile_sizes [0, 0, {5}]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.include @peel failures(suppress) (%depth) : (!transform.any_op) -> ()
    transform.yield
  }

  // Tiles the reduction of a full register tile and vectorizes it.
  transform.named_sequence @vectorize_full_tile(%tile: !transform.any_op {{transform.consumed}) {{
    %step, %reduction = transform.structured.tile_using_for %tile tile_sizes [0, 0, {4}]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.structured.vectorize %step : !transform.any_op
    transform.yield
  }

  // Matches a panel projection's register tile of static shape.
  transform.named_sequence @match_full_panel_tile(%op: !transform.any_op {{transform.readonly})
      -> !transform.any_op {{
    transform.match.operation_name %op ["linalg.generic"] : !transform.any_op
    transform.match.structured %op : !transform.any_op {{
    ^bb0(%s: !transform.any_op):
      %zero = transform.param.constant 0 : i64 -> !transform.param<i64>
      %d0 = transform.match.structured.dim %s[0] : (!transform.any_op) -> !transform.param<i64>
      %d3 = transform.match.structured.dim %s[3] : (!transform.any_op) -> !transform.param<i64>
      transform.match.param.cmpi ge %d0, %zero : !transform.param<i64>
      transform.match.param.cmpi ge %d3, %zero : !transform.param<i64>
      transform.match.structured.yield
    }
    transform.yield %op : !transform.any_op
  }

  transform.named_sequence @vectorize_full_panel_tile(%tile: !transform.any_op {{transform.consumed}) {{
    %step, %reduction = transform.structured.tile_using_for %tile tile_sizes [0, 0, 0, 1]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.annotate %reduction "mhac.panel_reduction" : !transform.any_op
    transform.structured.vectorize %step : !transform.any_op
    transform.yield
  }

  // Matches an accumulator initialization (the bias broadcast or the zero fill) of static shape.
  transform.named_sequence @match_full_init(%op: !transform.any_op {{transform.readonly})
      -> !transform.any_op {{
    transform.match.operation_name %op ["linalg.generic", "linalg.fill"] : !transform.any_op
    transform.match.structured %op : !transform.any_op {{
    ^bb0(%s: !transform.any_op):
      %zero = transform.param.constant 0 : i64 -> !transform.param<i64>
      %d0 = transform.match.structured.dim %s[0] : (!transform.any_op) -> !transform.param<i64>
      transform.match.param.cmpi ge %d0, %zero : !transform.param<i64>
      transform.match.structured.yield
    }
    transform.yield %op : !transform.any_op
  }

  transform.named_sequence @vectorize(%op: !transform.any_op {{transform.consumed}) {{
    transform.structured.vectorize %op : !transform.any_op
    transform.yield
  }

  transform.named_sequence @__transform_main(%root: !transform.any_op {{transform.readonly}) {{
    // Panel projections (weights packed as [N / P][K][P]): cache tiles of rows x panels as an
    // scf.forall; inside, one panel at a time, and for each panel the register tiles of rows x
    // that panel, each over the whole reduction: its accumulators start from the bias (or zero)
    // in registers and are stored once, and the panel (K x P) stays in L2 while the cache
    // tile's rows pass over it. `structured.fuse` moves the initialization into each register
    // tile through the loops' iteration arguments. Full tiles are vectorized and their
    // reduction loops marked to be unrolled; edge rows of a dynamic count go one by one. A
    // projection of at most a cache tile's rows (a small layer, or the last cache tile that
    // convert-mha-to-linalg splits off) has a forall dimension of one iteration: the loop
    // canonicalization, which knows the induction variables' ranges, folds its tile sizes to
    // the static row count, so that its edge register tile is static and vectorized whole.
    %panelProjections = transform.structured.match ops{{["linalg.generic"]}
        attributes {{mhac.projection} in %root : (!transform.any_op) -> !transform.any_op
    transform.foreach %panelProjections : !transform.any_op {{
    ^bb0(%projection: !transform.any_op):
      %init = transform.get_producer_of_operand %projection[2]
          : (!transform.any_op) -> !transform.any_op
      %tiled, %tiles = transform.structured.tile_using_forall %projection
          tile_sizes [{0}, {6}]
          : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
      %fusedInit, %forall = transform.structured.fuse_into_containing_op %init into %tiles
          : (!transform.any_op, !transform.any_op) -> (!transform.any_op, !transform.any_op)
      %micro, %panels, %rows = transform.structured.fuse %tiled tile_sizes [{2}, 1, 0, 0]
          interchange [1, 0, 2, 3]
          : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op)
      transform.include @peel failures(suppress) (%rows) : (!transform.any_op) -> ()
      transform.apply_patterns to %forall {{
        transform.apply_patterns.scf.for_loop_canonicalization
        transform.apply_patterns.canonicalization
      } : !transform.any_op
      %vectorized = transform.foreach_match in %forall
          @match_full_panel_tile -> @vectorize_full_panel_tile
          : (!transform.any_op) -> !transform.any_op
      %partial = transform.structured.match ops{{["linalg.generic"]}
          attributes {{mhac.projection} in %vectorized : (!transform.any_op) -> !transform.any_op
      transform.foreach %partial : !transform.any_op {{
      ^bb1(%tile: !transform.any_op):
        %row, %rowLoop, %rowReduction = transform.structured.tile_using_for %tile
            tile_sizes [1, 0, 0, 1]
            : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op)
        transform.structured.vectorize %row : !transform.any_op
        transform.yield
      }
      // The initializations left: a full tile's is vectorized whole (its broadcast then
      // becomes the accumulators' first value), an edge tile's one row at a time.
      %withInits = transform.foreach_match in %vectorized @match_full_init -> @vectorize
          : (!transform.any_op) -> !transform.any_op
      %edgeInits = transform.structured.match interface{{LinalgOp} in %withInits
          : (!transform.any_op) -> !transform.any_op
      transform.foreach %edgeInits : !transform.any_op {{
      ^bb1(%edgeInit: !transform.any_op):
        %row, %rowLoop = transform.structured.tile_using_for %edgeInit tile_sizes [1]
            : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
        transform.structured.vectorize %row : !transform.any_op
        transform.yield
      }
      transform.yield
    }

    %matmuls = transform.structured.match ops{{["linalg.matmul"]} in %root
        : (!transform.any_op) -> !transform.any_op
    transform.foreach %matmuls : !transform.any_op {{
    ^bb0(%matmul: !transform.any_op):
      // Only the accumulator's initialization joins the cache tile: fusing the weight's
      // transpose too would transpose its panel again for every row tile.
      %init = transform.get_producer_of_operand %matmul[2]
          : (!transform.any_op) -> !transform.any_op
      %tiled, %tiles = transform.structured.tile_using_forall %matmul tile_sizes [{0}, {1}]
          : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
      %fusedInit, %forall = transform.structured.fuse_into_containing_op %init into %tiles
          : (!transform.any_op, !transform.any_op) -> (!transform.any_op, !transform.any_op)
      // Blocks of the reduction where it is deeper than one block: each block's slice of a
      // weight column panel (reduction block x register columns) stays in L1 while every row
      // tile of the cache tile passes over it (the column loop outside the row loop).
      %reblocked = transform.foreach_match in %forall @match_deep_reduction -> @block_reduction
          : (!transform.any_op) -> !transform.any_op
      %blocked = transform.structured.match ops{{["linalg.matmul"]} in %reblocked
          : (!transform.any_op) -> !transform.any_op
      %micro, %columns, %rows = transform.structured.tile_using_for %blocked
          tile_sizes [{2}, {3}, 0] interchange = [1, 0, 2]
          : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op)
      transform.include @peel failures(suppress) (%columns) : (!transform.any_op) -> ()
      transform.include @peel failures(suppress) (%rows) : (!transform.any_op) -> ()
      // Peeled loops' tiles become static once their sizes fold.
      transform.apply_patterns to %reblocked {{
        transform.apply_patterns.canonicalization
      } : !transform.any_op
      // Full tiles: the reduction loop innermost, vectorized plainly (a transform.foreach with a
      // suppressed failure would stop at the first partial tile, so they are picked by shape).
      %vectorized = transform.foreach_match in %reblocked @match_full_tile -> @vectorize_full_tile
          : (!transform.any_op) -> !transform.any_op
      // Partial tiles at the edges (dynamic batch, S = 197, odd widths): one row at a time,
      // still with the reduction innermost so the row's accumulators stay in registers; masks
      // only along a ragged last column tile.
      %partial = transform.structured.match ops{{["linalg.matmul"]} in %vectorized
          : (!transform.any_op) -> !transform.any_op
      transform.foreach %partial : !transform.any_op {{
      ^bb1(%tile: !transform.any_op):
        %row, %rowLoop, %rowReduction = transform.structured.tile_using_for %tile
            tile_sizes [1, 0, {4}]
            : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op)
        transform.structured.vectorize %row vector_sizes [1, {3}, {4}] : !transform.any_op
        transform.yield
      }
      transform.yield
    }
    %transposes = transform.structured.match ops{{["linalg.transpose"]} in %root
        : (!transform.any_op) -> !transform.any_op
    transform.foreach %transposes : !transform.any_op {{
    ^bb0(%transpose: !transform.any_op):
      %tiled, %forall = transform.structured.tile_using_forall %transpose tile_sizes [{7}, {7}]
          : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
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
    // The accumulator tiles leave their reduction loops: read before, carried in registers as
    // loop values, written after (innermost loops come first in the match). On canonical IR,
    // where the slices of the same tile are recognizably the same.
    %loops = transform.structured.match ops{{["scf.for"]} in %root
        : (!transform.any_op) -> !transform.any_op
    transform.foreach %loops : !transform.any_op {{
    ^bb0(%loop: !transform.any_op):
      transform.loop.hoist_loop_invariant_subsets %loop : !transform.any_op
      transform.yield
    }
    transform.yield
  }
}
)mlir",
                       p.cacheRows, p.cacheCols, p.registerRows, p.registerCols,
                       /*reduction step=*/1, p.reductionBlock, p.cacheCols / p.registerCols,
                       p.transposeTile)
      .str();
}

/// The name of a vector.transpose lowering strategy in transform IR.
static const char *transposeStrategy(TransposeLowering lowering) {
  switch (lowering) {
  case TransposeLowering::Shuffle16x16:
    return "shuffle_16x16";
  case TransposeLowering::Shuffle1D:
    return "shuffle_1d";
  case TransposeLowering::Elements:
    break;
  }
  return "eltwise";
}

std::string buildVectorLoweringScript(const Schedule &schedule) {
  // LLVM does not unroll a reduction loop of a dozen FMAs by itself; the schedule does, where
  // it asks to (loop.unroll leaves a marked remainder loop where the factor does not divide).
  std::string unroll;
  if (schedule.projection.reductionUnroll > 1)
    unroll = llvm::formatv(R"mlir(
    %reductions = transform.structured.match ops{{["scf.for"]} attributes {{mhac.panel_reduction}
        in %hoisted : (!transform.any_op) -> !transform.any_op
    transform.foreach %reductions : !transform.any_op {{
    ^bb0(%reduction: !transform.any_op):
      transform.loop.unroll %reduction {{factor = {0}} : !transform.any_op
      transform.yield
    })mlir",
                           schedule.projection.reductionUnroll)
                 .str();
  return std::string(R"mlir(
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %funcs = transform.structured.match ops{["func.func"]} in %root
        : (!transform.any_op) -> !transform.any_op
    // The accumulator tile is read before and written after the reduction loop, not in it.
    %hoisted = transform.structured.hoist_redundant_vector_transfers %funcs
        : (!transform.any_op) -> !transform.any_op
    // Each group of lowerings runs to a fixpoint on its own: mixed in one set with
    // canonicalization, some of them (lower_shape_cast, transfer permutations on 1-row tiles)
    // rewrite each other's results forever. Shape casts are left to the LLVM conversion.
    transform.apply_patterns to %hoisted {
      transform.apply_patterns.vector.lower_contraction lowering_strategy = "outerproduct"
      transform.apply_patterns.vector.lower_multi_reduction lowering_strategy = "innerparallel"
    } : !transform.any_op
    transform.apply_patterns to %hoisted {
      transform.apply_patterns.vector.transfer_permutation_patterns
    } : !transform.any_op
    transform.apply_patterns to %hoisted {
      transform.apply_patterns.vector.lower_outerproduct
      transform.apply_patterns.vector.lower_broadcast
    } : !transform.any_op
    // Attention's query tiles, transposed in registers.
    transform.apply_patterns to %hoisted {
      transform.apply_patterns.vector.lower_transpose lowering_strategy = ")mlir") +
         transposeStrategy(schedule.attention.transposeLowering) + R"mlir("
    } : !transform.any_op
    transform.apply_patterns to %hoisted {
      transform.apply_patterns.canonicalization
    } : !transform.any_op)mlir" +
         unroll + R"mlir(
    transform.yield
  }
}
)mlir";
}

} // namespace mhac
