// A projection as a tiled matrix product on the GPU: y[m, n] = sum_k x[m, k] w[n, k] + bias[n],
// with x [rows, in_features], w in PyTorch's [out_features, in_features] layout and y
// [rows, out_features], all row-major.
//
// A template: mhac binds the arguments marked `mhac.bind` to the layer's sizes and the
// schedule's knobs (compiler/gpu/KernelTemplates.cpp), retypes the `mhac.storage` tensors to the
// layer's element type, and unrolls the loops marked `mhac.unroll`, whose bounds are then
// constants, so that a thread's tile lives in registers.
//
// Block (x, y) of the grid computes the block_rows x block_cols tile (x, y) of y (rows along x,
// whose grid dimension has room for any row count). Its threads form a grid of
// (block_rows / thread_rows) x (block_cols / thread_cols), and thread (tr, tc) accumulates the
// rows tr + i (block_rows / thread_rows) and columns tc + j (block_cols / thread_cols): a warp
// reads consecutive columns of the staged weights, without bank conflicts. The reduction
// advances k_block input features at a time through shared memory, transposed, each staged
// row padded by one element so that the transposing stores do not collide in one bank.
gpu.module @templates {
  gpu.func @projection(
      %x: memref<?xf32> {mhac.storage = "x"}, %w: memref<?xf32> {mhac.storage = "w"},
      %bias: memref<?xf32> {mhac.storage = "bias"}, %y: memref<?xf32> {mhac.storage = "y"},
      %rows: index,
      %in_features: index {mhac.bind = "in_features"},
      %out_features: index {mhac.bind = "out_features"},
      %has_bias: index {mhac.bind = "has_bias"},
      %block_rows: index {mhac.bind = "block_rows"},
      %block_cols: index {mhac.bind = "block_cols"},
      %k_block: index {mhac.bind = "k_block"},
      %thread_rows: index {mhac.bind = "thread_rows"},
      %thread_cols: index {mhac.bind = "thread_cols"}) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %zero = arith.constant 0.0 : f32
    %tid = gpu.thread_id x
    %row0 = gpu.block_id x
    %col0 = gpu.block_id y
    %first_row = arith.muli %row0, %block_rows : index
    %first_col = arith.muli %col0, %block_cols : index
    %row_threads = arith.divui %block_rows, %thread_rows : index
    %col_threads = arith.divui %block_cols, %thread_cols : index
    %threads = arith.muli %row_threads, %col_threads : index
    %tr = arith.divui %tid, %col_threads : index
    %tc = arith.remui %tid, %col_threads : index

    // Shared memory: xs [k_block][block_rows + 1], then ws [k_block][block_cols + 1].
    %xs_stride = arith.addi %block_rows, %c1 : index
    %ws_stride = arith.addi %block_cols, %c1 : index
    %xs_size = arith.muli %k_block, %xs_stride : index
    %ws_size = arith.muli %k_block, %ws_stride : index
    %ws_offset = arith.muli %xs_size, %c4 : index
    %shared = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
    %xs = memref.view %shared[%c0][%xs_size]
        : memref<?xi8, #gpu.address_space<workgroup>> to memref<?xf32, #gpu.address_space<workgroup>>
    %ws = memref.view %shared[%ws_offset][%ws_size]
        : memref<?xi8, #gpu.address_space<workgroup>> to memref<?xf32, #gpu.address_space<workgroup>>

    %tile = arith.muli %thread_rows, %thread_cols : index
    %acc = memref.alloca(%tile) : memref<?xf32>
    %w_regs = memref.alloca(%thread_cols) : memref<?xf32>
    scf.for %i = %c0 to %tile step %c1 {
      memref.store %zero, %acc[%i] : memref<?xf32>
    } {mhac.unroll}

    %x_elements = arith.muli %block_rows, %k_block : index
    %w_elements = arith.muli %block_cols, %k_block : index
    scf.for %k0 = %c0 to %in_features step %k_block {
      // Stage x's block rows and w's block columns, reading along k (coalesced).
      scf.for %e = %tid to %x_elements step %threads {
        %r = arith.divui %e, %k_block : index
        %kk = arith.remui %e, %k_block : index
        %row = arith.addi %first_row, %r : index
        %k = arith.addi %k0, %kk : index
        %row_in = arith.cmpi ult, %row, %rows : index
        %k_in = arith.cmpi ult, %k, %in_features : index
        %inside = arith.andi %row_in, %k_in : i1
        %value = scf.if %inside -> f32 {
          %at = arith.muli %row, %in_features : index
          %index = arith.addi %at, %k : index
          %v = memref.load %x[%index] : memref<?xf32>
          scf.yield %v : f32
        } else {
          scf.yield %zero : f32
        }
        %s_at = arith.muli %kk, %xs_stride : index
        %s_index = arith.addi %s_at, %r : index
        memref.store %value, %xs[%s_index] : memref<?xf32, #gpu.address_space<workgroup>>
      }
      scf.for %e = %tid to %w_elements step %threads {
        %c = arith.divui %e, %k_block : index
        %kk = arith.remui %e, %k_block : index
        %col = arith.addi %first_col, %c : index
        %k = arith.addi %k0, %kk : index
        %col_in = arith.cmpi ult, %col, %out_features : index
        %k_in = arith.cmpi ult, %k, %in_features : index
        %inside = arith.andi %col_in, %k_in : i1
        %value = scf.if %inside -> f32 {
          %at = arith.muli %col, %in_features : index
          %index = arith.addi %at, %k : index
          %v = memref.load %w[%index] : memref<?xf32>
          scf.yield %v : f32
        } else {
          scf.yield %zero : f32
        }
        %s_at = arith.muli %kk, %ws_stride : index
        %s_index = arith.addi %s_at, %c : index
        memref.store %value, %ws[%s_index] : memref<?xf32, #gpu.address_space<workgroup>>
      }
      gpu.barrier

      scf.for %kk = %c0 to %k_block step %c1 {
        %x_row = arith.muli %kk, %xs_stride : index
        %w_row = arith.muli %kk, %ws_stride : index
        scf.for %j = %c0 to %thread_cols step %c1 {
          %c_at = arith.muli %j, %col_threads : index
          %c = arith.addi %tc, %c_at : index
          %index = arith.addi %w_row, %c : index
          %v = memref.load %ws[%index] : memref<?xf32, #gpu.address_space<workgroup>>
          memref.store %v, %w_regs[%j] : memref<?xf32>
        } {mhac.unroll}
        scf.for %i = %c0 to %thread_rows step %c1 {
          %r_at = arith.muli %i, %row_threads : index
          %r = arith.addi %tr, %r_at : index
          %index = arith.addi %x_row, %r : index
          %xv = memref.load %xs[%index] : memref<?xf32, #gpu.address_space<workgroup>>
          %acc_row = arith.muli %i, %thread_cols : index
          scf.for %j = %c0 to %thread_cols step %c1 {
            %wv = memref.load %w_regs[%j] : memref<?xf32>
            %a = arith.addi %acc_row, %j : index
            %old = memref.load %acc[%a] : memref<?xf32>
            %new = math.fma %xv, %wv, %old : f32
            memref.store %new, %acc[%a] : memref<?xf32>
          } {mhac.unroll}
        } {mhac.unroll}
      }
      gpu.barrier
    }

    %bias_on = arith.cmpi ne, %has_bias, %c0 : index
    scf.for %i = %c0 to %thread_rows step %c1 {
      %r_at = arith.muli %i, %row_threads : index
      %r = arith.addi %tr, %r_at : index
      %row = arith.addi %first_row, %r : index
      %row_in = arith.cmpi ult, %row, %rows : index
      scf.if %row_in {
        %acc_row = arith.muli %i, %thread_cols : index
        %y_row = arith.muli %row, %out_features : index
        scf.for %j = %c0 to %thread_cols step %c1 {
          %c_at = arith.muli %j, %col_threads : index
          %c = arith.addi %tc, %c_at : index
          %col = arith.addi %first_col, %c : index
          %col_in = arith.cmpi ult, %col, %out_features : index
          scf.if %col_in {
            %a = arith.addi %acc_row, %j : index
            %sum = memref.load %acc[%a] : memref<?xf32>
            %value = scf.if %bias_on -> f32 {
              %b = memref.load %bias[%col] : memref<?xf32>
              %with_bias = arith.addf %sum, %b : f32
              scf.yield %with_bias : f32
            } else {
              scf.yield %sum : f32
            }
            %index = arith.addi %y_row, %col : index
            memref.store %value, %y[%index] : memref<?xf32>
          }
        } {mhac.unroll}
      }
    } {mhac.unroll}
    gpu.return
  }
}
