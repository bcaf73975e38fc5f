// RUN: mhac-opt %s --pass-pipeline="builtin.module(func.func(convert-mha-attention-to-loops{query-block=48 grouped-query-block=64 long-keys=4096 long-block-growth=3 key-block=96 score-tile-vectors=3 value-tile-rows=6}))" | FileCheck %s
// RUN: mhac-opt %s --pass-pipeline="builtin.module(func.func(convert-mha-attention-to-loops{query-block=48 grouped-query-block=64 key-block=96 score-tile-vectors=3 value-tile-rows=6}))" | FileCheck %s --check-prefix=NONE
// RUN: not mhac-opt %s --pass-pipeline="builtin.module(func.func(convert-mha-attention-to-loops{long-block-growth=0}))" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD-OPTION
// RUN: not mhac-opt %s --pass-pipeline="builtin.module(func.func(convert-mha-attention-to-loops{long-keys=-1}))" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD-OPTION

// BAD-OPTION: long-block-growth and the tiles' rows, keys and vectors positive; long-keys and key-prefetch-distance not negative

// Keys known at run time only: both loop nests, the call's keys choose. Calls with at least
// 4096 keys run blocks of 144 rows (9 vectors: 3 chunks of the score tile's 3), scratch of
// 144 rows, 48 blocks of a 6912-position call; the others blocks of 48.
// CHECK-LABEL: func.func @dynamic_keys
// CHECK:         %[[K:.*]] = bufferization.to_buffer %arg1
// CHECK:         %[[KEYS:.*]] = memref.dim %[[K]], %c1 : memref<1x?x128xf32
// CHECK:         %[[LONG:.*]] = arith.cmpi sge, %[[KEYS]], %c4096 : index
// CHECK:         scf.if %[[LONG]] {
// CHECK:           arith.ceildivsi %{{.*}}, %c144 : index
// CHECK:           scf.parallel
// CHECK:             memref.alloca() {alignment = 64 : i64} : memref<64x144xf32>
// CHECK:             memref.alloca() {alignment = 64 : i64} : memref<96x144xf32>
// CHECK:         } else {
// CHECK:           arith.ceildivsi %{{.*}}, %c48 : index
// CHECK:           scf.parallel
// CHECK:             memref.alloca() {alignment = 64 : i64} : memref<64x48xf32>
// CHECK:             memref.alloca() {alignment = 64 : i64} : memref<96x48xf32>
// CHECK:         }
// CHECK:         bufferization.to_tensor
// NONE-LABEL:  func.func @dynamic_keys
// NONE-NOT:      arith.cmpi sge, %{{.*}}, %c4096
// NONE:          memref.alloca() {alignment = 64 : i64} : memref<64x48xf32>
// NONE-NOT:      memref<64x144xf32>
// NONE:        return
func.func @dynamic_keys(%q: tensor<1x?x128xf32>, %k: tensor<1x?x128xf32>, %v: tensor<1x?x128xf32>) -> tensor<1x?x128xf32> {
  %a = mha.attention %q, %k, %v heads(2) kv_heads(2) head_dim(64) scale(0.125) causal : (tensor<1x?x128xf32>, tensor<1x?x128xf32>, tensor<1x?x128xf32>) -> tensor<1x?x128xf32>
  return %a : tensor<1x?x128xf32>
}

// Grouped heads (4 of 2 key/value heads): a long call's blocks are 192 rows, 96 positions of
// both heads of a group; the others' 64, 32 of each.
// CHECK-LABEL: func.func @grouped_dynamic_keys
// CHECK:         scf.if
// CHECK:           arith.ceildivsi %{{.*}}, %c96 : index
// CHECK:             memref.alloca() {alignment = 64 : i64} : memref<64x192xf32>
// CHECK:         } else {
// CHECK:           arith.ceildivsi %{{.*}}, %c32 : index
// CHECK:             memref.alloca() {alignment = 64 : i64} : memref<64x64xf32>
func.func @grouped_dynamic_keys(%q: tensor<?x?x256xf32>, %k: tensor<?x?x128xf32>, %v: tensor<?x?x128xf32>) -> tensor<?x?x256xf32> {
  %a = mha.attention %q, %k, %v heads(4) kv_heads(2) head_dim(64) scale(0.125) : (tensor<?x?x256xf32>, tensor<?x?x128xf32>, tensor<?x?x128xf32>) -> tensor<?x?x256xf32>
  return %a : tensor<?x?x256xf32>
}

// Static keys decide at compile time: 5000 keys take the long blocks alone, 4095 the others.
// CHECK-LABEL: func.func @static_long
// CHECK-NOT:     scf.if
// CHECK:         memref.alloca() {alignment = 64 : i64} : memref<64x144xf32>
// CHECK-NOT:     memref<64x48xf32>
// CHECK:       return
func.func @static_long(%q: tensor<1x5000x128xf32>, %k: tensor<1x5000x128xf32>, %v: tensor<1x5000x128xf32>) -> tensor<1x5000x128xf32> {
  %a = mha.attention %q, %k, %v heads(2) kv_heads(2) head_dim(64) scale(0.125) : (tensor<1x5000x128xf32>, tensor<1x5000x128xf32>, tensor<1x5000x128xf32>) -> tensor<1x5000x128xf32>
  return %a : tensor<1x5000x128xf32>
}

// CHECK-LABEL: func.func @static_short
// CHECK-NOT:     scf.if
// CHECK:         memref.alloca() {alignment = 64 : i64} : memref<64x48xf32>
// CHECK-NOT:     memref<64x144xf32>
// CHECK:       return
func.func @static_short(%q: tensor<1x4095x128xf32>, %k: tensor<1x4095x128xf32>, %v: tensor<1x4095x128xf32>) -> tensor<1x4095x128xf32> {
  %a = mha.attention %q, %k, %v heads(2) kv_heads(2) head_dim(64) scale(0.125) : (tensor<1x4095x128xf32>, tensor<1x4095x128xf32>, tensor<1x4095x128xf32>) -> tensor<1x4095x128xf32>
  return %a : tensor<1x4095x128xf32>
}

// A static sequence of 40 positions fills a block of 48 rows: a taller one would hold the
// same rows, and one loop nest serves every call.
// CHECK-LABEL: func.func @short_queries
// CHECK-NOT:     scf.if
// CHECK:         memref.alloca() {alignment = 64 : i64} : memref<64x48xf32>
// CHECK:       return
func.func @short_queries(%q: tensor<1x40x128xf32>, %k: tensor<1x?x128xf32>, %v: tensor<1x?x128xf32>) -> tensor<1x40x128xf32> {
  %a = mha.attention %q, %k, %v heads(2) kv_heads(2) head_dim(64) scale(0.125) : (tensor<1x40x128xf32>, tensor<1x?x128xf32>, tensor<1x?x128xf32>) -> tensor<1x40x128xf32>
  return %a : tensor<1x40x128xf32>
}
