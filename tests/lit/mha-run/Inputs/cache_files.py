"""Writes the files of tests/lit/mha-run/cache-files.test: an input of 2 rows of 3 tokens, caches
of the layer's shape [2, 16, 2, 8], and files that are wrong in one way each."""

import sys

import numpy as np

folder = sys.argv[1]
rng = np.random.default_rng(0)
arrays = {
    "x": rng.uniform(-1, 1, (2, 3, 32)).astype(np.float32),
    "k": rng.uniform(-1, 1, (2, 16, 2, 8)).astype(np.float32),
    "v": rng.uniform(-1, 1, (2, 16, 2, 8)).astype(np.float32),
    "k-short": rng.uniform(-1, 1, (2, 15, 2, 8)).astype(np.float32),
    "k-int": np.zeros((2, 16, 2, 8), np.int32),
    "k-rank3": np.zeros((2, 16, 16), np.float32),
    "len": np.array([4, 13], np.int32),
    "len-three-rows": np.array([4, 13, 1], np.int32),
    "len-float": np.array([4, 13], np.float32),
    "len-too-long": np.array([4, 14], np.int32),
}
for name, array in arrays.items():
    np.save(f"{folder}/{name}.npy", array)
