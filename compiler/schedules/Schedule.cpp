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
  // A projection's register tile is rows x one weight panel of f32 accumulators: 6 x 64 fills
  // 24 of the 32 zmm registers on AVX-512 (4 loads and 6 broadcasts feed 24 FMAs, against 10
  // for 16 with 8 x 32); 6 x 16 fills 12 of the 16 ymm registers on AVX2. Their reduction loops
  // are unrolled by 4: a step is then its loads and FMAs alone (AVX2: 21 instructions for 12
  // FMAs, was 31 with the loop's and a prefetch's), which matters most when a core's front end
  // is shared. Zen 3 VM, (1, 128, 768, 12), 1 thread, medians: 13.7 -> 9.1 ms, oneDNN 10.7.
  // A register tile runs over the whole reduction, its accumulators in registers from the bias
  // to the one store, and reads its panel (K x 64 on AVX-512: 192 KiB at K = 768) from L2. The
  // tiles used to stop every 128 inputs, with the panel's 32 KiB block in L1: each block then
  // loaded and stored every accumulator (the cache tile's 66 KiB of them from L2), and the
  // bias was first written over the whole cache tile (a burst of stores, each line fetched for
  // ownership). Predicted from perf's shares (bias 4%, accumulators) and a C copy of both loop
  // nests (4-9% apart): 5-10% off a projection. Xeon, 1 thread, alternating, medians of 5, a
  // projection-only layer of 2048 rows at D = 1024: 119.6 -> 110.9 ms; 1024 rows at D = 768:
  // 31.2 -> 29.6. The weight prefetches that fetched the next block into L1 then cost 6% at
  // D = 1024 (a whole panel to fetch, with the cache tile's inputs, crowds L2) and nothing at
  // D = 768, on AVX2 code 2-5%: they are gone. A cache tile is 258 rows (43 register tiles)
  // x one panel: its inputs (rows x K: 1 MiB at K = 1024) and its panel stay in L2 together,
  // where two panels of 128 columns measured 5% slower at D = 1024 and the same at D = 768.
  // Whole layers, 1 thread, old -> new: (4, 512, 1024, 16) 151.6 -> 134.7 ms, (1, 512, 768,
  // 12) 21.0 -> 20.7, (8, 128) 35.5 -> 34.0, causal (1, 2048) 116.1 -> 112.6; 2 threads: 75.3
  // -> 68.4, 10.97 -> 10.15, 16.4 -> 15.8, 58.3 -> 56.3. 258 is the multiple of 6 nearest 256:
  // with 256, every cache tile ended in 4 rows run one by one (1 x 64 tiles, each
  // accumulator's FMAs a latency apart).
  // On AVX2 (L2 of 256 KiB to 1 MiB; Zen 3: 512 KiB) a cache tile of 72 rows keeps its inputs
  // in L2 up to K = 1024 (288 KiB), where 256 rows (768 KiB at K = 768) came from L3 for every
  // panel; cachegrind, Zen 3's L2, (1, 512, 768, 12): 17.3M -> 5.9M misses. A multiple of 6,
  // so no tile has edge rows but the last.
  // Attention's two products are register tiles too. On AVX-512 both fill 24 zmm: a block of 48
  // queries is 3 vectors, the score tile 8 keys x those 3 vectors (3 loads and 8 broadcasts per
  // 24 FMAs), the p.v tile 6 query rows x the head of 64 in 4 vectors (4 loads, 6 broadcasts).
  // Blocks of 64 queries (4 vectors) had a 6 x 4 score tile but only a 4 x 4 p.v tile (64 is no
  // multiple of 6): 8 loads per 16 FMAs. Xeon, 1 thread, alternating, medians of 3-7 rounds,
  // 64 -> 48: (1, 512, 768, 12) 20.98 -> 20.52 ms, (1, 197) 6.75 -> 6.63, causal (1, 2048)
  // 116.8 -> 115.1, (4, 512, 1024, 16) 142.1 -> 139.5, (8, 128) 31.4 -> 31.5. A grouped
  // layer's block keeps 64 rows: 48 would be 12 positions of each of 4 heads, no whole vectors,
  // and its queries would be transposed element by element.
  // On AVX2 both attention products are the projections' 6 x 16 (6 rows x 2 ymm, 12 accumulators, 2
  // loads and 6 broadcasts per 12 FMAs): 6 keys x a 16-query chunk of the block, 6 query rows x 16
  // columns of the head. The tiles they replaced, 2 x 32 (8 accumulators, 6 loads per 8 FMAs, each
  // accumulator's FMAs a latency apart), ran both products at 63 GFLOP/s in a C copy of the two
  // loop nests, the 6 x 16 tiles at 76 (bench/micro/attention_tiles.c, clang, Zen 3). Blocks of 48
  // queries and 48 keys are multiples of 6 rows and of 8 lanes; their scratch (queries 12 KiB,
  // scores 9, accumulators 12) stays about Zen 3's 32 KiB L1 wide. Zen 3 VM, 1 thread, medians of
  // 6-8 rounds, old -> new: (1, 512, 768, 12) 53.4 -> 52.0 ms, (8, 128, 768, 12) 81.6 -> 77.8, (1,
  // 197, 768, 12) 17.4 -> 16.6, (1, 2048, 768, 12) causal 272 -> 265.
  // The defaults of ProjectionSchedule and AttentionSchedule are AVX-512's.
  if (target.vectorBits < 512) {
    schedule.projection.cacheTile = {72, 128};
    schedule.projection.registerTile = {6, 16, 1};
    schedule.attention = {/*queryBlock=*/48, /*groupedQueryBlock=*/48, /*keyBlock=*/48,
                          /*vectorLanes=*/8, /*accumulatorRegisters=*/12, /*tileVectors=*/2};
  }
  return schedule;
}

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
      // weight column panel (kc x 32) stays in L1 while every row tile of the cache tile passes
      // over it (the column loop outside the row loop).
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
      %tiled, %forall = transform.structured.tile_using_forall %transpose tile_sizes [64, 64]
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
                       p.cacheTile[0], p.cacheTile[1], p.registerTile[0], p.registerTile[1],
                       p.registerTile[2], p.reductionBlock,
                       p.cacheTile[1] / p.registerTile[1])
      .str();
}

std::string buildVectorLoweringScript(const Schedule &schedule) {
  // LLVM does not unroll a reduction loop of a dozen FMAs by itself; the schedule does, where
  // it asks to (loop.unroll leaves a marked remainder loop where the factor does not divide).
  std::string unroll;
  if (schedule.projection.reductionUnroll > 1)
    unroll = llvm::formatv(R"mlir(
    %reductions = transform.structured.match ops{{["scf.for"]} attributes {{mhac.panel_reduction}
        in %root : (!transform.any_op) -> !transform.any_op
    transform.foreach %reductions : !transform.any_op {{
    ^bb0(%reduction: !transform.any_op):
      transform.loop.unroll %reduction {{factor = {0}} : !transform.any_op
      transform.yield
    })mlir",
                           schedule.projection.reductionUnroll)
                 .str();
  return R"mlir(
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
    // Attention's 16 x 16 query tiles transpose with shuffles (the default moves each element).
    transform.apply_patterns to %hoisted {
      transform.apply_patterns.vector.lower_transpose lowering_strategy = "shuffle_16x16"
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
