"""The model zoo (bench/zoo/*.mha, one real model's attention per file) against the machine's
ceilings and against PyTorch, in one run, alternating them.

Every round measures, for each layer in turn: the f32 FMA peak (bench/peak.c) and, for layers
of one token (S = 1), the memory read bandwidth (bench/bandwidth.c); mhac's layer (mha-run
--bench on prepared weights); and the same layer in eager PyTorch (peers/torch_eager.py:
Debian's PyTorch 1.13, and with --torch-python PyPI's PyTorch 2 with its fused
scaled_dot_product_attention), and composed from oneDNN's primitives (peers/onednn_mha.c, given
the layer's head width, grouped-query heads, cross-attention and biases). The table shows
medians over rounds: mhac's time, GFLOP/s and
fraction of the peak measured with it, and for one-token layers the GB/s of weights (and KV
cache) streamed against the measured bandwidth; the peers' times and the median of the rounds'
best peer / mhac ratios. A decode layer (kv_cache = N, bench/zoo/*_step.mha) runs with N - seq
tokens cached, the last step before its cache is full; oneDNN's composition has no cache and
sits those out.

With --dtype bf16 the layers are bf16 (mhac's NAME.bf16.so, its default schedule for the
machine), and so are the peers (bf16 weights, inputs and products in PyTorch; oneDNN's bf16
composition); `of peak` is then against the fastest of the peaks a bf16 layer can use (the
FMAs', vdpbf16ps', AMX's: bench.py's measure_peak), and weights stream at 2 bytes.

usage: zoo.py --mha-run MHA_RUN --modules DIR --peers-dir DIR [--threads 2] [--rounds 3]
              [--only NAME,...] [--torch-python PY] [--dtype f32|bf16]
"""
import argparse
import glob
import os
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "peers"))
from torch_eager import cache_len, read_layer  # noqa: E402  (the zoo's one parser of .mha keys)
from bench import measure_peak  # noqa: E402


def flops(layer):
    """A call's FLOPs, as mhac_layer_flops counts them (runtime.h), to size the number of calls;
    the rates in the table are mha-run's, from the runtime itself."""
    b, s, d, h, dh, hkv = (layer[k] for k in ("b", "s", "d", "h", "dh", "hkv"))
    skv = layer["skv"] if layer["cross"] else s
    kv_dim = layer["kv_dim"] if layer["cross"] else d
    projections = 2 * b * s * d * h * dh * 2 + 2 * 2 * b * skv * kv_dim * hkv * dh
    if layer["kv_cache"]:
        return projections + 4 * b * h * s * keys_seen(layer) * dh
    attention = 4 * b * h * s * skv * dh
    return projections + (attention / 2 if layer["causal"] else attention)


def keys_seen(layer):
    """The keys the last query of a decode layer's call sees: its cache and itself, at most the
    window."""
    keys = cache_len(layer) + layer["s"]
    return min(keys, layer["window"]) if layer["window"] else keys


def streamed_bytes(layer, dtype):
    """The weights a call reads, and a decode layer's cache rows."""
    d, h, dh, hkv = (layer[k] for k in ("d", "h", "dh", "hkv"))
    kv_dim = layer["kv_dim"] if layer["cross"] else d
    cache = 2 * layer["b"] * keys_seen(layer) * hkv * dh if layer["kv_cache"] else 0
    return (2 if dtype == "bf16" else 4) * (2 * d * h * dh + 2 * kv_dim * hkv * dh + cache)


def onednn_arguments(layer, calls, dtype):
    """peers/onednn_mha's command line for the layer."""
    keys = {"head_dim": layer["dh"], "kv_heads": layer["hkv"], "bias": int(layer["bias"])}
    if layer["cross"]:
        keys.update(kv_seq=layer["skv"], kv_dim=layer["kv_dim"])
    return ([str(layer[k]) for k in ("b", "s", "d", "h")]
            + [str(int(layer["causal"])), str(calls), dtype]
            + [f"{key}={value}" for key, value in keys.items()])


def calls_for(layer, target_gflop=4.0):
    return max(5, min(2000, int(target_gflop * 1e9 / flops(layer))))


def run(command, env):
    out = subprocess.run(command, capture_output=True, text=True, env=env, timeout=900)
    if out.returncode != 0:
        raise RuntimeError(f"{command[0]}: {out.stderr.strip()[-300:]}")
    return out.stdout


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--mha-run", required=True)
    p.add_argument("--modules", required=True)
    p.add_argument("--peers-dir", required=True)
    p.add_argument("--python", default="/usr/bin/python3")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--only", default="")
    p.add_argument("--torch-python", default="", help="a Python with PyTorch 2 (SDPA peer)")
    p.add_argument("--dtype", choices=["f32", "bf16"], default="f32")
    args = p.parse_args()
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads),
               OPENBLAS_NUM_THREADS=str(args.threads), MHAC_NUM_THREADS=str(args.threads))
    files = sorted(glob.glob(os.path.join(HERE, "zoo", "*.mha")))
    if args.only:
        files = [f for f in files if os.path.basename(f)[:-4] in args.only.split(",")]
    layers = {os.path.basename(f)[:-4]: (f, read_layer(f)) for f in files}
    samples = {name: {"peak": [], "bw": [], "mhac": [], "gflops": [], "torch": [], "sdpa": [],
                      "onednn": [], "ratio": []}
               for name in layers}
    bandwidth = os.path.join(args.peers_dir, "bandwidth")
    for round_index in range(args.rounds):
        for name, (path, layer) in layers.items():
            sample = samples[name]
            arithmetics = ("f32", "bf16", "amx") if args.dtype == "bf16" else ("f32",)
            sample["peak"].append(max(filter(None, (measure_peak(args, args.threads, arithmetic)
                                                    for arithmetic in arithmetics))))
            if layer["s"] == 1:
                sample["bw"].append(float(re.search(r"([0-9.]+) GB/s", run(
                    [bandwidth, str(args.threads)], env)).group(1)))
            calls = calls_for(layer)
            module = os.path.join(args.modules,
                                  name + (".bf16.so" if args.dtype == "bf16" else ".so"))
            cached = ["--cache-len", str(cache_len(layer))] if layer["kv_cache"] else []
            result = run([args.mha_run, module, "--bench", str(calls), "--threads",
                          str(args.threads)] + cached, env)
            mhac = float(re.search(r"median ([0-9.]+)", result).group(1))
            sample["gflops"].append(float(re.search(r"([0-9.]+) GFLOP/s", result).group(1)))
            peer = [os.path.join(HERE, "peers", "torch_eager.py"), path, str(args.threads),
                    str(max(3, calls // 4))]
            in_dtype = ["bf16"] if args.dtype == "bf16" else []
            torch = float(re.search(r"median ([0-9.]+)",
                                    run([args.python] + peer + in_dtype, env)).group(1))
            best = torch
            if args.torch_python:
                sdpa = float(re.search(r"median ([0-9.]+)", run(
                    [args.torch_python] + peer + ["sdpa"] + in_dtype, env)).group(1))
                sample["sdpa"].append(sdpa)
                best = min(best, sdpa)
            onednn = None
            if not layer["kv_cache"]:
                onednn = float(re.search(r"median ([0-9.]+)", run(
                    [os.path.join(args.peers_dir, "onednn_mha")]
                    + onednn_arguments(layer, calls, args.dtype), env)).group(1))
                sample["onednn"].append(onednn)
                best = min(best, onednn)
            sample["mhac"].append(mhac)
            sample["torch"].append(torch)
            sample["ratio"].append(best / mhac)
            print(f"round {round_index + 1}: {name}: mhac {mhac:.3f} ms, PyTorch {torch:.3f} ms"
                  + (f", SDPA {sample['sdpa'][-1]:.3f} ms" if args.torch_python else "")
                  + (f", oneDNN {onednn:.3f} ms" if onednn else ""), file=sys.stderr)

    unit = "the fastest of the FMAs, vdpbf16ps and AMX" if args.dtype == "bf16" else "the FMAs"
    print(f"{args.dtype} layers, {args.threads} threads; peak ({unit}): median "
          f"{statistics.median(p for s in samples.values() for p in s['peak']):.0f} GFLOP/s\n")
    print(f"| layer | B, S (Skv) | D, H x Dh, Hkv | mhac ms | GFLOP/s | of peak | GB/s of weights "
          f"and cache (of bandwidth) | PyTorch 1.13 eager ms | PyTorch 2 SDPA ms | oneDNN ms | "
          f"best peer / mhac |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, (path, layer) in layers.items():
        sample = samples[name]
        ms = statistics.median(sample["mhac"])
        rate = statistics.median(sample["gflops"])
        fraction = statistics.median(g / pk for g, pk in zip(sample["gflops"], sample["peak"]))
        streamed = ""
        if sample["bw"]:
            gbs = streamed_bytes(layer, args.dtype) / (ms * 1e-3) * 1e-9
            streamed = f"{gbs:.1f} ({gbs / statistics.median(sample['bw']):.0%})"
        skv = (f" ({layer['skv']})" if layer["cross"]
               else f" ({cache_len(layer)} cached)" if layer["kv_cache"] else "")
        shape = (f"{layer['d']}, {layer['h']} x {layer['dh']}, {layer['hkv']}"
                 f"{', causal' if layer['causal'] or layer['kv_cache'] else ''}"
                 f"{', cross' if layer['cross'] else ''}"
                 f"{', window ' + str(layer['window']) if layer['window'] else ''}")
        sdpa = f"{statistics.median(sample['sdpa']):.3f}" if sample["sdpa"] else "n/a"
        onednn = f"{statistics.median(sample['onednn']):.3f}" if sample["onednn"] else "n/a"
        print(f"| {name} | {layer['b']}, {layer['s']}{skv} | {shape} | {ms:.3f} | {rate:.1f} | "
              f"{fraction:.0%} | {streamed} | {statistics.median(sample['torch']):.3f} | {sdpa} | "
              f"{onednn} | {statistics.median(sample['ratio']):.2f} |")


if __name__ == "__main__":
    main()
