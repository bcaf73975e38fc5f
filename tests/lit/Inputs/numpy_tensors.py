"""NumPy arrays as mha-run reads them: bf16 rounding and .safetensors files (F32), for the
decoder checks (tests/lit/e2e/Inputs/decoder_check.py) and the decode peers
(bench/peers/decode_peers.py)."""
import json
import struct

import numpy as np


def bf16(array):
    """Rounds float32 values to the nearest bfloat16 (ties to even), as mha-run does."""
    bits = np.asarray(array, np.float32).view(np.uint32)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return rounded.astype(np.uint32).view(np.float32)


def write_safetensors(path, tensors):
    """tensors: name -> array, written as F32."""
    header, blobs, offset = {}, [], 0
    for name, array in tensors.items():
        blob = np.ascontiguousarray(array, np.float32).tobytes()
        header[name] = {"dtype": "F32", "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))
