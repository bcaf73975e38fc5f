//===- MhaOps.td - mha dialect operations ------------------*- tablegen -*-===//
//
// Part of mhac. The two operations a layer is made of: a projection and attention itself.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_DIALECTS_MHA_IR_MHAOPS_TD
#define MHAC_DIALECTS_MHA_IR_MHAOPS_TD

include "dialects/mha/IR/MhaDialect.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

/// Element types a layer may use for activations and weights; accumulation is always f32.
def Mha_ActivationTensor : RankedTensorOf<[F32, BF16]>;
def Mha_PositiveI64Attr : ConfinedAttr<I64Attr, [IntPositive]>;

def Mha_LinearOp : Mha_Op<"linear", [Pure]> {
  let summary = "affine projection `y = x * W^T + b` (PyTorch's nn.Linear)";
  let description = [{
    Applies a linear map to the last dimension of `input`: for an input of shape `[..., K]` and a
    weight of shape `[N, K]` the result has shape `[..., N]`. The weight keeps PyTorch's
    `[out, in]` layout; the optional `bias` has shape `[N]`. Leading (batch) dimensions may be
    dynamic; the contracted and produced dimensions are static. Operands share one element type
    and products are accumulated in f32; the result has the operands' element type, or bf16
    (each element rounded to nearest even as it is stored: a widened bf16 layer's projections
    whose results attention's bf16 products read store them so).

    ```mlir
    %q = mha.linear %x, %wq bias %bq
        : (tensor<?x128x768xf32>, tensor<768x768xf32>, tensor<768xf32>) -> tensor<?x128x768xf32>
    ```
  }];

  let arguments = (ins
    Mha_ActivationTensor:$input,
    2DTensorOf<[F32, BF16]>:$weight,
    Optional<1DTensorOf<[F32, BF16]>>:$bias);
  let results = (outs Mha_ActivationTensor:$result);

  let assemblyFormat = [{
    $input `,` $weight (`bias` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Mha_AttentionOp : Mha_Op<"attention",
    [Pure, AllShapesMatch<["query", "result"]>, AllTypesMatch<["key", "value"]>]> {
  let summary = "scaled dot-product attention over packed heads";
  let description = [{
    Multi-head (grouped-query when `kv_heads < heads`) attention with a softmax over keys:

    ```
    s[b,h,i,j] = scale * q[b,i,h,:] . k[b,j,g,:]      g = h / (heads / kv_heads)
    p          = softmax_j(s)                        over the keys that are not masked
    a[b,i,h,:] = sum_j p[b,h,i,j] * v[b,j,g,:]         a fully masked row gives 0
    ```

    `query` is `[B, S, heads * head_dim]`, `key` and `value` are `[B, Skv, kv_heads * head_dim]`,
    and the result has the query's shape. Head `h` occupies columns `h * head_dim` to
    `(h + 1) * head_dim - 1` of its tensor. `B`, `S` and `Skv` may be dynamic. The softmax and
    every sum are computed in f32; the result's element type need not be the operands': f32
    (stored as computed) or bf16 (each element rounded to nearest even as it is stored: a
    projection of bf16 pairs reads it so).

    Masks: with `causal`, key `j` is masked for query `i` when `j > i + (Skv - S)` (aligned to
    the bottom right when `S != Skv`). With a `kv_lens` operand (`[B]` of i32), keys
    `j >= kv_lens[b]` are masked in batch `b`.

    The op stays whole until a lowering tiles it; no lowering may materialize the
    `[B, heads, S, Skv]` score tensor it implies.

    ```mlir
    %a = mha.attention %q, %k, %v heads(12) kv_heads(12) head_dim(64) scale(0.125) causal
        : (tensor<?x128x768xf32>, tensor<?x128x768xf32>, tensor<?x128x768xf32>)
          -> tensor<?x128x768xf32>
    ```
  }];

  let arguments = (ins
    3DTensorOf<[F32, BF16]>:$query,
    3DTensorOf<[F32, BF16]>:$key,
    3DTensorOf<[F32, BF16]>:$value,
    Optional<1DTensorOf<[I32]>>:$kv_lens,
    Mha_PositiveI64Attr:$heads,
    Mha_PositiveI64Attr:$kv_heads,
    Mha_PositiveI64Attr:$head_dim,
    F32Attr:$scale,
    UnitAttr:$causal);
  let results = (outs 3DTensorOf<[F32, BF16]>:$result);

  let assemblyFormat = [{
    $query `,` $key `,` $value (`kv_lens` $kv_lens^)?
    `heads` `(` $heads `)` `kv_heads` `(` $kv_heads `)` `head_dim` `(` $head_dim `)`
    `scale` `(` $scale `)` (`causal` $causal^)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;

  let extraClassDeclaration = [{
    /// Number of query heads that share one key/value head.
    int64_t getGroupSize() { return getHeads() / getKvHeads(); }
  }];
}

#endif // MHAC_DIALECTS_MHA_IR_MHAOPS_TD
