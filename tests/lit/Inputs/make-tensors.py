"""Writes the files mha-run reads for one layer, in pure Python (no NumPy needed).

usage: make-tensors.py OUTDIR --model-dim D --heads H [--kv-heads G] [--head-dim E]
                       --batch B --seq S [--cross --kv-seq T --kv-dim K] [--no-bias]
                       [--kv-lens N,N,...] [--nan-at B,S,F] [--seed N]

Writes OUTDIR/x.npy, OUTDIR/weights.safetensors (q_proj.weight, ..., o_proj.bias) and, for
self-attention with H*Dh = D and G = H, OUTDIR/pytorch.safetensors with the same weights under
nn.MultiheadAttention's names (in_proj_weight, in_proj_bias, out_proj.weight, out_proj.bias);
with --cross OUTDIR/memory.npy, with --kv-lens OUTDIR/kv_lens.npy. --nan-at makes one element of
x NaN.
"""
import argparse
import json
import os
import random
import struct


def write_npy(path, shape, values, descr="<f4"):
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (
        descr, "".join("%d, " % d for d in shape) if len(shape) != 1 else "%d," % shape[0])
    # Pad so that the data starts on a 64-byte boundary, as numpy.save does.
    padding = 64 - (10 + len(header) + 1) % 64
    header = header + " " * padding + "\n"
    fmt = "<%d%s" % (len(values), "f" if descr == "<f4" else "i")
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1"))
        f.write(struct.pack(fmt, *values))


def write_safetensors(path, tensors):
    header, blobs, offset = {}, [], 0
    for name, (shape, values) in tensors.items():
        blob = struct.pack("<%df" % len(values), *values)
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("outdir")
    parser.add_argument("--model-dim", type=int, required=True)
    parser.add_argument("--heads", type=int, required=True)
    parser.add_argument("--kv-heads", type=int)
    parser.add_argument("--head-dim", type=int)
    parser.add_argument("--batch", type=int, required=True)
    parser.add_argument("--seq", type=int, required=True)
    parser.add_argument("--cross", action="store_true")
    parser.add_argument("--kv-seq", type=int)
    parser.add_argument("--kv-dim", type=int)
    parser.add_argument("--no-bias", action="store_true")
    parser.add_argument("--kv-lens")
    parser.add_argument("--nan-at")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    rng = random.Random(args.seed)
    d, h = args.model_dim, args.heads
    g = args.kv_heads or h
    dh = args.head_dim or d // h
    kv_dim = args.kv_dim or d
    kv_seq = args.kv_seq or args.seq
    uniform = lambda n, bound: [rng.uniform(-bound, bound) for _ in range(n)]

    os.makedirs(args.outdir, exist_ok=True)
    x = uniform(args.batch * args.seq * d, 1.0)
    if args.nan_at:
        b, s, f = (int(i) for i in args.nan_at.split(","))
        x[(b * args.seq + s) * d + f] = float("nan")
    write_npy(os.path.join(args.outdir, "x.npy"), [args.batch, args.seq, d], x)
    if args.cross:
        write_npy(os.path.join(args.outdir, "memory.npy"), [args.batch, kv_seq, kv_dim],
                  uniform(args.batch * kv_seq * kv_dim, 1.0))
    if args.kv_lens:
        lens = [int(n) for n in args.kv_lens.split(",")]
        write_npy(os.path.join(args.outdir, "kv_lens.npy"), [len(lens)], lens, descr="<i4")

    tensors = {}
    for name, out, inp in (("q", h * dh, d), ("k", g * dh, kv_dim), ("v", g * dh, kv_dim),
                           ("o", d, h * dh)):
        bound = inp ** -0.5
        tensors[name + "_proj.weight"] = ([out, inp], uniform(out * inp, bound))
        if not args.no_bias:
            tensors[name + "_proj.bias"] = ([out], uniform(out, bound))
    write_safetensors(os.path.join(args.outdir, "weights.safetensors"), tensors)
    # A Hugging Face checkpoint of two layers: these weights under model.layers.1.self_attn.,
    # and other tensors (another layer's, an MLP's) that a prefix must leave out.
    checkpoint = {f"model.layers.1.self_attn.{name}": t for name, t in tensors.items()}
    checkpoint.update({f"model.layers.0.self_attn.{name}": t for name, t in tensors.items()})
    checkpoint["model.layers.1.mlp.up_proj.weight"] = ([2, d], uniform(2 * d, 1.0))
    write_safetensors(os.path.join(args.outdir, "checkpoint.safetensors"), checkpoint)

    if not args.cross and g == h and h * dh == d:
        pytorch = {
            "in_proj_weight": ([3 * d, d], sum((tensors[n + "_proj.weight"][1] for n in "qkv"), [])),
            "out_proj.weight": tensors["o_proj.weight"],
        }
        if not args.no_bias:
            pytorch["in_proj_bias"] = ([3 * d], sum((tensors[n + "_proj.bias"][1] for n in "qkv"), []))
            pytorch["out_proj.bias"] = tensors["o_proj.bias"]
        write_safetensors(os.path.join(args.outdir, "pytorch.safetensors"), pytorch)


if __name__ == "__main__":
    main()
