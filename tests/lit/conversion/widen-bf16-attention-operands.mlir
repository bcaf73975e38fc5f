// RUN: mhac-opt %s --split-input-file --mhac-widen-bf16-layer=bf16-attention-operands | FileCheck %s

// Attention multiplies bf16: the projections it reads return bf16 (their rounding happens in
// their tiles, later); its own result stays f32 (the output projection, returned, is bf16).
// CHECK-LABEL: func.func @self_attention(
// CHECK:         %[[Q:.*]] = mha.linear {{.*}} -> tensor<?x5x32xbf16>
// CHECK:         %[[K:.*]] = mha.linear {{.*}} -> tensor<?x5x32xbf16>
// CHECK:         %[[V:.*]] = mha.linear {{.*}} -> tensor<?x5x32xbf16>
// CHECK:         %[[A:.*]] = mha.attention %[[Q]], %[[K]], %[[V]] {{.*}} : (tensor<?x5x32xbf16>, tensor<?x5x32xbf16>, tensor<?x5x32xbf16>) -> tensor<?x5x32xf32>
// CHECK:         mha.linear %[[A]], {{.*}} : (tensor<?x5x32xf32>, tensor<32x32xf32>) -> tensor<?x5x32xbf16>
func.func @self_attention(%x: tensor<?x5x32xbf16>, %wq: tensor<32x32xbf16>, %wk: tensor<32x32xbf16>,
                          %wv: tensor<32x32xbf16>, %wo: tensor<32x32xbf16>) -> tensor<?x5x32xbf16> {
  %q = mha.linear %x, %wq : (tensor<?x5x32xbf16>, tensor<32x32xbf16>) -> tensor<?x5x32xbf16>
  %k = mha.linear %x, %wk : (tensor<?x5x32xbf16>, tensor<32x32xbf16>) -> tensor<?x5x32xbf16>
  %v = mha.linear %x, %wv : (tensor<?x5x32xbf16>, tensor<32x32xbf16>) -> tensor<?x5x32xbf16>
  %a = mha.attention %q, %k, %v heads(4) kv_heads(4) head_dim(8) scale(0.35) : (tensor<?x5x32xbf16>, tensor<?x5x32xbf16>, tensor<?x5x32xbf16>) -> tensor<?x5x32xbf16>
  %out = mha.linear %a, %wo : (tensor<?x5x32xbf16>, tensor<32x32xbf16>) -> tensor<?x5x32xbf16>
  return %out : tensor<?x5x32xbf16>
}

// -----

// A key projection the layer also returns stays f32, and so do the query and value
// projections beside it: an attention's operands share one element type.
// CHECK-LABEL: func.func @returned_keys(
// CHECK-NOT:     mha.linear {{.*}} -> tensor<2x5x32xbf16>
// CHECK:         mha.linear {{.*}} -> tensor<2x5x32xf32>
// CHECK:         mha.linear {{.*}} -> tensor<2x5x32xf32>
// CHECK:         mha.attention {{.*}} : (tensor<2x5x32xf32>, tensor<2x5x32xf32>, tensor<2x5x32xf32>) -> tensor<2x5x32xf32>
func.func @returned_keys(%x: tensor<2x5x32xbf16>, %wq: tensor<32x32xbf16>, %wk: tensor<32x32xbf16>)
    -> (tensor<2x5x32xbf16>, tensor<2x5x32xbf16>) {
  %q = mha.linear %x, %wq : (tensor<2x5x32xbf16>, tensor<32x32xbf16>) -> tensor<2x5x32xbf16>
  %k = mha.linear %x, %wk : (tensor<2x5x32xbf16>, tensor<32x32xbf16>) -> tensor<2x5x32xbf16>
  %a = mha.attention %q, %k, %k heads(4) kv_heads(4) head_dim(8) scale(0.35) : (tensor<2x5x32xbf16>, tensor<2x5x32xbf16>, tensor<2x5x32xbf16>) -> tensor<2x5x32xbf16>
  return %a, %k : tensor<2x5x32xbf16>, tensor<2x5x32xbf16>
}

// -----

// Keys and values that are the layer's input (no projection) keep every operand f32.
// CHECK-LABEL: func.func @raw_memory(
// CHECK:         mha.linear {{.*}} -> tensor<2x5x32xf32>
// CHECK:         mha.attention {{.*}} : (tensor<2x5x32xf32>, tensor<2x7x32xf32>, tensor<2x7x32xf32>) -> tensor<2x5x32xf32>
func.func @raw_memory(%x: tensor<2x5x32xbf16>, %m: tensor<2x7x32xbf16>, %wq: tensor<32x32xbf16>)
    -> tensor<2x5x32xbf16> {
  %q = mha.linear %x, %wq : (tensor<2x5x32xbf16>, tensor<32x32xbf16>) -> tensor<2x5x32xbf16>
  %a = mha.attention %q, %m, %m heads(4) kv_heads(4) head_dim(8) scale(0.35) : (tensor<2x5x32xbf16>, tensor<2x7x32xbf16>, tensor<2x7x32xbf16>) -> tensor<2x5x32xbf16>
  return %a : tensor<2x5x32xbf16>
}

// -----

// An f32 layer's projections stay f32.
// CHECK-LABEL: func.func @f32_layer(
// CHECK:         mha.attention {{.*}} : (tensor<2x5x32xf32>, tensor<2x5x32xf32>, tensor<2x5x32xf32>) -> tensor<2x5x32xf32>
func.func @f32_layer(%x: tensor<2x5x32xf32>, %w: tensor<32x32xf32>) -> tensor<2x5x32xf32> {
  %q = mha.linear %x, %w : (tensor<2x5x32xf32>, tensor<32x32xf32>) -> tensor<2x5x32xf32>
  %a = mha.attention %q, %q, %q heads(4) kv_heads(4) head_dim(8) scale(0.35) : (tensor<2x5x32xf32>, tensor<2x5x32xf32>, tensor<2x5x32xf32>) -> tensor<2x5x32xf32>
  return %a : tensor<2x5x32xf32>
}
