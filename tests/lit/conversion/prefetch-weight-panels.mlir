// RUN: mhac-opt --mhac-prefetch-weight-panels --canonicalize %s | FileCheck %s

// A projection's loops over a weight panel of 1024 inputs x 64 columns, in blocks of 256
// inputs: 21 full register tiles of 6 rows and an edge tile of 2 per block. Each full tile
// prefetches ceil(64 / 21) = 4 elements a step of the next block, which follows this one in
// memory (256 x 64 = 16384 elements on): tile t from element 1024 t, while 4 t < 64 and its
// last element (1020 on) is inside the buffer of 131072; the others prefetch their own row (64
// elements a step). The edge tile prefetches nothing.
// CHECK-LABEL: func.func @blocks(
// CHECK:       %[[BLOCK:.*]] = memref.subview %{{.*}}[0, %{{.*}}, 0] [1, 256, 64]
// CHECK:       scf.for %[[ROW:.*]] = %c0 to %c126 step %c6 {
// CHECK:         %{{.*}}, %[[OFFSET:.*]], %{{.*}}:3, %{{.*}}:3 = memref.extract_strided_metadata %[[BLOCK]]
// CHECK:         %[[FLAT:.*]] = memref.reinterpret_cast %{{.*}} to offset: [0], sizes: [131072], strides: [1]
// CHECK:         %[[TILE:.*]] = arith.divui %[[ROW]], %c6
// CHECK:         %[[BEFORE:.*]] = arith.muli %[[TILE]], %c1024
// CHECK:         %[[NEXT:.*]] = arith.addi %[[BEFORE]], %c16384
// CHECK:         %[[AHEAD:.*]] = arith.addi %[[OFFSET]], %[[NEXT]]
// CHECK:         %[[LAST:.*]] = arith.addi %[[AHEAD]], %c1020
// CHECK:         %[[SHARE:.*]] = arith.muli %[[TILE]], %c4
// CHECK:         %[[IN_BLOCK:.*]] = arith.cmpi ult, %[[SHARE]], %c64
// CHECK:         %[[IN_BUFFER:.*]] = arith.cmpi ult, %[[LAST]], %c131072
// CHECK:         %[[PREFETCHING:.*]] = arith.andi %[[IN_BLOCK]], %[[IN_BUFFER]]
// CHECK:         %[[START:.*]] = arith.select %[[PREFETCHING]], %[[AHEAD]], %[[OFFSET]]
// CHECK:         %[[STRIDE:.*]] = arith.select %[[PREFETCHING]], %c4, %c64
// CHECK:         scf.for %[[K:.*]] = %c0 to %c256 step %c1
// CHECK:           %[[STEP:.*]] = arith.muli %[[K]], %[[STRIDE]]
// CHECK:           %[[ELEMENT:.*]] = arith.addi %[[START]], %[[STEP]]
// CHECK:           memref.prefetch %[[FLAT]][%[[ELEMENT]]], read, locality<2>, data
// CHECK:         } {mhac.panel_reduction}
// CHECK:       }
// CHECK-NOT:   memref.prefetch
// CHECK:       } {mhac.panel_reduction}
func.func @blocks(%w: memref<2x1024x64xf32>, %tiles: memref<126x1x64xf32>, %out: memref<2x1x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c6 = arith.constant 6 : index
  %c126 = arith.constant 126 : index
  %c256 = arith.constant 256 : index
  %c1024 = arith.constant 1024 : index
  %f0 = arith.constant 0.0 : f32
  %tile = arith.constant dense<0.0> : vector<6x1x64xf32>
  %edgeTile = arith.constant dense<0.0> : vector<2x1x64xf32>
  scf.forall (%p) in (2) {
    %panel = memref.subview %w[%p, 0, 0] [1, 1024, 64] [1, 1, 1] : memref<2x1024x64xf32> to memref<1x1024x64xf32, strided<[65536, 64, 1], offset: ?>>
    scf.for %kb = %c0 to %c1024 step %c256 {
      %block = memref.subview %panel[0, %kb, 0] [1, 256, 64] [1, 1, 1] : memref<1x1024x64xf32, strided<[65536, 64, 1], offset: ?>> to memref<1x256x64xf32, strided<[65536, 64, 1], offset: ?>>
      scf.for %r = %c0 to %c126 step %c6 {
        %acc = scf.for %k = %c0 to %c256 step %c1 iter_args(%a = %tile) -> (vector<6x1x64xf32>) {
          %row = memref.subview %block[0, %k, 0] [1, 1, 64] [1, 1, 1] : memref<1x256x64xf32, strided<[65536, 64, 1], offset: ?>> to memref<1x1x64xf32, strided<[65536, 64, 1], offset: ?>>
          %v = vector.transfer_read %row[%c0, %c0, %c0], %f0 {in_bounds = [true, true, true]} : memref<1x1x64xf32, strided<[65536, 64, 1], offset: ?>>, vector<1x1x64xf32>
          %b = vector.broadcast %v : vector<1x1x64xf32> to vector<6x1x64xf32>
          %sum = arith.addf %a, %b : vector<6x1x64xf32>
          scf.yield %sum : vector<6x1x64xf32>
        } {mhac.panel_reduction}
        vector.transfer_write %acc, %tiles[%r, %c0, %c0] {in_bounds = [true, true, true]} : vector<6x1x64xf32>, memref<126x1x64xf32>
      }
      %edge = scf.for %k = %c0 to %c256 step %c1 iter_args(%a = %edgeTile) -> (vector<2x1x64xf32>) {
        %row = memref.subview %block[0, %k, 0] [1, 1, 64] [1, 1, 1] : memref<1x256x64xf32, strided<[65536, 64, 1], offset: ?>> to memref<1x1x64xf32, strided<[65536, 64, 1], offset: ?>>
        %v = vector.transfer_read %row[%c0, %c0, %c0], %f0 {in_bounds = [true, true, true]} : memref<1x1x64xf32, strided<[65536, 64, 1], offset: ?>>, vector<1x1x64xf32>
        %b = vector.broadcast %v : vector<1x1x64xf32> to vector<2x1x64xf32>
        %sum = arith.addf %a, %b : vector<2x1x64xf32>
        scf.yield %sum : vector<2x1x64xf32>
      } {mhac.panel_reduction}
      vector.transfer_write %edge, %out[%c0, %c0, %c0] {in_bounds = [true, true, true]} : vector<2x1x64xf32>, memref<2x1x64xf32>
    }
  }
  return
}

// A cache tile of two panels of 16 (AVX2's), its loop over them inside the loop over blocks:
// the next block read is the next panel's, 1024 x 16 = 16384 elements on, whatever the block.
// 12 tiles of 6 rows: ceil(16 / 12) = 2 elements a step each, from element 512 t.
// CHECK-LABEL: func.func @panels(
// CHECK:       scf.for %{{.*}} = %c0 to %c2 step %c1 {
// CHECK:         scf.for %[[ROW:.*]] = %c0 to %c72 step %c6 {
// CHECK:           %[[TILE:.*]] = arith.divui %[[ROW]], %c6
// CHECK:           %[[BEFORE:.*]] = arith.muli %[[TILE]], %c512
// CHECK:           arith.addi %[[BEFORE]], %c16384
// CHECK:           memref.prefetch
func.func @panels(%w: memref<4x1024x16xf32>, %out: memref<72x1x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c6 = arith.constant 6 : index
  %c72 = arith.constant 72 : index
  %c256 = arith.constant 256 : index
  %c1024 = arith.constant 1024 : index
  %f0 = arith.constant 0.0 : f32
  %tile = arith.constant dense<0.0> : vector<6x1x16xf32>
  scf.forall (%task) in (2) {
    %first = arith.muli %task, %c2 : index
    %panels = memref.subview %w[%first, 0, 0] [2, 1024, 16] [1, 1, 1] : memref<4x1024x16xf32> to memref<2x1024x16xf32, strided<[16384, 16, 1], offset: ?>>
    scf.for %kb = %c0 to %c1024 step %c256 {
      %blocks = memref.subview %panels[0, %kb, 0] [2, 256, 16] [1, 1, 1] : memref<2x1024x16xf32, strided<[16384, 16, 1], offset: ?>> to memref<2x256x16xf32, strided<[16384, 16, 1], offset: ?>>
      scf.for %p = %c0 to %c2 step %c1 {
        %block = memref.subview %blocks[%p, 0, 0] [1, 256, 16] [1, 1, 1] : memref<2x256x16xf32, strided<[16384, 16, 1], offset: ?>> to memref<1x256x16xf32, strided<[16384, 16, 1], offset: ?>>
        scf.for %r = %c0 to %c72 step %c6 {
          %acc = scf.for %k = %c0 to %c256 step %c1 iter_args(%a = %tile) -> (vector<6x1x16xf32>) {
            %row = memref.subview %block[0, %k, 0] [1, 1, 16] [1, 1, 1] : memref<1x256x16xf32, strided<[16384, 16, 1], offset: ?>> to memref<1x1x16xf32, strided<[16384, 16, 1], offset: ?>>
            %v = vector.transfer_read %row[%c0, %c0, %c0], %f0 {in_bounds = [true, true, true]} : memref<1x1x16xf32, strided<[16384, 16, 1], offset: ?>>, vector<1x1x16xf32>
            %b = vector.broadcast %v : vector<1x1x16xf32> to vector<6x1x16xf32>
            %sum = arith.addf %a, %b : vector<6x1x16xf32>
            scf.yield %sum : vector<6x1x16xf32>
          } {mhac.panel_reduction}
          vector.transfer_write %acc, %out[%r, %c0, %c0] {in_bounds = [true, true, true]} : vector<6x1x16xf32>, memref<72x1x16xf32>
        }
      }
    }
  }
  return
}

// bf16 pairs: a block of 128 steps of 64 pairs (a row of 128 bf16), 72 register tiles of one
// row: each prefetches ceil(128 / 72) = 2 elements a step of the block after, 128 x 128 =
// 16384 on. A tile's inputs, [1][128][2] (one row's pairs), are no weight block.
// CHECK-LABEL: func.func @pairs(
// CHECK:       scf.for %[[ROW:.*]] = %c0 to %c72 step %c1 {
// CHECK:         %[[BEFORE:.*]] = arith.muli %[[ROW]], %c256
// CHECK:         arith.addi %[[BEFORE]], %c16384
// CHECK:         arith.select %{{.*}}, %c2, %c128
// CHECK:         memref.prefetch %{{.*}} : memref<65536xbf16>
// CHECK-NOT:     memref.prefetch
// CHECK:       } {mhac.panel_reduction}
func.func @pairs(%x: memref<72x128x2xbf16>, %w: memref<4x128x64x2xbf16>, %out: memref<72x1x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c72 = arith.constant 72 : index
  %c128 = arith.constant 128 : index
  %b0 = arith.constant 0.0 : bf16
  %tile = arith.constant dense<0.0> : vector<1x1x64xf32>
  scf.forall (%p) in (4) {
    %block = memref.subview %w[%p, 0, 0, 0] [1, 128, 64, 2] [1, 1, 1, 1] : memref<4x128x64x2xbf16> to memref<1x128x64x2xbf16, strided<[16384, 128, 2, 1], offset: ?>>
    scf.for %r = %c0 to %c72 step %c1 {
      %rows = memref.subview %x[%r, 0, 0] [1, 128, 2] [1, 1, 1] : memref<72x128x2xbf16> to memref<1x128x2xbf16, strided<[256, 2, 1], offset: ?>>
      %acc = scf.for %k = %c0 to %c128 step %c1 iter_args(%a = %tile) -> (vector<1x1x64xf32>) {
        %inputs = memref.subview %rows[0, %k, 0] [1, 1, 2] [1, 1, 1] : memref<1x128x2xbf16, strided<[256, 2, 1], offset: ?>> to memref<1x1x2xbf16, strided<[256, 2, 1], offset: ?>>
        %row = memref.subview %block[0, %k, 0, 0] [1, 1, 64, 2] [1, 1, 1, 1] : memref<1x128x64x2xbf16, strided<[16384, 128, 2, 1], offset: ?>> to memref<1x1x64x2xbf16, strided<[16384, 128, 2, 1], offset: ?>>
        %v = vector.transfer_read %row[%c0, %c0, %c0, %c0], %b0 {in_bounds = [true, true, true, true]} : memref<1x1x64x2xbf16, strided<[16384, 128, 2, 1], offset: ?>>, vector<1x1x64x2xbf16>
        %u = vector.transfer_read %inputs[%c0, %c0, %c0], %b0 {in_bounds = [true, true, true]} : memref<1x1x2xbf16, strided<[256, 2, 1], offset: ?>>, vector<1x1x2xbf16>
        %f = arith.extf %v : vector<1x1x64x2xbf16> to vector<1x1x64x2xf32>
        %e = vector.extract %f[0, 0, 0, 0] : f32 from vector<1x1x64x2xf32>
        %g = arith.extf %u : vector<1x1x2xbf16> to vector<1x1x2xf32>
        %h = vector.extract %g[0, 0, 0] : f32 from vector<1x1x2xf32>
        %m = arith.mulf %e, %h : f32
        %b = vector.broadcast %m : f32 to vector<1x1x64xf32>
        %sum = arith.addf %a, %b : vector<1x1x64xf32>
        scf.yield %sum : vector<1x1x64xf32>
      } {mhac.panel_reduction}
      vector.transfer_write %acc, %out[%r, %c0, %c0] {in_bounds = [true, true, true]} : vector<1x1x64xf32>, memref<72x1x64xf32>
    }
  }
  return
}
