// RUN: mhac-opt %s --pass-pipeline="builtin.module(func.func(convert-mha-attention-to-loops{query-block=16 grouped-query-block=16 key-block=64 score-tile-vectors=4 value-tile-rows=4}))" | FileCheck %s
// RUN: mhac-opt %s --pass-pipeline="builtin.module(func.func(convert-mha-attention-to-loops{query-block=48 grouped-query-block=48 key-block=48 vector-lanes=8 score-tile-keys=6 score-tile-vectors=2 value-tile-rows=6 value-tile-vectors=2}))" | FileCheck %s --check-prefix=AVX2 --implicit-check-not="vector<48xf32>"
// RUN: mhac-opt %s --pass-pipeline="builtin.module(func.func(convert-mha-attention-to-loops{query-block=48 grouped-query-block=64 key-block=96 score-tile-vectors=4 value-tile-rows=6}))" | FileCheck %s --check-prefix=AVX512 --implicit-check-not="vector<48xf32>"
// RUN: not mhac-opt %s --pass-pipeline="builtin.module(func.func(convert-mha-attention-to-loops{query-block=0}))" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD-OPTION
// RUN: not mhac-opt %s --pass-pipeline="builtin.module(func.func(convert-mha-attention-to-loops{query-block=40}))" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD-OPTION
// RUN: not mhac-opt %s --pass-pipeline="builtin.module(func.func(convert-mha-attention-to-loops{score-tile-keys=0}))" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD-OPTION
// RUN: not mhac-opt %s --pass-pipeline="builtin.module(func.func(convert-mha-attention-to-loops{value-tile-vectors=0}))" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD-OPTION
// RUN: not mhac-opt %s --pass-pipeline="builtin.module(func.func(convert-mha-attention-to-loops{key-prefetch-distance=-1}))" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD-OPTION
// BAD-OPTION: error: query-block and grouped-query-block must be positive multiples of vector-lanes; key-block, vector-lanes, long-block-growth and the tiles' rows, keys and vectors positive; long-keys and key-prefetch-distance not negative

// One parallel iteration per (batch, head, query block), each with its own scratch: the block's
// queries transposed (head_dim x query-block), one block of scores kept transposed (key-block x
// query-block), the accumulators (query-block x head_dim) and one vector of factors. Nothing
// of size S x Skv exists.
// CHECK-LABEL: func.func @attention
// CHECK:         %[[MAGIC:.*]] = arith.constant dense<0x4B40007F> : vector<16xf32>
// CHECK:         %[[OUT:.*]] = memref.alloc(%{{.*}}) {alignment = 64 : i64} : memref<?x100x256xf32>
// CHECK-NOT:     memref.alloc{{.*}}100x300
// 100 query rows make 7 blocks of 16.
// CHECK:         scf.parallel (%{{.*}}, %{{.*}}, %{{.*}}) = (%c0, %c0, %c0) to (%{{.*}}, %c4, %c7)
// CHECK-DAG:       %[[QT:.*]] = memref.alloca() {alignment = 64 : i64} : memref<64x16xf32>
// CHECK-DAG:       %[[SCORES:.*]] = memref.alloca() {alignment = 64 : i64} : memref<64x16xf32>
// CHECK-DAG:       %[[ACC:.*]] = memref.alloca() {alignment = 64 : i64} : memref<16x64xf32>
// CHECK-DAG:       memref.alloca() {alignment = 64 : i64} : memref<16xf32>
// The block's queries, scaled and transposed in 16 x 16 tiles in registers: a tile's rows are
// read one vector each, from a row index kept in bounds, and zeroed past the sequence's end.
// CHECK-COUNT-16:  vector.transfer_read {{.*}} {in_bounds = [true]} : memref<?x100x256xf32, {{.*}}>, vector<16xf32>
// CHECK:           arith.mulf {{.*}} : vector<16x16xf32>
// CHECK:           vector.transpose %{{.*}}, [1, 0] : vector<16x16xf32> to vector<16x16xf32>
// CHECK:           vector.transfer_write %{{.*}}, %[[QT]]{{.*}} {in_bounds = [true, true]} : vector<16x16xf32>, memref<64x16xf32>
// The key blocks carry the running maximum and sum of every query of the block as vectors.
// CHECK:           scf.for %{{.*}} = %c0 to %c300 step %c64 iter_args(%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) -> (vector<16xf32>, vector<16xf32>)
// Scores: tiles of 8 key rows (8 broadcast addresses at most) x the 16 queries, accumulated
// over the head in registers, up to the tile of the block's last valid key.
// CHECK:             %[[KEYS:.*]] = arith.muli %{{.*}}, %c8 : index
// CHECK:             scf.for %{{.*}} = %c0 to %[[KEYS]] step %c8
// CHECK:               scf.for %{{.*}} = %c0 to %c64 step %c1 iter_args({{.*}}) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
// CHECK:                 vector.load %[[QT]]
// CHECK:                 vector.broadcast %{{.*}} : f32 to vector<16xf32>
// CHECK:                 vector.fma %{{.*}} : vector<16xf32>
// Without a causal mask the scores are stored as they are: the rows of a tile past the block's
// last key are never read.
// CHECK-NOT:           arith.select
// CHECK:               vector.store %{{.*}}, %[[SCORES]]
// The softmax is vertical (element-wise over the query vector): no reduction. The scores are
// in base 2 (log2 e is in the query scale), and their powers of two are computed in registers:
// x rounded to an integer n by adding 1.5 * 2^23 + 127 (0x4B40007F), 2^(x - n) as a
// polynomial, 2^n by shifting the biased n into the exponent bits.
// CHECK-NOT:         vector.reduction
// CHECK:             arith.maximumf %{{.*}} : vector<16xf32>
// CHECK:             %[[BIASED:.*]] = arith.addf %{{.*}}, %[[MAGIC]] : vector<16xf32>
// CHECK:             vector.fma
// CHECK:             %[[BITS:.*]] = arith.bitcast %[[BIASED]] : vector<16xf32> to vector<16xi32>
// CHECK:             arith.shli %[[BITS]], %{{.*}} : vector<16xi32>
// CHECK-NOT:         math.exp
// p.v: tiles of 4 query rows x the head (4 rows x 4 zmm = 16 accumulators, one vector
// register each), carried over the keys.
// CHECK:             scf.for %{{.*}} step %c4
// CHECK:               scf.for {{.*}} iter_args({{.*}}) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
// CHECK:                 vector.fma %{{.*}} : vector<16xf32>
// CHECK:               vector.store %{{.*}}, %[[ACC]]
// CHECK:         bufferization.to_tensor %[[OUT]] restrict writable
// CHECK-NOT:     mha.attention

// AVX2's schedule: 8 lanes, 12 accumulators, tile rows of 2 vectors. Both products are GEMM's
// 6 x 16 tile: the scores in chunks of 16 of the block's 48 queries, 6 key rows each; the
// softmax state as the block's six 8-lane vectors (no 48-lane vector reaches LLVM); the p.v
// update in four chunks of 16 columns of the head (two 8-lane vectors), 6 query rows each.
// AVX2-LABEL: func.func @attention
// AVX2:         %[[QUERY:.*]] = bufferization.to_buffer %arg0
// AVX2:         %[[KEY:.*]] = bufferization.to_buffer %arg1
// AVX2:         %[[VALUE:.*]] = bufferization.to_buffer %arg2
// AVX2:         %[[OUT:.*]] = memref.alloc
// AVX2:         vector.transpose %{{.*}}, [1, 0] : vector<8x8xf32> to vector<8x8xf32>
// AVX2:         scf.for %{{.*}} = %c0 to %c300 step %c48 iter_args({{.*}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// The block's whole tiles of 6 keys read their rows unclamped. Each first prefetches the next
// tile's key rows, when that tile is whole and within the sequence, and its own value rows (4
// lines of 64 floats each per row), then meets the block's queries chunk by chunk.
// AVX2:           %[[WHOLE:.*]] = arith.muli %{{.*}}, %c6 : index
// AVX2-NEXT:      scf.for %{{.*}} = %c0 to %[[WHOLE]] step %c6 {
// AVX2-NOT:         arith.minsi
// AVX2:             %[[NEXT_WHOLE:.*]] = arith.cmpi sle, %{{.*}}, %c300 : index
// AVX2-NEXT:        scf.if %[[NEXT_WHOLE]] {
// AVX2-COUNT-24:      memref.prefetch %[[KEY]][{{.*}}], read, locality<3>, data
// AVX2-NEXT:        }
// AVX2-COUNT-24:    memref.prefetch %[[VALUE]][{{.*}}], read, locality<3>, data
// AVX2-NEXT:        scf.for %[[CHUNK:.*]] = %c0 to %c48 step %c16
// A chunk is carried as its two 8-lane vectors per key row: 12 accumulators.
// AVX2-NEXT:          scf.for %{{.*}} = %c0 to %c64 step %c1 iter_args({{.*}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// AVX2:                 vector.load %{{.*}}[%{{.*}}, %[[CHUNK]]] : memref<64x48xf32>, vector<8xf32>
// AVX2-NOT:           arith.remui
// AVX2:               vector.store %{{.*}}, %{{.*}}[%{{.*}}, %[[CHUNK]]] : memref<48x48xf32>, vector<8xf32>
// A partial last tile (emitted for every block, whose key count is computed at run time; at
// Skv = 300 the last block's 12 keys are two whole tiles) clamps its rows to the last key and
// prefetches no successor.
// AVX2:           %[[PARTIAL:.*]] = arith.cmpi slt, %[[WHOLE]], %{{.*}} : index
// AVX2-NEXT:      scf.if %[[PARTIAL]] {
// AVX2-COUNT-6:     arith.minsi %{{.*}}, %c299 : index
// AVX2-NOT:         memref.prefetch %[[KEY]]
// AVX2:             memref.prefetch %[[VALUE]]
// AVX2:           arith.maximumf %{{.*}} : vector<8xf32>
// AVX2:           vector.load %{{.*}}[%{{.*}}, %c40] : memref<48x48xf32>, vector<8xf32>
// The first key block's p.v tiles each prefetch their 6 rows' lines of the next iteration's
// query block and of this block's output, to be written at the end.
// AVX2:         scf.for %{{.*}} step %c6
// AVX2:           %[[FIRST:.*]] = arith.cmpi eq, %{{.*}}, %c0 : index
// AVX2-NEXT:      scf.if %[[FIRST]] {
// AVX2-COUNT-6:     memref.prefetch %[[QUERY]][{{.*}}], read, locality<3>, data
// AVX2:             memref.prefetch %[[OUT]][{{.*}}], write, locality<3>, data
// AVX2:           }
// AVX2:           vector.load %{{.*}}[%{{.*}}, %c0] : memref<48x64xf32>, vector<8xf32>
// AVX2:           vector.load %{{.*}}[%{{.*}}, %c8] : memref<48x64xf32>, vector<8xf32>
// AVX2:           scf.for %{{.*}} step %c1 iter_args({{.*}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// AVX2:         scf.for %{{.*}} step %c6
// AVX2:           vector.load %{{.*}}[%{{.*}}, %c16] : memref<48x64xf32>, vector<8xf32>
// AVX2:         scf.for %{{.*}} step %c6
// AVX2:           vector.load %{{.*}}[%{{.*}}, %c32] : memref<48x64xf32>, vector<8xf32>
// AVX2:         scf.for %{{.*}} step %c6
// AVX2:           vector.load %{{.*}}[%{{.*}}, %c48] : memref<48x64xf32>, vector<8xf32>
// AVX-512's schedule: blocks of 48 queries (3 zmm). The score tile is 8 keys x the 3 vectors,
// carried as 24 16-lane vectors (a 48-lane vector would reach LLVM, which scalarizes it); the
// p.v tile is 6 query rows x the head's 4 vectors, each a 16-lane vector of its own.
// AVX512-LABEL: func.func @attention
// AVX512:         scf.for %{{.*}} = %c0 to %{{.*}} step %c8
// AVX512-NEXT:      arith.addi
// AVX512:           scf.for %{{.*}} = %c0 to %c64 step %c1 iter_args({{.*}}) -> ([[V:vector<16xf32>]], [[V]], [[V]], [[V]], [[V]], [[V]], [[V]], [[V]], [[V]], [[V]], [[V]], [[V]], [[V]], [[V]], [[V]], [[V]], [[V]], [[V]], [[V]], [[V]], [[V]], [[V]], [[V]], [[V]])
// AVX512-COUNT-3:     vector.load %{{.*}} : memref<64x48xf32>, vector<16xf32>
// AVX512:         scf.for %{{.*}} step %c6
// AVX512:           scf.for %{{.*}} step %c1 iter_args({{.*}}) -> ([[V]], [[V]], [[V]], [[V]], [[V]], [[V]], [[V]], [[V]], [[V]], [[V]], [[V]], [[V]], [[V]], [[V]], [[V]], [[V]], [[V]], [[V]], [[V]], [[V]], [[V]], [[V]], [[V]], [[V]])
func.func @attention(%q: tensor<?x100x256xf32>, %k: tensor<?x300x256xf32>, %v: tensor<?x300x256xf32>) -> tensor<?x100x256xf32> {
  %a = mha.attention %q, %k, %v heads(4) kv_heads(4) head_dim(64) scale(0.125) : (tensor<?x100x256xf32>, tensor<?x300x256xf32>, tensor<?x300x256xf32>) -> tensor<?x100x256xf32>
  return %a : tensor<?x100x256xf32>
}

// Grouped query heads (4 heads, 2 key/value heads): a block holds 8 positions of both heads of
// a group, so each key and value block is read once for the pair. 100 positions make 13 blocks
// of 8 per group. A 16-row tile of the queries spans both heads (rows 8 to 15 are the second
// head's: position row % 8, columns (row / 8) * 64 further on), so its rows are read one by
// one and then transposed in registers; the causal mask compares each lane's position within
// its head, and each row is written to its own head's columns.
// CHECK-LABEL: func.func @grouped
// CHECK-DAG:     %[[POSITIONS:.*]] = arith.constant dense<[0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7]> : vector<16xi32>
// CHECK:         scf.parallel (%{{.*}}, %[[GROUP:.*]], %[[BLOCK:.*]]) = (%c0, %c0, %c0) to (%{{.*}}, %c2, %c13)
// The group's first query head starts at column group * 2 * 64; its key/value head at group * 64.
// CHECK:           %[[I0:.*]] = arith.muli %[[BLOCK]], %c8
// CHECK:           %[[Q_COL:.*]] = arith.muli %[[GROUP]], %c128
// CHECK:           arith.muli %[[GROUP]], %c64
// CHECK:           arith.remui %{{.*}}, %c8 : index
// CHECK:           arith.divui %{{.*}}, %c8 : index
// CHECK:           vector.transfer_read {{.*}} {in_bounds = [true]} : memref<?x100x256xf32, {{.*}}>, vector<16xf32>
// CHECK:           vector.transpose %{{.*}}, [1, 0] : vector<16x16xf32> to vector<16x16xf32>
// A key block is masked only when it reaches past the last key its first row sees
// (j0 + cols > i0 + diagonal + 1): then masked lanes become -inf before they are stored.
// CHECK:           %[[CROSSES:.*]] = arith.cmpi sgt, %{{.*}}, %{{.*}} : index
// CHECK:           scf.if %[[CROSSES]] {
// CHECK:             arith.cmpi sle, %{{.*}}, %[[POSITIONS]] : vector<16xi32>
// CHECK:             arith.select %{{.*}} : vector<16xi1>, vector<16xf32>
// CHECK:           } else {
// CHECK-NOT:         arith.select
// CHECK:             vector.store
// CHECK:           }
// The second head's rows (8 to 15) go to the columns 64 further on.
// CHECK:           %[[SECOND:.*]] = arith.addi %[[Q_COL]], %c64
// CHECK:           scf.for %[[P:.*]] = %c0 to %{{.*}} step %c1 {
// CHECK:             %[[ROW:.*]] = arith.addi %[[P]], %c8
// CHECK:             memref.load %{{.*}}[%[[ROW]]]
// CHECK:             vector.transfer_write %{{.*}}[%{{.*}}, %{{.*}}, %[[SECOND]]]
// With AVX-512's schedule, a grouped block has grouped-query-block = 64 rows, not 48: 32
// positions of each of the 2 heads, whole vectors, so its queries transpose in 16 x 16 tiles.
// 100 positions make 4 blocks per group.
// AVX512-LABEL: func.func @grouped
// AVX512:         scf.parallel (%{{.*}}, %{{.*}}, %{{.*}}) = (%c0, %c0, %c0) to (%{{.*}}, %c2, %c4)
// AVX512:           memref.alloca() {alignment = 64 : i64} : memref<64x64xf32>
// AVX512:           vector.transpose %{{.*}}, [1, 0] : vector<16x16xf32> to vector<16x16xf32>
func.func @grouped(%q: tensor<?x100x256xf32>, %k: tensor<?x300x128xf32>, %v: tensor<?x300x128xf32>) -> tensor<?x100x256xf32> {
  %a = mha.attention %q, %k, %v heads(4) kv_heads(2) head_dim(64) scale(0.125) causal : (tensor<?x100x256xf32>, tensor<?x300x128xf32>, tensor<?x300x128xf32>) -> tensor<?x100x256xf32>
  return %a : tensor<?x100x256xf32>
}

// kv_lens is read once per batch entry; causal limits the key loop of each query block. A
// static sequence of 8 rows gets one block of 16 (one vector), not of query-block.
// CHECK-LABEL: func.func @masked
// CHECK:         scf.parallel (%[[B:[^,]*]],
// CHECK-DAG:       memref.alloca() {alignment = 64 : i64} : memref<16x16xf32>
// CHECK-DAG:       memref.load %{{.*}}[%[[B]]] : memref<?xi32, strided<[?], offset: ?>>
// CHECK:           arith.index_cast
// CHECK:           arith.minsi
func.func @masked(%q: tensor<?x8x32xbf16>, %kv: tensor<?x9x32xbf16>, %lens: tensor<?xi32>) -> tensor<?x8x32xbf16> {
  %a = mha.attention %q, %kv, %kv kv_lens %lens heads(2) kv_heads(2) head_dim(16) scale(0.25) causal : (tensor<?x8x32xbf16>, tensor<?x9x32xbf16>, tensor<?x9x32xbf16>, tensor<?xi32>) -> tensor<?x8x32xbf16>
  return %a : tensor<?x8x32xbf16>
}

// A head of 40 features is two and a half vectors: its queries transpose in two 16 x 16 tiles
// and a last 16 x 8 one (rows read as 8-wide vectors, written as 8 rows of the transposed
// block), not element by element.
// CHECK-LABEL: func.func @head_of_40
// CHECK:           scf.for %{{.*}} = %c0 to %c32 step %c16
// CHECK:             vector.transpose %{{.*}}, [1, 0] : vector<16x16xf32> to vector<16x16xf32>
// CHECK:           }
// CHECK-COUNT-16:  vector.transfer_read {{.*}} {in_bounds = [true]} : memref<?x20x80xf32, {{.*}}>, vector<8xf32>
// CHECK:           vector.transpose %{{.*}}, [1, 0] : vector<16x8xf32> to vector<8x16xf32>
// CHECK:           vector.transfer_write %{{.*}}, %{{.*}}[%c32, %{{.*}}] {in_bounds = [true, true]} : vector<8x16xf32>, memref<40x16xf32>
func.func @head_of_40(%q: tensor<?x20x80xf32>, %k: tensor<?x20x80xf32>, %v: tensor<?x20x80xf32>) -> tensor<?x20x80xf32> {
  %a = mha.attention %q, %k, %v heads(2) kv_heads(2) head_dim(40) scale(0.158) : (tensor<?x20x80xf32>, tensor<?x20x80xf32>, tensor<?x20x80xf32>) -> tensor<?x20x80xf32>
  return %a : tensor<?x20x80xf32>
}
