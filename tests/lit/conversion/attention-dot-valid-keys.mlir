// RUN: mhac-opt %s --pass-pipeline="builtin.module(func.func(convert-mha-attention-to-loops{query-block=16 grouped-query-block=16 key-block=32 dot=true}))" | FileCheck %s
// RUN: mhac-opt %s --pass-pipeline="builtin.module(func.func(convert-mha-attention-to-loops{query-block=16 grouped-query-block=16 key-block=32 amx=true emulate-amx=true}))" | FileCheck %s --check-prefix=AMX

// vdpbf16ps register tiles cost what a block's valid keys do: 40 keys in blocks of 32 leave
// 8 in the last one, whose score tiles (8 keys each) past them are skipped and whose p.v
// reduction ends at their last pair. AMX's tiles stay whole: the probabilities past the
// valid keys are zero-filled for them instead.
// The queries are transposed unscaled (exact in bf16); the softmax applies scale * log2(e)
// = 0.125 * 1.4427 in f32: to the rescale factors' exponents and, in one fma with the
// scaled maximum, to the probabilities'. The bf16 keys are read where they are; only the
// values are first laid out again (transposed), 16 keys a task: tiles of keys only are read as
// they are, the one past the 40th key row by row (zero past it); 3 tasks a head, as far as the
// last key's tile (4 on AMX, the whole blocks of 64 keys).
// CHECK-LABEL: func.func @short_last_block
// CHECK:         %[[SCALE:.*]] = arith.constant dense<0.180336878> : vector<16xf32>
// CHECK-NOT:     memref.alloc({{.*}}) {{.*}} : memref<?x2x?x32xbf16>
// CHECK:         memref.alloc(%c1, %{{.*}}) {alignment = 64 : i64} : memref<?x2x32x?xbf16>
// CHECK:         scf.parallel ({{.*}}) = (%c0, %c0, %c0) to (%c1, %c2, %c3) step
// CHECK:         %[[KEY:.*]] = arith.muli %{{.*}}, %c16 : index
// First the next task's 16 value rows (one line each), fetched into L2.
// CHECK:         %[[NEXT:.*]] = arith.addi %[[KEY]], %c16 : index
// CHECK:         %[[NEXT_ROW:.*]] = arith.minsi %[[NEXT]], %c39 : index
// CHECK:         memref.prefetch %[[VALUES:.*]][%{{.*}}, %[[NEXT_ROW]], %{{.*}}], read, locality<2>, data
// CHECK-COUNT-15: memref.prefetch %[[VALUES]]{{.*}}, read, locality<2>, data
// CHECK-NOT:     memref.prefetch
// CHECK:         %[[END:.*]] = arith.addi %[[KEY]], %c16 : index
// CHECK:         %[[WHOLE:.*]] = arith.cmpi sle, %[[END]], %c40 : index
// CHECK:         scf.if %[[WHOLE]] {
// CHECK:           vector.transfer_read %{{.*}} {in_bounds = [true, true]} : {{.*}}, vector<16x16xbf16>
// CHECK:         } else {
// CHECK:           vector.transfer_read %{{.*}} {in_bounds = [false, true]} : {{.*}}, vector<16x16xbf16>
// CHECK:         }
// CHECK-NOT:     arith.mulf {{.*}} : vector<16x16xf32>
// The next task's first key block (32 keys), fetched into L2.
// CHECK:         scf.for %[[K:.*]] = %c0 to %c32 step %c1
// CHECK-NEXT:      memref.prefetch %[[KEYS:.*]][%{{.*}}, %[[K]], %{{.*}}], read, locality<2>, data
// CHECK:         scf.for %[[J0:.*]] = %c0 to %c40 step %c32
// CHECK:           %[[LEFT:.*]] = arith.subi %c40, %[[J0]]
// CHECK:           %[[COLS:.*]] = arith.minsi %[[LEFT]], %c32
// The next key block's rows, then this block's keys seen where they are: its valid rows alone.
// CHECK:           scf.for %[[NEXT_KEY:.*]] = %{{.*}} to %{{.*}} step %c1
// CHECK-NEXT:        memref.prefetch %[[KEYS]][%{{.*}}, %[[NEXT_KEY]], %{{.*}}], read, locality<2>, data
// CHECK:           %[[BLOCK:.*]] = memref.subview %[[KEYS]][%{{.*}}, %[[J0]], %{{.*}}] [1, %[[COLS]], 32] [1, 1, 1]
// A tile's rows past the valid keys read the last valid one.
// CHECK:           %[[LAST:.*]] = arith.subi %[[COLS]], %c1
// CHECK:           %[[TILE0:.*]] = arith.cmpi sgt, %[[COLS]], %c0
// CHECK:           scf.if %[[TILE0]] {
// CHECK:             %[[ROW0:.*]] = arith.minsi %[[LAST]], %c0
// CHECK:             scf.for %[[PAIR:.*]] = %c0 to %c16 step %c1
// CHECK:               %[[COLUMN:.*]] = arith.muli %[[PAIR]], %c2
// CHECK:               vector.transfer_read %[[BLOCK]][%[[ROW0]], %[[COLUMN]]]
// CHECK-COUNT-8:       x86vector.avx512.dot
// CHECK:           %[[TILE1:.*]] = arith.cmpi sgt, %[[COLS]], %c8
// CHECK:           scf.if %[[TILE1]] {
// CHECK:           arith.cmpi sgt, %[[COLS]], %c16
// CHECK:           arith.cmpi sgt, %[[COLS]], %c24
// CHECK:           arith.mulf %{{.*}}, %[[SCALE]] : vector<16xf32>
// CHECK:           %[[PAIRS:.*]] = arith.ceildivsi %[[COLS]], %c2
// CHECK:           %[[SCALED_MAX:.*]] = arith.mulf %{{.*}}, %[[SCALE]] : vector<16xf32>
// CHECK:           %[[SHIFT:.*]] = arith.negf %[[SCALED_MAX]]
// CHECK:           scf.for %{{.*}} = %c0 to %[[PAIRS]] step %c1 iter_args
// CHECK:             vector.fma %{{.*}}, %[[SCALE]], %[[SHIFT]] : vector<16xf32>
// CHECK-NOT:       vector.store %cst{{.*}} : memref<16x32xbf16>, vector<32xbf16>
// CHECK:           %[[VALUE_PAIRS:.*]] = arith.ceildivsi %[[COLS]], %c2
// CHECK:           scf.for %{{.*}} = %c0 to %[[VALUE_PAIRS]] step %c1 iter_args
// CHECK-COUNT-8:     x86vector.avx512.dot
// CHECK:         return
// AMX-LABEL:   func.func @short_last_block
// AMX:           scf.parallel ({{.*}}) = (%c0, %c0, %c0) to (%c1, %c2, %c4) step
// AMX:           scf.parallel
// AMX-NOT:       scf.if
// AMX:           %[[PAIRS:.*]] = arith.ceildivsi %{{.*}}, %c2
// AMX:           scf.for %[[K:.*]] = %[[PAIRS]] to %c16 step %c1
// AMX-NEXT:        vector.store %{{.*}}, %{{.*}}[%[[K]], %c0] : memref<16x32xbf16>, vector<32xbf16>
// AMX:         return
func.func @short_last_block(%q: tensor<1x40x64xbf16>, %k: tensor<1x40x64xbf16>, %v: tensor<1x40x64xbf16>) -> tensor<1x40x64xbf16> {
  %a = mha.attention %q, %k, %v heads(2) kv_heads(2) head_dim(32) scale(0.125) : (tensor<1x40x64xbf16>, tensor<1x40x64xbf16>, tensor<1x40x64xbf16>) -> tensor<1x40x64xbf16>
  return %a : tensor<1x40x64xbf16>
}

// A head of 80 features: register tiles reduce the scores over its 40 pairs; AMX's tiles over
// whole steps of 32 features (96, 48 pairs, the queries' and keys' padding zero).
// CHECK-LABEL: func.func @head_of_80
// CHECK:         scf.for %[[J0:.*]] = %c0 to %c40 step %c32
// CHECK:           scf.for %{{.*}} = %c0 to %c40 step %c1
// CHECK-COUNT-8:     x86vector.avx512.dot
// AMX-LABEL:   func.func @head_of_80
// AMX-NOT:       scf.for %{{.*}} = %c0 to %c40 step %c1
// AMX:           return
func.func @head_of_80(%q: tensor<1x40x80xbf16>, %k: tensor<1x40x80xbf16>, %v: tensor<1x40x80xbf16>) -> tensor<1x40x80xbf16> {
  %a = mha.attention %q, %k, %v heads(1) kv_heads(1) head_dim(80) scale(0.125) : (tensor<1x40x80xbf16>, tensor<1x40x80xbf16>, tensor<1x40x80xbf16>) -> tensor<1x40x80xbf16>
  return %a : tensor<1x40x80xbf16>
}
