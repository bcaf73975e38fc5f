// mhac's tiling of the projections, as a library of transform-dialect sequences.
//
// Each projection matmul is tiled into cache tiles that form an scf.forall (run by the
// runtime's thread pool), with its accumulator initialization (the bias broadcast or zero
// fill) fused into each tile. Inside, register tiles: the row and column loops are peeled so
// that every full tile has a static shape and vectorizes plainly, and the partial tiles at the
// edges (dynamic batch, S = 197, odd widths) are vectorized with masks. The weight transposes
// run as parallel tiles. Written for MLIR 22's transform dialect; the tile sizes are the
// schedule's knobs, passed to @__transform_main as !transform.param<i64>.
module attributes {transform.with_named_sequence} {
  // Splits the full iterations of a loop from its last, partial one (fails on a loop whose
  // trip count divides evenly, which then needs nothing).
  transform.named_sequence @peel(%loop: !transform.any_op {transform.readonly}) {
    %for = transform.cast %loop : !transform.any_op to !transform.op<"scf.for">
    %main, %rest = transform.loop.peel %for
        : (!transform.op<"scf.for">) -> (!transform.any_op, !transform.any_op)
    transform.yield
  }

  // Matches a register tile of static shape: every loop range known.
  transform.named_sequence @match_full_tile(%op: !transform.any_op {transform.readonly})
      -> !transform.any_op {
    transform.match.operation_name %op ["linalg.matmul"] : !transform.any_op
    %m, %n, %k = transform.match.structured %op
        : (!transform.any_op) -> (!transform.param<i64>, !transform.param<i64>,
                                  !transform.param<i64>) {
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
  transform.named_sequence @match_deep_reduction(%op: !transform.any_op {transform.readonly},
      %block: !transform.param<i64> {transform.readonly})
      -> (!transform.any_op, !transform.param<i64>) {
    transform.match.operation_name %op ["linalg.matmul"] : !transform.any_op
    %k = transform.match.structured %op : (!transform.any_op) -> !transform.param<i64> {
    ^bb0(%s: !transform.any_op):
      %d2 = transform.match.structured.dim %s[2] : (!transform.any_op) -> !transform.param<i64>
      transform.match.structured.yield %d2 : !transform.param<i64>
    }
    transform.match.param.cmpi gt %k, %block : !transform.param<i64>
    transform.yield %op, %block : !transform.any_op, !transform.param<i64>
  }

  // Splits the reduction into blocks, the last one peeled if partial.
  transform.named_sequence @block_reduction(%op: !transform.any_op {transform.consumed},
      %block: !transform.param<i64> {transform.readonly}) {
    %blocked, %depth = transform.structured.tile_using_for %op tile_sizes [0, 0, %block]
        : (!transform.any_op, !transform.param<i64>) -> (!transform.any_op, !transform.any_op)
    transform.include @peel failures(suppress) (%depth) : (!transform.any_op) -> ()
    transform.yield
  }

  // Tiles the reduction of a full register tile and vectorizes it.
  transform.named_sequence @vectorize_full_tile(%tile: !transform.any_op {transform.consumed}) {
    %step, %reduction = transform.structured.tile_using_for %tile tile_sizes [0, 0, 1]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.structured.vectorize %step : !transform.any_op
    transform.yield
  }

  // Matches an f32 panel projection's register tile of static shape (loops: row, panel,
  // column, input).
  transform.named_sequence @match_full_panel_tile(%op: !transform.any_op {transform.readonly},
      %amx: !transform.param<i64> {transform.readonly}) -> !transform.any_op {
    transform.match.structured %op : !transform.any_op {
    ^bb0(%s: !transform.any_op):
      %zero = transform.param.constant 0 : i64 -> !transform.param<i64>
      %rank = transform.match.structured.rank %s : (!transform.any_op) -> !transform.param<i64>
      %expected = transform.param.constant 4 : i64 -> !transform.param<i64>
      transform.match.param.cmpi eq %rank, %expected : !transform.param<i64>
      %d0 = transform.match.structured.dim %s[0] : (!transform.any_op) -> !transform.param<i64>
      transform.match.param.cmpi ge %d0, %zero : !transform.param<i64>
      %d3 = transform.match.structured.dim %s[3] : (!transform.any_op) -> !transform.param<i64>
      transform.match.param.cmpi ge %d3, %zero : !transform.param<i64>
      transform.match.structured.yield
    }
    transform.yield %op : !transform.any_op
  }
  // Matches an f32 panel projection's edge rows of a dynamic count.
  transform.named_sequence @match_edge_panel_tile(%op: !transform.any_op {transform.readonly},
      %amx: !transform.param<i64> {transform.readonly}) -> !transform.any_op {
    transform.match.structured %op : !transform.any_op {
    ^bb0(%s: !transform.any_op):
      %zero = transform.param.constant 0 : i64 -> !transform.param<i64>
      %rank = transform.match.structured.rank %s : (!transform.any_op) -> !transform.param<i64>
      %expected = transform.param.constant 4 : i64 -> !transform.param<i64>
      transform.match.param.cmpi eq %rank, %expected : !transform.param<i64>
      %d0 = transform.match.structured.dim %s[0] : (!transform.any_op) -> !transform.param<i64>
      transform.match.param.cmpi lt %d0, %zero : !transform.param<i64>
      transform.match.structured.yield
    }
    transform.yield %op : !transform.any_op
  }
  // The same of a projection of bf16 pairs (loops: row, panel, column, pair, half); full tiles
  // of the pair dot products (%amx = 0) and of AMX tiles (%amx = 1).
  transform.named_sequence @match_full_pair_tile(%op: !transform.any_op {transform.readonly},
      %amx: !transform.param<i64> {transform.readonly}) -> !transform.any_op {
    %no = transform.param.constant 0 : i64 -> !transform.param<i64>
    transform.match.param.cmpi eq %amx, %no : !transform.param<i64>
    transform.include @match_full_pair_shape failures(propagate) (%op)
        : (!transform.any_op) -> ()
    transform.yield %op : !transform.any_op
  }
  transform.named_sequence @match_full_amx_tile(%op: !transform.any_op {transform.readonly},
      %amx: !transform.param<i64> {transform.readonly}) -> !transform.any_op {
    %yes = transform.param.constant 1 : i64 -> !transform.param<i64>
    transform.match.param.cmpi eq %amx, %yes : !transform.param<i64>
    transform.include @match_full_pair_shape failures(propagate) (%op)
        : (!transform.any_op) -> ()
    transform.yield %op : !transform.any_op
  }
  transform.named_sequence @match_full_pair_shape(%op: !transform.any_op {transform.readonly}) {
    transform.match.structured %op : !transform.any_op {
    ^bb0(%s: !transform.any_op):
      %zero = transform.param.constant 0 : i64 -> !transform.param<i64>
      %rank = transform.match.structured.rank %s : (!transform.any_op) -> !transform.param<i64>
      %expected = transform.param.constant 5 : i64 -> !transform.param<i64>
      transform.match.param.cmpi eq %rank, %expected : !transform.param<i64>
      %d0 = transform.match.structured.dim %s[0] : (!transform.any_op) -> !transform.param<i64>
      transform.match.param.cmpi ge %d0, %zero : !transform.param<i64>
      %d3 = transform.match.structured.dim %s[3] : (!transform.any_op) -> !transform.param<i64>
      transform.match.param.cmpi ge %d3, %zero : !transform.param<i64>
      transform.match.structured.yield
    }
    transform.yield
  }
  transform.named_sequence @match_edge_pair_tile(%op: !transform.any_op {transform.readonly},
      %amx: !transform.param<i64> {transform.readonly}) -> !transform.any_op {
    transform.match.structured %op : !transform.any_op {
    ^bb0(%s: !transform.any_op):
      %zero = transform.param.constant 0 : i64 -> !transform.param<i64>
      %rank = transform.match.structured.rank %s : (!transform.any_op) -> !transform.param<i64>
      %expected = transform.param.constant 5 : i64 -> !transform.param<i64>
      transform.match.param.cmpi eq %rank, %expected : !transform.param<i64>
      %d0 = transform.match.structured.dim %s[0] : (!transform.any_op) -> !transform.param<i64>
      transform.match.param.cmpi lt %d0, %zero : !transform.param<i64>
      transform.match.structured.yield
    }
    transform.yield %op : !transform.any_op
  }

  // Matches a panel projection whose reduction is deeper than one panel reduction block (a
  // block of 0 is the whole reduction).
  transform.named_sequence @match_deep_panel_reduction(
      %op: !transform.any_op {transform.readonly},
      %block: !transform.param<i64> {transform.readonly})
      -> (!transform.any_op, !transform.param<i64>) {
    transform.match.operation_name %op ["linalg.generic"] : !transform.any_op
    %k = transform.match.structured %op : (!transform.any_op) -> !transform.param<i64> {
    ^bb0(%s: !transform.any_op):
      %d3 = transform.match.structured.dim %s[3] : (!transform.any_op) -> !transform.param<i64>
      transform.match.structured.yield %d3 : !transform.param<i64>
    }
    %zero = transform.param.constant 0 : i64 -> !transform.param<i64>
    transform.match.param.cmpi gt %block, %zero : !transform.param<i64>
    transform.match.param.cmpi gt %k, %block : !transform.param<i64>
    transform.yield %op, %block : !transform.any_op, !transform.param<i64>
  }
  // Splits a panel projection's reduction into blocks, the last one peeled if partial.
  transform.named_sequence @block_panel_reduction(%op: !transform.any_op {transform.consumed},
      %block: !transform.param<i64> {transform.readonly}) {
    %blocked, %depth = transform.structured.tile_using_for %op tile_sizes [0, 0, 0, %block]
        : (!transform.any_op, !transform.param<i64>) -> (!transform.any_op, !transform.any_op)
    transform.include @peel failures(suppress) (%depth) : (!transform.any_op) -> ()
    transform.yield
  }
  transform.named_sequence @vectorize_full_panel_tile(%tile: !transform.any_op {transform.consumed}) {
    %step, %reduction = transform.structured.tile_using_for %tile tile_sizes [0, 0, 0, 1]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.annotate %reduction "mhac.panel_reduction" : !transform.any_op
    transform.structured.vectorize %step : !transform.any_op
    transform.yield
  }
  // A tile of bf16 pairs: one pair of inputs a step, left for mhac-vectorize-bf16-pairs,
  // which turns each step into vdpbf16ps.
  transform.named_sequence @tile_full_pair_tile(%tile: !transform.any_op {transform.consumed}) {
    %step, %reduction = transform.structured.tile_using_for %tile tile_sizes [0, 0, 0, 1]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.annotate %reduction "mhac.panel_reduction" : !transform.any_op
    transform.yield
  }
  // An AMX tile: marked whole, its reduction left for mhac-amx-pair-tiles, which steps
  // through it 16 pairs at a time with the results in tile registers.
  transform.named_sequence @mark_amx_tile(%tile: !transform.any_op {transform.readonly}) {
    transform.annotate %tile "mhac.amx_tile" : !transform.any_op
    transform.yield
  }
  // Edge rows one at a time, each step of the reduction vectorized (f32) or left for
  // mhac-vectorize-bf16-pairs (bf16 pairs).
  transform.named_sequence @vectorize_edge_rows(%tile: !transform.any_op {transform.consumed}) {
    %row, %rowLoop, %rowReduction = transform.structured.tile_using_for %tile
        tile_sizes [1, 0, 0, 1]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op)
    transform.structured.vectorize %row : !transform.any_op
    transform.yield
  }
  transform.named_sequence @tile_edge_pair_rows(%tile: !transform.any_op {transform.consumed}) {
    %row, %rowLoop, %rowReduction = transform.structured.tile_using_for %tile
        tile_sizes [1, 0, 0, 1]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op)
    transform.yield
  }

  // Matches an accumulator initialization (the bias broadcast or the zero fill, over the
  // accumulator's [row][panel][column]) of static shape, and of any other (dynamic rows, or
  // dynamic panels: a blocked reduction leaves a cache tile's initialization unfused, and the
  // last cache tile of a width that is no whole number of cache tiles has fewer panels).
  transform.named_sequence @match_full_init(%op: !transform.any_op {transform.readonly})
      -> !transform.any_op {
    transform.match.operation_name %op ["linalg.generic", "linalg.fill"] : !transform.any_op
    transform.match.structured %op : !transform.any_op {
    ^bb0(%s: !transform.any_op):
      %zero = transform.param.constant 0 : i64 -> !transform.param<i64>
      %rank = transform.match.structured.rank %s : (!transform.any_op) -> !transform.param<i64>
      %three = transform.param.constant 3 : i64 -> !transform.param<i64>
      transform.match.param.cmpi eq %rank, %three : !transform.param<i64>
      %d0 = transform.match.structured.dim %s[0] : (!transform.any_op) -> !transform.param<i64>
      transform.match.param.cmpi ge %d0, %zero : !transform.param<i64>
      %d1 = transform.match.structured.dim %s[1] : (!transform.any_op) -> !transform.param<i64>
      transform.match.param.cmpi ge %d1, %zero : !transform.param<i64>
      transform.match.structured.yield
    }
    transform.yield %op : !transform.any_op
  }
  // Tried after @match_full_init: any other.
  transform.named_sequence @match_edge_init(%op: !transform.any_op {transform.readonly})
      -> !transform.any_op {
    transform.match.operation_name %op ["linalg.generic", "linalg.fill"] : !transform.any_op
    transform.match.structured %op : !transform.any_op {
    ^bb0(%s: !transform.any_op):
      %rank = transform.match.structured.rank %s : (!transform.any_op) -> !transform.param<i64>
      %three = transform.param.constant 3 : i64 -> !transform.param<i64>
      transform.match.param.cmpi eq %rank, %three : !transform.param<i64>
      transform.match.structured.yield
    }
    transform.yield %op : !transform.any_op
  }
  // One panel of one row at a time: a static vector whatever was dynamic.
  transform.named_sequence @vectorize_rows(%op: !transform.any_op {transform.consumed}) {
    %row, %rowLoop, %panelLoop = transform.structured.tile_using_for %op tile_sizes [1, 1]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op)
    transform.structured.vectorize %row : !transform.any_op
    transform.yield
  }

  transform.named_sequence @vectorize(%op: !transform.any_op {transform.consumed}) {
    transform.structured.vectorize %op : !transform.any_op
    transform.yield
  }

  // The schedule's knobs come in as parameters, bound by mhac (compiler/schedules/
  // TransformScripts.cpp) in this order.
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly},
      %cacheRows: !transform.param<i64> {transform.readonly},
      %cacheCols: !transform.param<i64> {transform.readonly},
      %cachePanels: !transform.param<i64> {transform.readonly},
      %registerRows: !transform.param<i64> {transform.readonly},
      %registerCols: !transform.param<i64> {transform.readonly},
      %reductionBlock: !transform.param<i64> {transform.readonly},
      %transposeTile: !transform.param<i64> {transform.readonly},
      %panelReductionBlock: !transform.param<i64> {transform.readonly},
      %amxTiles: !transform.param<i64> {transform.readonly}) {
    // Panel projections (weights packed as [N / P][K][P]): cache tiles of rows x panels as an
    // scf.forall; inside, one panel at a time, and for each panel the register tiles of rows x
    // that panel, each over the whole reduction: its accumulators start from the bias (or zero)
    // in registers and are stored once, and the panel (K x P) stays in L2 while the cache
    // tile's rows pass over it. `structured.fuse` moves the initialization into each register
    // tile through the loops' iteration arguments. (Where a panel and the rows would not stay
    // in L2, the reduction is first split into blocks of %panelReductionBlock, and the register
    // tiles of each block start from the cache tile's accumulators in memory.) Full tiles are vectorized and their
    // reduction loops marked to be unrolled; edge rows of a dynamic count go one by one. A
    // projection of at most a cache tile's rows (a small layer, or the last cache tile that
    // convert-mha-to-linalg splits off) has a forall dimension of one iteration: the loop
    // canonicalization, which knows the induction variables' ranges, folds its tile sizes to
    // the static row count, so that its edge register tile is static and vectorized whole.
    %panelProjections = transform.structured.match ops{["linalg.generic"]}
        attributes {mhac.projection} in %root : (!transform.any_op) -> !transform.any_op
    transform.foreach %panelProjections : !transform.any_op {
    ^bb0(%projection: !transform.any_op):
      %init = transform.get_producer_of_operand %projection[2]
          : (!transform.any_op) -> !transform.any_op
      %tiled, %tiles = transform.structured.tile_using_forall %projection
          tile_sizes [%cacheRows, %cachePanels]
          : (!transform.any_op, !transform.param<i64>, !transform.param<i64>)
          -> (!transform.any_op, !transform.any_op)
      %fusedInit, %tiledForall = transform.structured.fuse_into_containing_op %init into %tiles
          : (!transform.any_op, !transform.any_op) -> (!transform.any_op, !transform.any_op)
      // Panels deeper than a panel reduction block (a panel of a wide layer would not stay in
      // L2 while the register tiles pass over it): blocks of the reduction, each block's
      // accumulators kept in the cache tile's buffer between blocks.
      %forall = transform.foreach_match in %tiledForall, %panelReductionBlock
          @match_deep_panel_reduction -> @block_panel_reduction
          : (!transform.any_op, !transform.param<i64>) -> !transform.any_op
      %blocks = transform.structured.match ops{["linalg.generic"]}
          attributes {mhac.projection} in %forall : (!transform.any_op) -> !transform.any_op
      transform.foreach %blocks : !transform.any_op {
      ^bb1(%block: !transform.any_op):
        %micro, %panels, %rows = transform.structured.fuse %block
            tile_sizes [%registerRows, 1, 0, 0] interchange [1, 0, 2, 3]
            : (!transform.any_op, !transform.param<i64>)
            -> (!transform.any_op, !transform.any_op, !transform.any_op)
        transform.include @peel failures(suppress) (%rows) : (!transform.any_op) -> ()
        transform.yield
      }
      transform.apply_patterns to %forall {
        transform.apply_patterns.scf.for_loop_canonicalization
        transform.apply_patterns.canonicalization
      } : !transform.any_op
      %vectorized = transform.foreach_match in %forall, %amxTiles
          @match_full_panel_tile -> @vectorize_full_panel_tile,
          @match_full_pair_tile -> @tile_full_pair_tile,
          @match_full_amx_tile -> @mark_amx_tile,
          @match_edge_panel_tile -> @vectorize_edge_rows,
          @match_edge_pair_tile -> @tile_edge_pair_rows
          : (!transform.any_op, !transform.param<i64>) -> !transform.any_op
      // The initializations left: a full tile's is vectorized whole (its broadcast then
      // becomes the accumulators' first value), an edge tile's one row at a time.
      %withInits = transform.foreach_match in %vectorized
          @match_full_init -> @vectorize, @match_edge_init -> @vectorize_rows
          : (!transform.any_op) -> !transform.any_op
      transform.yield
    }

    %matmuls = transform.structured.match ops{["linalg.matmul"]} in %root
        : (!transform.any_op) -> !transform.any_op
    transform.foreach %matmuls : !transform.any_op {
    ^bb0(%matmul: !transform.any_op):
      // Only the accumulator's initialization joins the cache tile: fusing the weight's
      // transpose too would transpose its panel again for every row tile.
      %init = transform.get_producer_of_operand %matmul[2]
          : (!transform.any_op) -> !transform.any_op
      %tiled, %tiles = transform.structured.tile_using_forall %matmul
          tile_sizes [%cacheRows, %cacheCols]
          : (!transform.any_op, !transform.param<i64>, !transform.param<i64>)
          -> (!transform.any_op, !transform.any_op)
      %fusedInit, %forall = transform.structured.fuse_into_containing_op %init into %tiles
          : (!transform.any_op, !transform.any_op) -> (!transform.any_op, !transform.any_op)
      // Blocks of the reduction where it is deeper than one block: each block's slice of a
      // weight column panel (reduction block x register columns) stays in L1 while every row
      // tile of the cache tile passes over it (the column loop outside the row loop).
      %reblocked = transform.foreach_match in %forall, %reductionBlock
          @match_deep_reduction -> @block_reduction
          : (!transform.any_op, !transform.param<i64>) -> !transform.any_op
      %blocked = transform.structured.match ops{["linalg.matmul"]} in %reblocked
          : (!transform.any_op) -> !transform.any_op
      // One blocked matmul at a time: a parameter gives one tile size per target op.
      transform.foreach %blocked : !transform.any_op {
      ^bb1(%block: !transform.any_op):
        %micro, %columns, %rows = transform.structured.tile_using_for %block
            tile_sizes [%registerRows, %registerCols, 0] interchange = [1, 0, 2]
            : (!transform.any_op, !transform.param<i64>, !transform.param<i64>)
            -> (!transform.any_op, !transform.any_op, !transform.any_op)
        transform.include @peel failures(suppress) (%columns) : (!transform.any_op) -> ()
        transform.include @peel failures(suppress) (%rows) : (!transform.any_op) -> ()
        transform.yield
      }
      // Peeled loops' tiles become static once their sizes fold.
      transform.apply_patterns to %reblocked {
        transform.apply_patterns.canonicalization
      } : !transform.any_op
      // Full tiles: the reduction loop innermost, vectorized plainly (a transform.foreach with a
      // suppressed failure would stop at the first partial tile, so they are picked by shape).
      %vectorized = transform.foreach_match in %reblocked @match_full_tile -> @vectorize_full_tile
          : (!transform.any_op) -> !transform.any_op
      // Partial tiles at the edges (dynamic batch, S = 197, odd widths): one row at a time,
      // still with the reduction innermost so the row's accumulators stay in registers; masks
      // only along a ragged last column tile.
      %partial = transform.structured.match ops{["linalg.matmul"]} in %vectorized
          : (!transform.any_op) -> !transform.any_op
      transform.foreach %partial : !transform.any_op {
      ^bb1(%tile: !transform.any_op):
        %row, %rowLoop, %rowReduction = transform.structured.tile_using_for %tile
            tile_sizes [1, 0, 1]
            : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op)
        transform.structured.vectorize %row vector_sizes [1, %registerCols, 1]
            : !transform.any_op, !transform.param<i64>
        transform.yield
      }
      transform.yield
    }
    %transposes = transform.structured.match ops{["linalg.transpose"]} in %root
        : (!transform.any_op) -> !transform.any_op
    transform.foreach %transposes : !transform.any_op {
    ^bb0(%transpose: !transform.any_op):
      %tiled, %forall = transform.structured.tile_using_forall %transpose
          tile_sizes [%transposeTile, %transposeTile]
          : (!transform.any_op, !transform.param<i64>, !transform.param<i64>)
          -> (!transform.any_op, !transform.any_op)
      transform.yield
    }
    %funcs = transform.structured.match ops{["func.func"]} in %root
        : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %funcs {
      transform.apply_patterns.vector.lower_masked_transfers
    } : !transform.any_op
    transform.apply_patterns to %funcs {
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    // The accumulator tiles leave their reduction loops: read before, carried in registers as
    // loop values, written after (innermost loops come first in the match). On canonical IR,
    // where the slices of the same tile are recognizably the same.
    %loops = transform.structured.match ops{["scf.for"]} in %root
        : (!transform.any_op) -> !transform.any_op
    transform.foreach %loops : !transform.any_op {
    ^bb0(%loop: !transform.any_op):
      transform.loop.hoist_loop_invariant_subsets %loop : !transform.any_op
      transform.yield
    }
    transform.yield
  }
}
