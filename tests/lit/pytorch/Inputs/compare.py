"""Runs a layer compiled by mhac through mha-run and compares it with torch.nn.MultiheadAttention
on the same random data and weights, exported the way a user would export them.

usage: compare.py MHA_RUN MODULE.so LAYER WORKDIR --model-dim D --heads H --batch B --seq S
                  [--cross --kv-seq T --kv-dim K] [--no-bias] [--causal] [--kv-lens N,...]

Self-attention weights are saved straight from the module's state_dict (PyTorch's in_proj_weight
names); cross-attention with kdim != embed_dim has separate q/k/v weights in PyTorch, saved under
mhac's q_proj.weight names. Prints the relative error and exits 1 past the f32 tolerance.
"""
import argparse
import importlib.util
import os
import subprocess
import sys

import numpy as np
import torch


def load_tensor_writer():
    """The pure-Python .safetensors writer of the other tests (tests/lit/Inputs)."""
    path = os.path.join(os.path.dirname(__file__), "..", "..", "Inputs", "make-tensors.py")
    spec = importlib.util.spec_from_file_location("make_tensors", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.write_safetensors


def save_safetensors(path, tensors):
    load_tensor_writer()(path, {name: (list(t.shape), t.detach().float().flatten().tolist())
                                for name, t in tensors.items()})


def main():
    p = argparse.ArgumentParser()
    for name in ("mha_run", "module", "layer", "workdir"):
        p.add_argument(name)
    p.add_argument("--model-dim", type=int, required=True)
    p.add_argument("--heads", type=int, required=True)
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--seq", type=int, required=True)
    p.add_argument("--cross", action="store_true")
    p.add_argument("--kv-seq", type=int)
    p.add_argument("--kv-dim", type=int)
    p.add_argument("--no-bias", action="store_true")
    p.add_argument("--causal", action="store_true")
    p.add_argument("--kv-lens")
    a = p.parse_args()

    torch.manual_seed(0)
    d, kv_dim = a.model_dim, a.kv_dim or a.model_dim
    kv_seq = a.kv_seq or a.seq
    mha = torch.nn.MultiheadAttention(d, a.heads, bias=not a.no_bias, batch_first=True,
                                      kdim=kv_dim, vdim=kv_dim)
    with torch.no_grad():  # non-zero biases, so that they are checked too
        for name, param in mha.named_parameters():
            if "bias" in name:
                param.uniform_(-0.5, 0.5)
    mha.eval()
    x = torch.rand(a.batch, a.seq, d) * 2 - 1
    memory = torch.rand(a.batch, kv_seq, kv_dim) * 2 - 1 if a.cross else x

    os.makedirs(a.workdir, exist_ok=True)
    files = ["--input", os.path.join(a.workdir, "x.npy")]
    np.save(files[1], x.numpy())
    if a.cross:
        files += ["--memory", os.path.join(a.workdir, "memory.npy")]
        np.save(files[-1], memory.numpy())
    weights = os.path.join(a.workdir, "weights.safetensors")
    if mha._qkv_same_embed_dim:
        save_safetensors(weights, mha.state_dict())
    else:
        s = mha.state_dict()
        tensors = {"q_proj.weight": s["q_proj_weight"], "k_proj.weight": s["k_proj_weight"],
                   "v_proj.weight": s["v_proj_weight"], "o_proj.weight": s["out_proj.weight"]}
        if not a.no_bias:
            for i, n in enumerate("qkv"):
                tensors[n + "_proj.bias"] = s["in_proj_bias"][i * d:(i + 1) * d]
            tensors["o_proj.bias"] = s["out_proj.bias"]
        save_safetensors(weights, tensors)
    files += ["--weights", weights]

    attn_mask, padding_mask = None, None
    if a.causal:  # True = masked; bottom-right aligned when S != Skv
        i = torch.arange(a.seq).unsqueeze(1)
        j = torch.arange(kv_seq).unsqueeze(0)
        attn_mask = j > i + (kv_seq - a.seq)
    if a.kv_lens:
        lens = [int(n) for n in a.kv_lens.split(",")]
        files += ["--kv-lens", os.path.join(a.workdir, "kv_lens.npy")]
        np.save(files[-1], np.array(lens, dtype=np.int32))
        padding_mask = torch.arange(kv_seq).unsqueeze(0) >= torch.tensor(lens).unsqueeze(1)

    out_path = os.path.join(a.workdir, "out.npy")
    subprocess.run([a.mha_run, a.module, "--layer", a.layer, "--output", out_path] + files,
                   check=True)
    got = np.load(out_path)
    with torch.no_grad():
        expected, _ = mha(x, memory, memory, attn_mask=attn_mask, key_padding_mask=padding_mask,
                          need_weights=False)
    expected = expected.double().numpy()
    error = np.abs(got - expected).max() / max(np.abs(expected).max(), 1e-30)
    ok = np.isfinite(got).all() and error <= 1e-4
    print("%s: error against torch.nn.MultiheadAttention %.3g: %s"
          % (a.layer, error, "ok" if ok else "FAILED"))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
