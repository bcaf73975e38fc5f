// RUN: mhac-opt %s --mhac-layer-results-to-out-arguments | FileCheck %s

// CHECK-LABEL: func.func @layer
// CHECK-SAME:    (%[[X:.*]]: tensor<?x4xf32>, %[[OUT:.*]]: memref<?x4xf32>) {
// CHECK:         bufferization.materialize_in_destination %[[X]] in restrict writable %[[OUT]] : (tensor<?x4xf32>, memref<?x4xf32>) -> ()
// CHECK-NEXT:    return{{$}}
func.func @layer(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  return %x : tensor<?x4xf32>
}

// Several results become several out arguments; argument attributes stay with their arguments.
// CHECK-LABEL: func.func @two_results
// CHECK-SAME:    (%[[A:.*]]: tensor<4xf32> {test.mark}, %[[B:.*]]: tensor<2xf32>, %[[OUT0:.*]]: memref<4xf32>, %[[OUT1:.*]]: memref<2xf32>) {
// CHECK:         bufferization.materialize_in_destination %[[A]] in restrict writable %[[OUT0]]
// CHECK:         bufferization.materialize_in_destination %[[B]] in restrict writable %[[OUT1]]
func.func @two_results(%a: tensor<4xf32> {test.mark}, %b: tensor<2xf32>) -> (tensor<4xf32>, tensor<2xf32>) {
  return %a, %b : tensor<4xf32>, tensor<2xf32>
}
