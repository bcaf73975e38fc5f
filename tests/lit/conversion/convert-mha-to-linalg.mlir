// RUN: mhac-opt %s --pass-pipeline="builtin.module(func.func(convert-mha-to-linalg))" | FileCheck %s

// A projection with a bias: the weight and bias are marked as parameters, the accumulator
// starts at the broadcast bias, the weight is transposed to [in, out] for the matmul (into rows
// padded by 16 elements: 512 is a width whose rows would alias in L1), and the leading
// dimensions are collapsed and restored around it.
// CHECK-LABEL: func.func @with_bias
// CHECK-SAME:    (%[[X:.*]]: tensor<?x128x768xf32>, %[[W:.*]]: tensor<512x768xf32> {mhac.parameter}, %[[B:.*]]: tensor<512xf32> {mhac.parameter})
// CHECK:         %[[ROWS:.*]] = tensor.collapse_shape %[[X]] {{\[\[}}0, 1], [2]] : tensor<?x128x768xf32> into tensor<?x768xf32>
// CHECK:         %[[EMPTY:.*]] = tensor.empty(%{{.*}}) : tensor<?x512xf32>
// CHECK:         %[[INIT:.*]] = linalg.generic {{.*}} ins(%[[B]] : tensor<512xf32>) outs(%[[EMPTY]] : tensor<?x512xf32>)
// CHECK:         %[[PADDED:.*]] = tensor.empty() : tensor<768x528xf32>
// CHECK:         %[[VIEW:.*]] = tensor.extract_slice %[[PADDED]][0, 0] [768, 512] [1, 1]
// CHECK:         %[[WT:.*]] = linalg.transpose ins(%[[W]] : tensor<512x768xf32>) outs(%[[VIEW]] : tensor<768x512xf32>) permutation = [1, 0]
// The padded weight is what the layer's preparation function will compute.
// CHECK:         %[[WHOLE:.*]] = tensor.insert_slice %[[WT]] into %[[PADDED]]{{.*}} {mhac.prepared_weight}
// CHECK:         %[[B:.*]] = tensor.extract_slice %[[WHOLE]][0, 0] [768, 512] [1, 1]
// CHECK:         %[[MM:.*]] = linalg.matmul ins(%[[ROWS]], %[[B]] : tensor<?x768xf32>, tensor<768x512xf32>) outs(%[[INIT]] : tensor<?x512xf32>)
// CHECK:         tensor.expand_shape %[[MM]] {{\[\[}}0, 1], [2]] output_shape [%{{.*}}, 128, 512] : tensor<?x512xf32> into tensor<?x128x512xf32>
// CHECK-NOT:     mha.linear
func.func @with_bias(%x: tensor<?x128x768xf32>, %w: tensor<512x768xf32>, %b: tensor<512xf32>) -> tensor<?x128x512xf32> {
  %y = mha.linear %x, %w bias %b : (tensor<?x128x768xf32>, tensor<512x768xf32>, tensor<512xf32>) -> tensor<?x128x512xf32>
  return %y : tensor<?x128x512xf32>
}

// Without a bias the accumulator is zero-filled.
// CHECK-LABEL: func.func @without_bias
// CHECK:         %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK:         %[[FILL:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%{{.*}} : tensor<6x16xf32>)
// CHECK:         linalg.matmul {{.*}} outs(%[[FILL]] : tensor<6x16xf32>)
func.func @without_bias(%x: tensor<2x3x8xf32>, %w: tensor<16x8xf32>) -> tensor<2x3x16xf32> {
  %y = mha.linear %x, %w : (tensor<2x3x8xf32>, tensor<16x8xf32>) -> tensor<2x3x16xf32>
  return %y : tensor<2x3x16xf32>
}

// bf16: the bias is widened into the f32 accumulator and the result rounded once.
// CHECK-LABEL: func.func @bf16
// CHECK:         linalg.generic
// CHECK:           arith.extf %{{.*}} : bf16 to f32
// CHECK:         linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<4x8xbf16>, tensor<8x16xbf16>) outs(%{{.*}} : tensor<4x16xf32>)
// CHECK:         linalg.generic
// CHECK:           arith.truncf %{{.*}} : f32 to bf16
func.func @bf16(%x: tensor<4x8xbf16>, %w: tensor<16x8xbf16>, %b: tensor<16xbf16>) -> tensor<4x16xbf16> {
  %y = mha.linear %x, %w bias %b : (tensor<4x8xbf16>, tensor<16x8xbf16>, tensor<16xbf16>) -> tensor<4x16xbf16>
  return %y : tensor<4x16xbf16>
}

// Two dynamic leading dimensions are restored with tensor.reshape.
// CHECK-LABEL: func.func @two_dynamic
// CHECK:         %[[SHAPE:.*]] = tensor.from_elements %{{.*}}, %{{.*}}, %{{.*}} : tensor<3xindex>
// CHECK:         tensor.reshape %{{.*}}(%[[SHAPE]]) : (tensor<?x4xf32>, tensor<3xindex>) -> tensor<?x?x4xf32>
func.func @two_dynamic(%x: tensor<?x?x8xf32>, %w: tensor<4x8xf32>) -> tensor<?x?x4xf32> {
  %y = mha.linear %x, %w : (tensor<?x?x8xf32>, tensor<4x8xf32>) -> tensor<?x?x4xf32>
  return %y : tensor<?x?x4xf32>
}
