"""Layer texts from keyword arguments, from a torch.nn.MultiheadAttention, or from a Hugging Face
model config; and the one-call path from a PyTorch module to a called mhac layer."""

from ._compile import compile
from ._errors import Error
from ._hf import hf_layer


def layer_text(name="layer", *, model_dim, heads, head_dim=None, kv_heads=None, seq=None,
               batch=None, cross=False, kv_seq=None, kv_dim=None, causal=False, kv_lens=False,
               bias=True, dtype="f32", scale=None):
    """The .mha text of one layer; sizes left None are given at run time ('?')."""

    def size(value):
        return "?" if value is None else str(int(value))

    lines = [f"layer {name} {{", f"  model_dim = {int(model_dim)}", f"  heads = {int(heads)}"]
    if head_dim is not None:
        lines.append(f"  head_dim = {int(head_dim)}")
    if kv_heads is not None:
        lines.append(f"  kv_heads = {int(kv_heads)}")
    lines += [f"  seq = {size(seq)}", f"  batch = {size(batch)}"]
    if cross:
        lines += ["  cross = true", f"  kv_seq = {size(kv_seq)}"]
        if kv_dim is not None:
            lines.append(f"  kv_dim = {int(kv_dim)}")
    for key, value, default in (("causal", causal, False), ("kv_lens", kv_lens, False),
                                ("bias", bias, True)):
        if bool(value) != default:
            lines.append(f"  {key} = {'true' if value else 'false'}")
    if dtype != "f32":
        lines.append(f"  dtype = {dtype}")
    if scale is not None:
        lines.append(f"  scale = {float(scale)!r}")
    return "\n".join(lines + ["}", ""])


def torch_layer_text(mha, name="mha", *, seq=None, batch=None, kv_seq=None, cross=None,
                     causal=False, kv_lens=False, dtype="f32"):
    """The .mha text of the layer a torch.nn.MultiheadAttention computes (mhac layers take
    their inputs batch first, whatever the module's `batch_first`). Keys of another width than the queries (kdim) make a cross-attention layer, as does
    cross=True; PyTorch's key_padding_mask and attn_mask correspond to kv_lens and causal
    (docs/running.md)."""
    if getattr(mha, "kdim", mha.embed_dim) != getattr(mha, "vdim", mha.embed_dim):
        raise Error("mhac layers read keys and values from one input: kdim must equal vdim")
    if getattr(mha, "bias_k", None) is not None or getattr(mha, "add_zero_attn", False):
        raise Error("add_bias_kv and add_zero_attn have no mhac equivalent")
    kdim = getattr(mha, "kdim", mha.embed_dim)
    cross = (kdim != mha.embed_dim) if cross is None else cross
    if kdim != mha.embed_dim and not cross:
        raise Error(f"keys of width {kdim} (kdim) need a cross-attention layer")
    return layer_text(name, model_dim=mha.embed_dim, heads=mha.num_heads, seq=seq, batch=batch,
                      cross=cross, kv_seq=kv_seq, kv_dim=kdim if cross else None, causal=causal,
                      kv_lens=kv_lens, bias=mha.in_proj_bias is not None, dtype=dtype)


def config_layer_text(config, name="attention", *, layer=0, seq=None, batch=None, causal=True,
                      kv_lens=False, dtype="f32", bias=None, kv_cache=None):
    """The .mha text of the attention of layer `layer` of a Hugging Face decoder config (a
    config object or a dict) of the Llama, Mistral, Qwen2, Qwen3, Gemma 1-3, Phi, Phi-3 or
    gpt-oss families: its sizes, biases, rotary embedding (rope_theta, rope_scaling or
    rope_parameters, partial_rotary_factor), sliding window (sliding_window with layer_types or
    the family's alternation), softcap, query_pre_attn_scalar, q/k norms and sinks, with
    `kv_cache` positions of KV cache (None: none). A config field that changes attention and is
    not mapped raises mhac.Error naming it."""
    return hf_layer(config, layer, name, seq=seq, batch=batch, kv_cache=kv_cache, causal=causal,
                    kv_lens=kv_lens, dtype=dtype, bias=bias)[0]


def from_hf(config, layer=0, *, weights=None, prefix=None, kv_cache=4096, seq=None, batch=None,
            dtype="f32", schedule=None, target=None):
    """Compiles the attention of layer `layer` of a Hugging Face decoder config (see
    config_layer_text) with `kv_cache` positions of KV cache (None: no cache, positions from 0
    on every call), and loads its weights when `weights` (a state_dict, a model, or a
    .safetensors path) is given, from the checkpoint's own names under `prefix` (default
    `model.layers.{layer}.self_attn.`). The layer keeps the family's conventions for later
    load_weights calls: Gemma's norms multiply by (1 + weight), Phi's output projection is
    `dense`, Phi-3's q, k and v are one fused `qkv_proj`. Returns the layer: call it as
    `layer(x, cache=cache)` with `cache = layer.new_cache(batch)`."""
    text, aliases, norm_offset = hf_layer(config, layer, "attention", seq=seq, batch=batch,
                                          kv_cache=kv_cache, dtype=dtype)
    compiled = compile(text, schedule=schedule, target=target)["attention"]
    compiled.norm_weight_offset = norm_offset
    compiled.checkpoint_aliases = aliases
    compiled.checkpoint_prefix = f"model.layers.{layer}.self_attn." if prefix is None else prefix
    if weights is not None:
        compiled.load_weights(weights)
    return compiled


def from_torch(mha, *, seq=None, batch=None, kv_seq=None, cross=None, causal=False,
               kv_lens=False, dtype="f32", schedule=None, target=None, backend=None):
    """Compiles the layer a torch.nn.MultiheadAttention computes and loads its weights: the
    result `layer(x)` is `mha(x, x, x, need_weights=False)[0]` (and `layer(x, memory)` is
    `mha(x, memory, memory, ...)` for a cross layer), in the module's own layout: [B, S, D]
    with `batch_first=True`, PyTorch's default [S, B, D] otherwise (`layer.batch_first` says
    which). Sizes left None are given at run time; `schedule`, `target` and `backend` are
    compile()'s."""
    text = torch_layer_text(mha, "mha", seq=seq, batch=batch, kv_seq=kv_seq, cross=cross,
                            causal=causal, kv_lens=kv_lens, dtype=dtype)
    layer = compile(text, schedule=schedule, target=target, backend=backend)["mha"]
    layer.batch_first = bool(getattr(mha, "batch_first", False))
    return layer.load_weights(mha)
