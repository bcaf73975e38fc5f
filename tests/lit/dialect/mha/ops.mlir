// Round trip of every form of the mha ops: printing and parsing back is the identity.
// RUN: mhac-opt %s | FileCheck %s
// RUN: mhac-opt %s | mhac-opt | FileCheck %s
// RUN: mhac-opt %s --mlir-print-op-generic | mhac-opt | FileCheck %s

// CHECK-LABEL: func.func @self_attention
func.func @self_attention(%x: tensor<?x128x768xf32>, %w: tensor<768x768xf32>, %b: tensor<768xf32>) -> tensor<?x128x768xf32> {
  // CHECK: mha.linear %{{.*}}, %{{.*}} bias %{{.*}} : (tensor<?x128x768xf32>, tensor<768x768xf32>, tensor<768xf32>) -> tensor<?x128x768xf32>
  %q = mha.linear %x, %w bias %b : (tensor<?x128x768xf32>, tensor<768x768xf32>, tensor<768xf32>) -> tensor<?x128x768xf32>
  // CHECK: mha.attention %{{.*}}, %{{.*}}, %{{.*}} heads(12) kv_heads(12) head_dim(64) scale(1.250000e-01) : (tensor<?x128x768xf32>, tensor<?x128x768xf32>, tensor<?x128x768xf32>) -> tensor<?x128x768xf32>
  %a = mha.attention %q, %q, %q heads(12) kv_heads(12) head_dim(64) scale(0.125) : (tensor<?x128x768xf32>, tensor<?x128x768xf32>, tensor<?x128x768xf32>) -> tensor<?x128x768xf32>
  return %a : tensor<?x128x768xf32>
}

// CHECK-LABEL: func.func @grouped_causal_masked
func.func @grouped_causal_masked(%q: tensor<2x?x640xbf16>, %k: tensor<2x7x160xbf16>, %v: tensor<2x7x160xbf16>, %lens: tensor<2xi32>, %w: tensor<96x640xbf16>) -> tensor<2x?x96xbf16> {
  // CHECK: mha.attention %{{.*}}, %{{.*}}, %{{.*}} kv_lens %{{.*}} heads(8) kv_heads(2) head_dim(80) scale(5.000000e-01) causal : (tensor<2x?x640xbf16>, tensor<2x7x160xbf16>, tensor<2x7x160xbf16>, tensor<2xi32>) -> tensor<2x?x640xbf16>
  %a = mha.attention %q, %k, %v kv_lens %lens heads(8) kv_heads(2) head_dim(80) scale(0.5) causal : (tensor<2x?x640xbf16>, tensor<2x7x160xbf16>, tensor<2x7x160xbf16>, tensor<2xi32>) -> tensor<2x?x640xbf16>
  // CHECK: mha.linear %{{.*}}, %{{.*}} : (tensor<2x?x640xbf16>, tensor<96x640xbf16>) -> tensor<2x?x96xbf16>
  %o = mha.linear %a, %w : (tensor<2x?x640xbf16>, tensor<96x640xbf16>) -> tensor<2x?x96xbf16>
  return %o : tensor<2x?x96xbf16>
}

// A dynamic batch on one side and a static one on the other is compatible.
// CHECK-LABEL: func.func @mixed_batch
func.func @mixed_batch(%q: tensor<?x1x64xf32>, %kv: tensor<4x9x64xf32>, %lens: tensor<?xi32>) -> tensor<?x1x64xf32> {
  // CHECK: mha.attention
  %a = mha.attention %q, %kv, %kv kv_lens %lens heads(1) kv_heads(1) head_dim(64) scale(1.0) : (tensor<?x1x64xf32>, tensor<4x9x64xf32>, tensor<4x9x64xf32>, tensor<?xi32>) -> tensor<?x1x64xf32>
  return %a : tensor<?x1x64xf32>
}

// An f32 attention whose result is stored rounded to bf16.
// CHECK-LABEL: func.func @rounded_result
func.func @rounded_result(%q: tensor<?x9x64xf32>) -> tensor<?x9x64xbf16> {
  // CHECK: mha.attention %{{.*}}, %{{.*}}, %{{.*}} heads(1) kv_heads(1) head_dim(64) scale(1.250000e-01) : (tensor<?x9x64xf32>, tensor<?x9x64xf32>, tensor<?x9x64xf32>) -> tensor<?x9x64xbf16>
  %a = mha.attention %q, %q, %q heads(1) kv_heads(1) head_dim(64) scale(0.125) : (tensor<?x9x64xf32>, tensor<?x9x64xf32>, tensor<?x9x64xf32>) -> tensor<?x9x64xbf16>
  return %a : tensor<?x9x64xbf16>
}

// A projection of f32 operands stored rounded to bf16, and an attention of bf16 operands
// whose result is f32.
// CHECK-LABEL: func.func @mixed_element_types
func.func @mixed_element_types(%x: tensor<2x9x64xf32>, %w: tensor<64x64xf32>) -> tensor<2x9x64xf32> {
  // CHECK: mha.linear %{{.*}}, %{{.*}} : (tensor<2x9x64xf32>, tensor<64x64xf32>) -> tensor<2x9x64xbf16>
  %q = mha.linear %x, %w : (tensor<2x9x64xf32>, tensor<64x64xf32>) -> tensor<2x9x64xbf16>
  // CHECK: mha.attention {{.*}} : (tensor<2x9x64xbf16>, tensor<2x9x64xbf16>, tensor<2x9x64xbf16>) -> tensor<2x9x64xf32>
  %a = mha.attention %q, %q, %q heads(1) kv_heads(1) head_dim(64) scale(0.125) : (tensor<2x9x64xbf16>, tensor<2x9x64xbf16>, tensor<2x9x64xbf16>) -> tensor<2x9x64xf32>
  return %a : tensor<2x9x64xf32>
}

// The ops have no side effects: an unused one folds away.
// RUN: mhac-opt %s --canonicalize | FileCheck %s --check-prefix=DCE
// DCE-LABEL: func.func @unused
// DCE-NOT: mha.
func.func @unused(%x: tensor<1x2x4xf32>, %w: tensor<4x4xf32>) {
  %q = mha.linear %x, %w : (tensor<1x2x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4xf32>
  return
}
