// mhac's lowering of the vector code after bufferization, as a library of transform-dialect
// sequences: it keeps the register tiles' accumulators in registers across their reduction
// loops and lowers the vector ops to the forms LLVM handles best. mhac applies one entry per
// function, the one named after the schedule's attention_transpose_lowering; it then unrolls
// the loops the tiling marked mhac.panel_reduction by projection_reduction_unroll. Written for
// MLIR 22's transform dialect.
module attributes {transform.with_named_sequence} {
  // Everything before the transposes; returns the functions' handle.
  transform.named_sequence @lower_vectors(%root: !transform.any_op {transform.readonly})
      -> !transform.any_op {
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
    transform.yield %hoisted : !transform.any_op
  }

  transform.named_sequence @canonicalize(%funcs: !transform.any_op {transform.readonly}) {
    transform.apply_patterns to %funcs {
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.yield
  }

  // Attention's query tiles transposed in registers: the 16 x 16 shuffle network (other shapes
  // get shuffle_1d's code), one shuffle per row, or one move per element.
  transform.named_sequence @shuffle_16x16(%root: !transform.any_op {transform.readonly}) {
    %funcs = transform.include @lower_vectors failures(propagate) (%root)
        : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %funcs {
      transform.apply_patterns.vector.lower_transpose lowering_strategy = "shuffle_16x16"
    } : !transform.any_op
    transform.include @canonicalize failures(propagate) (%funcs) : (!transform.any_op) -> ()
    transform.yield
  }

  transform.named_sequence @shuffle_1d(%root: !transform.any_op {transform.readonly}) {
    %funcs = transform.include @lower_vectors failures(propagate) (%root)
        : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %funcs {
      transform.apply_patterns.vector.lower_transpose lowering_strategy = "shuffle_1d"
    } : !transform.any_op
    transform.include @canonicalize failures(propagate) (%funcs) : (!transform.any_op) -> ()
    transform.yield
  }

  transform.named_sequence @elements(%root: !transform.any_op {transform.readonly}) {
    %funcs = transform.include @lower_vectors failures(propagate) (%root)
        : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %funcs {
      transform.apply_patterns.vector.lower_transpose lowering_strategy = "eltwise"
    } : !transform.any_op
    transform.include @canonicalize failures(propagate) (%funcs) : (!transform.any_op) -> ()
    transform.yield
  }
}
