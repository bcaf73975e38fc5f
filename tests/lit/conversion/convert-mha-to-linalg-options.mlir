// Negative sizes are refused, naming the options.
// RUN: not mhac-opt %s --pass-pipeline="builtin.module(func.func(convert-mha-to-linalg{vector-lanes=-16}))" 2>&1 | FileCheck %s
// RUN: not mhac-opt %s --pass-pipeline="builtin.module(func.func(convert-mha-to-linalg{panel-width=-64}))" 2>&1 | FileCheck %s
// CHECK: error: panel-width, row-tile, cache-rows, row-padding and vector-lanes must not be negative
func.func @projection(%x: tensor<4x32xf32>, %w: tensor<80x32xf32>) -> tensor<4x80xf32> {
  %y = mha.linear %x, %w : (tensor<4x32xf32>, tensor<80x32xf32>) -> tensor<4x80xf32>
  return %y : tensor<4x80xf32>
}
