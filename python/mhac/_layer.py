"""A compiled layer as a Python callable, over mhac_layer_prepare and mhac_layer_run_prepared."""

import ctypes

import numpy as np

from . import _arrays, _cache, _weights
from ._errors import Error
from ._runtime import DTYPE_BF16, DYNAMIC, Sizes


class Layer:
    """One layer of a compiled module. Load its weights once with `load_weights`, then call it:

        y = layer(x)                          # self-attention, x [B, S, D] or [S, D]
        y = layer(x, memory, kv_lens=lens)    # cross-attention, keys masked per batch entry
        cache = layer.new_cache(batch)        # a decoder layer with a KV cache:
        y = layer(x, cache=cache)             # x's S tokens join the cache, which advances

    Inputs are float32 (bf16 layers: torch.bfloat16, or uint16 arrays of raw bfloat16 bits),
    batch first; the result is a new tensor of x's kind (PyTorch in, PyTorch out), or `out`.
    With `batch_first = False` (PyTorch's default layout, which `from_torch` keeps), x and out
    are [S, B, D] and memory [Skv, B, kv_dim], as nn.MultiheadAttention takes them; the layer
    computes on a batch-first copy. Sizes declared `?` are taken from the inputs; declared ones
    must match. Calls do not track gradients (the layer is for inference) and may run from
    several threads at once.
    """

    def __init__(self, module, info):
        self._module = module
        self._info = info
        c = info.contents
        self.name = c.name.decode()
        self.dtype = "bf16" if c.dtype == DTYPE_BF16 else "f32"
        self.model_dim, self.heads, self.head_dim = c.model_dim, c.heads, c.head_dim
        self.kv_heads, self.kv_dim = c.kv_heads, c.kv_dim
        self.batch, self.seq, self.kv_seq = (None if v == DYNAMIC else v
                                             for v in (c.batch, c.seq, c.kv_seq))
        self.cross, self.causal = bool(c.cross), bool(c.causal)
        self.kv_lens, self.bias = bool(c.kv_lens), bool(c.bias)
        self.scale = c.scale
        # Decoder layers (docs/language.md, "Decoder keys").
        self.rope = {0: None, 1: "half", 2: "interleaved"}.get(c.rope.kind)
        self.rope_dim = c.rope.dim if self.rope else None
        self.kv_cache = c.kv_cache or None
        self.window = c.window or None
        self.softcap = c.softcap or None
        self.qk_norm = "rms" if c.qk_norm else None
        self.sinks = bool(c.sinks)
        #: Added to q_norm.weight and k_norm.weight as they load: 1 for Gemma's norms, which
        #: multiply by (1 + weight) (from_hf sets it).
        self.norm_weight_offset = 0.0
        #: The checkpoint conventions load_weights applies by default (from_hf sets them): the
        #: names of a model family's tensors, and the prefix of this layer's.
        self.checkpoint_aliases = None
        self.checkpoint_prefix = ""
        self.schedule = c.schedule.decode()
        self.cpu_features = c.cpu_features.decode()
        #: None for a CPU layer; the target of a layer compiled for a GPU ("cuda:sm_90").
        self.device = c.device.decode() if c.device else None
        #: The layout of x, memory and the result: [B, S, D] when true, [S, B, D] when false.
        self.batch_first = True
        self._names = self._tensor_names()
        assert len(self._names) == c.num_tensors, "mhac_layer.num_tensors disagrees"
        self._prepared = None

    def _tensor_names(self):
        names = ["x"] + (["memory"] if self.cross else [])
        for p in _weights.PROJECTIONS:
            names += [f"{p}.weight"] + ([f"{p}.bias"] if self.bias else [])
        names += list(self._decoder_weights())
        names += ["kv_lens"] if self.kv_lens else []
        names += ["k_cache", "v_cache", "cache_len"] if self.kv_cache else []
        return names + ["out"]

    def _decoder_weights(self):
        """The decoder tensors among the layer's weights, with their shapes."""
        weights = {}
        if self.qk_norm:
            weights["q_norm.weight"] = (self.head_dim,)
            weights["k_norm.weight"] = (self.head_dim,)
        if self.sinks:
            weights["sinks"] = (self.heads,)
        return weights

    def _expected_weights(self):
        width = self.heads * self.head_dim
        kv_width = self.kv_heads * self.head_dim
        return {"q": (width, self.model_dim), "k": (kv_width, self.kv_dim),
                "v": (kv_width, self.kv_dim), "o": (self.model_dim, width)}

    @property
    def _runtime(self):
        return self._module._runtime

    def load_weights(self, weights, prefix=None, aliases=None):
        """Prepares the layer's weights (copied, in the layout its kernels read) from a
        state_dict, a torch.nn.Module, or a .safetensors path; `prefix` selects one layer of a
        checkpoint (`model.layers.0.self_attn.`); `aliases` maps a checkpoint's own names to the
        layer's (from_hf passes a model family's). Returns the layer."""
        self._module._check_open()
        self._check_cpu()
        prefix = self.checkpoint_prefix if prefix is None else prefix
        aliases = self.checkpoint_aliases if aliases is None else aliases
        resolved = _weights.resolve(_weights.tensors_of(weights), self._expected_weights(),
                                    self.bias, prefix, extra=self._decoder_weights(),
                                    aliases=aliases)
        if self.norm_weight_offset:
            for name in ("q_norm.weight", "k_norm.weight"):
                resolved[name] = (_weights.to_element(resolved[name], "f32") +
                                  np.float32(self.norm_weight_offset))
        element = self.dtype
        arrays = {name: _weights.to_element(value, element) for name, value in resolved.items()}
        pointers = (ctypes.c_void_p * len(self._names))()
        for i, name in enumerate(self._names):
            if name in arrays:
                pointers[i] = arrays[name].ctypes.data
        prepared = ctypes.c_void_p()
        status = self._runtime.lib.mhac_layer_prepare(self._info, pointers,
                                                      ctypes.byref(prepared))
        self._runtime.check(status, f"layer {self.name}: preparing the weights")
        self._release()
        self._prepared = prepared
        return self

    def _release(self):
        if self._prepared is not None:
            self._runtime.lib.mhac_free(self._prepared)
            self._prepared = None

    def __del__(self):
        try:
            self._release()
        except Exception:  # the runtime may be gone at interpreter exit
            pass

    def _check_shape(self, what, shape, expected):
        """`expected` holds a size, None (any) for each dimension; names for messages."""
        dims = [d for d, _ in expected]
        if len(shape) != len(dims) or any(e is not None and s != e
                                          for s, e in zip(shape, dims)):
            want = ", ".join(str(d) if d is not None else n for d, n in expected)
            raise ValueError(f"layer {self.name}: {what} has shape {list(shape)}; it takes "
                             f"[{want}]")
        if any(s < 1 for s in shape):
            raise ValueError(f"layer {self.name}: {what} has shape {list(shape)}; every size "
                             f"must be at least 1")

    def _check_cpu(self):
        if self.device:
            raise Error(f"layer {self.name} was compiled for {self.device}: its functions take "
                        "device pointers, which this package does not pass yet; call it from C "
                        "(see its header) or run it with mha-run")

    def new_cache(self, batch, capacity=None, torch=None):
        """Empty KV caches for `batch` rows (a decoder layer with kv_cache): an mhac.KVCache of
        keys and values [batch, kv_cache, kv_heads, head_dim] (PyTorch tensors where PyTorch is
        installed, else NumPy arrays; `torch=` chooses) and lengths (int32, zeros). `capacity`,
        if given, must be the compiled kv_cache."""
        return _cache.new_cache(self, batch, capacity, torch)

    def __call__(self, x, memory=None, kv_lens=None, *, out=None, cache=None):
        if cache is not None and not self.batch_first:
            raise Error(f"layer {self.name}: calls with a KV cache take batch-first inputs")
        if not self.batch_first:
            return self._call_sequence_first(x, memory, kv_lens, out)
        return self._call(x, memory, kv_lens, out, cache)

    def _call_sequence_first(self, x, memory, kv_lens, out):
        """A call on PyTorch's [S, B, D] layout: the inputs transposed into batch-first copies,
        the result transposed back. Unbatched inputs ([S, D]) need no transpose."""
        def batch_first(value, what):
            if value is None or len(getattr(value, "shape", ())) != 3:
                return value
            if _arrays.is_torch_tensor(value):
                return value.transpose(0, 1).contiguous()
            return _arrays.as_buffer(value, what, self.dtype).owner.swapaxes(0, 1).copy()

        xb = batch_first(x, "x")
        result = self._call(xb, batch_first(memory, "memory"), kv_lens, None)
        if len(result.shape) == 3:
            result = (result.transpose(0, 1).contiguous() if _arrays.is_torch_tensor(result)
                      else np.ascontiguousarray(result.swapaxes(0, 1)))
        if out is None:
            return result
        ob = _arrays.as_buffer(out, "out", self.dtype, writable=True)
        if ob.shape != tuple(result.shape):
            raise ValueError(f"layer {self.name}: out has shape {list(ob.shape)}; it must have "
                             f"x's, {list(result.shape)}")
        if _arrays.is_torch_tensor(out) != _arrays.is_torch_tensor(result):
            raise TypeError(f"layer {self.name}: out must be of x's kind (a PyTorch tensor for a "
                            "PyTorch input, a NumPy array otherwise)")
        if _arrays.is_torch_tensor(out):
            out.copy_(result)
        else:
            np.copyto(out, result)
        return out

    def _call(self, x, memory, kv_lens, out, cache=None):
        self._module._check_open()
        self._check_cpu()
        if self._prepared is None:
            raise Error(f"layer {self.name} has no weights: call load_weights(...) first")
        element = self.dtype
        xb = _arrays.as_buffer(x, "x", element)
        unbatched = len(xb.shape) == 2
        shape = (1,) + xb.shape if unbatched else xb.shape
        self._check_shape("x", shape, [(self.batch, "B"), (self.seq, "S"),
                                       (self.model_dim, "D")])
        batch, seq = shape[0], shape[1]
        kv_seq = seq
        buffers = {"x": xb}
        if self.cross:
            if memory is None:
                raise TypeError(f"layer {self.name} is cross-attention: pass memory")
            mb = _arrays.as_buffer(memory, "memory", element)
            mshape = (1,) + mb.shape if unbatched and len(mb.shape) == 2 else mb.shape
            self._check_shape("memory", mshape, [(batch, "B"), (self.kv_seq, "Skv"),
                                                 (self.kv_dim, "kv_dim")])
            kv_seq = mshape[1]
            buffers["memory"] = mb
        elif memory is not None:
            raise TypeError(f"layer {self.name} is self-attention: it takes no memory")
        if self.kv_lens:
            if kv_lens is None:
                raise TypeError(f"layer {self.name} masks keys by kv_lens: pass kv_lens")
            lb = _arrays.integers(kv_lens, "kv_lens")
            self._check_shape("kv_lens", lb.shape if lb.shape else (1,), [(batch, "B")])
            buffers["kv_lens"] = lb
        elif kv_lens is not None:
            raise TypeError(f"layer {self.name} has no kv_lens mask (kv_lens = false)")
        if self.kv_cache:
            if cache is None:
                raise TypeError(f"layer {self.name} has a KV cache: pass "
                                f"cache=layer.new_cache({batch})")
            buffers.update(_cache.cache_buffers(self, cache, batch))
        elif cache is not None:
            raise TypeError(f"layer {self.name} has no KV cache (kv_cache)")
        out_shape = xb.shape
        if out is None:
            out = _arrays.empty_like_kind(out_shape, element, xb.is_torch)
        ob = _arrays.as_buffer(out, "out", element, writable=True)
        if ob.shape != out_shape:
            raise ValueError(f"layer {self.name}: out has shape {list(ob.shape)}; it must have "
                             f"x's, {list(out_shape)}")
        if any(b.address == ob.address for n, b in buffers.items()
               if n not in ("kv_lens", "cache_len")):
            raise Error(f"layer {self.name}: out must not overlap the inputs")
        buffers["out"] = ob
        pointers = (ctypes.c_void_p * len(self._names))()
        for i, name in enumerate(self._names):
            if name in buffers:
                pointers[i] = buffers[name].address
        sizes = Sizes(batch, seq, kv_seq)
        status = self._runtime.lib.mhac_layer_run_prepared(self._info, pointers, self._prepared,
                                                           ctypes.byref(sizes))
        self._runtime.check(status, f"layer {self.name}")
        if cache is not None:
            cache.lengths += seq
        return out

    def flops(self, batch=None, seq=None, kv_seq=None):
        """FLOPs of one call at these sizes (the declared ones where None; for a layer with a
        KV cache, kv_seq is every row's cache length before the call)."""
        keys = (kv_seq or 0) if self.kv_cache else kv_seq or self.kv_seq or seq or self.seq or 0
        sizes = Sizes(batch or self.batch or 0, seq or self.seq or 0, keys)
        return self._runtime.lib.mhac_layer_flops(self._info, ctypes.byref(sizes))

    def __repr__(self):
        def size(v):
            return "?" if v is None else str(v)

        parts = [f"model_dim={self.model_dim}", f"heads={self.heads}",
                 f"head_dim={self.head_dim}"]
        if self.kv_heads != self.heads:
            parts.append(f"kv_heads={self.kv_heads}")
        parts += [f"batch={size(self.batch)}", f"seq={size(self.seq)}"]
        if self.cross:
            parts += [f"kv_seq={size(self.kv_seq)}", f"kv_dim={self.kv_dim}"]
        parts += [flag for flag in ("causal", "kv_lens") if getattr(self, flag)]
        if self.rope:
            parts.append(f"rope={self.rope}")
        for key in ("kv_cache", "window", "softcap", "qk_norm"):
            if getattr(self, key):
                parts.append(f"{key}={getattr(self, key)}")
        if self.sinks:
            parts.append("sinks")
        if not self.bias:
            parts.append("bias=False")
        parts.append(self.dtype)
        if not self.batch_first:
            parts.append("batch_first=False")
        return f"<mhac.Layer {self.name}: {', '.join(parts)}>"
