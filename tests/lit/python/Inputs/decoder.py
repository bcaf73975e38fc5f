"""Decoder layers from Python: from_hf on the configs of each family (as dicts, the fields
transformers writes), weights under the checkpoint's own names, a generation (a prefill, then
one token a step, with rows of different lengths in one batch) against the NumPy reference,
and every config field the mapping refuses."""

import os
import sys

import numpy as np

import mhac

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "Inputs"))
import decoder_reference  # noqa: E402

CONFIGS = {
    "llama3": {"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4,
               "num_key_value_heads": 2, "num_hidden_layers": 2, "rope_theta": 500000.0,
               "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                "high_freq_factor": 4.0,
                                "original_max_position_embeddings": 8192},
               "max_position_embeddings": 131072, "attention_bias": False},
    "mistral": {"model_type": "mistral", "hidden_size": 64, "num_attention_heads": 4,
                "num_key_value_heads": 1, "rope_theta": 1000000.0, "sliding_window": 6},
    "qwen2": {"model_type": "qwen2", "hidden_size": 48, "num_attention_heads": 4,
              "num_key_value_heads": 2, "rope_theta": 1000000.0, "use_sliding_window": False,
              "sliding_window": 32768, "max_window_layers": 21},
    "qwen3": {"model_type": "qwen3", "hidden_size": 64, "num_attention_heads": 4,
              "num_key_value_heads": 2, "head_dim": 32, "rope_theta": 1000000.0,
              "rms_norm_eps": 1e-6, "attention_bias": False},
    "gemma2": {"model_type": "gemma2", "hidden_size": 64, "num_attention_heads": 2,
               "num_key_value_heads": 1, "head_dim": 32, "query_pre_attn_scalar": 32,
               "attn_logit_softcapping": 50.0, "sliding_window": 5, "rope_theta": 10000.0,
               "final_logit_softcapping": 30.0},
    "gemma3": {"model_type": "gemma3_text", "hidden_size": 64, "num_attention_heads": 2,
               "num_key_value_heads": 1, "head_dim": 32, "query_pre_attn_scalar": 32,
               "sliding_window": 5, "rope_theta": 1000000.0, "rope_local_base_freq": 10000.0,
               "rope_scaling": {"rope_type": "linear", "factor": 8.0},
               "sliding_window_pattern": 6, "rms_norm_eps": 1e-6},
    "phi2": {"model_type": "phi", "hidden_size": 80, "num_attention_heads": 2,
             "partial_rotary_factor": 0.4, "rope_theta": 10000.0, "qk_layernorm": False},
    "phi3": {"model_type": "phi3", "hidden_size": 64, "num_attention_heads": 4,
             "num_key_value_heads": 4, "rope_theta": 10000.0, "sliding_window": None},
    "gpt_oss": {"model_type": "gpt_oss", "hidden_size": 64, "num_attention_heads": 4,
                "num_key_value_heads": 2, "head_dim": 16, "attention_bias": True,
                "sliding_window": 4, "layer_types": ["sliding_attention", "full_attention"],
                "rope_theta": 150000.0,
                "rope_scaling": {"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0,
                                 "beta_slow": 1.0, "truncate": False,
                                 "original_max_position_embeddings": 4096}},
}


def texts():
    """The layer text of a few configs, as config_layer_text writes it."""
    for name, layer in (("llama3", 0), ("gemma2", 0), ("gemma2", 1), ("gemma3", 0),
                        ("gemma3", 5), ("gpt_oss", 0), ("phi2", 0)):
        print(f"== {name} layer {layer}")
        print(mhac.config_layer_text(CONFIGS[name], name, layer=layer, kv_cache=64), end="")


def checkpoint(family, spec, rng, layer):
    """Random weights of the layer under the family's checkpoint names, and the same weights
    under the layer's names (what the reference reads, Gemma's norms as they act)."""
    d, h, hkv, dh = spec["model_dim"], spec["heads"], spec["kv_heads"], spec["head_dim"]
    w = {}
    for name, out, inp in (("q_proj", h * dh, d), ("k_proj", hkv * dh, d),
                           ("v_proj", hkv * dh, d), ("o_proj", d, h * dh)):
        w[f"{name}.weight"] = rng.uniform(-1, 1, (out, inp)).astype(np.float32) / np.sqrt(inp)
        if spec["bias"] and not (family == "qwen2" and name == "o_proj"):
            w[f"{name}.bias"] = rng.uniform(-0.1, 0.1, out).astype(np.float32)
    if spec["qk_norm"]:
        for name in ("q_norm.weight", "k_norm.weight"):
            w[name] = rng.uniform(-0.5, 0.5, dh).astype(np.float32)
    if spec["sinks"]:
        w["sinks"] = rng.uniform(-2, 2, h).astype(np.float32)
    stored = dict(w)
    if family == "phi2":
        stored["dense.weight"] = stored.pop("o_proj.weight")
        stored["dense.bias"] = stored.pop("o_proj.bias")
    if family == "phi3":
        stored["qkv_proj.weight"] = np.concatenate(
            [stored.pop(f"{p}_proj.weight") for p in "qkv"])
    prefix = f"model.layers.{layer}.self_attn."
    state = {prefix + n: t for n, t in stored.items()}
    state[prefix + "rotary_emb.inv_freq"] = np.ones(dh // 2, np.float32)
    state["model.embed_tokens.weight"] = np.zeros((3, d), np.float32)
    effective = dict(w)
    if family == "qwen2":
        effective["o_proj.bias"] = np.zeros(d, np.float32)
    if family == "gemma3":
        for name in ("q_norm.weight", "k_norm.weight"):
            effective[name] = 1 + w[name]
    return state, effective


def generate(family, layer=0):
    """A prefill of 7 tokens of two rows, then 5 one-token steps, the second row starting late
    (continuous batching), against the NumPy reference of the whole sequences."""
    config = CONFIGS[family]
    text = mhac.config_layer_text(config, "attention", layer=layer, kv_cache=64)
    spec = decoder_reference.parse_layers(text)["attention"]
    rng = np.random.default_rng(3)
    state, w = checkpoint(family, spec, rng, layer)
    attention = mhac.from_hf(config, layer, weights=state, kv_cache=64)
    cache = attention.new_cache(2, torch=False)
    tokens = rng.uniform(-1, 1, (2, 12, spec["model_dim"])).astype(np.float32)
    outputs = [attention(tokens[:, :7], cache=cache)]
    for step in range(7, 12):
        outputs.append(attention(tokens[:, step:step + 1], cache=cache))
    got = np.concatenate(outputs, axis=1)
    want = decoder_reference.layer(spec, w, tokens)[0]
    error = np.abs(got - want).max() / np.abs(want).max()
    # Continuous batching: row 1 restarts from an empty cache while row 0 goes on.
    cache.lengths[1] = 0
    again = attention(tokens[:, :1], cache=cache)
    fresh = decoder_reference.layer(spec, w, tokens[1:2, :1])[0]
    restart = np.abs(again[1] - fresh[0]).max() / np.abs(fresh).max()
    ok = error <= 1e-4 and restart <= 1e-4 and list(cache.lengths) == [13, 1]
    print(f"{family} layer {layer}: {attention!r}: generation error {error:.1e}, restarted row "
          f"{restart:.1e}: {'ok' if ok else 'FAILED'}")


def generations():
    for family, layer in (("llama3", 0), ("mistral", 0), ("qwen2", 0), ("qwen3", 0),
                          ("gemma2", 0), ("gemma2", 1), ("gemma3", 0), ("gemma3", 5),
                          ("phi2", 0), ("phi3", 0), ("gpt_oss", 0), ("gpt_oss", 1)):
        generate(family, layer)


def torch_tensors():
    """The same layer on PyTorch tensors, its caches PyTorch's; and in bf16."""
    import torch

    config = CONFIGS["qwen3"]
    text = mhac.config_layer_text(config, "attention", kv_cache=32)
    spec = decoder_reference.parse_layers(text)["attention"]
    state, w = checkpoint("qwen3", spec, np.random.default_rng(5), 0)
    tokens = np.random.default_rng(6).uniform(-1, 1, (1, 9, 64)).astype(np.float32)
    want = decoder_reference.layer(spec, w, tokens)[0]
    for dtype, tolerance in (("f32", 1e-4), ("bf16", 2e-2)):
        attention = mhac.from_hf(config, weights=state, kv_cache=32, dtype=dtype)
        cache = attention.new_cache(1)
        x = torch.from_numpy(tokens)
        if dtype == "bf16":
            x = x.bfloat16()
        got = torch.cat([attention(x[:, :5], cache=cache), attention(x[:, 5:], cache=cache)], 1)
        error = (got.double() - torch.from_numpy(want)).abs().max().item() / np.abs(want).max()
        print(f"torch {dtype}: cache {type(cache.keys).__name__} {cache.keys.dtype} "
              f"{list(cache.keys.shape)}, lengths {cache.lengths.tolist()}, error {error:.1e}: "
              f"{'ok' if error <= tolerance else 'FAILED'}")


def attempt(what, action):
    try:
        action()
        print(f"{what}: no error")
    except Exception as error:  # noqa: BLE001 - the test prints what was raised
        print(f"{what}: {type(error).__name__}: {error}")


def refusals():
    def with_fields(family, **fields):
        return dict(CONFIGS[family], **fields)

    attempt("longrope", lambda: mhac.config_layer_text(with_fields(
        "phi3", rope_scaling={"rope_type": "longrope", "short_factor": [1.0],
                              "long_factor": [2.0]})))
    attempt("dynamic", lambda: mhac.config_layer_text(with_fields(
        "llama3", rope_scaling={"rope_type": "dynamic", "factor": 2.0})))
    attempt("chunked attention", lambda: mhac.config_layer_text(with_fields(
        "llama3", attention_chunk_size=8192)))
    attempt("softcap outside gemma2", lambda: mhac.config_layer_text(with_fields(
        "llama3", attn_logit_softcapping=30.0)))
    attempt("phi qk layernorm", lambda: mhac.config_layer_text(with_fields(
        "phi2", qk_layernorm=True)))
    attempt("unknown family", lambda: mhac.config_layer_text({"model_type": "olmo2",
                                                              "hidden_size": 64,
                                                              "num_attention_heads": 4}))
    attempt("layer past the end", lambda: mhac.config_layer_text(CONFIGS["llama3"], layer=5))
    layer = mhac.from_hf(CONFIGS["qwen3"], 0, kv_cache=16)
    attempt("missing weights", lambda: layer.load_weights({}, prefix=""))
    attempt("cache of another capacity", lambda: layer.new_cache(1, capacity=32))
    layer.load_weights(checkpoint("qwen3", decoder_reference.parse_layers(
        mhac.config_layer_text(CONFIGS["qwen3"], kv_cache=16))["attention"],
        np.random.default_rng(1), 0)[0])
    x = np.zeros((1, 9, 64), np.float32)
    attempt("no cache", lambda: layer(x))
    cache = layer.new_cache(1, torch=False)
    cache.lengths[0] = 10
    attempt("cache too short", lambda: layer(x, cache=cache))
    print("lengths after a refused call:", cache.lengths.tolist())


globals()[sys.argv[1]]()
