"""A compiled layer as a Python callable, over mhac_layer_prepare and mhac_layer_run_prepared."""

import ctypes

import numpy as np

from . import _arrays, _weights
from ._errors import Error
from ._runtime import DTYPE_BF16, DYNAMIC, Sizes


class Layer:
    """One layer of a compiled module. Load its weights once with `load_weights`, then call it:

        y = layer(x)                          # self-attention, x [B, S, D] or [S, D]
        y = layer(x, memory, kv_lens=lens)    # cross-attention, keys masked per batch entry

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
        return names + (["kv_lens"] if self.kv_lens else []) + ["out"]

    def _expected_weights(self):
        width = self.heads * self.head_dim
        kv_width = self.kv_heads * self.head_dim
        return {"q": (width, self.model_dim), "k": (kv_width, self.kv_dim),
                "v": (kv_width, self.kv_dim), "o": (self.model_dim, width)}

    @property
    def _runtime(self):
        return self._module._runtime

    def load_weights(self, weights, prefix=""):
        """Prepares the layer's weights (copied, in the layout its kernels read) from a
        state_dict, a torch.nn.Module, or a .safetensors path; `prefix` selects one layer of a
        checkpoint (`model.layers.0.self_attn.`). Returns the layer."""
        self._module._check_open()
        self._check_cpu()
        resolved = _weights.resolve(_weights.tensors_of(weights), self._expected_weights(),
                                    self.bias, prefix)
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

    def __call__(self, x, memory=None, kv_lens=None, *, out=None):
        if not self.batch_first:
            return self._call_sequence_first(x, memory, kv_lens, out)
        return self._call(x, memory, kv_lens, out)

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

    def _call(self, x, memory, kv_lens, out):
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
        out_shape = xb.shape
        if out is None:
            out = _arrays.empty_like_kind(out_shape, element, xb.is_torch)
        ob = _arrays.as_buffer(out, "out", element, writable=True)
        if ob.shape != out_shape:
            raise ValueError(f"layer {self.name}: out has shape {list(ob.shape)}; it must have "
                             f"x's, {list(out_shape)}")
        if any(b.address == ob.address for n, b in buffers.items() if n != "kv_lens"):
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
        return out

    def flops(self, batch=None, seq=None, kv_seq=None):
        """FLOPs of one call at these sizes (the declared ones where None)."""
        sizes = Sizes(batch or self.batch or 0, seq or self.seq or 0,
                      kv_seq or self.kv_seq or seq or self.seq or 0)
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
        if not self.bias:
            parts.append("bias=False")
        parts.append(self.dtype)
        if not self.batch_first:
            parts.append("batch_first=False")
        return f"<mhac.Layer {self.name}: {', '.join(parts)}>"
