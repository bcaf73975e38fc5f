// RUN: mhac-opt %s --pass-pipeline="builtin.module(func.func(convert-mha-attention-to-loops{query-block=16 grouped-query-block=16 key-block=32 dot=true}))" | FileCheck %s
// RUN: mhac-opt %s --pass-pipeline="builtin.module(func.func(convert-mha-attention-to-loops{query-block=16 grouped-query-block=16 key-block=32 dot=true transpose-in-tiles=false}))" | FileCheck %s --check-prefix=ELEMENTS

// bf16 products read the block's queries as pairs of features: queryPairs[k][2c + h] =
// q[c][2k + h]. A query's features 2k and 2k + 1 in bf16 are one 32-bit word of its row, so
// the pairs are the block's rows transposed as words: 16 rows of 32 features a tile (f32
// queries rounded 16 at a time), one 16 x 16 transpose of i32, one store per pair row. A head
// of 48 features is one whole step of 32 and a half one, whose upper half is zero: the pairs
// are padded to whole steps of AMX's reduction (64 features, 32 pair rows).
// CHECK-LABEL: func.func @f32_queries
// CHECK:         %[[PAIRS:.*]] = memref.alloca() {alignment = 64 : i64} : memref<32x32xbf16>
// CHECK:         scf.for %[[D:.*]] = %c0 to %c32 step %c32
// CHECK:           vector.transfer_read {{.*}} : memref<1x20x96xf32, {{.*}}>, vector<16xf32>
// CHECK:           x86vector.avx512.cvt.packed.f32_to_bf16 %{{.*}} : vector<16xf32> -> vector<16xbf16>
// CHECK:           vector.transfer_read {{.*}} : memref<1x20x96xf32, {{.*}}>, vector<16xf32>
// CHECK:           x86vector.avx512.cvt.packed.f32_to_bf16 %{{.*}} : vector<16xf32> -> vector<16xbf16>
// CHECK:           %[[ROW:.*]] = vector.shuffle %{{.*}}, %{{.*}} [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31] : vector<16xbf16>, vector<16xbf16>
// CHECK:           vector.bitcast %[[ROW]] : vector<32xbf16> to vector<16xi32>
// CHECK:           %[[TRANSPOSED:.*]] = vector.transpose %{{.*}}, [1, 0] : vector<16x16xi32> to vector<16x16xi32>
// CHECK:           %[[FIRST:.*]] = arith.divui %[[D]], %c2 : index
// CHECK:           vector.extract %[[TRANSPOSED]][0] : vector<16xi32> from vector<16x16xi32>
// CHECK:           vector.store %{{.*}}, %[[PAIRS]][%[[FIRST]], %{{.*}}] : memref<32x32xbf16>, vector<32xbf16>
// CHECK-COUNT-15:  vector.store %{{.*}}, %[[PAIRS]][%{{.*}}, %{{.*}}] : memref<32x32xbf16>, vector<32xbf16>
// CHECK:         }
// The half step: features 32 to 47, then zeros.
// CHECK:         %[[HALF:.*]] = x86vector.avx512.cvt.packed.f32_to_bf16 %{{.*}} : vector<16xf32> -> vector<16xbf16>
// CHECK:         vector.shuffle %[[HALF]], %cst{{.*}} [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31] : vector<16xbf16>, vector<16xbf16>
// CHECK:         vector.transpose %{{.*}}, [1, 0] : vector<16x16xi32> to vector<16x16xi32>
// CHECK-COUNT-16: vector.store %{{.*}}, %[[PAIRS]][%{{.*}}, %{{.*}}] : memref<32x32xbf16>, vector<32xbf16>
// No pass interleaves rows into pairs before the scores. Before the key blocks, the next
// block's queries are fetched into L2 (the block's operands would evict them from L1), and
// this block's output rows for writing.
// CHECK-NOT:     vector.interleave
// CHECK:         memref.prefetch %{{.*}}, read, locality<2>, data : memref<1x20x96xf32, {{.*}}>
// CHECK:         memref.prefetch %{{.*}}, write, locality<3>, data : memref<1x20x96xf32>
// CHECK-NOT:     vector.interleave
// CHECK:         x86vector.avx512.dot
// Element by element: the pairs zeroed, then each valid row's feature d stored as bf16 into
// half d % 2 of pair d / 2.
// ELEMENTS-LABEL: func.func @f32_queries
// ELEMENTS:         %[[PAIRS:.*]] = memref.alloca() {alignment = 64 : i64} : memref<32x32xbf16>
// ELEMENTS:         scf.for %{{.*}} = %c0 to %c32 step %c1
// ELEMENTS-NEXT:      vector.store %cst{{.*}}, %[[PAIRS]][%{{.*}}, %c0] : memref<32x32xbf16>, vector<32xbf16>
// ELEMENTS:         scf.for %[[D:.*]] = %c0 to %c48 step %c1
// ELEMENTS:           %[[K:.*]] = arith.divui %[[D]], %c2 : index
// ELEMENTS:           %[[H:.*]] = arith.remui %[[D]], %c2 : index
// ELEMENTS:           arith.truncf %{{.*}} : f32 to bf16
// ELEMENTS:           %[[R2:.*]] = arith.muli %{{.*}}, %c2 : index
// ELEMENTS:           %[[COLUMN:.*]] = arith.addi %[[R2]], %[[H]] : index
// ELEMENTS:           memref.store %{{.*}}, %[[PAIRS]][%[[K]], %[[COLUMN]]] : memref<32x32xbf16>
// ELEMENTS-NOT:     vector.transpose
// ELEMENTS:         x86vector.avx512.dot
func.func @f32_queries(%q: tensor<1x20x96xf32>, %k: tensor<1x20x96xf32>, %v: tensor<1x20x96xf32>) -> tensor<1x20x96xf32> {
  %a = mha.attention %q, %k, %v heads(2) kv_heads(2) head_dim(48) scale(0.125) : (tensor<1x20x96xf32>, tensor<1x20x96xf32>, tensor<1x20x96xf32>) -> tensor<1x20x96xf32>
  return %a : tensor<1x20x96xf32>
}

// bf16 queries are read as they are, with no rounding: each row's step of 32 features in one
// read, seen as its 16 words.
// CHECK-LABEL: func.func @bf16_queries
// CHECK:         scf.for %{{.*}} = %c0 to %c64 step %c32
// CHECK-NOT:       x86vector.avx512.cvt.packed.f32_to_bf16
// CHECK:           %[[ROW:.*]] = vector.transfer_read {{.*}} : memref<2x24x128xbf16, {{.*}}>, vector<32xbf16>
// CHECK-NEXT:      vector.bitcast %[[ROW]] : vector<32xbf16> to vector<16xi32>
// CHECK-NOT:       x86vector.avx512.cvt.packed.f32_to_bf16
// CHECK:           vector.transpose %{{.*}}, [1, 0] : vector<16x16xi32> to vector<16x16xi32>
func.func @bf16_queries(%q: tensor<2x24x128xbf16>, %k: tensor<2x24x128xbf16>, %v: tensor<2x24x128xbf16>) -> tensor<2x24x128xbf16> {
  %a = mha.attention %q, %k, %v heads(2) kv_heads(2) head_dim(64) scale(0.125) : (tensor<2x24x128xbf16>, tensor<2x24x128xbf16>, tensor<2x24x128xbf16>) -> tensor<2x24x128xbf16>
  return %a : tensor<2x24x128xbf16>
}
