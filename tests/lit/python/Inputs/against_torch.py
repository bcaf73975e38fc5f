"""Layers compiled through the Python package against PyTorch: nn.MultiheadAttention with its
masks, cross-attention with keys of another width, a Hugging Face style grouped-query config
(against a float64 reference written here), bf16, and the Halide backend."""

import sys

import numpy as np
import torch

import mhac

torch.manual_seed(0)


def report(name, got, want, tolerance):
    got = got.detach().double() if isinstance(got, torch.Tensor) else torch.from_numpy(got).double()
    want = want.detach().double()
    error = ((got - want).abs().max() / want.abs().max()).item()
    print(f"{name}: relative error {error:.1e}: {'ok' if error <= tolerance else 'FAILED'}")


def self_attention():
    mha = torch.nn.MultiheadAttention(64, 4, batch_first=True).eval()
    layer = mhac.from_torch(mha)
    x = torch.randn(3, 19, 64)
    report("self", layer(x), mha(x, x, x, need_weights=False)[0], 1e-4)
    report("self-unbatched", layer(x[1]), mha(x[1:2], x[1:2], x[1:2], need_weights=False)[0][0],
           1e-4)


def sequence_first():
    """PyTorch's default layout, [S, B, E]: from_torch keeps the module's batch_first."""
    mha = torch.nn.MultiheadAttention(64, 4).eval()
    layer = mhac.from_torch(mha)
    print(f"layout: {layer!r}")
    x = torch.randn(19, 3, 64)
    want = mha(x, x, x, need_weights=False)[0]
    report("sequence-first", layer(x), want, 1e-4)
    out = torch.empty(19, 3, 64)
    layer(x, out=out)
    report("sequence-first-out", out, want, 1e-4)
    report("sequence-first-unbatched", layer(x[:, 1]), mha(x[:, 1], x[:, 1], x[:, 1],
                                                            need_weights=False)[0], 1e-4)
    report("sequence-first-numpy", layer(x.numpy()), want, 1e-4)
    cross = torch.nn.MultiheadAttention(32, 4, kdim=24, vdim=24).eval()
    layer = mhac.from_torch(cross)
    x, memory = torch.randn(5, 2, 32), torch.randn(13, 2, 24)
    report("sequence-first-cross", layer(x, memory),
           cross(x, memory, memory, need_weights=False)[0], 1e-4)


def masks():
    mha = torch.nn.MultiheadAttention(48, 3, batch_first=True).eval()
    layer = mhac.from_torch(mha, seq=11, causal=True, kv_lens=True)
    x = torch.randn(2, 11, 48)
    lens = torch.tensor([11, 6])
    padding = torch.arange(11)[None, :] >= lens[:, None]
    i, j = torch.arange(11)[:, None], torch.arange(11)[None, :]
    want = mha(x, x, x, key_padding_mask=padding, attn_mask=j > i, need_weights=False)[0]
    report("causal-kv-lens", layer(x, kv_lens=lens), want, 1e-4)


def cross():
    mha = torch.nn.MultiheadAttention(32, 4, kdim=24, vdim=24, batch_first=True).eval()
    layer = mhac.from_torch(mha)
    x, memory = torch.randn(2, 5, 32), torch.randn(2, 13, 24)
    report("cross-kdim", layer(x, memory), mha(x, memory, memory, need_weights=False)[0], 1e-4)


def rotate_half(t, theta):
    """Hugging Face's rotary embedding of t [B, heads, S, Dh] at positions 0 .. S - 1."""
    s, dh = t.shape[-2], t.shape[-1]
    inv = 1.0 / theta ** (torch.arange(0, dh, 2, dtype=torch.float64) / dh)
    angles = torch.arange(s, dtype=torch.float64)[:, None] * inv
    cos, sin = torch.cat([angles.cos()] * 2, -1), torch.cat([angles.sin()] * 2, -1)
    x1, x2 = t[..., : dh // 2], t[..., dh // 2:]
    return t * cos + torch.cat([-x2, x1], -1) * sin


def reference_gqa(x, w, heads, kv_heads, head_dim, theta):
    """float64 grouped-query attention with biases and rotary embeddings, causal, for [B, S, D]
    x."""
    x = x.double()
    q = (x @ w["q_proj.weight"].double().T + w["q_proj.bias"].double())
    k = (x @ w["k_proj.weight"].double().T + w["k_proj.bias"].double())
    v = (x @ w["v_proj.weight"].double().T + w["v_proj.bias"].double())
    b, s, _ = x.shape
    q = rotate_half(q.view(b, s, heads, head_dim).transpose(1, 2), theta)
    k = rotate_half(k.view(b, s, kv_heads, head_dim).transpose(1, 2), theta)
    k = k.repeat_interleave(heads // kv_heads, 1)
    v = v.view(b, s, kv_heads, head_dim).transpose(1, 2).repeat_interleave(heads // kv_heads, 1)
    scores = q @ k.transpose(-1, -2) / head_dim ** 0.5
    scores = scores.masked_fill(torch.ones(s, s, dtype=torch.bool).triu(1), float("-inf"))
    o = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, s, heads * head_dim)
    return o @ w["o_proj.weight"].double().T + w["o_proj.bias"].double()


def grouped_query_config():
    config = {"model_type": "qwen2", "hidden_size": 96, "num_attention_heads": 6,
              "num_key_value_heads": 2, "head_dim": 24, "rope_theta": 1000000.0}
    text = mhac.config_layer_text(config, "decoder")
    module = mhac.compile(text)
    # A checkpoint's names, under the prefix of one layer; Qwen2-like: no bias on o_proj.
    w = {"q_proj.weight": torch.randn(144, 96) * 0.1, "q_proj.bias": torch.randn(144) * 0.1,
         "k_proj.weight": torch.randn(48, 96) * 0.1, "k_proj.bias": torch.randn(48) * 0.1,
         "v_proj.weight": torch.randn(48, 96) * 0.1, "v_proj.bias": torch.randn(48) * 0.1,
         "o_proj.weight": torch.randn(96, 144) * 0.1}
    checkpoint = {f"model.layers.3.self_attn.{n}": t for n, t in w.items()}
    checkpoint["model.norm.weight"] = torch.ones(96)
    # A buffer some checkpoints store, which is no weight.
    checkpoint["model.layers.3.self_attn.rotary_emb.inv_freq"] = torch.ones(12)
    layer = module.decoder.load_weights(checkpoint, prefix="model.layers.3.self_attn.")
    x = torch.randn(2, 17, 96)
    w["o_proj.bias"] = torch.zeros(96)
    report("gqa-config", layer(x), reference_gqa(x, w, 6, 2, 24, 1e6), 1e-4)


def bf16():
    """mhac's bf16 layer and PyTorch's own bf16 nn.MultiheadAttention, on the same bf16 weights
    and inputs, against the float64 evaluation of those weights and inputs."""
    mha = torch.nn.MultiheadAttention(64, 4, batch_first=True).eval()
    with torch.no_grad():
        for parameter in mha.parameters():
            parameter.copy_(parameter.bfloat16().float())  # the weights both layers see
    layer = mhac.from_torch(mha, dtype="bf16")
    x = torch.randn(2, 9, 64).bfloat16()
    y = layer(x)
    print(f"bf16 output: {y.dtype}")
    exact = mha.double()
    xd = x.double()
    want = exact(xd, xd, xd, need_weights=False)[0]
    report("bf16", y, want, 2e-2)
    theirs = torch.nn.MultiheadAttention(64, 4, batch_first=True).eval().bfloat16()
    theirs.load_state_dict({n: t.bfloat16() for n, t in mha.state_dict().items()})
    with torch.no_grad():
        y_torch = theirs(x, x, x, need_weights=False)[0]
    mine = ((y.double() - want).abs().max() / want.abs().max()).item()
    pytorch = ((y_torch.double() - want).abs().max() / want.abs().max()).item()
    print(f"bf16 against PyTorch's bf16 layer: mhac {mine:.1e}, PyTorch {pytorch:.1e}: "
          f"{'ok' if mine <= max(pytorch, 1e-2) else 'FAILED'}")


def halide():
    mha = torch.nn.MultiheadAttention(48, 3, batch_first=True).eval()
    x = torch.randn(2, 11, 48)
    i, j = torch.arange(11)[:, None], torch.arange(11)[None, :]
    want = mha(x, x, x, attn_mask=j > i, need_weights=False)[0]
    layer = mhac.from_torch(mha, causal=True, backend="halide")
    report("halide-causal", layer(x), want, 1e-4)
    auto = mhac.from_torch(mha, causal=True, backend="halide", schedule="auto:Li2018")
    report("halide-li2018", auto(x), want, 1e-4)


for test in sys.argv[1:]:
    globals()[test]()
