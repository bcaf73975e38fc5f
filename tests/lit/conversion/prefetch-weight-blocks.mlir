// RUN: mhac-opt %s --split-input-file --pass-pipeline="builtin.module(func.func(mhac-prefetch-weight-blocks,canonicalize))" | FileCheck %s

// A cache tile's row tiles (6 rows each, 4 tiles) all read the same block of 8 x 64 weights
// (elements 1536 to 2047 of the buffer, 32 cache lines) through a subview in their reduction
// loop. Row tile t prefetches lines 8t to 8t + 7 of the next block (from element 2048), never
// past the buffer's last element (4095), in a loop of its own before its reduction, which keeps
// only its loads and FMAs.
// CHECK-LABEL: func.func @shared_block(
// CHECK-SAME:      %{{.*}}: memref<24x8xf32>, %[[W:.*]]: memref<4x16x64xf32>
// CHECK:         %[[BLOCK:.*]] = memref.subview %[[W]][1, 8, 0] [1, 8, 64] [1, 1, 1]
// CHECK:         %[[FLAT:.*]] = memref.reinterpret_cast %[[BLOCK]] to offset: [0], sizes: [4096], strides: [1]
// CHECK:         scf.for %[[ROW:.*]] = %c0 to %c24 step %c6 {
// CHECK:           %[[TILE:.*]] = arith.divui %[[ROW]], %c6
// CHECK:           %[[FIRST_LINE:.*]] = arith.muli %[[TILE]], %c8
// CHECK:           %[[NEXT_SHARE:.*]] = arith.addi %[[FIRST_LINE]], %c8
// CHECK:           %[[END_LINE:.*]] = arith.minui %[[NEXT_SHARE]], %c32
// CHECK:           scf.for %[[LINE:.*]] = %[[FIRST_LINE]] to %[[END_LINE]] step %c1 {
// CHECK:             %[[LINE_OFFSET:.*]] = arith.muli %[[LINE]], %c16
// CHECK:             %[[ELEMENT:.*]] = arith.addi %[[LINE_OFFSET]], %c2048
// CHECK:             %[[INSIDE:.*]] = arith.minui %[[ELEMENT]], %c4095
// CHECK:             memref.prefetch %[[FLAT]][%[[INSIDE]]], read, locality<3>, data
// CHECK:           }
// CHECK:           scf.for %[[K:.*]] = %c0 to %c8 step %c1 iter_args
// CHECK-NOT:         memref.prefetch
// CHECK:             vector.transfer_read
// CHECK:             vector.fma
// CHECK-NOT:     mhac.weight_stream
func.func @shared_block(%x: memref<24x8xf32>, %w: memref<4x16x64xf32>, %out: memref<24x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c6 = arith.constant 6 : index
  %c8 = arith.constant 8 : index
  %c24 = arith.constant 24 : index
  %zero = arith.constant 0.0 : f32
  %block = memref.subview %w[1, 8, 0] [1, 8, 64] [1, 1, 1]
      : memref<4x16x64xf32> to memref<1x8x64xf32, strided<[1024, 64, 1], offset: 1536>>
  scf.for %row = %c0 to %c24 step %c6 {
    %acc = vector.transfer_read %out[%row, %c0], %zero : memref<24x64xf32>, vector<6x64xf32>
    %sum = scf.for %k = %c0 to %c8 step %c1 iter_args(%a = %acc) -> (vector<6x64xf32>) {
      %slice = memref.subview %block[0, %k, 0] [1, 1, 64] [1, 1, 1]
          : memref<1x8x64xf32, strided<[1024, 64, 1], offset: 1536>>
            to memref<1x64xf32, strided<[1024, 1], offset: ?>>
      %b = vector.transfer_read %slice[%c0, %c0], %zero
          : memref<1x64xf32, strided<[1024, 1], offset: ?>>, vector<64xf32>
      %xs = vector.transfer_read %x[%row, %k], %zero : memref<24x8xf32>, vector<6xf32>
      %bs = vector.broadcast %b : vector<64xf32> to vector<6x64xf32>
      %xt = vector.broadcast %xs : vector<6xf32> to vector<64x6xf32>
      %xr = vector.transpose %xt, [1, 0] : vector<64x6xf32> to vector<6x64xf32>
      %next = vector.fma %xr, %bs, %a : vector<6x64xf32>
      scf.yield %next : vector<6x64xf32>
    } {mhac.weight_stream}
    vector.transfer_write %sum, %out[%row, %c0] : vector<6x64xf32>, memref<24x64xf32>
  }
  return
}

// -----

// A reduction unrolled by a factor that does not divide it (10 steps by 4) leaves two marked
// loops in the row tile: its share of the next block is prefetched once, before the first.
// CHECK-LABEL: func.func @unrolled_with_remainder(
// CHECK:         scf.for %{{.*}} = %c0 to %c24 step %c6 {
// CHECK:           scf.for
// CHECK:             memref.prefetch
// CHECK:           scf.for %{{.*}} = %c0 to %c8 step %c4 iter_args
// CHECK-NOT:       memref.prefetch
// CHECK:           scf.for %{{.*}} = %c8 to %c10 step %c1 iter_args
// CHECK-NOT:     memref.prefetch
// CHECK-NOT:     mhac.weight_stream
func.func @unrolled_with_remainder(%x: memref<24x10xf32>, %w: memref<2x10x64xf32>, %out: memref<24x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c10 = arith.constant 10 : index
  %c6 = arith.constant 6 : index
  %c24 = arith.constant 24 : index
  %zero = arith.constant 0.0 : f32
  %block = memref.subview %w[0, 0, 0] [1, 10, 64] [1, 1, 1]
      : memref<2x10x64xf32> to memref<1x10x64xf32, strided<[640, 64, 1]>>
  scf.for %row = %c0 to %c24 step %c6 {
    %acc = vector.transfer_read %out[%row, %c0], %zero : memref<24x64xf32>, vector<6x64xf32>
    %main = scf.for %k = %c0 to %c8 step %c4 iter_args(%a = %acc) -> (vector<6x64xf32>) {
      %slice = memref.subview %block[0, %k, 0] [1, 1, 64] [1, 1, 1]
          : memref<1x10x64xf32, strided<[640, 64, 1]>> to memref<1x64xf32, strided<[640, 1], offset: ?>>
      %b = vector.transfer_read %slice[%c0, %c0], %zero
          : memref<1x64xf32, strided<[640, 1], offset: ?>>, vector<64xf32>
      %bs = vector.broadcast %b : vector<64xf32> to vector<6x64xf32>
      %next = arith.addf %a, %bs : vector<6x64xf32>
      scf.yield %next : vector<6x64xf32>
    } {mhac.weight_stream}
    %rest = scf.for %k = %c8 to %c10 step %c1 iter_args(%a = %main) -> (vector<6x64xf32>) {
      %slice = memref.subview %block[0, %k, 0] [1, 1, 64] [1, 1, 1]
          : memref<1x10x64xf32, strided<[640, 64, 1]>> to memref<1x64xf32, strided<[640, 1], offset: ?>>
      %b = vector.transfer_read %slice[%c0, %c0], %zero
          : memref<1x64xf32, strided<[640, 1], offset: ?>>, vector<64xf32>
      %bs = vector.broadcast %b : vector<64xf32> to vector<6x64xf32>
      %next = arith.addf %a, %bs : vector<6x64xf32>
      scf.yield %next : vector<6x64xf32>
    } {mhac.weight_stream}
    vector.transfer_write %rest, %out[%row, %c0] : vector<6x64xf32>, memref<24x64xf32>
  }
  return
}

// -----

// A lone tile (no row-tile loop around its reduction) has nobody to share the prefetching
// with: it gets none, and loses the mark.
// CHECK-LABEL: func.func @lone_tile(
// CHECK-NOT:     memref.prefetch
// CHECK-NOT:     mhac.weight_stream
func.func @lone_tile(%w: memref<8x64xf32>, %out: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  %acc = vector.transfer_read %out[%c0], %zero : memref<64xf32>, vector<64xf32>
  %sum = scf.for %k = %c0 to %c8 step %c1 iter_args(%a = %acc) -> (vector<64xf32>) {
    %slice = memref.subview %w[%k, 0] [1, 64] [1, 1]
        : memref<8x64xf32> to memref<64xf32, strided<[1], offset: ?>>
    %b = vector.transfer_read %slice[%c0], %zero : memref<64xf32, strided<[1], offset: ?>>, vector<64xf32>
    %next = arith.addf %a, %b : vector<64xf32>
    scf.yield %next : vector<64xf32>
  } {mhac.weight_stream}
  vector.transfer_write %sum, %out[%c0] : vector<64xf32>, memref<64xf32>
  return
}
