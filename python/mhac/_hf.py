"""Layers from Hugging Face decoder configs: the attention of one layer of a Llama, Mistral,
Qwen2, Qwen3, Gemma, Gemma 2, Gemma 3, Phi, Phi-3 or gpt-oss model, as an mhac layer text, and
the names its checkpoint gives the weights.

Every config field that changes what attention computes is either mapped to a key of the layer
(docs/language.md) or refused with an error naming it: a layer is never silently another one.
"""

import math

from ._errors import Error

#: The families whose attention is mapped, by config.model_type.
FAMILIES = ("llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "gemma",
            "gemma2", "gemma3_text", "phi", "phi3", "gpt_oss")

#: Config fields that change attention. A family's mapping consumes those it knows; any other
#: one that is set is refused.
ATTENTION_FIELDS = (
    "rope_theta", "rope_scaling", "rope_parameters", "partial_rotary_factor", "sliding_window",
    "use_sliding_window", "max_window_layers", "layer_types", "attn_logit_softcapping",
    "query_pre_attn_scalar", "qk_layernorm", "rope_local_base_freq", "sliding_window_pattern",
    "attention_chunk_size", "no_rope_layers", "use_qk_norm", "attention_multiplier",
    "alibi", "position_embedding_type", "rotary_pct", "rope_interleaved", "use_parallel_residual",
)


class _Config:
    """A config object or dict, read field by field; `used` records what was read."""

    def __init__(self, config):
        if not isinstance(config, dict):
            config = config.to_dict() if hasattr(config, "to_dict") else vars(config)
        text = config.get("text_config")
        if text:  # a multimodal model's language model (Gemma 3)
            text = text if isinstance(text, dict) else (text.to_dict() if hasattr(text, "to_dict")
                                                         else vars(text))
            config = dict(text, model_type=text.get("model_type", config.get("model_type")))
        self.fields = config
        self.used = set()

    def get(self, key, default=None):
        self.used.add(key)
        value = self.fields.get(key)
        return default if value is None else value

    def require(self, key):
        value = self.get(key)
        if value is None:
            raise Error(f"the config has no {key}")
        return value


def _layer_type(cfg, family, layer):
    """"sliding_attention" or "full_attention" for layer `layer`, as the family decides it."""
    types = cfg.get("layer_types")
    if types:
        if not 0 <= layer < len(types):
            raise Error(f"layer {layer} is not one of the config's {len(types)} layers")
        return types[layer]
    window = cfg.get("sliding_window")
    if family in ("mistral", "mixtral", "phi3"):
        return "sliding_attention" if window else "full_attention"
    if family in ("qwen2", "qwen2_moe", "qwen3", "qwen3_moe"):
        sliding = cfg.get("use_sliding_window", False) and layer >= cfg.get("max_window_layers", 0)
        return "sliding_attention" if sliding and window else "full_attention"
    if family == "gemma2":
        return "sliding_attention" if layer % 2 == 0 else "full_attention"
    if family == "gemma3_text":
        pattern = cfg.get("sliding_window_pattern", 6)
        return "sliding_attention" if (layer + 1) % pattern else "full_attention"
    if family == "gpt_oss":
        return "sliding_attention" if layer % 2 == 0 else "full_attention"
    return "full_attention"


def _rope_parameters(cfg, family, layer_type):
    """The rope type's parameters and theta of a layer: from `rope_parameters` (transformers
    5, maybe per layer type) or from `rope_scaling` and `rope_theta`."""
    parameters = cfg.get("rope_parameters")
    if isinstance(parameters, dict) and layer_type in parameters:
        parameters = parameters[layer_type]
    if isinstance(parameters, dict) and parameters:
        theta = parameters.get("rope_theta", cfg.get("rope_theta", 10000.0))
        return dict(parameters), theta, "rope_parameters"
    scaling = cfg.get("rope_scaling") or {}
    theta = cfg.get("rope_theta", 10000.0)
    cfg.used.add("rope_local_base_freq")
    if family == "gemma3_text" and layer_type == "sliding_attention":
        # Gemma 3's local layers: their own base, and no scaling (the global layers' only).
        return {}, cfg.get("rope_local_base_freq", 10000.0), "rope_scaling"
    return dict(scaling), theta, "rope_scaling"


def _rope_keys(cfg, family, layer_type, head_dim):
    """The rope keys of the layer, as (key, value) lines."""
    if family == "phi" and cfg.get("qk_layernorm", False):
        raise Error("config field qk_layernorm = True: Phi's q/k LayerNorm (with a bias, over "
                    "the whole projection) is not mhac's qk_norm = rms")
    parameters, theta, source = _rope_parameters(cfg, family, layer_type)
    factor = cfg.get("partial_rotary_factor", 1.0)
    rope_dim = int(head_dim * factor)
    keys = [("rope", "half"), ("rope_base", repr(float(theta)))]
    if rope_dim != head_dim:
        keys.append(("rope_dim", str(rope_dim)))
    kind = parameters.get("rope_type", parameters.get("type", "default"))
    if kind in (None, "default"):
        return keys
    def parameter(name, default=None):
        value = parameters.get(name, default)
        if value is None:
            raise Error(f"config field {source} (rope_type {kind}) has no {name}")
        return value
    if kind == "linear":
        keys += [("rope_scaling", "linear"), ("rope_factor", repr(float(parameter("factor"))))]
    elif kind == "llama3":
        keys += [("rope_scaling", "llama3"),
                 ("rope_factor", repr(float(parameter("factor")))),
                 ("rope_low_freq_factor", repr(float(parameter("low_freq_factor")))),
                 ("rope_high_freq_factor", repr(float(parameter("high_freq_factor")))),
                 ("rope_original_max",
                  str(int(parameter("original_max_position_embeddings"))))]
    elif kind == "yarn":
        rope_factor = float(parameter("factor"))
        original = parameters.get("original_max_position_embeddings") or cfg.get(
            "max_position_embeddings")
        if original is None:
            raise Error(f"config field {source} (rope_type yarn) has no "
                        "original_max_position_embeddings, nor the config max_position_embeddings")
        keys += [("rope_scaling", "yarn"), ("rope_factor", repr(rope_factor)),
                 ("rope_original_max", str(int(original))),
                 ("rope_beta_fast", repr(float(parameters.get("beta_fast") or 32))),
                 ("rope_beta_slow", repr(float(parameters.get("beta_slow") or 1))),
                 ("rope_truncate", "true" if parameters.get("truncate", True) else "false")]
        attention_factor = parameters.get("attention_factor")
        mscale, mscale_all = parameters.get("mscale"), parameters.get("mscale_all_dim")
        if attention_factor is None and mscale and mscale_all:
            def get_mscale(scale, m):
                return 1.0 if scale <= 1 else 0.1 * m * math.log(scale) + 1.0
            attention_factor = get_mscale(rope_factor, mscale) / get_mscale(rope_factor, mscale_all)
        if attention_factor is not None:
            keys.append(("rope_attention_factor", repr(float(attention_factor))))
    else:
        raise Error(f"config field {source} has rope_type {kind!r}, which mhac does not "
                    "compute (it takes default, linear, llama3 and yarn)")
    return keys


def _split_fused_qkv(heads, kv_heads, head_dim):
    """Phi-3's fused qkv_proj.weight [(H + 2 Hkv) Dh, D] as q_proj, k_proj and v_proj."""
    rows = (heads * head_dim, kv_heads * head_dim, kv_heads * head_dim)

    def split(value):
        bits = getattr(value, "bits", None)
        array = value if bits is None else bits
        if array.shape[0] != sum(rows):
            raise Error(f"qkv_proj.weight has {array.shape[0]} rows; the config's heads give "
                        f"{sum(rows)}")
        parts, start = {}, 0
        for name, count in zip(("q_proj.weight", "k_proj.weight", "v_proj.weight"), rows):
            part = array[start:start + count]
            parts[name] = part if bits is None else type(value)(part)
            start += count
        return parts

    return split


def hf_layer(config, layer=0, name="attention", *, seq=None, batch=None, kv_cache=None,
             causal=True, kv_lens=False, dtype="f32", bias=None):
    """The attention of layer `layer` of a Hugging Face decoder config: (its .mha text, the
    weight aliases of its checkpoint, the offset of its norms' weights)."""
    cfg = _Config(config)
    family = cfg.get("model_type")
    if family not in FAMILIES:
        raise Error(f"config model_type {family!r}: mhac maps the attention of "
                    f"{', '.join(FAMILIES)}")
    heads = cfg.require("num_attention_heads")
    model_dim = cfg.require("hidden_size")
    kv_heads = cfg.get("num_key_value_heads") or heads
    head_dim = cfg.get("head_dim") or model_dim // heads
    layers = cfg.get("num_hidden_layers")
    if layers is not None and not 0 <= layer < layers:
        raise Error(f"layer {layer} is not one of the config's {layers} layers")
    layer_type = _layer_type(cfg, family, layer)

    lines = [("model_dim", model_dim), ("heads", heads), ("head_dim", head_dim),
             ("kv_heads", kv_heads), ("seq", "?" if seq is None else int(seq)),
             ("batch", "?" if batch is None else int(batch))]
    # Biases: the config's attention_bias; Qwen2's projections always have q/k/v biases (and
    # none on o_proj, whose bias loads as zeros); Phi's all four.
    if bias is None:
        bias = (True if family in ("qwen2", "qwen2_moe", "phi")
                else bool(cfg.get("attention_bias", False)))
    lines += [("causal", "true" if causal else "false"), ("bias", "true" if bias else "false")]
    if kv_lens:
        lines.append(("kv_lens", "true"))
    if dtype != "f32":
        lines.append(("dtype", dtype))
    if family in ("gemma2", "gemma3_text"):
        lines.append(("scale", repr(float(cfg.require("query_pre_attn_scalar")) ** -0.5)))
    lines += _rope_keys(cfg, family, layer_type, head_dim)
    if kv_cache:
        lines.append(("kv_cache", int(kv_cache)))
    window = cfg.get("sliding_window")
    cfg.used.update(("use_sliding_window", "max_window_layers", "sliding_window_pattern"))
    if layer_type == "sliding_attention":
        if not window:
            raise Error(f"layer {layer} is a sliding-window layer and the config has no "
                        "sliding_window")
        lines.append(("window", int(window)))
    softcap = cfg.get("attn_logit_softcapping") if family == "gemma2" else None
    if softcap:
        lines.append(("softcap", repr(float(softcap))))
    norm_offset = 0.0
    if family in ("qwen3", "qwen3_moe", "gemma3_text"):
        lines += [("qk_norm", "rms"), ("qk_norm_eps", repr(float(cfg.get("rms_norm_eps", 1e-6))))]
        norm_offset = 1.0 if family == "gemma3_text" else 0.0
    if family == "gpt_oss":
        lines.append(("sinks", "true"))

    # The fields of attention the family did not consume.
    for field in ATTENTION_FIELDS:
        value = cfg.fields.get(field)
        if field in cfg.used or value in (None, False, {}, [], 0):
            continue
        raise Error(f"config field {field} = {value!r} changes attention, and mhac does not map "
                    f"it for model_type {family}")

    aliases = {}
    if family == "phi":
        aliases = {"dense.weight": "o_proj.weight", "dense.bias": "o_proj.bias"}
    elif family == "phi3":
        aliases = {"qkv_proj.weight": _split_fused_qkv(heads, kv_heads, head_dim)}
    text = "\n".join([f"layer {name} {{"] + [f"  {k} = {v}" for k, v in lines] + ["}", ""])
    return text, aliases, norm_offset
