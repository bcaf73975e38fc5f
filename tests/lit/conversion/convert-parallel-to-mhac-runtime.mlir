// RUN: mhac-opt %s --convert-parallel-to-mhac-runtime | FileCheck %s

// The runtime entry point is declared once.
// CHECK: func.func private @mhac_parallel_for((!llvm.ptr, i64) -> i32, !llvm.ptr, i64) -> i32
// CHECK-NOT: func.func private @mhac_parallel_for

// A 2-D scf.parallel becomes one call of mhac_parallel_for over its linearized iteration space;
// the body moves to an internal task that reloads what it uses from the closure.
// CHECK-LABEL: func.func @scale_rows
// CHECK-SAME:    (%[[M:.*]]: memref<?x8xf32>, %[[F:.*]]: f32)
// CHECK:         %[[CLOSURE:.*]] = llvm.alloca %{{.*}} x !llvm.struct<(struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>, f32, i64, i64, i64, i64, i64, i64)>
// CHECK:         %[[DESC:.*]] = builtin.unrealized_conversion_cast %[[M]] : memref<?x8xf32> to !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>
// CHECK:         llvm.store %[[DESC]]
// CHECK:         llvm.store %[[F]]
// CHECK:         %[[TASK:.*]] = constant @scale_rows_parallel_0 : (!llvm.ptr, i64) -> i32
// CHECK:         call @mhac_parallel_for(%[[TASK]], %[[CLOSURE]], %{{.*}}) : ((!llvm.ptr, i64) -> i32, !llvm.ptr, i64) -> i32
// CHECK-NOT:     scf.parallel
// CHECK:         return

// CHECK-LABEL: func.func private @scale_rows_parallel_0
// CHECK-SAME:    (%[[C:.*]]: !llvm.ptr, %[[I:.*]]: i64) -> i32 attributes {llvm.linkage = #llvm.linkage<internal>}
// CHECK:         %[[LOADED:.*]] = llvm.load %{{.*}} : !llvm.ptr -> !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>
// CHECK:         %[[BUF:.*]] = builtin.unrealized_conversion_cast %[[LOADED]] : {{.*}} to memref<?x8xf32>
// CHECK:         arith.remsi
// CHECK:         arith.divsi
// CHECK:         memref.load %[[BUF]]
// CHECK:         memref.store %{{.*}}, %[[BUF]]
// CHECK:         return %{{.*}} : i32

func.func @scale_rows(%m: memref<?x8xf32>, %f: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %rows = memref.dim %m, %c0 : memref<?x8xf32>
  scf.parallel (%i, %j) = (%c0, %c0) to (%rows, %c8) step (%c1, %c1) {
    %v = memref.load %m[%i, %j] : memref<?x8xf32>
    %s = arith.mulf %v, %f : f32
    memref.store %s, %m[%i, %j] : memref<?x8xf32>
    scf.reduce
  }
  return
}

// scf.forall (as tiling makes them) with steps: the task maps its index back to the tile.
// CHECK-LABEL: func.func @tiles
// CHECK:         call @mhac_parallel_for
// CHECK-NOT:     scf.forall
func.func @tiles(%m: memref<100xf32>) {
  scf.forall (%i) = (0) to (100) step (32) {
    %c0 = arith.constant 0.0 : f32
    memref.store %c0, %m[%i] : memref<100xf32>
  }
  return
}

// A loop whose location carries a name (MLIRGen names a layer's values) gives its task that
// name; a name given twice is numbered, and the name's characters kept to C identifiers'.
// CHECK-LABEL: func.func @named_loops
// CHECK:         constant @named_loops_attention : (!llvm.ptr, i64) -> i32
// CHECK:         constant @named_loops_attention_1 : (!llvm.ptr, i64) -> i32
// CHECK:         constant @named_loops_q_proj_x : (!llvm.ptr, i64) -> i32
func.func @named_loops(%m: memref<8xf32>, %f: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    memref.store %f, %m[%i] : memref<8xf32>
    scf.reduce
  } loc(fused["attention"("layer.mha":3:7)])
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    memref.store %f, %m[%i] : memref<8xf32>
    scf.reduce
  } loc("attention"("layer.mha":3:7))
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    memref.store %f, %m[%i] : memref<8xf32>
    scf.reduce
  } loc("q-proj.x"("layer.mha":3:7))
  return
}
