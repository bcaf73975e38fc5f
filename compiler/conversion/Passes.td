//===- Passes.td - lowerings out of the mha dialect --------*- tablegen -*-===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_COMPILER_CONVERSION_PASSES_TD
#define MHAC_COMPILER_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def WidenBf16Layer : Pass<"mhac-widen-bf16-layer", "mlir::func::FuncOp"> {
  let summary = "Run a bf16 layer in f32: widen its tensors at entry, round its result at exit";
  let description = [{
    On a layer function in the mha dialect whose tensors are bf16, widens every bf16 argument
    to f32 once (a `linalg.generic` of `arith.extf`), makes every mha op compute and return
    f32, and rounds the returned value to bf16 (round to nearest even): a projection that only
    the return reads returns bf16 itself (rounded in its tiles), any other value is rounded by
    a `linalg.generic` of `arith.truncf`. The layer then runs the
    f32 kernels, with its intermediates (queries, keys, values, attention) in f32: on CPUs
    without bf16 arithmetic this is the fast path (the schedule's `bf16_compute = f32`). The
    arguments it widens for an mha.linear's weight or bias are marked `mhac.parameter`, so that
    the weight preparation widens the weights once, into f32 panels.

    With `bf16-attention-operands` (attention's products in bf16), the projections an
    attention reads as its query, key and value return bf16 instead: those products would
    round them anyway, and a projection rounds its f32 accumulators in its own tiles, so that
    its result is written, and attention reads it, at half the bytes. Only where all three are
    such projections, read by attentions alone (an attention's operands share one type).
  }];
  let options = [
    Option<"bf16AttentionOperands", "bf16-attention-operands", "bool", /*default=*/"false",
           "Projections read only as attention's operands return bf16">,
  ];
  let dependentDialects = [
    "mlir::arith::ArithDialect",
    "mlir::linalg::LinalgDialect",
    "mlir::tensor::TensorDialect",
  ];
}

def ConvertMhaToLinalg : Pass<"convert-mha-to-linalg", "mlir::func::FuncOp"> {
  let summary = "Lower mha.linear to a linalg matmul whose accumulator starts at the bias";
  let description = [{
    Each projection becomes `linalg.matmul` with a transposed weight (PyTorch's `[out, in]`
    layout is used as is) over the input with its leading dimensions collapsed into one: the
    accumulator is initialized with the broadcast bias (or zero), so the bias costs no extra
    pass over the output. bf16 operands are widened inside the matmul, accumulated in f32 and
    rounded once at the end. The transform-dialect schedule then tiles and vectorizes these
    matmuls, fusing the initialization into each tile.

    Where the output width is a multiple of `panel-width`, the weight is instead prepared as
    contiguous column panels `[out / P][in][P]` and the product is a `linalg.generic` over
    (row, panel, column, k) writing the output seen as `[rows][out / P][P]`. A width that is
    not takes panels halved while they do not divide it and stay whole vectors of
    `vector-lanes` (80 features in panels of 16 where `panel-width` is 64); a width no such
    panel divides, whole panels and then the rest in power-of-two column blocks of at least 8,
    each a panel product of its own (one prepared weight holds them all), where it is a
    multiple of 8 and the products are f32. Any other width is padded to whole panels
    (paddedProjectionWidth in ProjectionPanels.h): the weight and the bias are extended with
    zeros (prepared), and the product is computed into rows as much longer, seen as [M, N].
    Every projection op carries `mhac.projection`; every rearranged weight
    `mhac.prepared_weight`.

    With `row-tile` = R and `cache-rows` = C, a panel projection over a static number of rows
    M > C that is not a multiple of R becomes two: the rows in whole cache tiles, [0, M - L),
    and the last cache tile's L rows (0 < L <= C), each writing its rows of the output in place.
    The last cache tile is then the only one of its projection, and the schedule sees its
    M % R edge rows as a static register tile inside it.

    With `bf16-pairs`, projections of a layer widened to f32 (mhac-widen-bf16-layer) in one
    block of whole panels (whole vectors of 16, padded where need be) multiply in bf16
    instead: their inputs are taken before the widening (an attention output that they alone
    read is retyped to be stored rounded to bf16), an odd input width's last feature is paired
    with a zero (in the weight, and in a copy of the input), their weights are prepared as pairs
    of input features `[out / P][in / 2][P][2]`, and the panel product runs over (row, panel,
    column, pair, half), with f32 sums (`mhac.bf16_pairs`): the layout of AVX512-BF16's
    vdpbf16ps, which mhac-vectorize-bf16-pairs emits.

    Projections whose results are only an attention's keys or values, in rows a multiple of
    1 KiB long, write into rows padded by `row-padding` 4-byte words (a
    `bufferization.alloc_tensor` seen through `tensor.extract_slice`): attention re-reads them
    for every query block, and rows a multiple of 1 KiB apart would share a quarter of the
    cache sets.

    A projection whose result is bf16 (with f32 operands: in a widened layer, the returned
    projection and those of `bf16-attention-operands`) accumulates in f32 and rounds once; a panel projection marks
    that rounding (`mhac.rounding`, per part where its last cache tile is split off) for
    mhac-fuse-roundings-into-tiles.
  }];
  let options = [
    Option<"panelWidth", "panel-width", "int64_t", /*default=*/"0",
           "Columns of a packed weight panel (the register tile's width); 0 packs none">,
    Option<"rowTile", "row-tile", "int64_t", /*default=*/"0",
           "Rows of the register tile: a panel projection over a static number of rows that "
           "is not a multiple splits its last cache tile off into a projection of its own; 0 "
           "splits none">,
    Option<"cacheRows", "cache-rows", "int64_t", /*default=*/"0",
           "Rows of the cache tile (with row-tile; 0 splits none)">,
    Option<"rowPadding", "row-padding", "int64_t", /*default=*/"16",
           "4-byte words of padding after each row of keys, values and unpacked transposed "
           "weights whose rows are a multiple of 1 KiB long (0: none)">,
    Option<"bf16Pairs", "bf16-pairs", "bool", /*default=*/"false",
           "Panel projections of a widened bf16 layer multiply bf16 pairs (vdpbf16ps's "
           "layout)">,
    Option<"vectorLanes", "vector-lanes", "int64_t", /*default=*/"0",
           "f32 lanes of a vector: a projection whose width is no whole number of panels "
           "takes panels halved down to this width where they divide it; 0 halves none">,
  ];
  let dependentDialects = [
    "mlir::arith::ArithDialect",
    "mlir::bufferization::BufferizationDialect",
    "mlir::linalg::LinalgDialect",
    "mlir::tensor::TensorDialect",
  ];
}

def SplitWeightPreparation : Pass<"mhac-split-weight-preparation", "mlir::ModuleOp"> {
  let summary = "Move the rearrangement of weights out of each layer into a preparation function";
  let description = [{
    For each layer @NAME whose arguments carry `mhac.parameter`, the values marked
    `mhac.prepared_weight` (a weight in the layout its kernel reads, computed from one
    parameter) are computed by a new `@mhac_prepare_NAME(parameters...) -> (prepared...)`
    instead, and @NAME takes them prepared, in the positions of the original weights.
    Parameters that need no preparation (biases) are returned unchanged, so the prepared
    results hold every parameter of the layer. Programs call the preparation once per set of
    weights, not once per call.
  }];
  let dependentDialects = ["mlir::func::FuncDialect"];
}

def ConvertMhaAttentionToLoops : Pass<"convert-mha-attention-to-loops", "mlir::func::FuncOp"> {
  let summary = "Lower mha.attention to register-blocked loops with an online softmax";
  let description = [{
    FlashAttention's schedule, written as loops over buffers: for each batch, head and block of
    `query-block` query rows, the keys are visited in blocks of `key-block`, keeping for every
    row a running maximum, a running sum and an f32 accumulator of width head_dim. No
    `[S, Skv]` score matrix exists; the scratch memory is the block's transposed queries, one
    block of scores and one block of accumulators. Both products are register tiles of outer
    products (broadcast scalar times vector) of `vector-lanes` f32 lanes: the scores as
    `score-tile-keys` keys x `score-tile-vectors` vectors of the block's queries, the p.v
    update as `value-tile-rows` query rows x `value-tile-vectors` vectors of the head. Tile
    options are upper bounds: an op whose block they do not divide takes the largest values
    below them that do, and transposes element by element where its block has no square tiles
    (mhac's schedule validator makes them exact for each layer it compiles).
    Key blocks past a row block's causal limit or past `kv_lens[b]` are not visited. With
    grouped-query heads, a block's rows are positions of every query head of a group
    (`grouped-query-block / G` of each), so each key and value block is read once for all the
    heads that share it.

    Calls with at least `long-keys` keys (0: none) run blocks `long-block-growth` times as
    tall, so that each key and value row, once a head's no longer stay in L2, serves that many
    more queries: an op whose keys are static takes those blocks or the others; one whose keys
    are known at run time only gets both loop nests, behind a test of its keys.

    With `amx`, both products are AMX tile products of bf16 (tdpbf16ps, f32 sums): the keys
    and values of the call are first rounded to bf16 into buffers laid out for the tiles (the
    values transposed), the scores and the accumulators are kept transposed, and the
    probabilities are rounded to bf16 pairs between the softmax and the p.v product. It needs
    blocks of whole 16-row tiles (16 lanes), key blocks of whole steps of 32 and heads of whole
    16-row tiles. With `emulate-amx`, the same tiles are written in vector operations
    (vdpbf16ps) for CPUs without AMX (tests). With `dot` instead of `amx`, the same bf16
    operands are multiplied by AVX512-BF16's vdpbf16ps in register tiles (up to 8 rows x 4
    vectors of accumulators, one pair broadcast per row and step), which unlike AMX's tiles
    stop at a key block's valid keys: a short last block skips its score tiles past them and
    ends its p.v reduction at their last pair; and at the head's last pair: `dot` takes any
    head (a head of 40: its last tiles of values and accumulators 8 features wide; an odd
    head's last pair of a key read in place is its last feature and a zero).

    Calls of at most `decode-positions` query positions against a cache (decode steps) take
    the split-cache nest instead, where the call's sequence says so at run time: each row's
    scores with lanes over keys (the lanes of the products of `vector-lanes` keys summed by a
    tree of shuffles), the keys that a batch's rows see split into chunks of `decode-chunk`
    keys that are parallel tasks with an online softmax over blocks of `decode-key-block`
    keys, and a second parallel loop merging each row's partial states. All the query heads
    of a group and all positions of the call are one task's rows, so each cache row is read
    once per group and chunk; its p.v tiles are `value-tile-rows` x `value-tile-vectors`.
  }];
  let options = [
    Option<"queryBlock", "query-block", "int64_t", /*default=*/"48",
           "Query rows processed together against each key block">,
    Option<"groupedQueryBlock", "grouped-query-block", "int64_t", /*default=*/"64",
           "Query rows of a block with grouped-query heads">,
    Option<"longKeys", "long-keys", "int64_t", /*default=*/"0",
           "Keys from which a call runs taller blocks (0: none does)">,
    Option<"longBlockGrowth", "long-block-growth", "int64_t", /*default=*/"1",
           "Times taller the blocks of those calls are">,
    Option<"keyBlock", "key-block", "int64_t", /*default=*/"96",
           "Keys per block of scores">,
    Option<"vectorLanes", "vector-lanes", "int64_t", /*default=*/"16",
           "f32 lanes of one vector register of the target">,
    Option<"scoreTileKeys", "score-tile-keys", "int64_t", /*default=*/"8",
           "Keys (rows) of the score register tile (at most)">,
    Option<"scoreTileVectors", "score-tile-vectors", "int64_t", /*default=*/"3",
           "Vectors of the block's queries in the score tile (at most)">,
    Option<"valueTileRows", "value-tile-rows", "int64_t", /*default=*/"6",
           "Query rows of the p.v register tile (at most)">,
    Option<"valueTileVectors", "value-tile-vectors", "int64_t", /*default=*/"4",
           "Vectors of the head in the p.v tile">,
    Option<"transposeInTiles", "transpose-in-tiles", "bool", /*default=*/"true",
           "Transpose the block's queries in register tiles (else element by element)">,
    Option<"keyPrefetchDistance", "key-prefetch-distance", "int64_t", /*default=*/"1",
           "Key tiles ahead that a score tile prefetches (0: none)">,
    Option<"prefetchValues", "prefetch-values", "bool", /*default=*/"true",
           "A score tile prefetches its keys' value rows">,
    Option<"prefetchNextBlock", "prefetch-next-block", "bool", /*default=*/"true",
           "The first key block prefetches the next task's queries and this block's output">,
    Option<"amx", "amx", "bool", /*default=*/"false",
           "Both products on AMX tiles of bf16 (tdpbf16ps), the probabilities rounded to bf16">,
    Option<"emulateAmx", "emulate-amx", "bool", /*default=*/"false",
           "With amx: each tile operation in vector operations instead of AMX's">,
    Option<"dot", "dot", "bool", /*default=*/"false",
           "Both products on AVX512-BF16's vdpbf16ps, in register tiles of amx's operands">,
    Option<"decodePositions", "decode-positions", "int64_t", /*default=*/"0",
           "Calls of at most this many positions against a cache take the decode nest "
           "(0: none does)">,
    Option<"decodeChunk", "decode-chunk", "int64_t", /*default=*/"512",
           "Keys of one parallel task of the decode nest">,
    Option<"decodeKeyBlock", "decode-key-block", "int64_t", /*default=*/"128",
           "Keys of one online-softmax block of the decode nest (whole vectors)">,
  ];
  let dependentDialects = [
    "mlir::amx::AMXDialect",
    "mlir::arith::ArithDialect",
    "mlir::bufferization::BufferizationDialect",
    "mlir::memref::MemRefDialect",
    "mlir::scf::SCFDialect",
    "mlir::vector::VectorDialect",
    "mlir::x86vector::X86VectorDialect",
  ];
}

def ConvertMhaHeadsToLoops : Pass<"convert-mha-heads-to-loops", "mlir::func::FuncOp"> {
  let summary = "Lower mha.rms_norm, mha.rope and mha.cache_write to one pass over their rows";
  let description = [{
    A decoder layer's q and k projections are normalized (`mha.rms_norm`) and rotated
    (`mha.rope`), and its new keys and values written into the caches (`mha.cache_write`).
    Each chain of these ops from a projection becomes one parallel loop over the projection's
    rows (batch x position): a row's rotation table (cos and sin of its position times each
    frequency, with the attention factor) is computed once, in float64 with the angle reduced
    by a three-part pi/2, for all its heads; each head is read once, normalized and rotated in
    vectors of up to `vector-lanes` lanes (a rotation pairs features within a vector, or two
    vectors `dim / 2` apart), and stored once: into the chain's result, or, where the chain
    ends in a cache write, straight into the new tokens' rows of the cache, rounded to its
    type. No sin or cos is evaluated per head or per element, and no intermediate is written.
  }];
  let options = [
    Option<"vectorLanes", "vector-lanes", "int64_t", /*default=*/"16",
           "f32 lanes of one vector register of the target">,
  ];
  let dependentDialects = [
    "mlir::arith::ArithDialect",
    "mlir::bufferization::BufferizationDialect",
    "mlir::math::MathDialect",
    "mlir::memref::MemRefDialect",
    "mlir::scf::SCFDialect",
    "mlir::vector::VectorDialect",
  ];
}

def LayerResultsToOutArguments
    : Pass<"mhac-layer-results-to-out-arguments", "mlir::ModuleOp"> {
  let summary = "Make layer functions write their result into a caller-owned buffer";
  let description = [{
    The C ABI passes `out` as the last argument. This pass gives every function returning a
    tensor an extra memref argument of that tensor's shape (identity layout) and materializes
    the result into it (bufferization.materialize_in_destination). A result computed in a
    fresh tensor of its own type (walking back through reshapes, destination-style ops and
    scf.forall's shared outputs) is computed in `out` itself: that tensor becomes a
    `bufferization.to_tensor` of `out`, which takes over `restrict`, and bufferization has
    nothing left to copy. eliminate-empty-tensors does not look behind reshapes, as the last
    projection's weight panels need.
  }];
  let dependentDialects = [
    "mlir::bufferization::BufferizationDialect",
    "mlir::memref::MemRefDialect",
  ];
}

def ConvertParallelToMhacRuntime
    : Pass<"convert-parallel-to-mhac-runtime", "mlir::ModuleOp"> {
  let summary = "Run outermost scf.parallel and scf.forall loops through mhac_parallel_for";
  let description = [{
    Outlines the body of every outermost parallel loop (on buffers) into a task function
    `(closure: !llvm.ptr, index: i64) -> i32` and replaces the loop by one call of the runtime's
    `mhac_parallel_for(task, closure, trip count)`. The iteration space is linearized; the task
    recovers its induction variables from the index. Values the body uses from above are stored
    in a closure struct on the caller's stack (memrefs as their LLVM descriptors, through
    unrealized casts that the LLVM conversions cancel out); constants are cloned instead.
    Runs after bufferization, before conversion to the LLVM dialect.
  }];
  let dependentDialects = [
    "mlir::LLVM::LLVMDialect",
    "mlir::arith::ArithDialect",
    "mlir::func::FuncDialect",
  ];
}

def VectorizeBf16Pairs : Pass<"mhac-vectorize-bf16-pairs", "mlir::func::FuncOp"> {
  let summary = "Write the register tiles of projections of bf16 pairs as vdpbf16ps";
  let description = [{
    After the schedule's tiling, each register tile of a projection of bf16 pairs
    (`mhac.bf16_pairs`, static rows x one panel of P columns x one pair of inputs) becomes vector
    code on tensors: the rows' pairs read as 32-bit words and broadcast, the panel row read
    once, and per row P / 16 `x86vector.avx512.dot` (AVX512-BF16's vdpbf16ps) into the f32
    accumulators, read and written with transfer ops that the vector lowering hoists out of the
    reduction loop. P must be a multiple of 16.
  }];
  let dependentDialects = [
    "mlir::arith::ArithDialect",
    "mlir::vector::VectorDialect",
    "mlir::x86vector::X86VectorDialect",
  ];
}

def AmxPairTiles : Pass<"mhac-amx-pair-tiles", "mlir::func::FuncOp"> {
  let summary = "Write the AMX tiles of projections of bf16 pairs as tile loads and tdpbf16ps";
  let description = [{
    Runs after bufferization. Each register tile the schedule's tiling marked `mhac.amx_tile`
    (R rows x one panel of P columns x the whole reduction of K pairs, P and K multiples of
    16) becomes AMX code: its accumulators loaded into 16 x 16 f32 tiles, a loop over the
    reduction 16 pairs a step that loads a tile of 16 rows x 32 bf16 inputs per 16 rows and
    a tile of 16 pairs x 16 columns of weights per 16 columns and multiplies each pair of
    them into its accumulator tile (`amx.tile_mulf`, tdpbf16ps), the accumulators carried in
    tile registers, and stored after the loop. With `emulate`, the same loads, products and
    stores are vector transfers and vdpbf16ps (`x86vector.avx512.dot`), one row of pairs at a
    time, for CPUs with AVX512-BF16 but no AMX (tests).
  }];
  let options = [
    Option<"emulate", "emulate", "bool", /*default=*/"false",
           "write each tile operation in vector operations instead of AMX's">,
  ];
  let dependentDialects = [
    "mlir::amx::AMXDialect",
    "mlir::arith::ArithDialect",
    "mlir::memref::MemRefDialect",
    "mlir::scf::SCFDialect",
    "mlir::vector::VectorDialect",
    "mlir::x86vector::X86VectorDialect",
  ];
}

def FuseRoundingsIntoTiles : Pass<"mhac-fuse-roundings-into-tiles", "mlir::func::FuncOp"> {
  let summary = "Round a projection's bf16 result in its cache tiles";
  let description = [{
    Runs after the tiling schedule, on tensors. Each rounding of a panel projection's f32
    accumulators to its bf16 result (a `linalg.generic` marked `mhac.rounding`) whose input is
    the projection's `scf.forall` of cache tiles is fused into that loop: each tile rounds its
    own accumulators, a row (a panel's columns) at a time, vectorized, while they are in L2.
    The f32 accumulators then have no reader outside their tile: where they start undefined
    (the tiles start from the bias), each tile gets its own f32 scratch in place of a shared
    f32 result. A rounding whose projection has no cache tiles (a user's tiling script) is
    left whole.
  }];
  let dependentDialects = [
    "mlir::arith::ArithDialect",
    "mlir::scf::SCFDialect",
    "mlir::tensor::TensorDialect",
    "mlir::vector::VectorDialect",
  ];
}

def PrefetchWeightPanels : Pass<"mhac-prefetch-weight-panels", "mlir::func::FuncOp"> {
  let summary = "Have a projection's register tiles fetch the next weight block into L2";
  let description = [{
    Runs after bufferization, before the reduction loops are unrolled (the schedule's
    projection_prefetch_next_block). In each register tile's reduction loop (marked
    `mhac.panel_reduction`) over a block of a weight panel (KB steps of a contiguous row of
    R elements: P f32 columns, or P pairs of bf16), the tile with index t of the T in its loop
    over rows prefetches into L2, one prefetch a step, elements [t KB s, (t + 1) KB s) of the
    block the thread reads next (s = ceil(R / T)), so that the block is in L2 when the tiles
    reach it instead of the first of them waiting for memory. Edge tiles and AMX tiles are
    left as they are.
  }];
  let dependentDialects = [
    "mlir::arith::ArithDialect",
    "mlir::memref::MemRefDialect",
  ];
}

def RoundToBf16WithAvx512 : Pass<"mhac-round-to-bf16-with-avx512", "mlir::func::FuncOp"> {
  let summary = "Round f32 vectors to bf16 with vcvtneps2bf16";
  let description = [{
    For targets with AVX512-BF16. Each `arith.truncf` of a vector of f32 to bf16 whose lanes
    are whole vectors of 16 (and whose rounding is to nearest even, the default) becomes one
    `x86vector.avx512.cvt.packed.f32_to_bf16` (vcvtneps2bf16) per 16 lanes, in place of the
    eight or so integer instructions `arith-expand` rounds with. Both round to nearest, ties to
    even; vcvtneps2bf16 also flushes denormal inputs to zero. Other conversions are left to
    `arith-expand`.
  }];
  let dependentDialects = [
    "mlir::arith::ArithDialect",
    "mlir::vector::VectorDialect",
    "mlir::x86vector::X86VectorDialect",
  ];
}

def Bf16AsI16 : Pass<"mhac-bf16-as-i16", "mlir::ModuleOp"> {
  let summary = "Retype the bf16 values of the LLVM dialect as i16";
  let description = [{
    Runs last, on the LLVM dialect, after `arith-expand{include-bf16=true}` has turned the
    conversions between bf16 and f32 into integer operations. What bf16 is left is only moved
    (loads, stores, selects, vector and aggregate element moves, block arguments, constants):
    the pass gives those values the i16 type of their bits. Otherwise LLVM's x86 backend,
    without AVX512-BF16, promotes each one to f32 element by element through calls to
    `__truncsfbf2` (slow, and missing from libgcc before GCC 13). AVX512-BF16's dot products
    (`llvm.x86.avx512bf16.*` intrinsics) keep their bf16 operands, bit-cast back from i16 where
    they are used; any other op that still computes on bf16 is an error.
  }];
}

#endif // MHAC_COMPILER_CONVERSION_PASSES_TD
