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

// A result computed in a fresh tensor of its own type, through reshapes, destination-style ops
// and scf.forall's shared outputs, is computed in `out` itself: the fresh tensor becomes
// `out`'s, whose to_tensor takes over `restrict`, and bufferization has nothing to copy.
// CHECK-LABEL: func.func @computed_in_out
// CHECK-SAME:    (%[[B:.*]]: tensor<8xf32>, %[[OUT:.*]]: memref<2x4x8xf32>) {
// CHECK-NEXT:    %[[RESULT:.*]] = bufferization.to_tensor %[[OUT]] restrict writable : memref<2x4x8xf32> to tensor<2x4x8xf32>
// CHECK:         %[[ROWS:.*]] = tensor.collapse_shape %[[RESULT]]
// CHECK:         %[[FILLED:.*]] = linalg.broadcast ins(%[[B]] : tensor<8xf32>) outs(%[[ROWS]] : tensor<8x8xf32>)
// CHECK:         %[[TILED:.*]] = scf.forall {{.*}} shared_outs(%{{.*}} = %[[FILLED]])
// CHECK:         %[[SHAPED:.*]] = tensor.expand_shape %[[TILED]]
// CHECK:         bufferization.materialize_in_destination %[[SHAPED]] in writable %[[OUT]]
func.func @computed_in_out(%b: tensor<8xf32>) -> tensor<2x4x8xf32> {
  %empty = tensor.empty() : tensor<2x4x8xf32>
  %rows = tensor.collapse_shape %empty [[0, 1], [2]] : tensor<2x4x8xf32> into tensor<8x8xf32>
  %filled = linalg.broadcast ins(%b : tensor<8xf32>) outs(%rows : tensor<8x8xf32>) dimensions = [0]
  %tiled = scf.forall (%i) in (8) shared_outs(%acc = %filled) -> (tensor<8x8xf32>) {
    %row = tensor.extract_slice %acc[%i, 0] [1, 8] [1, 1] : tensor<8x8xf32> to tensor<1x8xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %row into %acc[%i, 0] [1, 8] [1, 1] : tensor<1x8xf32> into tensor<8x8xf32>
    }
  }
  %shaped = tensor.expand_shape %tiled [[0, 1], [2]] output_shape [2, 4, 8] : tensor<8x8xf32> into tensor<2x4x8xf32>
  return %shaped : tensor<2x4x8xf32>
}

// A fresh tensor of another type than the result stays as it is, and so does `restrict`.
// CHECK-LABEL: func.func @computed_in_rows
// CHECK-NOT:     bufferization.to_tensor
// CHECK:         tensor.empty() : tensor<8x8xf32>
// CHECK:         bufferization.materialize_in_destination %{{.*}} in restrict writable
func.func @computed_in_rows(%b: tensor<8xf32>) -> tensor<2x4x8xf32> {
  %empty = tensor.empty() : tensor<8x8xf32>
  %filled = linalg.broadcast ins(%b : tensor<8xf32>) outs(%empty : tensor<8x8xf32>) dimensions = [0]
  %shaped = tensor.expand_shape %filled [[0, 1], [2]] output_shape [2, 4, 8] : tensor<8x8xf32> into tensor<2x4x8xf32>
  return %shaped : tensor<2x4x8xf32>
}
