// Every verifier message of the mha ops.
// RUN: mhac-opt %s --split-input-file --verify-diagnostics

func.func @linear_element_types(%x: tensor<1x2x4xf32>, %w: tensor<4x4xbf16>) {
  // expected-error @+1 {{requires input, weight and bias to share one element type}}
  %0 = mha.linear %x, %w : (tensor<1x2x4xf32>, tensor<4x4xbf16>) -> tensor<1x2x4xf32>
  return
}

// -----

func.func @linear_result_type(%x: tensor<1x2x4xbf16>, %w: tensor<4x4xbf16>) {
  // expected-error @+1 {{requires a result of the input's element type, or bf16}}
  %0 = mha.linear %x, %w : (tensor<1x2x4xbf16>, tensor<4x4xbf16>) -> tensor<1x2x4xf32>
  return
}

// -----

func.func @linear_dynamic_weight(%x: tensor<1x2x4xf32>, %w: tensor<?x4xf32>) {
  // expected-error @+1 {{requires a weight of static shape, got 'tensor<?x4xf32>'}}
  %0 = mha.linear %x, %w : (tensor<1x2x4xf32>, tensor<?x4xf32>) -> tensor<1x2x4xf32>
  return
}

// -----

func.func @linear_in_features(%x: tensor<1x2x5xf32>, %w: tensor<4x4xf32>) {
  // expected-error @+1 {{input features (5) must equal the weight's second dimension (4)}}
  %0 = mha.linear %x, %w : (tensor<1x2x5xf32>, tensor<4x4xf32>) -> tensor<1x2x4xf32>
  return
}

// -----

func.func @linear_dynamic_in_features(%x: tensor<1x2x?xf32>, %w: tensor<4x4xf32>) {
  // expected-error @+1 {{input features (?) must equal the weight's second dimension (4)}}
  %0 = mha.linear %x, %w : (tensor<1x2x?xf32>, tensor<4x4xf32>) -> tensor<1x2x4xf32>
  return
}

// -----

func.func @linear_bias_size(%x: tensor<1x2x4xf32>, %w: tensor<8x4xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{bias size (4) must equal the weight's first dimension (8)}}
  %0 = mha.linear %x, %w bias %b : (tensor<1x2x4xf32>, tensor<8x4xf32>, tensor<4xf32>) -> tensor<1x2x8xf32>
  return
}

// -----

func.func @linear_result_rank(%x: tensor<1x2x4xf32>, %w: tensor<8x4xf32>) {
  // expected-error @+1 {{result rank (2) must equal the input rank (3)}}
  %0 = mha.linear %x, %w : (tensor<1x2x4xf32>, tensor<8x4xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @linear_result_batch(%x: tensor<?x2x4xf32>, %w: tensor<8x4xf32>) {
  // expected-error @+1 {{result dimension 0 (3) must equal the input's (?)}}
  %0 = mha.linear %x, %w : (tensor<?x2x4xf32>, tensor<8x4xf32>) -> tensor<3x2x8xf32>
  return
}

// -----

func.func @linear_result_features(%x: tensor<1x2x4xf32>, %w: tensor<8x4xf32>) {
  // expected-error @+1 {{result features (4) must equal the weight's first dimension (8)}}
  %0 = mha.linear %x, %w : (tensor<1x2x4xf32>, tensor<8x4xf32>) -> tensor<1x2x4xf32>
  return
}

// -----

func.func @linear_weight_rank(%x: tensor<1x2x4xf32>, %w: tensor<2x4x4xf32>) {
  // expected-error @+1 {{operand #1 must be 2D tensor of 32-bit float or bfloat16 type values}}
  %0 = mha.linear %x, %w : (tensor<1x2x4xf32>, tensor<2x4x4xf32>) -> tensor<1x2x4xf32>
  return
}

// -----

func.func @linear_integer(%x: tensor<1x2x4xi32>, %w: tensor<4x4xf32>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of 32-bit float or bfloat16 type values}}
  %0 = mha.linear %x, %w : (tensor<1x2x4xi32>, tensor<4x4xf32>) -> tensor<1x2x4xf32>
  return
}

// -----

func.func @attention_element_types(%q: tensor<1x2x8xf32>, %kv: tensor<1x2x8xbf16>) {
  // expected-error @+1 {{requires query, key and value to share one element type}}
  %0 = mha.attention %q, %kv, %kv heads(2) kv_heads(2) head_dim(4) scale(0.5) : (tensor<1x2x8xf32>, tensor<1x2x8xbf16>, tensor<1x2x8xbf16>) -> tensor<1x2x8xf32>
  return
}

// -----

func.func @attention_groups(%q: tensor<1x2x12xf32>, %kv: tensor<1x2x8xf32>) {
  // expected-error @+1 {{kv_heads (2) must divide heads (3)}}
  %0 = mha.attention %q, %kv, %kv heads(3) kv_heads(2) head_dim(4) scale(0.5) : (tensor<1x2x12xf32>, tensor<1x2x8xf32>, tensor<1x2x8xf32>) -> tensor<1x2x12xf32>
  return
}

// -----

func.func @attention_zero_heads(%q: tensor<1x2x8xf32>) {
  // expected-error @+1 {{attribute 'heads' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  %0 = mha.attention %q, %q, %q heads(0) kv_heads(2) head_dim(4) scale(0.5) : (tensor<1x2x8xf32>, tensor<1x2x8xf32>, tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  return
}

// -----

func.func @attention_infinite_scale(%q: tensor<1x2x8xf32>) {
  // expected-error @+1 {{requires a finite scale}}
  %0 = mha.attention %q, %q, %q heads(2) kv_heads(2) head_dim(4) scale(0x7F800000) : (tensor<1x2x8xf32>, tensor<1x2x8xf32>, tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  return
}

// -----

func.func @attention_query_width(%q: tensor<1x2x9xf32>, %kv: tensor<1x2x8xf32>) {
  // expected-error @+1 {{query width (9) must equal heads * head_dim (2 * 4)}}
  %0 = mha.attention %q, %kv, %kv heads(2) kv_heads(2) head_dim(4) scale(0.5) : (tensor<1x2x9xf32>, tensor<1x2x8xf32>, tensor<1x2x8xf32>) -> tensor<1x2x9xf32>
  return
}

// -----

func.func @attention_key_width(%q: tensor<1x2x8xf32>, %kv: tensor<1x2x8xf32>) {
  // expected-error @+1 {{key and value width (8) must equal kv_heads * head_dim (1 * 4)}}
  %0 = mha.attention %q, %kv, %kv heads(2) kv_heads(1) head_dim(4) scale(0.5) : (tensor<1x2x8xf32>, tensor<1x2x8xf32>, tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  return
}

// -----

func.func @attention_batch(%q: tensor<2x2x8xf32>, %kv: tensor<3x5x8xf32>) {
  // expected-error @+1 {{query batch (2) does not match key and value batch (3)}}
  %0 = mha.attention %q, %kv, %kv heads(2) kv_heads(2) head_dim(4) scale(0.5) : (tensor<2x2x8xf32>, tensor<3x5x8xf32>, tensor<3x5x8xf32>) -> tensor<2x2x8xf32>
  return
}

// -----

func.func @attention_kv_lens_size(%q: tensor<2x2x8xf32>, %lens: tensor<3xi32>) {
  // expected-error @+1 {{kv_lens size (3) does not match the batch (2)}}
  %0 = mha.attention %q, %q, %q kv_lens %lens heads(2) kv_heads(2) head_dim(4) scale(0.5) : (tensor<2x2x8xf32>, tensor<2x2x8xf32>, tensor<2x2x8xf32>, tensor<3xi32>) -> tensor<2x2x8xf32>
  return
}

// -----

func.func @attention_key_value_types(%q: tensor<1x2x8xf32>, %k: tensor<1x2x8xf32>, %v: tensor<1x3x8xf32>) {
  // expected-error @+1 {{failed to verify that all of {key, value} have same type}}
  %0 = mha.attention %q, %k, %v heads(2) kv_heads(2) head_dim(4) scale(0.5) : (tensor<1x2x8xf32>, tensor<1x2x8xf32>, tensor<1x3x8xf32>) -> tensor<1x2x8xf32>
  return
}

// -----

func.func @attention_result_shape(%q: tensor<1x2x8xf32>) {
  // expected-error @+1 {{failed to verify that all of {query, result} have same shape}}
  %0 = mha.attention %q, %q, %q heads(2) kv_heads(2) head_dim(4) scale(0.5) : (tensor<1x2x8xf32>, tensor<1x2x8xf32>, tensor<1x2x8xf32>) -> tensor<1x3x8xf32>
  return
}

// -----

func.func @attention_rank(%q: tensor<2x8xf32>) {
  // expected-error @+1 {{operand #0 must be 3D tensor of 32-bit float or bfloat16 type values}}
  %0 = mha.attention %q, %q, %q heads(2) kv_heads(2) head_dim(4) scale(0.5) : (tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @rms_norm_weight(%x: tensor<1x2x32xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{weight size (8) must equal head_dim (16)}}
  %0 = mha.rms_norm %x, %w heads(2) head_dim(16) eps(1.0e-6) : (tensor<1x2x32xf32>, tensor<8xf32>) -> tensor<1x2x32xf32>
  return
}

// -----

func.func @rms_norm_width(%x: tensor<1x2x30xf32>, %w: tensor<16xf32>) {
  // expected-error @+1 {{input width (30) must equal heads * head_dim (2 * 16)}}
  %0 = mha.rms_norm %x, %w heads(2) head_dim(16) eps(1.0e-6) : (tensor<1x2x30xf32>, tensor<16xf32>) -> tensor<1x2x30xf32>
  return
}

// -----

func.func @rms_norm_eps(%x: tensor<1x2x32xf32>, %w: tensor<16xf32>) {
  // expected-error @+1 {{requires a positive finite eps}}
  %0 = mha.rms_norm %x, %w heads(2) head_dim(16) eps(0.0) : (tensor<1x2x32xf32>, tensor<16xf32>) -> tensor<1x2x32xf32>
  return
}

// -----

func.func @rope_dim(%x: tensor<1x2x32xf32>) {
  // expected-error @+1 {{dim (18) must be even and at most head_dim (16)}}
  %0 = mha.rope %x heads(2) head_dim(16) half dim(18) base(1.0e4) : (tensor<1x2x32xf32>) -> tensor<1x2x32xf32>
  return
}

// -----

func.func @rope_base(%x: tensor<1x2x32xf32>) {
  // expected-error @+1 {{requires a positive finite base}}
  %0 = mha.rope %x heads(2) head_dim(16) interleaved dim(16) base(-1.0) : (tensor<1x2x32xf32>) -> tensor<1x2x32xf32>
  return
}

// -----

func.func @rope_scaling_needs(%x: tensor<1x2x32xf32>) {
  // expected-error @+1 {{scaling llama3 needs low_freq_factor}}
  %0 = mha.rope %x heads(2) head_dim(16) half dim(16) base(1.0e4) scaling llama3 {factor = 8.0 : f64} : (tensor<1x2x32xf32>) -> tensor<1x2x32xf32>
  return
}

// -----

func.func @rope_scaling_extra(%x: tensor<1x2x32xf32>) {
  // expected-error @+1 {{beta_fast is not a parameter of scaling linear}}
  %0 = mha.rope %x heads(2) head_dim(16) half dim(16) base(1.0e4) scaling linear {factor = 8.0 : f64, beta_fast = 32.0 : f64} : (tensor<1x2x32xf32>) -> tensor<1x2x32xf32>
  return
}

// -----

func.func @rope_llama3_order(%x: tensor<1x2x32xf32>) {
  // expected-error @+1 {{requires high_freq_factor above low_freq_factor}}
  %0 = mha.rope %x heads(2) head_dim(16) half dim(16) base(1.0e4) scaling llama3 {factor = 8.0 : f64, low_freq_factor = 4.0 : f64, high_freq_factor = 1.0 : f64, original_max = 8192 : i64} : (tensor<1x2x32xf32>) -> tensor<1x2x32xf32>
  return
}

// -----

func.func @rope_truncate(%x: tensor<1x2x32xf32>) {
  // expected-error @+1 {{truncate and attention_factor are parameters of scaling yarn}}
  %0 = mha.rope %x heads(2) head_dim(16) half dim(16) base(1.0e4) {truncate = false} : (tensor<1x2x32xf32>) -> tensor<1x2x32xf32>
  return
}

// -----

func.func @cache_write_width(%k: tensor<1x2x32xf32>, %cache: memref<1x8x2x8xf32>, %len: tensor<1xi32>) {
  // expected-error @+1 {{input width (32) must equal the cache's kv_heads * head_dim (16)}}
  mha.cache_write %k into %cache at %len : tensor<1x2x32xf32> into memref<1x8x2x8xf32> at tensor<1xi32>
  return
}

// -----

func.func @cache_write_batch(%k: tensor<2x2x32xf32>, %cache: memref<1x8x2x16xf32>, %len: tensor<2xi32>) {
  // expected-error @+1 {{input, cache and positions must share one batch}}
  mha.cache_write %k into %cache at %len : tensor<2x2x32xf32> into memref<1x8x2x16xf32> at tensor<2xi32>
  return
}

// -----

func.func @attention_cache_without_len(%q: tensor<1x2x64xf32>, %cache: memref<1x8x2x16xf32>) {
  // expected-error @+1 {{reads its keys and values from caches, and needs cache_len}}
  %0 = mha.attention %q, %cache, %cache heads(4) kv_heads(2) head_dim(16) scale(0.25) : (tensor<1x2x64xf32>, memref<1x8x2x16xf32>, memref<1x8x2x16xf32>) -> tensor<1x2x64xf32>
  return
}

// -----

func.func @attention_len_without_cache(%q: tensor<1x2x64xf32>, %k: tensor<1x2x32xf32>, %len: tensor<1xi32>) {
  // expected-error @+1 {{takes cache_len only with caches (memrefs) as keys and values}}
  %0 = mha.attention %q, %k, %k cache_len %len heads(4) kv_heads(2) head_dim(16) scale(0.25) : (tensor<1x2x64xf32>, tensor<1x2x32xf32>, tensor<1x2x32xf32>, tensor<1xi32>) -> tensor<1x2x64xf32>
  return
}

// -----

func.func @attention_cache_heads(%q: tensor<1x2x64xf32>, %cache: memref<1x8x4x8xf32>, %len: tensor<1xi32>) {
  // expected-error @+1 {{caches [B, N, 4, 8] must have kv_heads (2) and head_dim (16) as their last dimensions}}
  %0 = mha.attention %q, %cache, %cache cache_len %len heads(4) kv_heads(2) head_dim(16) scale(0.25) : (tensor<1x2x64xf32>, memref<1x8x4x8xf32>, memref<1x8x4x8xf32>, tensor<1xi32>) -> tensor<1x2x64xf32>
  return
}

// -----

func.func @attention_sinks(%q: tensor<1x2x64xf32>, %k: tensor<1x2x32xf32>, %sinks: tensor<2xf32>) {
  // expected-error @+1 {{sinks size (2) must equal heads (4)}}
  %0 = mha.attention %q, %k, %k sinks %sinks heads(4) kv_heads(2) head_dim(16) scale(0.25) : (tensor<1x2x64xf32>, tensor<1x2x32xf32>, tensor<1x2x32xf32>, tensor<2xf32>) -> tensor<1x2x64xf32>
  return
}

// -----

func.func @attention_softcap(%q: tensor<1x2x64xf32>, %k: tensor<1x2x32xf32>) {
  // expected-error @+1 {{requires a positive finite softcap}}
  %0 = mha.attention %q, %k, %k heads(4) kv_heads(2) head_dim(16) scale(0.25) softcap(-1.0) : (tensor<1x2x64xf32>, tensor<1x2x32xf32>, tensor<1x2x32xf32>) -> tensor<1x2x64xf32>
  return
}

// -----

func.func @attention_window(%q: tensor<1x2x64xf32>, %k: tensor<1x2x32xf32>) {
  // expected-error @+1 {{attribute 'window' failed to satisfy constraint}}
  %0 = mha.attention %q, %k, %k heads(4) kv_heads(2) head_dim(16) scale(0.25) window(0) : (tensor<1x2x64xf32>, tensor<1x2x32xf32>, tensor<1x2x32xf32>) -> tensor<1x2x64xf32>
  return
}
