"""Times one layer of the model zoo written in eager PyTorch, as a PyTorch user writes a
grouped-query or cross-attention layer without a fused kernel: four F.linear, key and value
heads repeated for their query heads, matmul, masked softmax, matmul (PyTorch 1.13 has no
scaled_dot_product_attention). The same function as the mhac layer. With `sdpa` (PyTorch 2),
the attention is F.scaled_dot_product_attention instead, its fused CPU kernels (grouped-query
heads through enable_gqa where PyTorch has it, else repeated). With `bf16`, weights, inputs and
every product are bfloat16.

usage: torch_eager.py LAYER.mha THREADS CALLS [sdpa] [bf16]        prints "median MS"
"""
import re
import statistics
import sys
import time


def read_layer(path):
    """The keys of the one layer of a .mha file (static sizes, as in bench/zoo)."""
    text = re.sub(r"#.*", "", open(path).read())
    keys = dict(re.findall(r"(\w+)\s*=\s*(\S+)", text))
    d, h = int(keys["model_dim"]), int(keys["heads"])
    dh = int(keys.get("head_dim", d // h))
    return {
        "d": d, "h": h, "dh": dh, "hkv": int(keys.get("kv_heads", h)),
        "b": int(keys.get("batch", 1)), "s": int(keys["seq"]),
        "cross": keys.get("cross") == "true", "causal": keys.get("causal") == "true",
        "bias": keys.get("bias", "true") == "true", "kv_dim": int(keys.get("kv_dim", d)),
        "skv": int(keys.get("kv_seq", keys["seq"])),
        "scale": float(keys["scale"]) if "scale" in keys else dh ** -0.5,
    }


def main():
    import torch
    import torch.nn.functional as F

    layer = read_layer(sys.argv[1])
    threads, calls = int(sys.argv[2]), int(sys.argv[3])
    options = sys.argv[4:]
    sdpa, dtype = "sdpa" in options, torch.bfloat16 if "bf16" in options else torch.float32
    if sdpa and not hasattr(F, "scaled_dot_product_attention"):
        sys.exit(f"PyTorch {torch.__version__} has no scaled_dot_product_attention")
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    d, h, dh, hkv, b, s = (layer[k] for k in ("d", "h", "dh", "hkv", "b", "s"))
    skv = layer["skv"] if layer["cross"] else s
    kv_dim = layer["kv_dim"] if layer["cross"] else d

    def linear(out_features, in_features):
        weight = (torch.randn(out_features, in_features) * in_features ** -0.5).to(dtype)
        return weight, ((torch.randn(out_features) * 0.1).to(dtype) if layer["bias"] else None)

    wq, bq = linear(h * dh, d)
    wk, bk = linear(hkv * dh, kv_dim)
    wv, bv = linear(hkv * dh, kv_dim)
    wo, bo = linear(d, h * dh)
    x = (torch.rand(b, s, d) * 2 - 1).to(dtype)
    memory = (torch.rand(b, skv, kv_dim) * 2 - 1).to(dtype) if layer["cross"] else x
    mask = None
    if layer["causal"]:
        mask = torch.ones(s, skv, dtype=torch.bool).triu(1 + skv - s)

    # enable_gqa came with PyTorch 2.5.
    gqa = sdpa and tuple(int(part) for part in torch.__version__.split(".")[:2]) >= (2, 5)

    def attend(q, k, v):
        if sdpa:
            # SDPA's mask is where attention is allowed.
            allowed = None if mask is None else ~mask
            extra = {"enable_gqa": True} if gqa and hkv != h else {}
            return F.scaled_dot_product_attention(q, k, v, attn_mask=allowed,
                                                  scale=layer["scale"], **extra)
        scores = (q @ k.transpose(-1, -2)) * layer["scale"]
        if mask is not None:
            scores = scores.masked_fill(mask, float("-inf"))
        return scores.softmax(-1) @ v

    def call():
        with torch.inference_mode():
            q = F.linear(x, wq, bq).view(b, s, h, dh).transpose(1, 2)
            k = F.linear(memory, wk, bk).view(b, skv, hkv, dh).transpose(1, 2)
            v = F.linear(memory, wv, bv).view(b, skv, hkv, dh).transpose(1, 2)
            if hkv != h and not gqa:
                k, v = (t.repeat_interleave(h // hkv, dim=1) for t in (k, v))
            a = attend(q, k, v).transpose(1, 2).reshape(b, s, h * dh)
            F.linear(a, wo, bo)

    call()
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        call()
        times.append((time.perf_counter() - start) * 1e3)
    print(f"median {statistics.median(times):.3f}")


if __name__ == "__main__":
    main()
