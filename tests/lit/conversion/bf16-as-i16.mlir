// RUN: mhac-opt %s --split-input-file --verify-diagnostics --mhac-bf16-as-i16 | FileCheck %s

// A masked read unrolled into a branch (the phi holds bf16 rows), a NaN select from the
// expanded f32 -> bf16 rounding and a store: every bf16 value becomes the i16 of its bits, and
// the bitcasts the expansion left between i16 and bf16 disappear.
// CHECK-LABEL: llvm.func @moves
// CHECK-NOT:     bf16
// CHECK:         %[[NAN:.*]] = llvm.mlir.constant(dense<32704> : vector<8xi16>) : vector<8xi16>
// CHECK:         %[[ROW:.*]] = llvm.load %{{.*}} : !llvm.ptr -> vector<8xi16>
// CHECK:         llvm.cond_br %{{.*}}, ^[[JOIN:.*]](%[[ROW]] : vector<8xi16>), ^[[JOIN]](%{{.*}} : vector<8xi16>)
// CHECK:       ^[[JOIN]](%[[MERGED:.*]]: vector<8xi16>):
// CHECK:         %[[BITS:.*]] = llvm.trunc %{{.*}} : vector<8xi32> to vector<8xi16>
// CHECK:         %[[ROUNDED:.*]] = llvm.select %{{.*}}, %[[NAN]], %[[BITS]] : vector<8xi1>, vector<8xi16>
// CHECK:         %[[AT:.*]] = llvm.getelementptr %{{.*}}[8] : (!llvm.ptr) -> !llvm.ptr, i16
// CHECK:         llvm.store %[[ROUNDED]], %[[AT]] : vector<8xi16>, !llvm.ptr
// CHECK:         llvm.store %[[MERGED]], %{{.*}} : vector<8xi16>, !llvm.ptr
// CHECK-NOT:     bf16
llvm.func @moves(%p: !llvm.ptr, %inside: i1, %wide: vector<8xi32>, %nan: vector<8xi1>) {
  %zero = llvm.mlir.zero : vector<8xbf16>
  %quiet = llvm.mlir.constant(dense<0x7FC0> : vector<8xbf16>) : vector<8xbf16>
  %row = llvm.load %p : !llvm.ptr -> vector<8xbf16>
  llvm.cond_br %inside, ^join(%row : vector<8xbf16>), ^join(%zero : vector<8xbf16>)
^join(%merged: vector<8xbf16>):
  %narrow = llvm.trunc %wide : vector<8xi32> to vector<8xi16>
  %bits = llvm.bitcast %narrow : vector<8xi16> to vector<8xbf16>
  %rounded = llvm.select %nan, %quiet, %bits : vector<8xi1>, vector<8xbf16>
  %at = llvm.getelementptr %p[8] : (!llvm.ptr) -> !llvm.ptr, bf16
  llvm.store %rounded, %at : vector<8xbf16>, !llvm.ptr
  llvm.store %merged, %p : vector<8xbf16>, !llvm.ptr
  llvm.return
}

// -----

// Aggregates of bf16 rows (a 2-D vector unrolled by the LLVM conversion) are retyped too.
// CHECK-LABEL: llvm.func @rows
// CHECK:         llvm.mlir.undef : !llvm.array<2 x vector<8xi16>>
// CHECK:         llvm.insertvalue %{{.*}}, %{{.*}}[1] : !llvm.array<2 x vector<8xi16>>
// CHECK:         llvm.extractvalue %{{.*}}[0] : !llvm.array<2 x vector<8xi16>>
llvm.func @rows(%p: !llvm.ptr) -> vector<8xi16> {
  %empty = llvm.mlir.undef : !llvm.array<2 x vector<8xbf16>>
  %row = llvm.load %p : !llvm.ptr -> vector<8xbf16>
  %rows = llvm.insertvalue %row, %empty[1] : !llvm.array<2 x vector<8xbf16>>
  %first = llvm.extractvalue %rows[0] : !llvm.array<2 x vector<8xbf16>>
  %bits = llvm.bitcast %first : vector<8xbf16> to vector<8xi16>
  llvm.return %bits : vector<8xi16>
}

// -----

// Arithmetic on bf16 should have been expanded before: an error, not a silent retyping.
llvm.func @computes(%a: bf16, %b: bf16) -> f32 {
  // expected-error @+1 {{'llvm.fadd' op computes on bf16 values, which should have been expanded into integer operations before the LLVM dialect}}
  %sum = llvm.fadd %a, %b : bf16
  %wide = llvm.fpext %sum : bf16 to f32
  llvm.return %wide : f32
}
