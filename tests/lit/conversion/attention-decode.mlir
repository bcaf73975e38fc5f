// RUN: mhac-opt %s --pass-pipeline="builtin.module(func.func(convert-mha-attention-to-loops{decode-positions=2 decode-chunk=256 decode-key-block=64}))" | FileCheck %s
// RUN: mhac-opt %s --pass-pipeline="builtin.module(func.func(convert-mha-attention-to-loops{decode-positions=0}))" | FileCheck %s --check-prefix=OFF
// RUN: not mhac-opt %s --pass-pipeline="builtin.module(func.func(convert-mha-attention-to-loops{decode-positions=2 decode-key-block=24}))" 2>&1 | FileCheck %s --check-prefix=BAD-BLOCK

// A decode step of a cache layer (4 query heads a key/value head, window 32): calls of at
// most 2 positions take the split-cache nest, the others the query blocks. The keys the
// batch's rows see (from the first row's window on: cache_len - 31) bound the chunks of 256
// keys; the partial states are [B, Hkv, chunks, G x 2 rows (, the head)]; the tasks are
// (batch, chunk, key/value head), heads fastest, and a task past its row's keys does nothing;
// 16 products of keys are summed into one vector of scores by four levels of shuffles; a
// second parallel loop over (batch, key/value head) merges.
// CHECK-LABEL: func.func @grouped_decode
// CHECK:         %[[SEQ:.*]] = memref.dim %{{.*}}, %c1
// CHECK:         %[[DECODE:.*]] = arith.cmpi sle, %[[SEQ]], %c2 : index
// CHECK:         scf.if %[[DECODE]] {
// CHECK:           %[[LONGEST:.*]] = scf.for
// CHECK:           %[[CHUNKS:.*]] = arith.ceildivsi %[[LONGEST]], %c256 : index
// CHECK:           memref.alloc(%{{.*}}, %[[CHUNKS]]) {alignment = 64 : i64} : memref<?x2x?x8x16xf32>
// CHECK-COUNT-2:   memref.alloc(%{{.*}}, %[[CHUNKS]]) {alignment = 64 : i64} : memref<?x2x?x8xf32>
// CHECK:           scf.parallel (%{{.*}}, %[[CHUNK:.*]], %{{.*}}) = (%c0, %c0, %c0) to (%{{.*}}, %[[CHUNKS]], %c2)
// CHECK:             %[[PAST:.*]] = arith.index_cast
// CHECK:             %[[BELOW:.*]] = arith.subi %[[PAST]], %c31 : index
// CHECK:             %[[FIRST:.*]] = arith.maxsi %[[BELOW]], %c0 : index
// CHECK:             %[[END:.*]] = arith.addi %[[PAST]], %[[SEQ]] : index
// CHECK:             %[[OFFSET:.*]] = arith.muli %[[CHUNK]], %c256 : index
// CHECK:             %[[START:.*]] = arith.addi %[[FIRST]], %[[OFFSET]] : index
// CHECK:             %[[SOME:.*]] = arith.cmpi slt, %[[START]], %[[END]] : index
// CHECK:             scf.if %[[SOME]] {
// CHECK:               memref.alloca() {alignment = 64 : i64} : memref<8x64xf32>
// CHECK:               memref.alloca() {alignment = 64 : i64} : memref<8x16x16xf32>
// CHECK:               vector.shuffle {{.*}} [0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23]
// CHECK:               vector.shuffle {{.*}} [0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27]
// CHECK:               vector.shuffle {{.*}} [0, 1, 4, 5, 8, 9, 12, 13, 16, 17, 20, 21, 24, 25, 28, 29]
// CHECK:               vector.shuffle {{.*}} [0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30]
// CHECK:               vector.shuffle {{.*}} [1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31]
// CHECK:           scf.parallel (%{{.*}}, %{{.*}}) = (%c0, %c0) to (%{{.*}}, %c2)
// CHECK:             vector.transfer_write
// CHECK:         } else {
// CHECK:           scf.parallel (%{{.*}}, %{{.*}}, %{{.*}}) = (%c0, %c0, %c0) to (%{{.*}}, %c2, %{{.*}})
// CHECK:         bufferization.to_tensor
// OFF-LABEL:     func.func @grouped_decode
// OFF-NOT:       vector.shuffle
// OFF:           return
func.func @grouped_decode(%q: tensor<?x?x128xf32>, %kc: memref<?x64x2x16xf32>, %vc: memref<?x64x2x16xf32>, %len: tensor<?xi32>) -> tensor<?x?x128xf32> {
  %a = mha.attention %q, %kc, %vc cache_len %len heads(8) kv_heads(2) head_dim(16) scale(2.500000e-01) causal window(32) : (tensor<?x?x128xf32>, memref<?x64x2x16xf32>, memref<?x64x2x16xf32>, tensor<?xi32>) -> tensor<?x?x128xf32>
  return %a : tensor<?x?x128xf32>
}

// A static step of one position takes the decode nest alone; its head of 20 is two vectors,
// the second 4 features wide and zero past them.
// CHECK-LABEL: func.func @one_position
// CHECK-NOT:     arith.cmpi sle
// CHECK:         memref<?x1x?x1x32xf32>
// CHECK:         vector.transfer_read {{.*}} : memref<{{.*}}>, vector<4xf32>
// CHECK:         vector.insert_strided_slice {{.*}} : vector<4xf32> into vector<16xf32>
// CHECK:         vector.extract_strided_slice {{.*}} {offsets = [0], sizes = [20], strides = [1]} : vector<32xf32> to vector<20xf32>
// CHECK-NOT:     memref<64x48xf32>
// CHECK:         return
func.func @one_position(%q: tensor<2x1x20xf32>, %kc: memref<2x40x1x20xf32>, %vc: memref<2x40x1x20xf32>, %len: tensor<2xi32>) -> tensor<2x1x20xf32> {
  %a = mha.attention %q, %kc, %vc cache_len %len heads(1) kv_heads(1) head_dim(20) scale(2.500000e-01) causal : (tensor<2x1x20xf32>, memref<2x40x1x20xf32>, memref<2x40x1x20xf32>, tensor<2xi32>) -> tensor<2x1x20xf32>
  return %a : tensor<2x1x20xf32>
}

// BAD-BLOCK: error: decode-positions must not be negative, decode-chunk must be positive and decode-key-block a positive multiple of vector-lanes, a power of two
