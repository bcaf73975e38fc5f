"""Layer texts from keyword arguments, from a torch.nn.MultiheadAttention, or from a Hugging Face
model config; and the one-call path from a PyTorch module to a called mhac layer."""

from ._compile import compile
from ._errors import Error


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


def config_layer_text(config, name="attention", *, seq=None, batch=None, causal=True,
                      kv_lens=False, dtype="f32", bias=None):
    """The .mha text of the attention of a Hugging Face decoder config (Llama, Mistral, Qwen,
    Gemma, Phi-3, ...; a config object or a dict): hidden_size, num_attention_heads,
    num_key_value_heads, head_dim, attention_bias. Rotary position embeddings are not part of
    an mhac layer."""
    get = config.get if isinstance(config, dict) else (lambda k, d=None: getattr(config, k, d))
    heads = get("num_attention_heads")
    model_dim = get("hidden_size")
    if heads is None or model_dim is None:
        raise Error("the config has no hidden_size or num_attention_heads")
    head_dim = get("head_dim") or model_dim // heads
    bias = bool(get("attention_bias", False) or get("qkv_bias", False)) if bias is None else bias
    return layer_text(name, model_dim=model_dim, heads=heads, head_dim=head_dim,
                      kv_heads=get("num_key_value_heads") or heads, seq=seq, batch=batch,
                      causal=causal, kv_lens=kv_lens, bias=bias, dtype=dtype)


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
