// RUN: mhac-opt %s --pass-pipeline="builtin.module(func.func(convert-mha-attention-to-loops{query-block=48 grouped-query-block=64 key-block=96 score-tile-vectors=3 value-tile-rows=6}))" | FileCheck %s

// A sequence known at run time only: calls of at most one vector of query rows (a decode step)
// take blocks of one vector, the others the schedule's. With 4 query heads a key/value head,
// a step of up to 4 positions fills the 16 rows of one vector; taller calls take 64 rows, 16
// positions of each head.
// CHECK-LABEL: func.func @grouped_dynamic_seq
// CHECK:         %[[Q:.*]] = bufferization.to_buffer %arg0
// CHECK:         %[[SEQ:.*]] = memref.dim %[[Q]], %c1
// CHECK:         %[[SHORT:.*]] = arith.cmpi sle, %[[SEQ]], %c4 : index
// CHECK:         scf.if %[[SHORT]] {
// CHECK:           arith.ceildivsi %[[SEQ]], %c4 : index
// CHECK:           scf.parallel
// CHECK:             memref.alloca() {alignment = 64 : i64} : memref<64x16xf32>
// CHECK:         } else {
// CHECK:           arith.ceildivsi %[[SEQ]], %c16 : index
// CHECK:           scf.parallel
// CHECK:             memref.alloca() {alignment = 64 : i64} : memref<64x64xf32>
// CHECK:         }
// CHECK:         bufferization.to_tensor
func.func @grouped_dynamic_seq(%q: tensor<1x?x512xf32>, %k: tensor<1x?x128xf32>, %v: tensor<1x?x128xf32>) -> tensor<1x?x512xf32> {
  %a = mha.attention %q, %k, %v heads(8) kv_heads(2) head_dim(64) scale(0.125) causal : (tensor<1x?x512xf32>, tensor<1x?x128xf32>, tensor<1x?x128xf32>) -> tensor<1x?x512xf32>
  return %a : tensor<1x?x512xf32>
}

// A static sequence that fits one vector's block already takes it: no second nest.
// CHECK-LABEL: func.func @grouped_one_position
// CHECK-NOT:     scf.if %{{.*}} {
// CHECK:         memref.alloca() {alignment = 64 : i64} : memref<64x16xf32>
// CHECK-NOT:     memref<64x64xf32>
// CHECK:         return
func.func @grouped_one_position(%q: tensor<1x1x512xf32>, %k: tensor<1x1x128xf32>, %v: tensor<1x1x128xf32>) -> tensor<1x1x512xf32> {
  %a = mha.attention %q, %k, %v heads(8) kv_heads(2) head_dim(64) scale(0.125) : (tensor<1x1x512xf32>, tensor<1x1x128xf32>, tensor<1x1x128xf32>) -> tensor<1x1x512xf32>
  return %a : tensor<1x1x512xf32>
}

// One query head a key/value head: a short call is up to 16 positions, against 48.
// CHECK-LABEL: func.func @dynamic_seq
// CHECK:         arith.cmpi sle, %{{.*}}, %c16 : index
// CHECK:         memref.alloca() {alignment = 64 : i64} : memref<64x16xf32>
// CHECK:       } else {
// CHECK:         memref.alloca() {alignment = 64 : i64} : memref<64x48xf32>
func.func @dynamic_seq(%q: tensor<?x?x128xf32>, %k: tensor<?x?x128xf32>, %v: tensor<?x?x128xf32>) -> tensor<?x?x128xf32> {
  %a = mha.attention %q, %k, %v heads(2) kv_heads(2) head_dim(64) scale(0.125) : (tensor<?x?x128xf32>, tensor<?x?x128xf32>, tensor<?x?x128xf32>) -> tensor<?x?x128xf32>
  return %a : tensor<?x?x128xf32>
}
