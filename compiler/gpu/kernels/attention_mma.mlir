// bf16 attention on tensor cores, as FlashAttention-2 computes it: each warp of a block owns 16
// query rows; per tile of key_block keys, S = Q K^T and O += P V are mma.sync.m16n8k16 products
// with f32 accumulators, and the online softmax (base 2) runs on the score fragments in
// registers. P is rounded to bf16 and reused, fragment for fragment, as the A operand of P V.
//
// q and o are [batch * seq, heads * head_dim], k and v [batch * kv_seq, kv_heads * head_dim],
// bf16, row-major; head_dim is a multiple of 16. Block (x, y) of the grid computes query
// block x mod (query blocks) of batch entry x / (query blocks), for heads group_heads y to
// group_heads (y + 1) - 1, which share a kv head: their warps share each key and value tile. Tiles reach shared memory by cp.async, in
// rows padded by 8 elements so that ldmatrix's reads fall in distinct banks; the keys' tile is
// read by ldmatrix as the B operand of S, the values' by ldmatrix.trans as that of P V.
//
// A thread holds, of its warp's 16 rows, rows g and g + 8 (g = lane / 4), and of each 8-column
// fragment columns 2t and 2t + 1 (t = lane mod 4): row statistics are reduced over the four
// lanes of a group by shuffles.
gpu.module @templates {
  gpu.func @attention_mma(
      %q: memref<?xbf16>, %k: memref<?xbf16>, %v: memref<?xbf16>, %kv_lens: memref<?xi32>,
      %o: memref<?xbf16>, %seq: index, %kv_seq: index,
      %head_dim: index {mhac.bind = "head_dim"},
      %heads: index {mhac.bind = "heads"},
      %kv_heads: index {mhac.bind = "kv_heads"},
      %causal: index {mhac.bind = "causal"},
      %has_kv_lens: index {mhac.bind = "has_kv_lens"},
      %scale_log2: f32 {mhac.bind = "scale_log2"},
      %warps: index {mhac.bind = "warps"},
      %group_heads: index {mhac.bind = "group_heads"},
      %key_block: index {mhac.bind = "key_block"}) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %c32 = arith.constant 32 : index
    %zero = arith.constant 0.0 : f32
    %one = arith.constant 1.0 : f32
    %minus_inf = arith.constant 0xFF800000 : f32
    %chunk_bytes = arith.constant 16 : i32
    %no_bytes = arith.constant 0 : i32
    %one_i32 = arith.constant 1 : i32
    %two_i32 = arith.constant 2 : i32
    %warp_width = arith.constant 32 : i32

    %tid = gpu.thread_id x
    %lane = arith.remui %tid, %c32 : index
    %warp = arith.divui %tid, %c32 : index
    %threads = arith.muli %warps, %c32 : index
    // The block's warps split over group_heads heads of one kv head's group, which share its
    // key and value tiles, and over slabs of 16 query rows.
    %slabs = arith.divui %warps, %group_heads : index
    %query_block = arith.muli %slabs, %c16 : index
    %tile_rows = arith.muli %warps, %c16 : index
    %head_in = arith.divui %warp, %slabs : index
    %slab = arith.remui %warp, %slabs : index
    %g = arith.divui %lane, %c4 : index
    %t4 = arith.remui %lane, %c4 : index
    %t_col = arith.muli %t4, %c2 : index
    %lane16 = arith.remui %lane, %c16 : index
    %lane8 = arith.remui %lane, %c8 : index
    %half = arith.divui %lane, %c16 : index
    %half_at = arith.muli %half, %c8 : index
    %quarter = arith.divui %lane, %c8 : index
    %quarter_odd = arith.remui %quarter, %c2 : index
    %quarter_at = arith.muli %quarter_odd, %c8 : index

    %grid_x = gpu.block_id x
    %grid_y = gpu.block_id y
    %h0 = arith.muli %grid_y, %group_heads : index
    %h = arith.addi %h0, %head_in : index
    %seq_up = arith.addi %seq, %query_block : index
    %seq_up1 = arith.subi %seq_up, %c1 : index
    %blocks = arith.divui %seq_up1, %query_block : index
    %b = arith.divui %grid_x, %blocks : index
    %block = arith.remui %grid_x, %blocks : index
    %first = arith.muli %block, %query_block : index
    %warp_at = arith.muli %warp, %c16 : index
    %slab_at = arith.muli %slab, %c16 : index
    %warp_first = arith.addi %first, %slab_at : index
    %row_lo = arith.addi %warp_first, %g : index
    %row_hi = arith.addi %row_lo, %c8 : index

    %group = arith.divui %heads, %kv_heads : index
    %kv_head = arith.divui %h, %group : index
    %q_stride = arith.muli %heads, %head_dim : index
    %kv_stride = arith.muli %kv_heads, %head_dim : index
    %q_head_at = arith.muli %h, %head_dim : index
    %kv_head_at = arith.muli %kv_head, %head_dim : index
    %q_batch = arith.muli %b, %seq : index
    %kv_batch = arith.muli %b, %kv_seq : index

    // Key ranges, as in attention.mlir: this thread's two rows', and the block's.
    %lens_on = arith.cmpi ne, %has_kv_lens, %c0 : index
    %keys = scf.if %lens_on -> index {
      %len32 = memref.load %kv_lens[%b] : memref<?xi32>
      %len = arith.index_cast %len32 : i32 to index
      %low = arith.maxsi %len, %c0 : index
      %clamped = arith.minsi %low, %kv_seq : index
      scf.yield %clamped : index
    } else {
      scf.yield %kv_seq : index
    }
    %causal_on = arith.cmpi ne, %causal, %c0 : index
    %shift = arith.subi %kv_seq, %seq : index
    %lo_end0 = arith.addi %row_lo, %shift : index
    %lo_end = arith.addi %lo_end0, %c1 : index
    %lo_causal = arith.minsi %keys, %lo_end : index
    %lo_keys = arith.select %causal_on, %lo_causal, %keys : index
    %hi_end = arith.addi %lo_end, %c8 : index
    %hi_causal = arith.minsi %keys, %hi_end : index
    %hi_keys = arith.select %causal_on, %hi_causal, %keys : index
    %block_last = arith.addi %first, %query_block : index
    %block_last_in = arith.minsi %block_last, %seq : index
    %block_end = arith.addi %block_last_in, %shift : index
    %block_causal = arith.minsi %keys, %block_end : index
    %block_keys = arith.select %causal_on, %block_causal, %keys : index

    // Shared memory, rows of head_dim + 8 bf16: the queries' tile, then the keys' and values'.
    %pitch = arith.addi %head_dim, %c8 : index
    %pitch_bytes = arith.muli %pitch, %c2 : index
    %q_tile_bytes = arith.muli %tile_rows, %pitch_bytes : index
    %kv_tile_bytes = arith.muli %key_block, %pitch_bytes : index
    %shared = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
    %qs_base = memref.extract_aligned_pointer_as_index %shared
        : memref<?xi8, #gpu.address_space<workgroup>> -> index
    %ks_base = arith.addi %qs_base, %q_tile_bytes : index
    %vs_base = arith.addi %ks_base, %kv_tile_bytes : index
    %q_base = memref.extract_aligned_pointer_as_index %q : memref<?xbf16> -> index
    %k_base = memref.extract_aligned_pointer_as_index %k : memref<?xbf16> -> index
    %v_base = memref.extract_aligned_pointer_as_index %v : memref<?xbf16> -> index
    %chunks_per_row = arith.divui %head_dim, %c8 : index

    // The queries' tile, the block's rows of each of its heads in turn (so that warp w's 16
    // rows start at row 16 w); rows past the sequence are zeros.
    %q_chunks = arith.muli %tile_rows, %chunks_per_row : index
    scf.for %e = %tid to %q_chunks step %threads {
      %r_tile = arith.divui %e, %chunks_per_row : index
      %c = arith.remui %e, %chunks_per_row : index
      %c_at = arith.muli %c, %c8 : index
      %head_of_row = arith.divui %r_tile, %query_block : index
      %r_in = arith.remui %r_tile, %query_block : index
      %row = arith.addi %first, %r_in : index
      %inside = arith.cmpi ult, %row, %seq : index
      %global_row = arith.addi %q_batch, %row : index
      %row_at = arith.muli %global_row, %q_stride : index
      %row_head = arith.addi %h0, %head_of_row : index
      %row_head_at = arith.muli %row_head, %head_dim : index
      %head_at = arith.addi %row_at, %row_head_at : index
      %element = arith.addi %head_at, %c_at : index
      %offset = arith.muli %element, %c2 : index
      %kept = arith.select %inside, %offset, %c0 : index
      %source = arith.addi %q_base, %kept : index
      %size = arith.select %inside, %chunk_bytes, %no_bytes : i32
      %s_row = arith.muli %r_tile, %pitch : index
      %s_element = arith.addi %s_row, %c_at : index
      %s_offset = arith.muli %s_element, %c2 : index
      %destination = arith.addi %qs_base, %s_offset : index
      %src_i = arith.index_cast %source : index to i64
      %src_generic = llvm.inttoptr %src_i : i64 to !llvm.ptr
      %src = llvm.addrspacecast %src_generic : !llvm.ptr to !llvm.ptr<1>
      %dst_i = arith.index_cast %destination : index to i64
      %dst = llvm.inttoptr %dst_i : i64 to !llvm.ptr<3>
      nvvm.cp.async.shared.global %dst, %src, 16, cache = cg, %size
          : !llvm.ptr<3>, !llvm.ptr<1>, i32
    }
    nvvm.cp.async.commit.group
    nvvm.cp.async.wait.group 0
    gpu.barrier

    // The warp's query fragments, kept for the whole key loop.
    %k_steps = arith.divui %head_dim, %c16 : index
    %q_count = arith.muli %k_steps, %c4 : index
    %q_frag = memref.alloca(%q_count) : memref<?xi32>
    scf.for %ks = %c0 to %k_steps step %c1 {
      %ks_at = arith.muli %ks, %c16 : index
      %r = arith.addi %warp_at, %lane16 : index
      %col = arith.addi %ks_at, %half_at : index
      %s_row = arith.muli %r, %pitch : index
      %s_element = arith.addi %s_row, %col : index
      %s_offset = arith.muli %s_element, %c2 : index
      %address = arith.addi %qs_base, %s_offset : index
      %address_i = arith.index_cast %address : index to i64
      %pointer = llvm.inttoptr %address_i : i64 to !llvm.ptr<3>
      %fragment = nvvm.ldmatrix %pointer {num = 4 : i32, layout = #nvvm.mma_layout<row>,
          shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>,
          eltType = #nvvm.ld_st_matrix_elt_type<b16>}
          : (!llvm.ptr<3>) -> !llvm.struct<(i32, i32, i32, i32)>
      %at = arith.muli %ks, %c4 : index
      scf.for %i = %c0 to %c4 step %c1 {
        %part = scf.index_switch %i -> i32
        case 0 {
          %f = llvm.extractvalue %fragment[0] : !llvm.struct<(i32, i32, i32, i32)>
          scf.yield %f : i32
        }
        case 1 {
          %f = llvm.extractvalue %fragment[1] : !llvm.struct<(i32, i32, i32, i32)>
          scf.yield %f : i32
        }
        case 2 {
          %f = llvm.extractvalue %fragment[2] : !llvm.struct<(i32, i32, i32, i32)>
          scf.yield %f : i32
        }
        default {
          %f = llvm.extractvalue %fragment[3] : !llvm.struct<(i32, i32, i32, i32)>
          scf.yield %f : i32
        }
        %slot = arith.addi %at, %i : index
        memref.store %part, %q_frag[%slot] : memref<?xi32>
      } {mhac.unroll}
    } {mhac.unroll}

    %n_tiles = arith.divui %key_block, %c8 : index
    %s_count = arith.muli %n_tiles, %c4 : index
    %s_acc = memref.alloca(%s_count) : memref<?xf32>
    %d_tiles = arith.divui %head_dim, %c8 : index
    %o_count = arith.muli %d_tiles, %c4 : index
    %o_acc = memref.alloca(%o_count) : memref<?xf32>
    scf.for %i = %c0 to %o_count step %c1 {
      memref.store %zero, %o_acc[%i] : memref<?xf32>
    } {mhac.unroll}
    %kv_chunks = arith.muli %key_block, %chunks_per_row : index
    %p_steps = arith.divui %key_block, %c16 : index
    %d_pairs = arith.divui %head_dim, %c16 : index
    %n_pairs = arith.divui %key_block, %c16 : index

    %state:4 = scf.for %k0 = %c0 to %block_keys step %key_block
        iter_args(%max_lo = %minus_inf, %max_hi = %minus_inf, %sum_lo = %zero, %sum_hi = %zero)
        -> (f32, f32, f32, f32) {
      // The keys' and values' tiles; keys past the block's last are zeros.
      scf.for %e = %tid to %kv_chunks step %threads {
        %r = arith.divui %e, %chunks_per_row : index
        %c = arith.remui %e, %chunks_per_row : index
        %c_at = arith.muli %c, %c8 : index
        %key = arith.addi %k0, %r : index
        %inside = arith.cmpi slt, %key, %block_keys : index
        %global_row = arith.addi %kv_batch, %key : index
        %row_at = arith.muli %global_row, %kv_stride : index
        %head_at = arith.addi %row_at, %kv_head_at : index
        %element = arith.addi %head_at, %c_at : index
        %offset = arith.muli %element, %c2 : index
        %kept = arith.select %inside, %offset, %c0 : index
        %size = arith.select %inside, %chunk_bytes, %no_bytes : i32
        %s_row = arith.muli %r, %pitch : index
        %s_element = arith.addi %s_row, %c_at : index
        %s_offset = arith.muli %s_element, %c2 : index
        %k_source = arith.addi %k_base, %kept : index
        %k_dst = arith.addi %ks_base, %s_offset : index
        %v_source = arith.addi %v_base, %kept : index
        %v_dst = arith.addi %vs_base, %s_offset : index
        %ksrc_i = arith.index_cast %k_source : index to i64
        %ksrc_g = llvm.inttoptr %ksrc_i : i64 to !llvm.ptr
        %ksrc = llvm.addrspacecast %ksrc_g : !llvm.ptr to !llvm.ptr<1>
        %kdst_i = arith.index_cast %k_dst : index to i64
        %kdst = llvm.inttoptr %kdst_i : i64 to !llvm.ptr<3>
        nvvm.cp.async.shared.global %kdst, %ksrc, 16, cache = cg, %size
            : !llvm.ptr<3>, !llvm.ptr<1>, i32
        %vsrc_i = arith.index_cast %v_source : index to i64
        %vsrc_g = llvm.inttoptr %vsrc_i : i64 to !llvm.ptr
        %vsrc = llvm.addrspacecast %vsrc_g : !llvm.ptr to !llvm.ptr<1>
        %vdst_i = arith.index_cast %v_dst : index to i64
        %vdst = llvm.inttoptr %vdst_i : i64 to !llvm.ptr<3>
        nvvm.cp.async.shared.global %vdst, %vsrc, 16, cache = cg, %size
            : !llvm.ptr<3>, !llvm.ptr<1>, i32
      }
      nvvm.cp.async.commit.group
      nvvm.cp.async.wait.group 0
      gpu.barrier

      // S = Q K^T over the tile: n_tiles products of 16 x 8, head_dim / 16 steps each.
      scf.for %i = %c0 to %s_count step %c1 {
        memref.store %zero, %s_acc[%i] : memref<?xf32>
      } {mhac.unroll}
      scf.for %ks = %c0 to %k_steps step %c1 {
        %ks_at = arith.muli %ks, %c16 : index
        %qa = arith.muli %ks, %c4 : index
        %qa1 = arith.addi %qa, %c1 : index
        %qa2 = arith.addi %qa, %c2 : index
        %qa3 = arith.addi %qa, %c3 : index
        %a0 = memref.load %q_frag[%qa] : memref<?xi32>
        %a1 = memref.load %q_frag[%qa1] : memref<?xi32>
        %a2 = memref.load %q_frag[%qa2] : memref<?xi32>
        %a3 = memref.load %q_frag[%qa3] : memref<?xi32>
        scf.for %np = %c0 to %n_pairs step %c1 {
          %np_at = arith.muli %np, %c16 : index
          %n1 = arith.addi %np_at, %half_at : index
          %n = arith.addi %n1, %lane8 : index
          %col = arith.addi %ks_at, %quarter_at : index
          %s_row = arith.muli %n, %pitch : index
          %s_element = arith.addi %s_row, %col : index
          %s_offset = arith.muli %s_element, %c2 : index
          %address = arith.addi %ks_base, %s_offset : index
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
          scf.for %side = %c0 to %c2 step %c1 {
            %is_first = arith.cmpi eq, %side, %c0 : index
            %b0 = arith.select %is_first, %f0, %f2 : i32
            %b1 = arith.select %is_first, %f1, %f3 : i32
            %nt0 = arith.muli %np, %c2 : index
            %nt = arith.addi %nt0, %side : index
            %at = arith.muli %nt, %c4 : index
            %at1 = arith.addi %at, %c1 : index
            %at2 = arith.addi %at, %c2 : index
            %at3 = arith.addi %at, %c3 : index
            %d0 = memref.load %s_acc[%at] : memref<?xf32>
            %d1 = memref.load %s_acc[%at1] : memref<?xf32>
            %d2 = memref.load %s_acc[%at2] : memref<?xf32>
            %d3 = memref.load %s_acc[%at3] : memref<?xf32>
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
            memref.store %e0, %s_acc[%at] : memref<?xf32>
            memref.store %e1, %s_acc[%at1] : memref<?xf32>
            memref.store %e2, %s_acc[%at2] : memref<?xf32>
            memref.store %e3, %s_acc[%at3] : memref<?xf32>
          } {mhac.unroll}
        } {mhac.unroll}
      } {mhac.unroll}

      // Scale to base 2, mask, and take each row's maximum over the tile: the thread's
      // columns, then its group of four lanes.
      %maxima:2 = scf.for %i = %c0 to %s_count step %c1
          iter_args(%m_lo = %minus_inf, %m_hi = %minus_inf) -> (f32, f32) {
        %nt = arith.divui %i, %c4 : index
        %j = arith.remui %i, %c4 : index
        %upper_j = arith.divui %j, %c2 : index
        %odd = arith.remui %j, %c2 : index
        %nt_at = arith.muli %nt, %c8 : index
        %c_in = arith.addi %nt_at, %t_col : index
        %col = arith.addi %c_in, %odd : index
        %key = arith.addi %k0, %col : index
        %is_hi = arith.cmpi ne, %upper_j, %c0 : index
        %row_keys = arith.select %is_hi, %hi_keys, %lo_keys : index
        %visible = arith.cmpi slt, %key, %row_keys : index
        %s = memref.load %s_acc[%i] : memref<?xf32>
        %scaled = arith.mulf %s, %scale_log2 : f32
        %masked = arith.select %visible, %scaled, %minus_inf : f32
        memref.store %masked, %s_acc[%i] : memref<?xf32>
        %new_lo = arith.maximumf %m_lo, %masked : f32
        %new_hi = arith.maximumf %m_hi, %masked : f32
        %next_lo = arith.select %is_hi, %m_lo, %new_lo : f32
        %next_hi = arith.select %is_hi, %new_hi, %m_hi : f32
        scf.yield %next_lo, %next_hi : f32, f32
      } {mhac.unroll}
      %lo1, %v_lo1 = gpu.shuffle xor %maxima#0, %one_i32, %warp_width : f32
      %lo2 = arith.maximumf %maxima#0, %lo1 : f32
      %lo3, %v_lo3 = gpu.shuffle xor %lo2, %two_i32, %warp_width : f32
      %tile_max_lo = arith.maximumf %lo2, %lo3 : f32
      %hi1, %v_hi1 = gpu.shuffle xor %maxima#1, %one_i32, %warp_width : f32
      %hi2 = arith.maximumf %maxima#1, %hi1 : f32
      %hi3, %v_hi3 = gpu.shuffle xor %hi2, %two_i32, %warp_width : f32
      %tile_max_hi = arith.maximumf %hi2, %hi3 : f32

      // The new maxima; a row that has seen no key yet keeps its zeros.
      %new_max_lo = arith.maximumf %max_lo, %tile_max_lo : f32
      %new_max_hi = arith.maximumf %max_hi, %tile_max_hi : f32
      %none_lo = arith.cmpf oeq, %new_max_lo, %minus_inf : f32
      %none_hi = arith.cmpf oeq, %new_max_hi, %minus_inf : f32
      %base_lo = arith.select %none_lo, %zero, %new_max_lo : f32
      %base_hi = arith.select %none_hi, %zero, %new_max_hi : f32
      %old_lo = arith.subf %max_lo, %base_lo : f32
      %old_hi = arith.subf %max_hi, %base_hi : f32
      %rescale_lo = math.exp2 %old_lo : f32
      %rescale_hi = math.exp2 %old_hi : f32

      // P = 2^(S - max), summed per thread (the lanes' sums are added once, at the end).
      %sums:2 = scf.for %i = %c0 to %s_count step %c1
          iter_args(%p_lo = %zero, %p_hi = %zero) -> (f32, f32) {
        %j = arith.remui %i, %c4 : index
        %upper_j = arith.divui %j, %c2 : index
        %is_hi = arith.cmpi ne, %upper_j, %c0 : index
        %base = arith.select %is_hi, %base_hi, %base_lo : f32
        %s = memref.load %s_acc[%i] : memref<?xf32>
        %shifted = arith.subf %s, %base : f32
        %p = math.exp2 %shifted : f32
        memref.store %p, %s_acc[%i] : memref<?xf32>
        %add_lo = arith.addf %p_lo, %p : f32
        %add_hi = arith.addf %p_hi, %p : f32
        %next_lo = arith.select %is_hi, %p_lo, %add_lo : f32
        %next_hi = arith.select %is_hi, %add_hi, %p_hi : f32
        scf.yield %next_lo, %next_hi : f32, f32
      } {mhac.unroll}
      %kept_lo = arith.mulf %sum_lo, %rescale_lo : f32
      %new_sum_lo = arith.addf %kept_lo, %sums#0 : f32
      %kept_hi = arith.mulf %sum_hi, %rescale_hi : f32
      %new_sum_hi = arith.addf %kept_hi, %sums#1 : f32
      scf.for %i = %c0 to %o_count step %c1 {
        %j = arith.remui %i, %c4 : index
        %upper_j = arith.divui %j, %c2 : index
        %is_hi = arith.cmpi ne, %upper_j, %c0 : index
        %rescale = arith.select %is_hi, %rescale_hi, %rescale_lo : f32
        %old = memref.load %o_acc[%i] : memref<?xf32>
        %kept = arith.mulf %old, %rescale : f32
        memref.store %kept, %o_acc[%i] : memref<?xf32>
      } {mhac.unroll}

      // O += P V: P's fragments of 8-key tiles 2s and 2s + 1 are the A operand of step s;
      // the values' fragments come transposed from ldmatrix.trans.
      scf.for %ps = %c0 to %p_steps step %c1 {
        %tile0 = arith.muli %ps, %c2 : index
        %p_at0 = arith.muli %tile0, %c4 : index
        %packed:4 = scf.for %pair = %c0 to %c4 step %c1
            iter_args(%r0 = %no_bytes, %r1 = %no_bytes, %r2 = %no_bytes, %r3 = %no_bytes)
            -> (i32, i32, i32, i32) {
          // Register `pair` of the A operand: tile 2s + pair / 2, accumulators 2 (pair mod 2)
          // and the next.
          %second = arith.divui %pair, %c2 : index
          %lower = arith.remui %pair, %c2 : index
          %tile_at = arith.muli %second, %c4 : index
          %base_at = arith.addi %p_at0, %tile_at : index
          %within = arith.muli %lower, %c2 : index
          %x_at = arith.addi %base_at, %within : index
          %y_at = arith.addi %x_at, %c1 : index
          %x = memref.load %s_acc[%x_at] : memref<?xf32>
          %y = memref.load %s_acc[%y_at] : memref<?xf32>
          %xb = arith.truncf %x : f32 to bf16
          %yb = arith.truncf %y : f32 to bf16
          // Two bf16 in one register, the lower column in the lower half.
          %x16 = arith.bitcast %xb : bf16 to i16
          %y16 = arith.bitcast %yb : bf16 to i16
          %x32 = arith.extui %x16 : i16 to i32
          %y32 = arith.extui %y16 : i16 to i32
          %sixteen = arith.constant 16 : i32
          %y_high = arith.shli %y32, %sixteen : i32
          %word = arith.ori %x32, %y_high : i32
          %is0 = arith.cmpi eq, %pair, %c0 : index
          %is1 = arith.cmpi eq, %pair, %c1 : index
          %is2 = arith.cmpi eq, %pair, %c2 : index
          %is3 = arith.cmpi eq, %pair, %c3 : index
          %n0 = arith.select %is0, %word, %r0 : i32
          %n1 = arith.select %is1, %word, %r1 : i32
          %n2 = arith.select %is2, %word, %r2 : i32
          %n3 = arith.select %is3, %word, %r3 : i32
          scf.yield %n0, %n1, %n2, %n3 : i32, i32, i32, i32
        } {mhac.unroll}
        %ps_at = arith.muli %ps, %c16 : index
        scf.for %dp = %c0 to %d_pairs step %c1 {
          %dp_at = arith.muli %dp, %c16 : index
          %key0 = arith.addi %ps_at, %quarter_at : index
          %key = arith.addi %key0, %lane8 : index
          %col = arith.addi %dp_at, %half_at : index
          %s_row = arith.muli %key, %pitch : index
          %s_element = arith.addi %s_row, %col : index
          %s_offset = arith.muli %s_element, %c2 : index
          %address = arith.addi %vs_base, %s_offset : index
          %address_i = arith.index_cast %address : index to i64
          %pointer = llvm.inttoptr %address_i : i64 to !llvm.ptr<3>
          %fragment = nvvm.ldmatrix %pointer {num = 4 : i32, layout = #nvvm.mma_layout<col>,
              shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>,
              eltType = #nvvm.ld_st_matrix_elt_type<b16>}
              : (!llvm.ptr<3>) -> !llvm.struct<(i32, i32, i32, i32)>
          %f0 = llvm.extractvalue %fragment[0] : !llvm.struct<(i32, i32, i32, i32)>
          %f1 = llvm.extractvalue %fragment[1] : !llvm.struct<(i32, i32, i32, i32)>
          %f2 = llvm.extractvalue %fragment[2] : !llvm.struct<(i32, i32, i32, i32)>
          %f3 = llvm.extractvalue %fragment[3] : !llvm.struct<(i32, i32, i32, i32)>
          scf.for %side = %c0 to %c2 step %c1 {
            %is_first = arith.cmpi eq, %side, %c0 : index
            %b0 = arith.select %is_first, %f0, %f2 : i32
            %b1 = arith.select %is_first, %f1, %f3 : i32
            %dt0 = arith.muli %dp, %c2 : index
            %dt = arith.addi %dt0, %side : index
            %at = arith.muli %dt, %c4 : index
            %at1 = arith.addi %at, %c1 : index
            %at2 = arith.addi %at, %c2 : index
            %at3 = arith.addi %at, %c3 : index
            %d0 = memref.load %o_acc[%at] : memref<?xf32>
            %d1 = memref.load %o_acc[%at1] : memref<?xf32>
            %d2 = memref.load %o_acc[%at2] : memref<?xf32>
            %d3 = memref.load %o_acc[%at3] : memref<?xf32>
            %product = nvvm.mma.sync A[%packed#0, %packed#1, %packed#2, %packed#3] B[%b0, %b1]
                C[%d0, %d1, %d2, %d3]
                {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>,
                 multiplicandAPtxType = #nvvm.mma_type<bf16>,
                 multiplicandBPtxType = #nvvm.mma_type<bf16>,
                 shape = #nvvm.shape<m = 16, n = 8, k = 16>}
                : (i32, i32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
            %e0 = llvm.extractvalue %product[0] : !llvm.struct<(f32, f32, f32, f32)>
            %e1 = llvm.extractvalue %product[1] : !llvm.struct<(f32, f32, f32, f32)>
            %e2 = llvm.extractvalue %product[2] : !llvm.struct<(f32, f32, f32, f32)>
            %e3 = llvm.extractvalue %product[3] : !llvm.struct<(f32, f32, f32, f32)>
            memref.store %e0, %o_acc[%at] : memref<?xf32>
            memref.store %e1, %o_acc[%at1] : memref<?xf32>
            memref.store %e2, %o_acc[%at2] : memref<?xf32>
            memref.store %e3, %o_acc[%at3] : memref<?xf32>
          } {mhac.unroll}
        } {mhac.unroll}
      } {mhac.unroll}
      gpu.barrier
      scf.yield %new_max_lo, %new_max_hi, %new_sum_lo, %new_sum_hi : f32, f32, f32, f32
    }

    // Each row's sum over its four lanes, then O / sum (0 for a row that saw no key).
    %s_lo1, %w_lo1 = gpu.shuffle xor %state#2, %one_i32, %warp_width : f32
    %s_lo2 = arith.addf %state#2, %s_lo1 : f32
    %s_lo3, %w_lo3 = gpu.shuffle xor %s_lo2, %two_i32, %warp_width : f32
    %total_lo = arith.addf %s_lo2, %s_lo3 : f32
    %s_hi1, %w_hi1 = gpu.shuffle xor %state#3, %one_i32, %warp_width : f32
    %s_hi2 = arith.addf %state#3, %s_hi1 : f32
    %s_hi3, %w_hi3 = gpu.shuffle xor %s_hi2, %two_i32, %warp_width : f32
    %total_hi = arith.addf %s_hi2, %s_hi3 : f32
    %seen_lo = arith.cmpf ogt, %total_lo, %zero : f32
    %seen_hi = arith.cmpf ogt, %total_hi, %zero : f32
    %inverse_lo = arith.divf %one, %total_lo : f32
    %inverse_hi = arith.divf %one, %total_hi : f32
    %factor_lo = arith.select %seen_lo, %inverse_lo, %zero : f32
    %factor_hi = arith.select %seen_hi, %inverse_hi, %zero : f32
    scf.for %i = %c0 to %o_count step %c1 {
      %dt = arith.divui %i, %c4 : index
      %j = arith.remui %i, %c4 : index
      %upper_j = arith.divui %j, %c2 : index
      %odd = arith.remui %j, %c2 : index
      %is_hi = arith.cmpi ne, %upper_j, %c0 : index
      %row = arith.select %is_hi, %row_hi, %row_lo : index
      %factor = arith.select %is_hi, %factor_hi, %factor_lo : f32
      %row_in = arith.cmpi ult, %row, %seq : index
      scf.if %row_in {
        %dt_at = arith.muli %dt, %c8 : index
        %c_in = arith.addi %dt_at, %t_col : index
        %col = arith.addi %c_in, %odd : index
        %acc = memref.load %o_acc[%i] : memref<?xf32>
        %value = arith.mulf %acc, %factor : f32
        %rounded = arith.truncf %value : f32 to bf16
        %global_row = arith.addi %q_batch, %row : index
        %row_at = arith.muli %global_row, %q_stride : index
        %head_at = arith.addi %row_at, %q_head_at : index
        %index = arith.addi %head_at, %col : index
        memref.store %rounded, %o[%index] : memref<?xbf16>
      }
    } {mhac.unroll}
    gpu.return
  }
}
