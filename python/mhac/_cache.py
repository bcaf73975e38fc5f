"""A decoder layer's KV cache: the caller-owned key and value caches and each row's length."""

import numpy as np

from . import _arrays
from ._errors import Error


class KVCache:
    """The caches of one layer with `kv_cache = N`: `keys` and `values` [B, N, kv_heads,
    head_dim] of the layer's element type (float32; a bf16 layer's torch.bfloat16, or uint16
    NumPy arrays of raw bfloat16 bits), and `lengths`, the tokens cached in each batch row
    (int32 NumPy array [B]). A call `layer(x, cache=c)` writes its S tokens' keys and values at
    positions lengths[b] .. lengths[b] + S - 1 of row b and then adds S to every length; rows
    may hold different lengths (continuous batching: set `lengths` as rows start and end).
    Positions at and past a row's length are never read."""

    def __init__(self, keys, values, lengths):
        self.keys, self.values = keys, values
        self.lengths = lengths

    @property
    def batch(self):
        return self.keys.shape[0]

    @property
    def capacity(self):
        return self.keys.shape[1]

    def reset(self):
        """Forgets every row's tokens."""
        self.lengths[:] = 0

    def __repr__(self):
        return (f"<mhac.KVCache batch={self.batch}, capacity={self.capacity}, "
                f"lengths={self.lengths.tolist()}>")


KVCache.__module__ = "mhac"


def new_cache(layer, batch, capacity=None, torch=None):
    """Empty caches for `batch` rows of `layer` (lengths 0). `capacity` must be the layer's
    kv_cache (the default); `torch` makes PyTorch tensors (the default where PyTorch is
    installed and `torch` is None: NumPy arrays)."""
    if not layer.kv_cache:
        raise Error(f"layer {layer.name} has no KV cache (kv_cache)")
    if capacity is not None and capacity != layer.kv_cache:
        raise ValueError(f"layer {layer.name} was compiled with kv_cache = {layer.kv_cache}; a "
                         f"cache of {capacity} positions needs a layer compiled with it")
    if batch < 1 or (layer.batch is not None and batch != layer.batch):
        raise ValueError(f"layer {layer.name}: a cache of {batch} batch rows; it takes "
                         f"{layer.batch or 'at least 1'}")
    shape = (batch, layer.kv_cache, layer.kv_heads, layer.head_dim)
    if torch is None:
        try:
            import torch as _torch  # noqa: F401

            torch = True
        except ImportError:
            torch = False
    keys = _arrays.zeros_like_kind(shape, layer.dtype, torch)
    values = _arrays.zeros_like_kind(shape, layer.dtype, torch)
    return KVCache(keys, values, np.zeros(batch, np.int32))


def cache_buffers(layer, cache, batch):
    """The buffers of `cache` for a call of `layer` on `batch` rows, checked."""
    if not isinstance(cache, KVCache):
        raise TypeError(f"layer {layer.name}: cache must be an mhac.KVCache "
                        f"(layer.new_cache(batch)), not {type(cache).__name__}")
    shape = (batch, layer.kv_cache, layer.kv_heads, layer.head_dim)
    buffers = {}
    for name, tensor in (("k_cache", cache.keys), ("v_cache", cache.values)):
        buffer = _arrays.as_buffer(tensor, name, layer.dtype, writable=True)
        if buffer.shape != shape:
            raise ValueError(f"layer {layer.name}: the cache's {name} has shape "
                             f"{list(buffer.shape)}; this call takes {list(shape)}")
        buffers[name] = buffer
    lengths = cache.lengths
    if not (isinstance(lengths, np.ndarray) and lengths.dtype == np.int32 and
            lengths.shape == (batch,) and lengths.flags.c_contiguous):
        raise TypeError(f"layer {layer.name}: cache.lengths must be a contiguous int32 NumPy "
                        f"array of {batch} entries")
    buffers["cache_len"] = _arrays.Buffer(lengths, lengths.ctypes.data, lengths.shape, False)
    return buffers
