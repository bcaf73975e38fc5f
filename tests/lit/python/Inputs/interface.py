"""The Python interface's contracts: tensors passed without copies, outputs of the input's kind,
and every misuse an exception that says what to do."""

import ctypes
import os
import sys

import numpy as np
import torch

import mhac

SOURCE = """layer fixed {
  model_dim = 32
  heads = 4
  seq = 7
  batch = ?
}
layer dyn {
  model_dim = 32
  heads = 2
  seq = ?
  bias = false
}
"""


def attempt(what, call):
    try:
        call()
        print(f"{what}: no error")
    except Exception as error:  # the test prints each exception's type and message
        print(f"{what}: {type(error).__name__}: {error}")


def weights(layer, bias=True):
    rng = np.random.default_rng(1)
    w = {}
    for p in "qkvo":
        w[f"{p}_proj.weight"] = rng.standard_normal((32, 32), dtype=np.float32) * 0.1
        if bias:
            w[f"{p}_proj.bias"] = rng.standard_normal(32, dtype=np.float32) * 0.1
    return w


def zero_copy():
    module = mhac.compile(SOURCE)
    print(module)
    print(module.fixed)
    layer = module.fixed.load_weights(weights(module.fixed))
    x = torch.randn(2, 7, 32)
    out = torch.empty(2, 7, 32)
    address = out.data_ptr()
    result = layer(x, out=out)
    print("torch out is the given tensor:", result is out and out.data_ptr() == address)
    xn = x.numpy()                      # shares x's memory
    outn = np.empty((2, 7, 32), np.float32)
    print("numpy out is the given array:", layer(xn, out=outn) is outn)
    print("numpy and torch agree:", np.array_equal(outn, out.numpy()))
    # A non-contiguous view is made contiguous; the result is the same.
    wide = torch.randn(2, 7, 64)
    view = wide[:, :, ::2]
    print("strided view:", torch.equal(layer(view), layer(view.contiguous())))
    # A DLPack exporter (here a torch tensor seen only through __dlpack__).

    class Exporter:
        def __init__(self, t):
            self.t = t

        def __dlpack__(self, stream=None):
            return self.t.__dlpack__()

        def __dlpack_device__(self):
            return self.t.__dlpack_device__()

    print("dlpack:", np.array_equal(layer(Exporter(x)), out.numpy()))


def misuse():
    module = mhac.compile(SOURCE)
    fixed, dyn = module.fixed, module["dyn"]
    attempt("no weights", lambda: fixed(np.zeros((1, 7, 32), np.float32)))
    fixed.load_weights(weights(fixed))
    attempt("wrong seq", lambda: fixed(np.zeros((1, 8, 32), np.float32)))
    attempt("float64", lambda: fixed(np.zeros((1, 7, 32))))
    attempt("zero batch", lambda: fixed(np.zeros((0, 7, 32), np.float32)))
    attempt("memory to self-attention", lambda: fixed(np.zeros((1, 7, 32), np.float32),
                                                      np.zeros((1, 7, 32), np.float32)))
    attempt("out of another shape", lambda: fixed(np.zeros((1, 7, 32), np.float32),
                                                  out=np.zeros((2, 7, 32), np.float32)))
    x = np.zeros((1, 7, 32), np.float32)
    attempt("out is x", lambda: fixed(x, out=x))
    attempt("unknown layer", lambda: module["nope"])
    w = weights(dyn, bias=False)
    attempt("biases for a layer without", lambda: dyn.load_weights(weights(dyn)))
    attempt("prefixed names", lambda: dyn.load_weights(
        {f"model.layers.0.attn.{n}": t for n, t in w.items()}))
    attempt("wrong prefix", lambda: dyn.load_weights(w, prefix="model.layers.9."))
    short = dict(w)
    del short["v_proj.weight"]
    attempt("missing weight", lambda: dyn.load_weights(short))
    w["k_proj.weight"] = w["k_proj.weight"][:, :16]
    attempt("misshaped weight", lambda: dyn.load_weights(w))
    module.close()
    attempt("closed module", lambda: fixed(x))
    gpu = mhac.compile(SOURCE, target="cuda:sm_80").fixed
    attempt("CUDA layer", lambda: gpu.load_weights(weights(gpu)))


def compile_errors():
    attempt("compile error", lambda: mhac.compile("layer a {\n  model_dim = 768\n  heads = 7\n"
                                                  "  seq = 0\n}\n"))
    attempt("missing file", lambda: mhac.compile("no/such/layer.mha"))
    os.environ["MHAC_PREFIX"] = "/nonexistent"
    attempt("bad prefix", lambda: mhac._runtime.find_prefix())


def abi_offsets(offsets_program):
    """The ctypes layout of mhac_layer against the C compiler's, printed by a program built from
    mhac/runtime.h."""
    c_offsets = dict(line.split() for line in os.popen(offsets_program).read().splitlines())
    for name, _ in mhac._runtime.LayerInfo._fields_:
        mine = getattr(mhac._runtime.LayerInfo, name).offset
        if int(c_offsets.pop(name)) != mine:
            print(f"field {name}: ctypes offset {mine}, C offset differs")
    # The nested mhac_rope, at the rope field's offset.
    rope = mhac._runtime.LayerInfo.rope.offset
    for name, _ in mhac._runtime.RopeInfo._fields_:
        mine = rope + getattr(mhac._runtime.RopeInfo, name).offset
        if int(c_offsets.pop("rope." + name)) != mine:
            print(f"field rope.{name}: ctypes offset {mine}, C offset differs")
    print("fields only in C:", sorted(c_offsets) or "none")
    print("size:", ctypes.sizeof(mhac._runtime.LayerInfo) == int(os.popen(
        offsets_program + " size").read()))


def cache():
    first = mhac.compile(SOURCE)
    again = mhac.compile(SOURCE)
    print("cached:", first.path == again.path, len(os.listdir(os.environ["MHAC_CACHE_DIR"])))
    fresh = mhac.compile(SOURCE, cache=False)
    print("uncached module outlives its files:", not os.path.exists(fresh.path),
          len(fresh) == 2)


globals()[sys.argv[1]](*sys.argv[2:])
