// RUN: mhac-opt %s --pass-pipeline="builtin.module(func.func(convert-mha-attention-to-loops{query-block=16 grouped-query-block=16 key-block=32 dot=true}))" | FileCheck %s
// RUN: not mhac-opt %s --pass-pipeline="builtin.module(func.func(convert-mha-attention-to-loops{query-block=16 grouped-query-block=16 key-block=32 amx=true emulate-amx=true}))" 2>&1 | FileCheck %s --check-prefix=AMX

// vdpbf16ps register tiles take a head of any width (Stable Diffusion's 40): whole
// vectors of it, then a narrower tile of the rest, with no feature read past the head. The
// values' pass transposes a last 16 x 8 tile into 8 rows of transposed values (40 rows a
// head); the queries' last step of pairs reads 8 features and zeros after them; the
// accumulators' last 8 rows are transposed as 8 x 16 into 8 columns of the output block.
// CHECK-LABEL: func.func @head_of_40
// CHECK:         memref.alloc(%c1, %{{.*}}) {alignment = 64 : i64} : memref<?x2x40x?xbf16>
// CHECK:         vector.transfer_read {{.*}} {in_bounds = [true, true]} : {{.*}}, vector<16x8xbf16>
// CHECK:         vector.transpose %{{.*}}, [1, 0] : vector<16x8xf32> to vector<8x16xf32>
// CHECK-COUNT-8: x86vector.avx512.cvt.packed.f32_to_bf16
// CHECK-NOT:     x86vector.avx512.cvt.packed.f32_to_bf16
// CHECK:         } else {
// CHECK:         vector.transfer_read {{.*}} {in_bounds = [false, true]} : {{.*}}, vector<16x8xbf16>
// CHECK:         %[[FEATURES:.*]] = vector.transfer_read {{.*}} {in_bounds = [true]} : memref<1x40x80xbf16, {{.*}}>, vector<8xbf16>
// CHECK:         vector.insert_strided_slice %[[FEATURES]], %{{.*}} {offsets = [0], strides = [1]} : vector<8xbf16> into vector<16xbf16>
// CHECK:         vector.transfer_read %{{.*}}[%c32, %c0], %{{.*}} {in_bounds = [true, true]} : memref<40x16xf32>, vector<8x16xf32>
// CHECK:         vector.transpose %{{.*}}, [1, 0] : vector<8x16xf32> to vector<16x8xf32>
// CHECK:         vector.transfer_write %{{.*}}, %{{.*}}[%c0, %c32] {in_bounds = [true, true]} : vector<16x8xf32>, memref<16x40xf32>
// AMX: error: attention's bf16 products need {{.*}} heads of whole 16-row tiles (any head with dot)
func.func @head_of_40(%q: tensor<1x40x80xbf16>, %k: tensor<1x40x80xbf16>, %v: tensor<1x40x80xbf16>) -> tensor<1x40x80xbf16> {
  %a = mha.attention %q, %k, %v heads(2) kv_heads(2) head_dim(40) scale(0.125) : (tensor<1x40x80xbf16>, tensor<1x40x80xbf16>, tensor<1x40x80xbf16>) -> tensor<1x40x80xbf16>
  return %a : tensor<1x40x80xbf16>
}

// f32 keys are rounded into a buffer padded to whole steps of 32 features: a last row of 8
// features is stored as a whole vector, zero after them.
// CHECK-LABEL: func.func @f32_head_of_40
// CHECK:         memref.alloc(%c1, %{{.*}}) {alignment = 64 : i64} : memref<?x1x?x64xbf16>
// CHECK:         %[[KEYS:.*]] = vector.transfer_read {{.*}} : memref<1x40x40xf32, {{.*}}>, vector<16x8xf32>
// CHECK:         %[[ROW:.*]] = vector.extract %[[KEYS]][0] : vector<8xf32> from vector<16x8xf32>
// CHECK:         %[[PADDED:.*]] = vector.insert_strided_slice %[[ROW]], %{{.*}} {offsets = [0], strides = [1]} : vector<8xf32> into vector<16xf32>
// CHECK:         x86vector.avx512.cvt.packed.f32_to_bf16 %[[PADDED]] : vector<16xf32> -> vector<16xbf16>
func.func @f32_head_of_40(%q: tensor<1x40x40xf32>, %k: tensor<1x40x40xf32>, %v: tensor<1x40x40xf32>) -> tensor<1x40x40xf32> {
  %a = mha.attention %q, %k, %v heads(1) kv_heads(1) head_dim(40) scale(0.125) : (tensor<1x40x40xf32>, tensor<1x40x40xf32>, tensor<1x40x40xf32>) -> tensor<1x40x40xf32>
  return %a : tensor<1x40x40xf32>
}

// An odd head (9 features) read in place: the scores reduce over 4 whole pairs of the keys'
// rows, then a fifth of the ninth feature and a zero, never a 32-bit read of it and the next
// head's first feature. The queries' pairs end in the same zero (their last tile reads 9
// features).
// CHECK-LABEL: func.func @head_of_9
// CHECK:         vector.transfer_read {{.*}} {in_bounds = [true]} : memref<1x20x18xbf16, {{.*}}>, vector<9xbf16>
// CHECK:         %[[KEYS:.*]] = memref.subview {{.*}} : memref<1x20x18xbf16, {{.*}}> to memref<?x9xbf16, {{.*}}>
// CHECK:         %[[SUMS:.*]]:8 = scf.for %[[PAIR:.*]] = %c0 to %c4 step %c1
// CHECK:           %[[COLUMN:.*]] = arith.muli %[[PAIR]], %c2 : index
// CHECK:           vector.transfer_read %[[KEYS]][%{{.*}}, %[[COLUMN]]], %{{.*}} {in_bounds = [true]} : memref<?x9xbf16, {{.*}}>, vector<2xbf16>
// CHECK-COUNT-8:   x86vector.avx512.dot
// CHECK:         }
// CHECK:         %[[LAST:.*]] = memref.load %[[KEYS]][%{{.*}}, %c8] : memref<?x9xbf16, {{.*}}>
// CHECK:         %[[HALF:.*]] = vector.from_elements %[[LAST]], %[[ZERO:.*]] : vector<2xbf16>
// CHECK:         vector.bitcast %[[HALF]] : vector<2xbf16> to vector<1xi32>
// CHECK:         x86vector.avx512.dot %[[SUMS]]#0, %{{.*}}, %{{.*}} : vector<32xbf16> -> vector<16xf32>
// CHECK-NOT:     vector.transfer_read %[[KEYS]]
// CHECK-COUNT-7: vector.from_elements %{{.*}}, %[[ZERO]] : vector<2xbf16>
func.func @head_of_9(%q: tensor<1x20x18xbf16>, %k: tensor<1x20x18xbf16>, %v: tensor<1x20x18xbf16>) -> tensor<1x20x18xbf16> {
  %a = mha.attention %q, %k, %v heads(2) kv_heads(2) head_dim(9) scale(0.125) : (tensor<1x20x18xbf16>, tensor<1x20x18xbf16>, tensor<1x20x18xbf16>) -> tensor<1x20x18xbf16>
  return %a : tensor<1x20x18xbf16>
}

// f32 keys are rounded into the padded buffer, zeros past the head: the fifth pair reads a
// feature and a zero from it, in the loop with the others.
// CHECK-LABEL: func.func @f32_head_of_9
// CHECK:         scf.for %{{.*}} = %c0 to %c5 step %c1
// CHECK-NOT:     vector.from_elements
// CHECK:       return
func.func @f32_head_of_9(%q: tensor<1x20x9xf32>, %k: tensor<1x20x9xf32>, %v: tensor<1x20x9xf32>) -> tensor<1x20x9xf32> {
  %a = mha.attention %q, %k, %v heads(1) kv_heads(1) head_dim(9) scale(0.125) : (tensor<1x20x9xf32>, tensor<1x20x9xf32>, tensor<1x20x9xf32>) -> tensor<1x20x9xf32>
  return %a : tensor<1x20x9xf32>
}
