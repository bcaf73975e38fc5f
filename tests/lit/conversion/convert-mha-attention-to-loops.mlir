// RUN: mhac-opt %s --pass-pipeline="builtin.module(func.func(convert-mha-attention-to-loops{query-block=16 key-block=64}))" | FileCheck %s
// RUN: not mhac-opt %s --pass-pipeline="builtin.module(func.func(convert-mha-attention-to-loops{query-block=0}))" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD-OPTION
// BAD-OPTION: error: query-block and key-block must be positive

// One parallel iteration per (batch, head, query block), each with its own scratch: one block
// of accumulators (query-block x head_dim), its running max and sum, and one block of scores
// (key-block). Nothing of size S x Skv exists.
// CHECK-LABEL: func.func @attention
// CHECK:         %[[OUT:.*]] = memref.alloc(%{{.*}}) {alignment = 64 : i64} : memref<?x100x256xf32>
// CHECK-NOT:     memref.alloc{{.*}}100x300
// 100 query rows make 7 blocks of 16.
// CHECK:         scf.parallel (%{{.*}}, %{{.*}}, %{{.*}}) = (%c0, %c0, %c0) to (%{{.*}}, %c4, %c7)
// CHECK-DAG:       memref.alloca() : memref<16x64xf32>
// CHECK-DAG:       memref.alloca() : memref<16xf32>
// CHECK-DAG:       memref.alloca() : memref<64xf32>
// Key blocks, then the rows of the query block.
// CHECK:           scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c64
// CHECK:             scf.for
// The online softmax, vectorized over the head and over the key block: dot products reduced in
// any order, the block maximum, exp as a polynomial (no math.exp is left), and the accumulator
// row carried as a vector through the p.v loop.
// CHECK:                 vector.transfer_read {{.*}} vector<64xf32>
// CHECK:                 vector.reduction <add>, %{{.*}} fastmath<reassoc,contract> : vector<64xf32> into f32
// CHECK:                 vector.reduction <maximumf>, %{{.*}} : vector<64xf32> into f32
// CHECK-NOT:             math.exp
// CHECK:                 vector.fma {{.*}} : vector<64xf32>
// CHECK:         bufferization.to_tensor %[[OUT]] restrict writable
// CHECK-NOT:     mha.attention
func.func @attention(%q: tensor<?x100x256xf32>, %k: tensor<?x300x128xf32>, %v: tensor<?x300x128xf32>) -> tensor<?x100x256xf32> {
  %a = mha.attention %q, %k, %v heads(4) kv_heads(2) head_dim(64) scale(0.125) : (tensor<?x100x256xf32>, tensor<?x300x128xf32>, tensor<?x300x128xf32>) -> tensor<?x100x256xf32>
  return %a : tensor<?x100x256xf32>
}

// kv_lens is read once per batch entry; causal limits the key loop of each query block.
// CHECK-LABEL: func.func @masked
// CHECK:         scf.parallel (%[[B:[^,]*]],
// CHECK:           memref.load %{{.*}}[%[[B]]] : memref<?xi32, strided<[?], offset: ?>>
// CHECK:           arith.index_cast
// CHECK:           arith.minsi
func.func @masked(%q: tensor<?x8x32xbf16>, %kv: tensor<?x9x32xbf16>, %lens: tensor<?xi32>) -> tensor<?x8x32xbf16> {
  %a = mha.attention %q, %kv, %kv kv_lens %lens heads(2) kv_heads(2) head_dim(16) scale(0.25) causal : (tensor<?x8x32xbf16>, tensor<?x9x32xbf16>, tensor<?x9x32xbf16>, tensor<?xi32>) -> tensor<?x8x32xbf16>
  return %a : tensor<?x8x32xbf16>
}
