// RUN: mhac-opt %s --split-input-file --mhac-widen-bf16-layer | FileCheck %s

// Every bf16 argument is widened once at entry and the mha ops compute f32; the projection the
// layer returns stores its result rounded to bf16 (in its tiles, later), and the weights and
// biases become parameters for the weight preparation.
// CHECK-LABEL: func.func @layer(
// CHECK-SAME:    %[[X:[^:]*]]: tensor<?x5x32xbf16>, %[[WQ:[^:]*]]: tensor<32x32xbf16> {mhac.parameter}, %[[BQ:[^:]*]]: tensor<32xbf16> {mhac.parameter}
// CHECK-SAME:    %[[LENS:[^:]*]]: tensor<?xi32>) -> tensor<?x5x32xbf16>
// CHECK:         %[[B:.*]] = tensor.dim %[[X]], %c0
// CHECK:         %[[XE:.*]] = tensor.empty(%[[B]]) : tensor<?x5x32xf32>
// CHECK:         %[[XW:.*]] = linalg.generic {{.*}} ins(%[[X]] : tensor<?x5x32xbf16>) outs(%[[XE]] : tensor<?x5x32xf32>)
// CHECK:           arith.extf %{{.*}} : bf16 to f32
// CHECK:         %[[WQW:.*]] = linalg.generic {{.*}} ins(%[[WQ]] : tensor<32x32xbf16>)
// CHECK:         %[[Q:.*]] = mha.linear %[[XW]], %[[WQW]] bias %{{.*}} : ({{.*}}xf32>, {{.*}}xf32>, {{.*}}xf32>) -> tensor<?x5x32xf32>
// CHECK:         %[[A:.*]] = mha.attention {{.*}} kv_lens %[[LENS]] {{.*}} -> tensor<?x5x32xf32>
// CHECK:         %[[OUT:.*]] = mha.linear %[[A]], {{.*}} : ({{.*}}xf32>, {{.*}}xf32>, {{.*}}xf32>) -> tensor<?x5x32xbf16>
// CHECK-NOT:     arith.truncf
// CHECK:         return %[[OUT]] : tensor<?x5x32xbf16>
func.func @layer(%x: tensor<?x5x32xbf16>, %wq: tensor<32x32xbf16>, %bq: tensor<32xbf16>,
                 %wk: tensor<32x32xbf16>, %bk: tensor<32xbf16>, %wv: tensor<32x32xbf16>,
                 %bv: tensor<32xbf16>, %wo: tensor<32x32xbf16>, %bo: tensor<32xbf16>,
                 %kv_lens: tensor<?xi32>) -> tensor<?x5x32xbf16> {
  %q = mha.linear %x, %wq bias %bq : (tensor<?x5x32xbf16>, tensor<32x32xbf16>, tensor<32xbf16>) -> tensor<?x5x32xbf16>
  %k = mha.linear %x, %wk bias %bk : (tensor<?x5x32xbf16>, tensor<32x32xbf16>, tensor<32xbf16>) -> tensor<?x5x32xbf16>
  %v = mha.linear %x, %wv bias %bv : (tensor<?x5x32xbf16>, tensor<32x32xbf16>, tensor<32xbf16>) -> tensor<?x5x32xbf16>
  %a = mha.attention %q, %k, %v kv_lens %kv_lens heads(4) kv_heads(4) head_dim(8) scale(3.535534e-01) : (tensor<?x5x32xbf16>, tensor<?x5x32xbf16>, tensor<?x5x32xbf16>, tensor<?xi32>) -> tensor<?x5x32xbf16>
  %out = mha.linear %a, %wo bias %bo : (tensor<?x5x32xbf16>, tensor<32x32xbf16>, tensor<32xbf16>) -> tensor<?x5x32xbf16>
  return %out : tensor<?x5x32xbf16>
}

// -----

// A returned value that is no projection (here, the attention itself) is rounded once at exit.
// CHECK-LABEL: func.func @attention_only(
// CHECK:         %[[A:.*]] = mha.attention {{.*}} -> tensor<2x5x32xf32>
// CHECK:         %[[R:.*]] = linalg.generic {{.*}} ins(%[[A]] : tensor<2x5x32xf32>) outs(%{{.*}} : tensor<2x5x32xbf16>)
// CHECK:           arith.truncf %{{.*}} : f32 to bf16
// CHECK:         return %[[R]] : tensor<2x5x32xbf16>
func.func @attention_only(%q: tensor<2x5x32xbf16>) -> tensor<2x5x32xbf16> {
  %a = mha.attention %q, %q, %q heads(4) kv_heads(4) head_dim(8) scale(0.35) : (tensor<2x5x32xbf16>, tensor<2x5x32xbf16>, tensor<2x5x32xbf16>) -> tensor<2x5x32xbf16>
  return %a : tensor<2x5x32xbf16>
}

// -----

// An f32 layer is left as it is.
// CHECK-LABEL: func.func @f32_layer(
// CHECK-NOT:     linalg.generic
// CHECK-NOT:     mhac.parameter
// CHECK:         mha.linear
func.func @f32_layer(%x: tensor<2x32xf32>, %w: tensor<32x32xf32>) -> tensor<2x32xf32> {
  %y = mha.linear %x, %w : (tensor<2x32xf32>, tensor<32x32xf32>) -> tensor<2x32xf32>
  return %y : tensor<2x32xf32>
}
