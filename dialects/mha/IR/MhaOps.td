//===- MhaOps.td - mha dialect operations ------------------*- tablegen -*-===//
//
// Part of mhac. The two operations a layer is made of: a projection and attention itself.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_DIALECTS_MHA_IR_MHAOPS_TD
#define MHAC_DIALECTS_MHA_IR_MHAOPS_TD

include "dialects/mha/IR/MhaDialect.td"
include "mlir/IR/EnumAttr.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

/// Element types a layer may use for activations and weights; accumulation is always f32.
def Mha_ActivationTensor : RankedTensorOf<[F32, BF16]>;
def Mha_PositiveI64Attr : ConfinedAttr<I64Attr, [IntPositive]>;
/// A decoder layer's key/value cache, `[B, N, kv_heads, head_dim]`: caller-owned memory that a
/// call reads and writes in place, so a memref rather than a value.
def Mha_Cache : MemRefRankOf<[F32, BF16], [4]>;
def Mha_KeysOrCache : AnyTypeOf<[3DTensorOf<[F32, BF16]>, Mha_Cache]>;

def Mha_RopeKind : I32EnumAttr<"RopeKind", "which features of a head a rotary embedding pairs", [
    I32EnumAttrCase<"half", 0>, I32EnumAttrCase<"interleaved", 1>]> {
  let cppNamespace = "::mhac::mha";
}
def Mha_RopeScaling : I32EnumAttr<"RopeScaling", "how a rotary embedding's frequencies are rescaled", [
    I32EnumAttrCase<"none", 0>, I32EnumAttrCase<"linear", 1>, I32EnumAttrCase<"llama3", 2>,
    I32EnumAttrCase<"yarn", 3>]> {
  let cppNamespace = "::mhac::mha";
}

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
    [DeclareOpInterfaceMethods<MemoryEffectsOpInterface>, AttrSizedOperandSegments,
     AllShapesMatch<["query", "result"]>, AllTypesMatch<["key", "value"]>]> {
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
    `j >= kv_lens[b]` are masked in batch `b`. With a `window` W, key `j` is masked for the
    query at position `p` when `j <= p - W`.

    Decoder layers: with a `cache_len` operand (`[B]` of i32), `key` and `value` are the caches
    `[B, N, kv_heads, head_dim]` (memrefs the op reads), the query row `i` of batch `b` has
    position `cache_len[b] + i` and the keys are the cache's rows `0 .. cache_len[b] + S - 1`
    (`causal` compares positions: key `j` is masked when `j > cache_len[b] + i`). With a
    `softcap` c, every score becomes `c * tanh(s / c)` before the masks. With `sinks`
    (`[heads]`), `exp(sinks[h])` joins the softmax's denominator of every row of head `h`.

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
    Mha_KeysOrCache:$key,
    Mha_KeysOrCache:$value,
    Optional<1DTensorOf<[I32]>>:$kv_lens,
    Optional<1DTensorOf<[I32]>>:$cache_len,
    Optional<1DTensorOf<[F32, BF16]>>:$sinks,
    Mha_PositiveI64Attr:$heads,
    Mha_PositiveI64Attr:$kv_heads,
    Mha_PositiveI64Attr:$head_dim,
    F32Attr:$scale,
    UnitAttr:$causal,
    OptionalAttr<Mha_PositiveI64Attr>:$window,
    OptionalAttr<F32Attr>:$softcap);
  let results = (outs 3DTensorOf<[F32, BF16]>:$result);

  let assemblyFormat = [{
    $query `,` $key `,` $value (`kv_lens` $kv_lens^)? (`cache_len` $cache_len^)?
    (`sinks` $sinks^)?
    `heads` `(` $heads `)` `kv_heads` `(` $kv_heads `)` `head_dim` `(` $head_dim `)`
    `scale` `(` $scale `)` (`causal` $causal^)? (`window` `(` $window^ `)`)?
    (`softcap` `(` $softcap^ `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;

  let extraClassDeclaration = [{
    /// Number of query heads that share one key/value head.
    int64_t getGroupSize() { return getHeads() / getKvHeads(); }
    /// Whether keys and values are a decoder layer's caches (then `cache_len` is given).
    bool readsCache() { return ::mlir::isa<::mlir::MemRefType>(getKey().getType()); }
  }];
}

def Mha_RmsNormOp : Mha_Op<"rms_norm", [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "RMS normalization of each head of packed heads, with a learned weight";
  let description = [{
    For `input` `[B, S, heads * head_dim]`, each head's row `x` (`head_dim` features) becomes
    `x / sqrt(mean(x^2) + eps) * weight`, computed in f32 (Qwen3's and Gemma 3's q/k norm). The
    weight is `[head_dim]`.

    ```mlir
    %qn = mha.rms_norm %q, %q_norm heads(32) head_dim(128) eps(1.000000e-06)
        : (tensor<?x?x4096xf32>, tensor<128xf32>) -> tensor<?x?x4096xf32>
    ```
  }];

  let arguments = (ins
    3DTensorOf<[F32, BF16]>:$input,
    1DTensorOf<[F32, BF16]>:$weight,
    Mha_PositiveI64Attr:$heads,
    Mha_PositiveI64Attr:$head_dim,
    F64Attr:$eps);
  let results = (outs 3DTensorOf<[F32, BF16]>:$result);

  let assemblyFormat = [{
    $input `,` $weight `heads` `(` $heads `)` `head_dim` `(` $head_dim `)` `eps` `(` $eps `)`
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Mha_RopeOp : Mha_Op<"rope", [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "rotary position embedding of each head of packed heads";
  let description = [{
    Rotates the first `dim` features of each head of `input` (`[B, S, heads * head_dim]`) by
    its row's position: row `i` of batch `b` has position `i`, or `positions[b] + i` with a
    `positions` operand (`[B]` of i32: a decoder layer's cache_len). Pair `k` (`k < dim / 2`) of
    features, `(k, k + dim / 2)` for `half` (Hugging Face's rotate_half) or `(2k, 2k + 1)` for
    `interleaved`, turns by `position * inv_freq[k]`; cos and sin are multiplied by the
    attention factor. `inv_freq` and the factor follow from `base` (theta), `dim` and the
    `scaling` with its parameters exactly as Hugging Face transformers computes them for that
    rope type (`runtime/reference/Rope.h`): `linear` takes `factor`; `llama3` `factor`,
    `low_freq_factor`, `high_freq_factor` and `original_max`; `yarn` `factor`, `original_max`,
    `beta_fast`, `beta_slow`, `truncate` and an optional `attention_factor`.

    ```mlir
    %qr = mha.rope %qn positions %cache_len heads(32) head_dim(128) half dim(128)
        base(5.000000e+05) scaling llama3 {factor = 8.0 : f64, high_freq_factor = 4.0 : f64,
        low_freq_factor = 1.0 : f64, original_max = 8192 : i64}
        : (tensor<?x?x4096xf32>, tensor<?xi32>) -> tensor<?x?x4096xf32>
    ```
  }];

  let arguments = (ins
    3DTensorOf<[F32, BF16]>:$input,
    Optional<1DTensorOf<[I32]>>:$positions,
    Mha_PositiveI64Attr:$heads,
    Mha_PositiveI64Attr:$head_dim,
    Mha_RopeKind:$kind,
    Mha_PositiveI64Attr:$dim,
    F64Attr:$base,
    OptionalAttr<Mha_RopeScaling>:$scaling,
    OptionalAttr<F64Attr>:$factor,
    OptionalAttr<F64Attr>:$low_freq_factor,
    OptionalAttr<F64Attr>:$high_freq_factor,
    OptionalAttr<Mha_PositiveI64Attr>:$original_max,
    OptionalAttr<F64Attr>:$beta_fast,
    OptionalAttr<F64Attr>:$beta_slow,
    OptionalAttr<BoolAttr>:$truncate,
    OptionalAttr<F64Attr>:$attention_factor);
  let results = (outs 3DTensorOf<[F32, BF16]>:$result);

  let assemblyFormat = [{
    $input (`positions` $positions^)? `heads` `(` $heads `)` `head_dim` `(` $head_dim `)`
    $kind `dim` `(` $dim `)` `base` `(` $base `)` (`scaling` $scaling^)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;

  let extraClassDeclaration = [{
    /// The embedding as the reference describes it, for ropeFrequencies().
    ::mhac::reference::RopeParameters getParameters();
  }];
}

def Mha_CacheWriteOp : Mha_Op<"cache_write"> {
  let summary = "writes a call's new keys or values into a decoder layer's cache";
  let description = [{
    `cache[b, positions[b] + i, g, :] = input[b, i, g * head_dim .. (g + 1) * head_dim - 1]`
    for the `S` rows of `input` (`[B, S, kv_heads * head_dim]`), each element rounded to the
    cache's type. The cache (`[B, N, kv_heads, head_dim]`) is caller-owned memory; no other
    row of it is written. The caller guarantees `0 <= positions[b]` and
    `positions[b] + S <= N` (the entry points check it).

    ```mlir
    mha.cache_write %k into %k_cache at %cache_len
        : tensor<?x?x1024xf32> into memref<?x4096x8x128xf32> at tensor<?xi32>
    ```
  }];

  let arguments = (ins
    3DTensorOf<[F32, BF16]>:$input,
    Arg<Mha_Cache, "the cache, written in place", [MemWrite]>:$cache,
    1DTensorOf<[I32]>:$positions);

  let assemblyFormat = [{
    $input `into` $cache `at` $positions attr-dict `:` type($input) `into` type($cache) `at`
    type($positions)
  }];
  let hasVerifier = 1;
}

#endif // MHAC_DIALECTS_MHA_IR_MHAOPS_TD
