// RUN: mhac-opt %s --mhac-round-to-bf16-with-avx512 | FileCheck %s

// A row of 64 lanes (a projection's panel) is rounded 16 lanes at a time by vcvtneps2bf16.
// CHECK-LABEL: func.func @panel_row
// CHECK:         %[[FLAT:.*]] = vector.shape_cast %{{.*}} : vector<1x1x64xf32> to vector<64xf32>
// CHECK:         %[[LANES:.*]] = vector.extract_strided_slice %[[FLAT]] {offsets = [0], sizes = [16], strides = [1]}
// CHECK:         %[[ROUNDED:.*]] = x86vector.avx512.cvt.packed.f32_to_bf16 %[[LANES]] : vector<16xf32> -> vector<16xbf16>
// CHECK:         vector.insert_strided_slice %[[ROUNDED]], %{{.*}} {offsets = [0], strides = [1]}
// CHECK-COUNT-3: x86vector.avx512.cvt.packed.f32_to_bf16 %{{.*}} : vector<16xf32> -> vector<16xbf16>
// CHECK:         vector.shape_cast %{{.*}} : vector<64xbf16> to vector<1x1x64xbf16>
// CHECK-NOT:     arith.truncf
func.func @panel_row(%x: vector<1x1x64xf32>) -> vector<1x1x64xbf16> {
  %r = arith.truncf %x : vector<1x1x64xf32> to vector<1x1x64xbf16>
  return %r : vector<1x1x64xbf16>
}

// Left to arith-expand: vectors that are no whole 16 lanes, scalars, other roundings and
// other types.
// CHECK-LABEL: func.func @left_as_they_are
// CHECK-NOT:     x86vector
// CHECK-COUNT-4: arith.truncf
// CHECK-NOT:     x86vector
func.func @left_as_they_are(%a: vector<24xf32>, %s: f32, %c: vector<16xf32>, %d: vector<16xf64>)
    -> (vector<24xbf16>, bf16, vector<16xbf16>, vector<16xf32>) {
  %0 = arith.truncf %a : vector<24xf32> to vector<24xbf16>
  %1 = arith.truncf %s : f32 to bf16
  %2 = arith.truncf %c to_nearest_away : vector<16xf32> to vector<16xbf16>
  %3 = arith.truncf %d : vector<16xf64> to vector<16xf32>
  return %0, %1, %2, %3 : vector<24xbf16>, bf16, vector<16xbf16>, vector<16xf32>
}
