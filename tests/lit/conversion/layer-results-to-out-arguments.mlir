// RUN: mhac-opt %s --mhac-layer-results-to-out-arguments | FileCheck %s

// CHECK-LABEL: func.func @layer
// CHECK-SAME:    (%[[X:.*]]: tensor<?x4xf32>, %[[OUT:.*]]: memref<?x4xf32>) {
// CHECK:         bufferization.materialize_in_destination %[[X]] in restrict writable %[[OUT]] : (tensor<?x4xf32>, memref<?x4xf32>) -> ()
// CHECK-NEXT:    return{{$}}
func.func @layer(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  return %x : tensor<?x4xf32>
}
