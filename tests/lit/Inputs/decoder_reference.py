"""An attention layer in float64 NumPy, decoder keys included, written for the tests from the
published formulas (docs/language.md; RoFormer's rotary embedding, Hugging Face transformers'
`rope_type`s linear, llama3 and yarn, RMSNorm, Gemma 2's softcap, StreamingLLM's sinks), sharing
no code with mhac's C++ reference: the suite checks that reference, and the compiled layers,
against this one.

    spec = parse_layers(text)["llama"]     # the keys of one .mha layer, defaults resolved
    out, new_keys, new_values = layer(spec, weights, x, k_cache=..., v_cache=..., cache_len=...)

Weights are the safetensors names (q_proj.weight, ..., q_norm.weight, k_norm.weight, sinks).
"""
import math
import re

import numpy as np


def parse_layers(text):
    """The layers of a .mha text: name -> {key: value} with the defaults of docs/language.md."""
    layers = {}
    for name, body in re.findall(r"layer\s+(\w+)\s*\{([^}]*)\}", text):
        keys = {}
        for line in body.splitlines():
            line = line.split("#")[0].strip()
            if "=" in line:
                key, value = (part.strip() for part in line.split("=", 1))
                keys[key] = value
        layers[name] = resolve(keys)
    return layers


def resolve(keys):
    def number(key, default=None):
        return float(keys[key]) if key in keys else default

    def integer(key, default=None):
        return int(keys[key]) if key in keys and keys[key] != "?" else default

    def flag(key, default=False):
        return keys.get(key, "true" if default else "false") == "true"

    d, h = int(keys["model_dim"]), int(keys["heads"])
    dh = integer("head_dim", d // h)
    spec = {
        "model_dim": d, "heads": h, "head_dim": dh, "kv_heads": integer("kv_heads", h),
        "bias": flag("bias", True), "dtype": keys.get("dtype", "f32"),
        "scale": number("scale", 1 / math.sqrt(dh)),
        "kv_cache": integer("kv_cache", 0), "window": integer("window", 0),
        "softcap": number("softcap", 0.0), "qk_norm": keys.get("qk_norm", "none") == "rms",
        "qk_norm_eps": number("qk_norm_eps", 1e-6), "sinks": flag("sinks"),
        "rope": keys.get("rope", "none"), "rope_base": number("rope_base", 10000.0),
        "rope_dim": integer("rope_dim", dh), "rope_scaling": keys.get("rope_scaling", "none"),
        "rope_factor": number("rope_factor"), "rope_low": number("rope_low_freq_factor"),
        "rope_high": number("rope_high_freq_factor"), "rope_original": integer("rope_original_max"),
        "rope_beta_fast": number("rope_beta_fast", 32.0),
        "rope_beta_slow": number("rope_beta_slow", 1.0),
        "rope_truncate": flag("rope_truncate", True),
        "rope_attention_factor": number("rope_attention_factor"),
    }
    spec["causal"] = flag("causal", spec["kv_cache"] > 0)
    return spec


def frequencies(spec):
    """inv_freq [rope_dim / 2] and the attention factor, as Hugging Face computes them for the
    layer's rope_type (float64 here)."""
    dim, base = spec["rope_dim"], spec["rope_base"]
    inv = 1.0 / base ** (np.arange(0, dim, 2, dtype=np.float64) / dim)
    scaling, factor = spec["rope_scaling"], spec["rope_factor"]
    attention = 1.0
    if scaling == "linear":
        inv = inv / factor
    elif scaling == "llama3":
        old = spec["rope_original"]
        low_wavelen, high_wavelen = old / spec["rope_low"], old / spec["rope_high"]
        wavelen = 2 * math.pi / inv
        scaled = np.where(wavelen > low_wavelen, inv / factor, inv)
        smooth = (old / wavelen - spec["rope_low"]) / (spec["rope_high"] - spec["rope_low"])
        smoothed = (1 - smooth) * scaled / factor + smooth * scaled
        medium = (wavelen >= high_wavelen) & (wavelen <= low_wavelen)
        inv = np.where(medium, smoothed, scaled)
    elif scaling == "yarn":
        def correction_dim(rotations):
            return (dim * math.log(spec["rope_original"] / (rotations * 2 * math.pi))
                    / (2 * math.log(base)))
        low, high = correction_dim(spec["rope_beta_fast"]), correction_dim(spec["rope_beta_slow"])
        if spec["rope_truncate"]:
            low, high = math.floor(low), math.ceil(high)
        low, high = max(low, 0), min(high, dim - 1)
        if low == high:
            high += 0.001
        ramp = np.clip((np.arange(dim // 2, dtype=np.float64) - low) / (high - low), 0, 1)
        extrapolation = 1 - ramp
        inv = (inv / factor) * (1 - extrapolation) + inv * extrapolation
        attention = 0.1 * math.log(factor) + 1 if factor > 1 else 1.0
    if spec["rope_attention_factor"]:
        attention = spec["rope_attention_factor"]
    return inv, attention


def rotate(spec, t, positions):
    """t [..., rows, heads, Dh] rotated by each row's position (positions [..., rows])."""
    dim = spec["rope_dim"]
    inv, attention = frequencies(spec)
    angles = positions[..., None].astype(np.float64) * inv           # [..., rows, dim/2]
    cos = (np.cos(angles) * attention)[..., None, :]
    sin = (np.sin(angles) * attention)[..., None, :]
    out = t.copy()
    if spec["rope"] == "half":
        x1, x2 = t[..., : dim // 2], t[..., dim // 2: dim]
        out[..., : dim // 2] = x1 * cos - x2 * sin
        out[..., dim // 2: dim] = x2 * cos + x1 * sin
    else:
        x1, x2 = t[..., 0:dim:2], t[..., 1:dim:2]
        out[..., 0:dim:2] = x1 * cos - x2 * sin
        out[..., 1:dim:2] = x2 * cos + x1 * sin
    return out


def rms_norm(t, weight, eps):
    return t / np.sqrt(np.mean(t * t, axis=-1, keepdims=True) + eps) * weight


def layer(spec, w, x, k_cache=None, v_cache=None, cache_len=None):
    """out [B, S, D], and the new tokens' keys and values ([B, S, Hkv, Dh] each: the rows a
    layer with a cache writes into it). With caches (their rows below cache_len[b] are row b's
    past keys and values) the new tokens come after them; without, the call is the sequence."""
    x = np.asarray(x, np.float64)
    b, s, _ = x.shape
    h, hkv, dh = spec["heads"], spec["kv_heads"], spec["head_dim"]

    def project(name, inp):
        out = inp @ np.asarray(w[f"{name}.weight"], np.float64).T
        if spec["bias"]:
            out = out + np.asarray(w.get(f"{name}.bias", 0.0), np.float64)
        return out

    q = project("q_proj", x).reshape(b, s, h, dh)
    k = project("k_proj", x).reshape(b, s, hkv, dh)
    v = project("v_proj", x).reshape(b, s, hkv, dh)
    if spec["qk_norm"]:
        q = rms_norm(q, np.asarray(w["q_norm.weight"], np.float64), spec["qk_norm_eps"])
        k = rms_norm(k, np.asarray(w["k_norm.weight"], np.float64), spec["qk_norm_eps"])
    past = np.zeros(b, np.int64) if cache_len is None else np.asarray(cache_len, np.int64)
    positions = past[:, None] + np.arange(s)[None, :]                 # [B, S]
    if spec["rope"] != "none":
        q, k = rotate(spec, q, positions), rotate(spec, k, positions)

    group = h // hkv
    a = np.zeros((b, s, h, dh))
    for row in range(b):
        if k_cache is not None:
            n = past[row]
            keys = np.concatenate([np.asarray(k_cache[row, :n], np.float64), k[row]])
            values = np.concatenate([np.asarray(v_cache[row, :n], np.float64), v[row]])
        else:
            keys, values = k[row], v[row]
        j = np.arange(keys.shape[0])
        for i in range(s):
            p = positions[row, i]
            visible = np.ones(keys.shape[0], bool)
            if spec["causal"]:
                visible &= j <= p
            if spec["window"]:
                visible &= j > p - spec["window"]
            for head in range(h):
                g = head // group
                scores = spec["scale"] * (keys[visible, g] @ q[row, i, head])
                if spec["softcap"]:
                    scores = spec["softcap"] * np.tanh(scores / spec["softcap"])
                logits = scores
                if spec["sinks"]:
                    logits = np.append(scores, float(w["sinks"][head]))
                if logits.size == 0:
                    continue
                e = np.exp(logits - logits.max())
                probabilities = e[: scores.size] / e.sum()
                a[row, i, head] = probabilities @ values[visible, g]
    out = project("o_proj", a.reshape(b, s, h * dh))
    return out, k, v
