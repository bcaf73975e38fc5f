// Attention on the GPU, fused as FlashAttention-2 does it: a block of query rows of one head
// streams the keys and values of its kv head through shared memory, a tile at a time, keeping
// each row's running maximum, sum and output in registers (the online softmax, in base 2), so
// that no score ever reaches global memory.
//
// q and o are [batch * seq, heads * head_dim], k and v [batch * kv_seq, kv_heads * head_dim],
// row-major, f32 or bf16 (the arithmetic is f32); block (x, h) of the grid computes query block x mod (query blocks) of batch entry
// x / (query blocks), for head h. A template, specialized as projection.mlir says.
//
// Each query row belongs to row_threads consecutive threads of one warp; thread g of a row
// holds the head features g, g + row_threads, ... (a strided slice, so that the row's threads
// read consecutive shared-memory words), reduces its part of a score with the others through
// warp shuffles, and scales its slice of the output. Keys past the last one any row of the block
// sees (causal, kv_lens) are never loaded; within the last tiles, masked scores are -inf. A row
// that sees no key gets 0.
gpu.module @templates {
  gpu.func @attention(
      %q: memref<?xf32> {mhac.storage = "q"}, %k: memref<?xf32> {mhac.storage = "k"},
      %v: memref<?xf32> {mhac.storage = "v"}, %kv_lens: memref<?xi32>,
      %o: memref<?xf32> {mhac.storage = "o"}, %seq: index, %kv_seq: index,
      %head_dim: index {mhac.bind = "head_dim"},
      %heads: index {mhac.bind = "heads"},
      %kv_heads: index {mhac.bind = "kv_heads"},
      %causal: index {mhac.bind = "causal"},
      %has_kv_lens: index {mhac.bind = "has_kv_lens"},
      %scale_log2: f32 {mhac.bind = "scale_log2"},
      %query_block: index {mhac.bind = "query_block"},
      %key_block: index {mhac.bind = "key_block"},
      %row_threads: index {mhac.bind = "row_threads"},
      %row_threads_log2: index {mhac.bind = "row_threads_log2"}) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %zero = arith.constant 0.0 : f32
    %one = arith.constant 1.0 : f32
    %minus_inf = arith.constant 0xFF800000 : f32
    %warp = arith.constant 32 : i32
    %tid = gpu.thread_id x
    %grid_x = gpu.block_id x
    %h = gpu.block_id y
    %seq_up = arith.addi %seq, %query_block : index
    %seq_up1 = arith.subi %seq_up, %c1 : index
    %blocks = arith.divui %seq_up1, %query_block : index
    %b = arith.divui %grid_x, %blocks : index
    %block = arith.remui %grid_x, %blocks : index
    %r = arith.divui %tid, %row_threads : index
    %g = arith.remui %tid, %row_threads : index
    %threads = arith.muli %query_block, %row_threads : index
    %first = arith.muli %block, %query_block : index
    %i = arith.addi %first, %r : index
    %row_in = arith.cmpi ult, %i, %seq : index
    %last_row = arith.subi %seq, %c1 : index
    %i_loaded = arith.select %row_in, %i, %last_row : index

    %group = arith.divui %heads, %kv_heads : index
    %kv_head = arith.divui %h, %group : index
    %q_stride = arith.muli %heads, %head_dim : index
    %kv_stride = arith.muli %kv_heads, %head_dim : index
    %q_batch = arith.muli %b, %seq : index
    %q_row = arith.addi %q_batch, %i_loaded : index
    %q_row_at = arith.muli %q_row, %q_stride : index
    %q_head_at = arith.muli %h, %head_dim : index
    %q_at = arith.addi %q_row_at, %q_head_at : index
    %kv_head_at = arith.muli %kv_head, %head_dim : index
    %kv_batch = arith.muli %b, %kv_seq : index

    // This thread's slice of the head: features g + j row_threads, j < slice; the last ones
    // may lie past head_dim, and then hold zeros.
    %slice_up = arith.addi %head_dim, %row_threads : index
    %slice_up1 = arith.subi %slice_up, %c1 : index
    %slice = arith.divui %slice_up1, %row_threads : index
    %q_regs = memref.alloca(%slice) : memref<?xf32>
    %o_regs = memref.alloca(%slice) : memref<?xf32>
    %p_regs = memref.alloca(%key_block) : memref<?xf32>
    scf.for %j = %c0 to %slice step %c1 {
      %d_at = arith.muli %j, %row_threads : index
      %d = arith.addi %g, %d_at : index
      %d_in = arith.cmpi ult, %d, %head_dim : index
      %d_loaded = arith.select %d_in, %d, %c0 : index
      %index = arith.addi %q_at, %d_loaded : index
      %value = memref.load %q[%index] : memref<?xf32>
      %scaled = arith.mulf %value, %scale_log2 : f32
      %kept = arith.select %d_in, %scaled, %zero : f32
      memref.store %kept, %q_regs[%j] : memref<?xf32>
      memref.store %zero, %o_regs[%j] : memref<?xf32>
    } {mhac.unroll}

    // The keys this batch entry has (kv_lens, clamped to [0, kv_seq]), the keys this row sees
    // and those the block's last row sees: with causal, key j is visible from row i when
    // j <= i + kv_seq - seq.
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
    %row_causal_end = arith.addi %i, %shift : index
    %row_causal_end1 = arith.addi %row_causal_end, %c1 : index
    %row_causal_keys = arith.minsi %keys, %row_causal_end1 : index
    %row_keys = arith.select %causal_on, %row_causal_keys, %keys : index
    %block_last = arith.addi %first, %query_block : index
    %block_last_in = arith.minsi %block_last, %seq : index
    %block_causal_end = arith.addi %block_last_in, %shift : index
    %block_causal_keys = arith.minsi %keys, %block_causal_end : index
    %block_keys = arith.select %causal_on, %block_causal_keys, %keys : index

    // Shared memory: the key tile, then the value tile, [key_block][head_dim] each.
    %tile = arith.muli %key_block, %head_dim : index
    %tile_bytes = arith.muli %tile, %c4 : index
    %shared = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
    %ks = memref.view %shared[%c0][%tile]
        : memref<?xi8, #gpu.address_space<workgroup>> to memref<?xf32, #gpu.address_space<workgroup>>
    %vs = memref.view %shared[%tile_bytes][%tile]
        : memref<?xi8, #gpu.address_space<workgroup>> to memref<?xf32, #gpu.address_space<workgroup>>

    %state:2 = scf.for %k0 = %c0 to %block_keys step %key_block
        iter_args(%max = %minus_inf, %sum = %zero) -> (f32, f32) {
      scf.for %e = %tid to %tile step %threads {
        %key = arith.divui %e, %head_dim : index
        %d = arith.remui %e, %head_dim : index
        %kj = arith.addi %k0, %key : index
        %key_in = arith.cmpi slt, %kj, %block_keys : index
        %pair:2 = scf.if %key_in -> (f32, f32) {
          %row = arith.addi %kv_batch, %kj : index
          %row_at = arith.muli %row, %kv_stride : index
          %head_at = arith.addi %row_at, %kv_head_at : index
          %index = arith.addi %head_at, %d : index
          %kv = memref.load %k[%index] : memref<?xf32>
          %vv = memref.load %v[%index] : memref<?xf32>
          scf.yield %kv, %vv : f32, f32
        } else {
          scf.yield %zero, %zero : f32, f32
        }
        memref.store %pair#0, %ks[%e] : memref<?xf32, #gpu.address_space<workgroup>>
        memref.store %pair#1, %vs[%e] : memref<?xf32, #gpu.address_space<workgroup>>
      }
      gpu.barrier

      // Scores (base 2, scaled), masked to -inf, and their maximum.
      %tile_max = scf.for %kk = %c0 to %key_block step %c1 iter_args(%running = %minus_inf) -> (f32) {
        %key_at = arith.muli %kk, %head_dim : index
        %partial = scf.for %j = %c0 to %slice step %c1 iter_args(%dot = %zero) -> (f32) {
          %d_at = arith.muli %j, %row_threads : index
          %d = arith.addi %g, %d_at : index
          %d_in = arith.cmpi ult, %d, %head_dim : index
          %d_loaded = arith.select %d_in, %d, %c0 : index
          %index = arith.addi %key_at, %d_loaded : index
          %kv = memref.load %ks[%index] : memref<?xf32, #gpu.address_space<workgroup>>
          %qv = memref.load %q_regs[%j] : memref<?xf32>
          %next = math.fma %qv, %kv, %dot : f32
          scf.yield %next : f32
        } {mhac.unroll}
        %score = scf.for %s = %c0 to %row_threads_log2 step %c1 iter_args(%acc = %partial) -> (f32) {
          %s32 = arith.index_cast %s : index to i32
          %one32 = arith.constant 1 : i32
          %offset = arith.shli %one32, %s32 : i32
          %other, %valid = gpu.shuffle xor %acc, %offset, %warp : f32
          %added = arith.addf %acc, %other : f32
          scf.yield %added : f32
        } {mhac.unroll}
        %kj = arith.addi %k0, %kk : index
        %visible = arith.cmpi slt, %kj, %row_keys : index
        %masked = arith.select %visible, %score, %minus_inf : f32
        memref.store %masked, %p_regs[%kk] : memref<?xf32>
        %next = arith.maximumf %running, %masked : f32
        scf.yield %next : f32
      } {mhac.unroll}

      // Rescale by the new maximum; a row that has seen no key yet keeps its zeros.
      %new_max = arith.maximumf %max, %tile_max : f32
      %none = arith.cmpf oeq, %new_max, %minus_inf : f32
      %base = arith.select %none, %zero, %new_max : f32
      %old_shift = arith.subf %max, %base : f32
      %rescale = math.exp2 %old_shift : f32
      %tile_sum = scf.for %kk = %c0 to %key_block step %c1 iter_args(%running = %zero) -> (f32) {
        %s = memref.load %p_regs[%kk] : memref<?xf32>
        %shifted = arith.subf %s, %base : f32
        %p = math.exp2 %shifted : f32
        memref.store %p, %p_regs[%kk] : memref<?xf32>
        %next = arith.addf %running, %p : f32
        scf.yield %next : f32
      } {mhac.unroll}
      %kept_sum = arith.mulf %sum, %rescale : f32
      %new_sum = arith.addf %kept_sum, %tile_sum : f32
      scf.for %j = %c0 to %slice step %c1 {
        %d_at = arith.muli %j, %row_threads : index
        %d = arith.addi %g, %d_at : index
        %d_in = arith.cmpi ult, %d, %head_dim : index
        %d_loaded = arith.select %d_in, %d, %c0 : index
        %old = memref.load %o_regs[%j] : memref<?xf32>
        %kept = arith.mulf %old, %rescale : f32
        %acc = scf.for %kk = %c0 to %key_block step %c1 iter_args(%running = %kept) -> (f32) {
          %key_at = arith.muli %kk, %head_dim : index
          %index = arith.addi %key_at, %d_loaded : index
          %vv = memref.load %vs[%index] : memref<?xf32, #gpu.address_space<workgroup>>
          %p = memref.load %p_regs[%kk] : memref<?xf32>
          %next = math.fma %p, %vv, %running : f32
          scf.yield %next : f32
        } {mhac.unroll}
        memref.store %acc, %o_regs[%j] : memref<?xf32>
      } {mhac.unroll}
      gpu.barrier
      scf.yield %new_max, %new_sum : f32, f32
    }

    scf.if %row_in {
      %seen = arith.cmpf ogt, %state#1, %zero : f32
      %inverse = arith.divf %one, %state#1 : f32
      %factor = arith.select %seen, %inverse, %zero : f32
      scf.for %j = %c0 to %slice step %c1 {
        %d_at = arith.muli %j, %row_threads : index
        %d = arith.addi %g, %d_at : index
        %d_in = arith.cmpi ult, %d, %head_dim : index
        scf.if %d_in {
          %acc = memref.load %o_regs[%j] : memref<?xf32>
          %value = arith.mulf %acc, %factor : f32
          %index = arith.addi %q_at, %d : index
          memref.store %value, %o[%index] : memref<?xf32>
        }
      } {mhac.unroll}
    }
    gpu.return
  }
}
