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
