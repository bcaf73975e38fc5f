"""Compiles and calls a layer with the mhac found on PATH; prints where the runtime came from."""

import sys

import numpy as np

import mhac

layer = mhac.compile("layer tiny {\n  model_dim = 16\n  heads = 2\n  seq = ?\n}\n").tiny
print(layer, "runtime from the installation:", mhac._runtime.runtime().prefix == sys.argv[1])
weights = {f"{p}_proj.weight": np.eye(16, dtype=np.float32) for p in "qkvo"}
weights.update({f"{p}_proj.bias": np.zeros(16, np.float32) for p in "qkvo"})
x = np.ones((1, 3, 16), np.float32)
print("ones in, ones out:", np.allclose(layer.load_weights(weights)(x), x))
