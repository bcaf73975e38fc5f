"""Times one layer of the model zoo written in eager PyTorch, as a PyTorch user writes a
grouped-query or cross-attention layer without a fused kernel: four F.linear, key and value
heads repeated for their query heads, matmul, masked softmax, matmul (PyTorch 1.13 has no
scaled_dot_product_attention). The same function as the mhac layer; for a decode layer
(kv_cache) as Hugging Face's static cache computes it: q/k RMS norm, rotary embedding (its cos
and sin prepared once, as a model shares them across layers), the new keys and values written
into preallocated caches at kv_cache - seq tokens cached, attention over the cache with the
causal and window masks. With `sdpa` (PyTorch 2),
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
        "rope": keys.get("rope", "none"), "rope_base": float(keys.get("rope_base", 10000)),
        "kv_cache": int(keys.get("kv_cache", 0)), "window": int(keys.get("window", 0)),
        "qk_norm": keys.get("qk_norm") == "rms",
    }


def cache_len(layer):
    """The tokens the zoo has cached before a decode layer's call: the cache full after it."""
    return layer["kv_cache"] - layer["s"] if layer["kv_cache"] else 0


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
    past = cache_len(layer)
    skv = layer["skv"] if layer["cross"] else past + s
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
    if layer["causal"] or layer["kv_cache"]:
        mask = torch.ones(s, skv, dtype=torch.bool).triu(1 + skv - s)
    if layer["window"]:
        mask = mask | torch.ones(s, skv, dtype=torch.bool).tril(skv - s - layer["window"])
    if mask is not None and not mask.any():
        mask = None
    if layer["kv_cache"]:
        caches = [(torch.rand(b, hkv, layer["kv_cache"], dh) * 2 - 1).to(dtype) for _ in "kv"]
    norms = [torch.rand(dh).to(dtype) + 0.5 for _ in "qk"] if layer["qk_norm"] else None
    if layer["rope"] != "none":
        inverse = layer["rope_base"] ** (-torch.arange(0, dh, 2, dtype=torch.float64) / dh)
        angles = torch.arange(past, past + s, dtype=torch.float64)[:, None] * inverse
        cos, sin = (torch.cat([t, t], -1).to(dtype) for t in (angles.cos(), angles.sin()))

    def rms_norm(t, weight):
        return t * torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + 1e-6) * weight

    def rotate(t):
        half = torch.cat([-t[..., dh // 2:], t[..., :dh // 2]], -1)
        return t * cos + half * sin

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
            new = s if layer["kv_cache"] else skv
            q = F.linear(x, wq, bq).view(b, s, h, dh).transpose(1, 2)
            k = F.linear(memory, wk, bk).view(b, new, hkv, dh).transpose(1, 2)
            v = F.linear(memory, wv, bv).view(b, new, hkv, dh).transpose(1, 2)
            if norms:
                q, k = rms_norm(q, norms[0]), rms_norm(k, norms[1])
            if layer["rope"] != "none":
                q, k = rotate(q), rotate(k)
            if layer["kv_cache"]:
                caches[0][:, :, past:past + s] = k
                caches[1][:, :, past:past + s] = v
                k, v = caches[0][:, :, :skv], caches[1][:, :, :skv]
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
