// A bf16 projection on tensor cores: y[m, n] = sum_k x[m, k] w[n, k] + bias[n], with x
// [rows, in_features], w in PyTorch's [out_features, in_features] layout and y
// [rows, out_features], all bf16 and row-major, accumulated in f32 and rounded once.
//
// A template (see projection.mlir) for in_features that are a multiple of 8, so that every row
// starts on 16 bytes. Block (x, y) of the grid computes the block_rows x block_cols tile (x, y)
// of y with warp_rows x warp_cols warps, each a tile of 16 x 8 mma.sync.m16n8k16 products.
// The reduction streams tiles of 32 input features through `stages` buffers of shared
// memory: cp.async copies a tile `stages - 1` ahead of the one the warps multiply, each row
// zero-filled past the matrix and padded by 8 elements, so that ldmatrix's eight row reads of a
// fragment fall in distinct banks.
gpu.module @templates {
  gpu.func @projection_mma(
      %x: memref<?xbf16>, %w: memref<?xbf16>, %bias: memref<?xbf16>, %y: memref<?xbf16>,
      %rows: index,
      %in_features: index {mhac.bind = "in_features"},
      %out_features: index {mhac.bind = "out_features"},
      %has_bias: index {mhac.bind = "has_bias"},
      %block_rows: index {mhac.bind = "block_rows"},
      %block_cols: index {mhac.bind = "block_cols"},
      %warp_rows: index {mhac.bind = "warp_rows"},
      %warp_cols: index {mhac.bind = "warp_cols"},
      %stages: index {mhac.bind = "stages"}) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %c32 = arith.constant 32 : index
    // A tile of the reduction is 32 input features; a staged row 40 elements (80 bytes).
    %k_tile = arith.constant 32 : index
    %pitch = arith.constant 40 : index
    %chunk_bytes = arith.constant 16 : i32
    %no_bytes = arith.constant 0 : i32
    %zero = arith.constant 0.0 : f32
    %zero_i32 = arith.constant 0 : i32

    %tid = gpu.thread_id x
    %lane = arith.remui %tid, %c32 : index
    %warp = arith.divui %tid, %c32 : index
    %wm = arith.divui %warp, %warp_cols : index
    %wn = arith.remui %warp, %warp_cols : index
    %warps = arith.muli %warp_rows, %warp_cols : index
    %threads = arith.muli %warps, %c32 : index
    %warp_tile_rows = arith.divui %block_rows, %warp_rows : index
    %warp_tile_cols = arith.divui %block_cols, %warp_cols : index
    %m_tiles = arith.divui %warp_tile_rows, %c16 : index
    %n_tiles = arith.divui %warp_tile_cols, %c8 : index
    %n_pairs = arith.divui %n_tiles, %c2 : index
    %block_x = gpu.block_id x
    %block_y = gpu.block_id y
    %first_row = arith.muli %block_x, %block_rows : index
    %first_col = arith.muli %block_y, %block_cols : index
    %warp_row0 = arith.muli %wm, %warp_tile_rows : index
    %warp_col0 = arith.muli %wn, %warp_tile_cols : index

    // Addresses as integers: shared memory's (32-bit window offsets), and the tensors'.
    %stage_rows = arith.addi %block_rows, %block_cols : index
    %stage_elements = arith.muli %stage_rows, %pitch : index
    %stage_bytes = arith.muli %stage_elements, %c2 : index
    %w_part = arith.muli %block_rows, %pitch : index
    %w_part_bytes = arith.muli %w_part, %c2 : index
    %shared = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
    %shared_base = memref.extract_aligned_pointer_as_index %shared
        : memref<?xi8, #gpu.address_space<workgroup>> -> index
    %x_base = memref.extract_aligned_pointer_as_index %x : memref<?xbf16> -> index
    %w_base = memref.extract_aligned_pointer_as_index %w : memref<?xbf16> -> index

    %tile_count = arith.muli %m_tiles, %n_tiles : index
    %acc_count = arith.muli %tile_count, %c4 : index
    %acc = memref.alloca(%acc_count) : memref<?xf32>
    %a_count = arith.muli %m_tiles, %c4 : index
    %a_frag = memref.alloca(%a_count) : memref<?xi32>
    %b_count = arith.muli %n_tiles, %c2 : index
    %b_frag = memref.alloca(%b_count) : memref<?xi32>
    scf.for %i = %c0 to %acc_count step %c1 {
      memref.store %zero, %acc[%i] : memref<?xf32>
    } {mhac.unroll}

    %k_up = arith.addi %in_features, %c32 : index
    %k_up1 = arith.subi %k_up, %c1 : index
    %k_tiles = arith.divui %k_up1, %k_tile : index
    %ahead = arith.subi %stages, %c1 : index
    %steps = arith.addi %k_tiles, %ahead : index
    %x_chunks = arith.muli %block_rows, %c4 : index
    %w_chunks = arith.muli %block_cols, %c4 : index

    scf.for %step = %c0 to %steps step %c1 {
      // Copy tile `step` into its stage, 16 bytes a thread at a time.
      %loads = arith.cmpi ult, %step, %k_tiles : index
      scf.if %loads {
        %stage = arith.remui %step, %stages : index
        %stage_at = arith.muli %stage, %stage_bytes : index
        %stage_base = arith.addi %shared_base, %stage_at : index
        %k0 = arith.muli %step, %k_tile : index
        scf.for %e = %tid to %x_chunks step %threads {
          %r = arith.divui %e, %c4 : index
          %c = arith.remui %e, %c4 : index
          %row = arith.addi %first_row, %r : index
          %c_at = arith.muli %c, %c8 : index
          %k = arith.addi %k0, %c_at : index
          %row_in = arith.cmpi ult, %row, %rows : index
          %k_in = arith.cmpi ult, %k, %in_features : index
          %inside = arith.andi %row_in, %k_in : i1
          %row_at = arith.muli %row, %in_features : index
          %element = arith.addi %row_at, %k : index
          %offset = arith.muli %element, %c2 : index
          %kept = arith.select %inside, %offset, %c0 : index
          %source = arith.addi %x_base, %kept : index
          %size = arith.select %inside, %chunk_bytes, %no_bytes : i32
          %s_row = arith.muli %r, %pitch : index
          %s_element = arith.addi %s_row, %c_at : index
          %s_offset = arith.muli %s_element, %c2 : index
          %destination = arith.addi %stage_base, %s_offset : index
          %src_i = arith.index_cast %source : index to i64
          %src_generic = llvm.inttoptr %src_i : i64 to !llvm.ptr
          %src = llvm.addrspacecast %src_generic : !llvm.ptr to !llvm.ptr<1>
          %dst_i = arith.index_cast %destination : index to i64
          %dst = llvm.inttoptr %dst_i : i64 to !llvm.ptr<3>
          nvvm.cp.async.shared.global %dst, %src, 16, cache = cg, %size
              : !llvm.ptr<3>, !llvm.ptr<1>, i32
        }
        scf.for %e = %tid to %w_chunks step %threads {
          %n = arith.divui %e, %c4 : index
          %c = arith.remui %e, %c4 : index
          %col = arith.addi %first_col, %n : index
          %c_at = arith.muli %c, %c8 : index
          %k = arith.addi %k0, %c_at : index
          %col_in = arith.cmpi ult, %col, %out_features : index
          %k_in = arith.cmpi ult, %k, %in_features : index
          %inside = arith.andi %col_in, %k_in : i1
          %col_at = arith.muli %col, %in_features : index
          %element = arith.addi %col_at, %k : index
          %offset = arith.muli %element, %c2 : index
          %kept = arith.select %inside, %offset, %c0 : index
          %source = arith.addi %w_base, %kept : index
          %size = arith.select %inside, %chunk_bytes, %no_bytes : i32
          %s_row = arith.muli %n, %pitch : index
          %s_element = arith.addi %s_row, %c_at : index
          %s_offset = arith.muli %s_element, %c2 : index
          %w_at = arith.addi %stage_base, %w_part_bytes : index
          %destination = arith.addi %w_at, %s_offset : index
          %src_i = arith.index_cast %source : index to i64
          %src_generic = llvm.inttoptr %src_i : i64 to !llvm.ptr
          %src = llvm.addrspacecast %src_generic : !llvm.ptr to !llvm.ptr<1>
          %dst_i = arith.index_cast %destination : index to i64
          %dst = llvm.inttoptr %dst_i : i64 to !llvm.ptr<3>
          nvvm.cp.async.shared.global %dst, %src, 16, cache = cg, %size
              : !llvm.ptr<3>, !llvm.ptr<1>, i32
        }
      }
      // One group per step, empty past the last tile, so that "all but the newest
      // stages - 1 groups" always means "tile step - (stages - 1) has landed".
      nvvm.cp.async.commit.group

      %computes = arith.cmpi uge, %step, %ahead : index
      scf.if %computes {
        scf.index_switch %stages
        case 2 {
          nvvm.cp.async.wait.group 1
          scf.yield
        }
        case 3 {
          nvvm.cp.async.wait.group 2
          scf.yield
        }
        case 4 {
          nvvm.cp.async.wait.group 3
          scf.yield
        }
        default {
          nvvm.cp.async.wait.group 0
        }
        gpu.barrier
        %tile = arith.subi %step, %ahead : index
        %stage = arith.remui %tile, %stages : index
        %stage_at = arith.muli %stage, %stage_bytes : index
        %xs_base = arith.addi %shared_base, %stage_at : index
        %ws_base = arith.addi %xs_base, %w_part_bytes : index
        %lane16 = arith.remui %lane, %c16 : index
        %lane8 = arith.remui %lane, %c8 : index
        %half = arith.divui %lane, %c16 : index
        %half_at = arith.muli %half, %c8 : index
        %quarter = arith.divui %lane, %c8 : index
        %quarter_odd = arith.remui %quarter, %c2 : index
        %quarter_at = arith.muli %quarter_odd, %c8 : index
        scf.for %kk = %c0 to %c2 step %c1 {
          %kk_at = arith.muli %kk, %c16 : index
          // A fragments: matrices (rows 0-7 | 8-15) x (k 0-7 | 8-15), lane l addressing row
          // l mod 16 at k (l / 16) * 8.
          scf.for %mt = %c0 to %m_tiles step %c1 {
            %mt_at = arith.muli %mt, %c16 : index
            %r0 = arith.addi %warp_row0, %mt_at : index
            %r = arith.addi %r0, %lane16 : index
            %k = arith.addi %kk_at, %half_at : index
            %s_row = arith.muli %r, %pitch : index
            %s_element = arith.addi %s_row, %k : index
            %s_offset = arith.muli %s_element, %c2 : index
            %address = arith.addi %xs_base, %s_offset : index
            %address_i = arith.index_cast %address : index to i64
            %pointer = llvm.inttoptr %address_i : i64 to !llvm.ptr<3>
            %fragment = nvvm.ldmatrix %pointer {num = 4 : i32, layout = #nvvm.mma_layout<row>,
                shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>,
                eltType = #nvvm.ld_st_matrix_elt_type<b16>}
                : (!llvm.ptr<3>) -> !llvm.struct<(i32, i32, i32, i32)>
            %f0 = llvm.extractvalue %fragment[0] : !llvm.struct<(i32, i32, i32, i32)>
            %f1 = llvm.extractvalue %fragment[1] : !llvm.struct<(i32, i32, i32, i32)>
            %f2 = llvm.extractvalue %fragment[2] : !llvm.struct<(i32, i32, i32, i32)>
            %f3 = llvm.extractvalue %fragment[3] : !llvm.struct<(i32, i32, i32, i32)>
            %a_at = arith.muli %mt, %c4 : index
            %a1_at = arith.addi %a_at, %c1 : index
            %a2_at = arith.addi %a_at, %c2 : index
            %c3 = arith.constant 3 : index
            %a3_at = arith.addi %a_at, %c3 : index
            memref.store %f0, %a_frag[%a_at] : memref<?xi32>
            memref.store %f1, %a_frag[%a1_at] : memref<?xi32>
            memref.store %f2, %a_frag[%a2_at] : memref<?xi32>
            memref.store %f3, %a_frag[%a3_at] : memref<?xi32>
          } {mhac.unroll}
          // B fragments of two 8-column tiles: matrices (n 0-7, k 0-7), (n 0-7, k 8-15),
          // (n 8-15, k 0-7), (n 8-15, k 8-15); lane l addresses row (l / 16) * 8 + l mod 8 at
          // k ((l / 8) mod 2) * 8.
          scf.for %np = %c0 to %n_pairs step %c1 {
            %np_at = arith.muli %np, %c16 : index
            %n0 = arith.addi %warp_col0, %np_at : index
            %n1 = arith.addi %n0, %half_at : index
            %n = arith.addi %n1, %lane8 : index
            %k = arith.addi %kk_at, %quarter_at : index
            %s_row = arith.muli %n, %pitch : index
            %s_element = arith.addi %s_row, %k : index
            %s_offset = arith.muli %s_element, %c2 : index
            %address = arith.addi %ws_base, %s_offset : index
            %address_i = arith.index_cast %address : index to i64
            %pointer = llvm.inttoptr %address_i : i64 to !llvm.ptr<3>
            %fragment = nvvm.ldmatrix %pointer {num = 4 : i32, layout = #nvvm.mma_layout<row>,
                shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>,
                eltType = #nvvm.ld_st_matrix_elt_type<b16>}
                : (!llvm.ptr<3>) -> !llvm.struct<(i32, i32, i32, i32)>
            %f0 = llvm.extractvalue %fragment[0] : !llvm.struct<(i32, i32, i32, i32)>
            %f1 = llvm.extractvalue %fragment[1] : !llvm.struct<(i32, i32, i32, i32)>
            %f2 = llvm.extractvalue %fragment[2] : !llvm.struct<(i32, i32, i32, i32)>
            %f3 = llvm.extractvalue %fragment[3] : !llvm.struct<(i32, i32, i32, i32)>
            %b_at = arith.muli %np, %c4 : index
            %b1_at = arith.addi %b_at, %c1 : index
            %b2_at = arith.addi %b_at, %c2 : index
            %c3 = arith.constant 3 : index
            %b3_at = arith.addi %b_at, %c3 : index
            memref.store %f0, %b_frag[%b_at] : memref<?xi32>
            memref.store %f1, %b_frag[%b1_at] : memref<?xi32>
            memref.store %f2, %b_frag[%b2_at] : memref<?xi32>
            memref.store %f3, %b_frag[%b3_at] : memref<?xi32>
          } {mhac.unroll}
          scf.for %mt = %c0 to %m_tiles step %c1 {
            %a_at = arith.muli %mt, %c4 : index
            %a1_at = arith.addi %a_at, %c1 : index
            %a2_at = arith.addi %a_at, %c2 : index
            %c3 = arith.constant 3 : index
            %a3_at = arith.addi %a_at, %c3 : index
            %a0 = memref.load %a_frag[%a_at] : memref<?xi32>
            %a1 = memref.load %a_frag[%a1_at] : memref<?xi32>
            %a2 = memref.load %a_frag[%a2_at] : memref<?xi32>
            %a3 = memref.load %a_frag[%a3_at] : memref<?xi32>
            scf.for %nt = %c0 to %n_tiles step %c1 {
              %b_at = arith.muli %nt, %c2 : index
              %b1_at = arith.addi %b_at, %c1 : index
              %b0 = memref.load %b_frag[%b_at] : memref<?xi32>
              %b1 = memref.load %b_frag[%b1_at] : memref<?xi32>
              %t_row = arith.muli %mt, %n_tiles : index
              %t = arith.addi %t_row, %nt : index
              %c_at = arith.muli %t, %c4 : index
              %c1_at = arith.addi %c_at, %c1 : index
              %c2_at = arith.addi %c_at, %c2 : index
              %c3_at = arith.addi %c_at, %c3 : index
              %d0 = memref.load %acc[%c_at] : memref<?xf32>
              %d1 = memref.load %acc[%c1_at] : memref<?xf32>
              %d2 = memref.load %acc[%c2_at] : memref<?xf32>
              %d3 = memref.load %acc[%c3_at] : memref<?xf32>
              %product = nvvm.mma.sync A[%a0, %a1, %a2, %a3] B[%b0, %b1] C[%d0, %d1, %d2, %d3]
                  {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>,
                   multiplicandAPtxType = #nvvm.mma_type<bf16>,
                   multiplicandBPtxType = #nvvm.mma_type<bf16>,
                   shape = #nvvm.shape<m = 16, n = 8, k = 16>}
                  : (i32, i32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
              %e0 = llvm.extractvalue %product[0] : !llvm.struct<(f32, f32, f32, f32)>
              %e1 = llvm.extractvalue %product[1] : !llvm.struct<(f32, f32, f32, f32)>
              %e2 = llvm.extractvalue %product[2] : !llvm.struct<(f32, f32, f32, f32)>
              %e3 = llvm.extractvalue %product[3] : !llvm.struct<(f32, f32, f32, f32)>
              memref.store %e0, %acc[%c_at] : memref<?xf32>
              memref.store %e1, %acc[%c1_at] : memref<?xf32>
              memref.store %e2, %acc[%c2_at] : memref<?xf32>
              memref.store %e3, %acc[%c3_at] : memref<?xf32>
            } {mhac.unroll}
          } {mhac.unroll}
        } {mhac.unroll}
        gpu.barrier
      }
    }

    // Accumulator j of a tile holds row g + 8 (j / 2), column 2 t + j mod 2, where g is the
    // lane's group of four and t its place in it.
    %g = arith.divui %lane, %c4 : index
    %t4 = arith.remui %lane, %c4 : index
    %t_col = arith.muli %t4, %c2 : index
    %bias_on = arith.cmpi ne, %has_bias, %c0 : index
    scf.for %mt = %c0 to %m_tiles step %c1 {
      scf.for %nt = %c0 to %n_tiles step %c1 {
        scf.for %j = %c0 to %c4 step %c1 {
          %upper = arith.divui %j, %c2 : index
          %upper_at = arith.muli %upper, %c8 : index
          %odd = arith.remui %j, %c2 : index
          %mt_at = arith.muli %mt, %c16 : index
          %r0 = arith.addi %first_row, %warp_row0 : index
          %r1 = arith.addi %r0, %mt_at : index
          %r2 = arith.addi %r1, %g : index
          %row = arith.addi %r2, %upper_at : index
          %nt_at = arith.muli %nt, %c8 : index
          %n0 = arith.addi %first_col, %warp_col0 : index
          %n1 = arith.addi %n0, %nt_at : index
          %n2 = arith.addi %n1, %t_col : index
          %col = arith.addi %n2, %odd : index
          %row_in = arith.cmpi ult, %row, %rows : index
          %col_in = arith.cmpi ult, %col, %out_features : index
          %inside = arith.andi %row_in, %col_in : i1
          scf.if %inside {
            %t_row = arith.muli %mt, %n_tiles : index
            %t = arith.addi %t_row, %nt : index
            %c_at = arith.muli %t, %c4 : index
            %a = arith.addi %c_at, %j : index
            %sum = memref.load %acc[%a] : memref<?xf32>
            %value = scf.if %bias_on -> f32 {
              %b = memref.load %bias[%col] : memref<?xbf16>
              %b32 = arith.extf %b : bf16 to f32
              %with_bias = arith.addf %sum, %b32 : f32
              scf.yield %with_bias : f32
            } else {
              scf.yield %sum : f32
            }
            %rounded = arith.truncf %value : f32 to bf16
            %y_row = arith.muli %row, %out_features : index
            %index = arith.addi %y_row, %col : index
            memref.store %rounded, %y[%index] : memref<?xbf16>
          }
        } {mhac.unroll}
      } {mhac.unroll}
    } {mhac.unroll}
    gpu.return
  }
}
