"""Tensors handed to compiled code by address: NumPy arrays, PyTorch CPU tensors, and anything
that exports the buffer protocol, `__array_interface__` or DLPack.

A contiguous array of the layer's element type is passed as it is, without a copy. Element types
are never converted silently: a float64 array given to an f32 layer is an error, as it is for a
PyTorch module. A non-contiguous view is made contiguous (a copy), as PyTorch's own kernels do.
"""

import numpy as np

from ._errors import Error


def is_torch_tensor(value):
    return type(value).__module__.startswith("torch") and hasattr(value, "data_ptr")


class Buffer:
    """One tensor as compiled code sees it: an address and a shape, and the object that owns the
    memory (kept alive as long as this is)."""

    def __init__(self, owner, address, shape, is_torch):
        self.owner = owner
        self.address = address
        self.shape = tuple(int(d) for d in shape)
        self.is_torch = is_torch


def _torch_dtype(element):
    import torch

    return {"f32": torch.float32, "bf16": torch.bfloat16, "i32": torch.int32}[element]


_NUMPY_DTYPES = {"f32": np.dtype(np.float32), "bf16": np.dtype(np.uint16),
                 "i32": np.dtype(np.int32)}
_DESCRIPTIONS = {"f32": "float32", "bf16": "bfloat16 (a torch.bfloat16 tensor, or a uint16 array "
                 "of raw bfloat16 bits)", "i32": "int32"}


def as_buffer(value, what, element, writable=False):
    """`value` as a Buffer of `element` ("f32", "bf16" or "i32") elements. `what` names the
    argument in messages."""
    if is_torch_tensor(value):
        if value.device.type != "cpu":
            raise Error(f"{what} is on {value.device}: mhac's CPU layers take CPU tensors")
        if value.dtype != _torch_dtype(element):
            raise TypeError(f"{what} is {value.dtype}; this layer takes {_DESCRIPTIONS[element]}")
        if not value.is_contiguous():
            if writable:
                raise Error(f"{what} must be contiguous: the layer writes it in place")
            value = value.contiguous()
        return Buffer(value, value.data_ptr(), value.shape, is_torch=True)
    if not isinstance(value, np.ndarray) and hasattr(value, "__dlpack__"):
        array = np.from_dlpack(value)
    else:
        array = np.asarray(value)
    if array.dtype != _NUMPY_DTYPES[element]:
        raise TypeError(f"{what} is {array.dtype}; this layer takes {_DESCRIPTIONS[element]}")
    if not array.flags.c_contiguous:
        if writable:
            raise Error(f"{what} must be C-contiguous: the layer writes it in place")
        array = np.ascontiguousarray(array)
    if writable and not array.flags.writeable:
        raise Error(f"{what} is read-only")
    return Buffer(array, array.ctypes.data, array.shape, is_torch=False)


def integers(value, what):
    """`value` (a sequence, array or tensor of integers) as a Buffer of int32: a small
    conversion (one entry per batch entry), so it is copied when its type differs."""
    if is_torch_tensor(value):
        value = value.detach().cpu().numpy()
    array = np.asarray(value)
    if array.dtype.kind not in "iu":
        raise TypeError(f"{what} must hold integers, not {array.dtype}")
    array = np.ascontiguousarray(array, dtype=np.int32)
    return Buffer(array, array.ctypes.data, array.shape, is_torch=False)


def empty_like_kind(shape, element, is_torch):
    """A new tensor of `shape` for the layer's output: a PyTorch tensor when the input was one."""
    if is_torch:
        import torch

        return torch.empty(shape, dtype=_torch_dtype(element))
    return np.empty(shape, dtype=_NUMPY_DTYPES[element])


def zeros_like_kind(shape, element, is_torch):
    """A new zero-filled tensor of `shape`: PyTorch's when `is_torch`, else NumPy's."""
    if is_torch:
        import torch

        return torch.zeros(shape, dtype=_torch_dtype(element))
    return np.zeros(shape, dtype=_NUMPY_DTYPES[element])
