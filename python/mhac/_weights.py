"""A layer's weights from a state_dict or a .safetensors file, by the names mha-run reads.

Names: `q_proj.weight`, `q_proj.bias`, ..., `o_proj.bias` (Hugging Face's, where `out_proj` is
also taken for `o_proj`), or PyTorch's `nn.MultiheadAttention` names: `in_proj_weight` [3D, D]
and `in_proj_bias` [3D] (or `q_proj_weight`, `k_proj_weight`, `v_proj_weight` when its keys have
another width), `out_proj.weight`, `out_proj.bias`. Shapes are those of `nn.Linear`: a weight is
[out_features, in_features]. Decoder layers also take `q_norm.weight` and `k_norm.weight`
[head_dim] (qk_norm) and `sinks` [heads]. Every tensor must be used, so that a misnamed one is an
error rather than a silently ignored input; the one exception is `rotary_emb.inv_freq`, a buffer
some Hugging Face checkpoints store beside the weights, which is no weight (the layer computes
its frequencies from its rope keys) and is skipped.
"""

import json
import os
import struct

import numpy as np

from ._arrays import is_torch_tensor
from ._errors import WeightError

PROJECTIONS = ("q", "k", "v", "o")
#: Tensors of Hugging Face checkpoints that are no weights of the layer: skipped.
NOT_WEIGHTS = ("rotary_emb.inv_freq",)


class Bf16Bits:
    """Raw bfloat16 bits (uint16) read from a file or a torch.bfloat16 tensor."""

    def __init__(self, bits):
        self.bits = bits
        self.shape = bits.shape


def read_safetensors(path):
    """The tensors of a .safetensors file, by name, mapped rather than read."""
    dtypes = {"F32": np.float32, "F64": np.float64, "F16": np.float16, "BF16": np.uint16}
    with open(path, "rb") as file:
        head = file.read(8)
        if len(head) != 8:
            raise WeightError(f"{path}: not a safetensors file (shorter than its header)")
        (length,) = struct.unpack("<Q", head)
        if length > os.path.getsize(path) - 8:
            raise WeightError(f"{path}: not a safetensors file (header length {length})")
        try:
            header = json.loads(file.read(length))
        except ValueError as error:
            raise WeightError(f"{path}: its header is not JSON: {error}") from None
    data = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + length)
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        dtype = dtypes.get(entry.get("dtype"))
        if dtype is None:
            raise WeightError(f"{path}: tensor {name} has dtype {entry.get('dtype')}; mhac reads "
                              f"F32, F64, F16 and BF16")
        begin, end = entry["data_offsets"]
        array = data[begin:end].view(dtype).reshape(entry["shape"])
        tensors[name] = Bf16Bits(array) if entry["dtype"] == "BF16" else array
    return tensors


def _as_numpy(value, name):
    """A weight as a NumPy array (float) or Bf16Bits."""
    if isinstance(value, Bf16Bits):
        return value
    if is_torch_tensor(value):
        import torch

        value = value.detach().cpu()
        if value.dtype == torch.bfloat16:
            return Bf16Bits(value.contiguous().view(torch.int16).numpy().view(np.uint16))
        value = value.numpy()
    array = np.asarray(value)
    if array.dtype.kind != "f":
        raise WeightError(f"weight {name} is {array.dtype}, not floating point")
    return array


def to_element(value, element):
    """A weight as a C-contiguous array of the layer's element type: float32, or uint16 bfloat16
    bits (float values rounded to the nearest even bfloat16, as PyTorch rounds)."""
    if element == "f32":
        if isinstance(value, Bf16Bits):
            return (value.bits.astype(np.uint32) << 16).view(np.float32)
        return np.ascontiguousarray(value, dtype=np.float32)
    if isinstance(value, Bf16Bits):
        return np.ascontiguousarray(value.bits)
    bits = np.ascontiguousarray(value, dtype=np.float32).view(np.uint32)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(value), np.uint16(0x7FC0), rounded)


def _split_in_three(tensors, name, rank, expected, kind, found, taken):
    """in_proj_weight [3*D, D] or in_proj_bias [3*D]: the q, k and v thirds, as `kind`."""
    if name not in tensors:
        return
    taken.add(name)
    value = _as_numpy(tensors[name], name)
    if len(value.shape) != rank or value.shape[0] % 3:
        raise WeightError(f"{name} has shape {list(value.shape)}; expected {expected}")
    rows = value.shape[0] // 3
    for i, p in enumerate("qkv"):
        part = (Bf16Bits(value.bits[i * rows:(i + 1) * rows]) if isinstance(value, Bf16Bits)
                else value[i * rows:(i + 1) * rows])
        found[f"{p}.{kind}"] = part


def _pytorch_names(tensors, taken):
    """Projections given under nn.MultiheadAttention's names."""
    found = {}
    _split_in_three(tensors, "in_proj_weight", 2, "[3*D, D]", "weight", found, taken)
    for p in "qkv":
        if f"{p}_proj_weight" in tensors:
            taken.add(f"{p}_proj_weight")
            found[f"{p}.weight"] = tensors[f"{p}_proj_weight"]
    _split_in_three(tensors, "in_proj_bias", 1, "[3*D]", "bias", found, taken)
    return found


def resolve(tensors, expected, has_bias, prefix="", extra=None, aliases=None):
    """Picks a layer's weights from `tensors` (name -> tensor). `expected` maps each projection
    to its weight's shape (out, in); `extra` the decoder tensors the layer takes (name -> shape:
    `q_norm.weight`, `k_norm.weight`, `sinks`); `aliases` maps a checkpoint's own names to
    these (Phi's `dense.weight` is `o_proj.weight`), or to a callable that splits one tensor into
    several (Phi-3's fused `qkv_proj.weight`). Returns name -> tensor for `q.weight`, `q.bias`,
    ..., and the extra names; a bias missing where others are given is zeros (Qwen2 has none on
    o_proj, Whisper none on k_proj)."""
    extra = extra or {}
    if prefix:
        selected = {n[len(prefix):]: t for n, t in tensors.items() if n.startswith(prefix)}
        if not selected:
            some = ", ".join(sorted(tensors)[:4])
            raise WeightError(f"no tensor is named with the prefix {prefix!r} (the names start "
                              f"like: {some})")
        tensors = selected
    else:
        tensors = dict(tensors)
    for name, alias in (aliases or {}).items():
        if name not in tensors:
            continue
        value = tensors.pop(name)
        parts = alias(_as_numpy(value, name)) if callable(alias) else {alias: value}
        for part, tensor in parts.items():
            if part in tensors:
                raise WeightError(f"{part} is given twice (as itself and as {name})")
            tensors[part] = tensor
    taken = {name for name in NOT_WEIGHTS if name in tensors}
    found = _pytorch_names(tensors, taken)
    for p in PROJECTIONS:
        for alias in ((f"{p}_proj",) if p != "o" else ("o_proj", "out_proj")):
            for kind in ("weight", "bias"):
                if f"{alias}.{kind}" in tensors:
                    key = f"{p}.{kind}"
                    if key in found:
                        raise WeightError(f"{alias}.{kind} is given twice (under two names)")
                    found[key] = tensors[f"{alias}.{kind}"]
                    taken.add(f"{alias}.{kind}")
    for name, shape in extra.items():
        if name not in tensors:
            raise WeightError(f"missing weight {name} {list(shape)}")
        value = _as_numpy(tensors[name], name)
        if tuple(value.shape) != tuple(shape):
            raise WeightError(f"{name} has shape {list(value.shape)}; the layer takes "
                              f"{list(shape)}")
        found[name] = value
        taken.add(name)
    for name in ("q_norm.weight", "k_norm.weight", "sinks"):
        if name in tensors and name not in extra:
            what = "sinks (sinks = true)" if name == "sinks" else "qk_norm (qk_norm = rms)"
            raise WeightError(f"{name} is given but the layer has no {what}")
    unknown = sorted(set(tensors) - taken)
    if unknown:
        hint = ""
        known = ("q_proj.", "k_proj.", "v_proj.", "o_proj.", "out_proj.", "in_proj_")
        prefixed = [n for n in unknown if any(k in n for k in known)]
        if prefixed:
            name = prefixed[0]
            cut = min(name.find(k) for k in known if k in name)
            hint = f" (to read tensors under a prefix, pass prefix={name[:cut]!r})"
        raise WeightError(f"unknown weight{'s' if len(unknown) > 1 else ''}: "
                          f"{', '.join(unknown[:6])}{hint}")
    result = {}
    biases = [p for p in PROJECTIONS if f"{p}.bias" in found]
    if biases and not has_bias:
        raise WeightError(f"the weights have biases ({biases[0]}_proj.bias) but the layer has "
                          f"none: compile it with bias = true")
    if has_bias and not biases:
        raise WeightError("the layer has biases (bias = true) but the weights have none: "
                          "compile it with bias = false")
    for p in PROJECTIONS:
        out, inp = expected[p]
        if f"{p}.weight" not in found:
            raise WeightError(f"missing weight {p}_proj.weight [{out}, {inp}]")
        weight = _as_numpy(found[f"{p}.weight"], f"{p}_proj.weight")
        if tuple(weight.shape) != (out, inp):
            raise WeightError(f"{p}_proj.weight has shape {list(weight.shape)}; the layer takes "
                              f"[{out}, {inp}]")
        result[f"{p}.weight"] = weight
        if has_bias:
            bias = found.get(f"{p}.bias")
            bias = np.zeros(out, np.float32) if bias is None else _as_numpy(bias, f"{p}_proj.bias")
            if tuple(bias.shape) != (out,):
                raise WeightError(f"{p}_proj.bias has shape {list(bias.shape)}; the layer takes "
                                  f"[{out}]")
            result[f"{p}.bias"] = bias
    for name in extra:
        result[name] = found[name]
    return result


def tensors_of(weights):
    """name -> tensor from a mapping (a state_dict), a torch.nn.Module, or a .safetensors path."""
    if isinstance(weights, (str, os.PathLike)):
        return read_safetensors(os.fspath(weights))
    if hasattr(weights, "state_dict") and callable(weights.state_dict):
        return dict(weights.state_dict())
    if hasattr(weights, "items"):
        return dict(weights.items())
    raise TypeError("weights must be a state_dict (a mapping of names to tensors), a "
                    "torch.nn.Module, or the path of a .safetensors file")
