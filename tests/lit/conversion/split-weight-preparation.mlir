// RUN: mhac-opt %s --split-input-file --mhac-split-weight-preparation --verify-diagnostics | FileCheck %s

// The weight's transpose moves to @mhac_prepare_layer, which returns every parameter (the bias
// unchanged); the layer takes the transposed weight in the weight's position and no longer
// carries the marks.
// CHECK-LABEL: func.func @mhac_prepare_layer(
// CHECK-SAME:      %[[W:.*]]: tensor<16x8xf32>, %[[B:.*]]: tensor<16xf32>) -> (tensor<8x16xf32>, tensor<16xf32>)
// CHECK:         %[[EMPTY:.*]] = tensor.empty() : tensor<8x16xf32>
// CHECK:         %[[T:.*]] = linalg.transpose ins(%[[W]] : tensor<16x8xf32>) outs(%[[EMPTY]] : tensor<8x16xf32>) permutation = [1, 0]
// CHECK-NOT:       mhac.prepared_weight
// CHECK:         return %[[T]], %[[B]] : tensor<8x16xf32>, tensor<16xf32>
// CHECK-LABEL: func.func @layer(
// CHECK-SAME:      %[[X:.*]]: tensor<4x8xf32>, %[[WT:.*]]: tensor<8x16xf32>, %[[B2:.*]]: tensor<16xf32>) -> tensor<4x16xf32>
// CHECK-NOT:     linalg.transpose
// CHECK:         linalg.matmul ins(%[[X]], %[[WT]] : tensor<4x8xf32>, tensor<8x16xf32>)
func.func @layer(%x: tensor<4x8xf32>, %w: tensor<16x8xf32> {mhac.parameter}, %b: tensor<16xf32> {mhac.parameter}) -> tensor<4x16xf32> {
  %empty = tensor.empty() : tensor<8x16xf32>
  %t = linalg.transpose ins(%w : tensor<16x8xf32>) outs(%empty : tensor<8x16xf32>) permutation = [1, 0] {mhac.prepared_weight}
  %init = tensor.empty() : tensor<4x16xf32>
  %y = linalg.matmul ins(%x, %t : tensor<4x8xf32>, tensor<8x16xf32>) outs(%init : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

// A function without parameters is left alone.
// CHECK-LABEL: func.func @plain(
// CHECK-NOT:   mhac_prepare
func.func @plain(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

func.func @reads_an_activation(%x: tensor<8x16xf32>, %w: tensor<16x8xf32> {mhac.parameter}) -> tensor<8x16xf32> {
  // expected-error @+1 {{a weight preparation must read one parameter only}}
  %t = linalg.transpose ins(%w : tensor<16x8xf32>) outs(%x : tensor<8x16xf32>) permutation = [1, 0] {mhac.prepared_weight}
  return %t : tensor<8x16xf32>
}

// -----

func.func @reads_nothing(%w: tensor<16x8xf32> {mhac.parameter}) -> tensor<8x16xf32> {
  // expected-error @+1 {{a weight preparation must read a parameter}}
  %t = tensor.empty() {mhac.prepared_weight} : tensor<8x16xf32>
  return %t : tensor<8x16xf32>
}

// -----

func.func @also_unprepared(%w: tensor<16x8xf32> {mhac.parameter}) -> (tensor<8x16xf32>, tensor<16x8xf32>) {
  %empty = tensor.empty() : tensor<8x16xf32>
  %t = linalg.transpose ins(%w : tensor<16x8xf32>) outs(%empty : tensor<8x16xf32>) permutation = [1, 0] {mhac.prepared_weight}
  // expected-error @+1 {{a prepared weight is also read unprepared}}
  return %t, %w : tensor<8x16xf32>, tensor<16x8xf32>
}
