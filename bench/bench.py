"""Benchmarks mhac against its peers on the shapes of issue 5, in one run, alternating them.

Every (shape, threads) row is measured in ROUNDS rounds, and the rounds are the outer loop: a
round measures every row once, so a row's rounds lie minutes apart and a slow phase of a shared
machine (minutes long on the VMs we measured) weighs on one of them, not on all. Within a
round, every contender of a row runs CALLS timed calls (more for small shapes: enough for
MIN_GFLOP of work, so that each measurement spans a few hundred milliseconds, not one slow
instant) after a warm-up in a fresh process and reports its median, back to back, starting
with a different contender each round. The table shows each contender's median over rounds;
`best peer / mhac` is the median over rounds of the ratio between the best peer (lowest median)
and mhac in the same round, a paired comparison of two measurements taken seconds apart. The
f32 FMA peak (bench/peak.c) is measured the same way, before every row of every round, and `of
peak` is the median over rounds of a contender's GFLOP/s over the peak measured with it.

Peers on OpenMP run on two threads with OMP_WAIT_POLICY=passive and =active in every round,
keeping the faster: passive is best where an OpenMP runtime shares the cores with a BLAS's own
threads (Debian's PyTorch), active where OpenMP regions follow each other closely (oneDNN
primitives), and each peer is measured at its best. On one thread they run once.

With --dtype bf16 the layers are bf16 (mhac's NAME.bf16.so, compiled with its default
schedule for the machine), and so are the peers that have bf16 kernels (oneDNN, PyTorch,
OpenVINO; OpenBLAS, ONNX Runtime and mhac's Halide backend are f32 peers and show as n/a); `of
peak` is then against the fastest of the peaks a bf16 layer can use, measured the same way:
the f32 FMAs', AVX512-BF16's vdpbf16ps (bench/peak.c bf16) and AMX's tdpbf16ps (bench/peak.c
amx), where the CPU has them.

usage: bench.py --mhac-run MHA_RUN --modules DIR --peers-dir DIR --python PY
                [--torch-python PY] [--rounds N] [--calls N] [--min-gflop G] [--threads 1,2]
                [--only PEER,...] [--dtype f32|bf16]
"""
import argparse
import math
import os
import re
import statistics
import subprocess
import sys

# (B, S, D, H, causal): the shapes of issue 5.
SHAPES = [
    (1, 128, 768, 12, False),
    (8, 128, 768, 12, False),
    (1, 512, 768, 12, False),
    (4, 512, 1024, 16, False),
    (1, 197, 768, 12, False),
    (1, 2048, 768, 12, True),
]
# mhac-halide is mhac's second backend (--backend halide): a contender, not a peer.
PEERS = ["mhac", "mhac-halide", "openblas", "onednn", "torch-mha", "pypi-torch-mha", "pypi-torch-sdpa",
         "onnxruntime", "openvino"]
# Peers whose threads are OpenMP's.
OPENMP_PEERS = {"onednn", "torch-mha", "pypi-torch-mha", "pypi-torch-sdpa"}
# Contenders that have no bf16 layer.
F32_ONLY = {"mhac-halide", "openblas", "onnxruntime"}


def flops(b, s, d, h, causal):
    attention = 4 * b * h * s * s * (d // h)
    return 4 * 2 * b * s * d * d + (attention / 2 if causal else attention)


def gflops(shape, ms):
    """GFLOP/s of one call of the layer `shape` that took `ms` milliseconds."""
    return flops(*shape) / (ms * 1e-3) * 1e-9


def layer_name(b, s, d, h, causal):
    return "b%d_s%d_d%d_h%d%s" % (b, s, d, h, "_causal" if causal else "")


def command(peer, shape, threads, calls, args):
    b, s, d, h, causal = shape
    if peer in ("mhac", "mhac-halide"):
        suffix = ".halide.so" if peer == "mhac-halide" else ".bf16.so" if args.dtype == "bf16" else ".so"
        module = os.path.join(args.modules, layer_name(*shape) + suffix)
        return [args.mha_run, module, "--bench", str(calls), "--threads", str(threads)]
    if peer in ("openblas", "onednn"):
        return [os.path.join(args.peers_dir, peer + "_mha"), str(b), str(s), str(d), str(h),
                str(int(causal)), str(calls), args.dtype]
    # Debian's PyTorch 1.13 (torch-mha) or PyPI's (pypi-torch-*), in their own environments.
    python = args.python
    if peer.startswith("pypi-"):
        python, peer = args.torch_python, peer[len("pypi-"):]
    return [python, os.path.join(os.path.dirname(__file__), "peers", "python_peers.py"),
            peer, str(b), str(s), str(d), str(h), str(int(causal)), str(threads), str(calls),
            args.dtype]


def openblas_coretype():
    """The OpenBLAS kernels for this CPU: Debian's OpenBLAS detected a Sapphire Rapids Xeon as
    Prescott (4-5x slower); forcing AVX-512 kernels on a CPU without AVX-512 would crash."""
    with open("/proc/cpuinfo") as cpuinfo:
        info = cpuinfo.read()
    flags = set(re.search(r"^flags\s*:(.*)$", info, re.M).group(1).split())
    if "avx512f" in flags:
        return "Cooperlake" if "avx512_bf16" in flags else "SkylakeX"
    if "avx2" in flags:
        return "Zen" if "AuthenticAMD" in info else "Haswell"
    return None


OPENBLAS_CORETYPE = openblas_coretype()


def environment(threads, wait_policy):
    env = dict(os.environ)
    env.update({
        "OMP_NUM_THREADS": str(threads),
        "OMP_WAIT_POLICY": wait_policy,
        "OPENBLAS_NUM_THREADS": str(threads),
        "MHAC_NUM_THREADS": str(threads),
    })
    if OPENBLAS_CORETYPE:
        env["OPENBLAS_CORETYPE"] = OPENBLAS_CORETYPE
    return env


def run_with_policy(peer, shape, threads, calls, args, wait_policy):
    try:
        result = subprocess.run(command(peer, shape, threads, calls, args), capture_output=True,
                                text=True, env=environment(threads, wait_policy), timeout=600)
    except (OSError, subprocess.TimeoutExpired) as error:
        return None, str(error)
    match = re.search(r"median ([0-9.]+)", result.stdout)
    if result.returncode != 0 or not match:
        return None, (result.stderr.strip().splitlines() or ["failed"])[-1]
    return float(match.group(1)), None


def run_once(peer, shape, threads, calls, args):
    """The peer's median time at its best OpenMP wait policy, or (None, error)."""
    # On one thread there is no other thread to wait for: both policies are one configuration,
    # and the faster of two runs would be the best of two samples against mhac's one.
    policies = ["passive", "active"] if peer in OPENMP_PEERS and threads > 1 else ["passive"]
    results = [run_with_policy(peer, shape, threads, calls, args, p) for p in policies]
    times = [ms for ms, _ in results if ms is not None]
    if not times:
        return None, results[0][1]
    return min(times), None


def measure_peak(args, threads, arithmetic="f32"):
    """The peak of the f32 FMAs, of vdpbf16ps (arithmetic bf16; None without AVX512-BF16) or of
    AMX's tdpbf16ps (arithmetic amx; None without AMX)."""
    out = subprocess.run([os.path.join(args.peers_dir, "peak"), str(threads), arithmetic],
                         capture_output=True, text=True)
    if out.returncode != 0:
        return None
    return float(re.search(r"([0-9.]+) GFLOP/s", out.stdout).group(1))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--mha-run", required=True)
    p.add_argument("--modules", required=True)
    p.add_argument("--peers-dir", required=True)
    p.add_argument("--python", required=True)
    p.add_argument("--torch-python", default=sys.executable)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--calls", type=int, default=10)
    p.add_argument("--min-gflop", type=float, default=20.0)
    p.add_argument("--threads", default="1,2")
    p.add_argument("--only", default=",".join(PEERS))
    p.add_argument("--dtype", choices=["f32", "bf16"], default="f32")
    args = p.parse_args()
    peers = [peer for peer in PEERS if peer in args.only.split(",")
             and (args.dtype == "f32" or peer not in F32_ONLY)]
    thread_counts = [int(t) for t in args.threads.split(",")]

    rows = [(shape, threads) for shape in SHAPES for threads in thread_counts]
    samples = {row: {peer: [None] * args.rounds for peer in peers} for row in rows}
    peaks = {row: [None] * args.rounds for row in rows}
    # The bf16 units' own peaks, by arithmetic: vdpbf16ps ("bf16") and AMX ("amx").
    unit_peaks = {arithmetic: {row: [] for row in rows} for arithmetic in ("bf16", "amx")}
    errors = {row: {} for row in rows}
    for round in range(args.rounds):
        order = peers[round % len(peers):] + peers[:round % len(peers)]
        for row in rows:
            shape, threads = row
            peaks[row][round] = measure_peak(args, threads)
            if args.dtype == "bf16":
                for arithmetic, measured in unit_peaks.items():
                    unit = measure_peak(args, threads, arithmetic)
                    if unit:
                        measured[row].append(unit)
                        peaks[row][round] = max(peaks[row][round], unit)
            for peer in order:
                if peer in errors[row]:
                    continue
                calls = max(args.calls, math.ceil(args.min_gflop * 1e9 / flops(*shape)))
                ms, error = run_once(peer, shape, threads, calls, args)
                if ms is None:
                    errors[row][peer] = error
                else:
                    samples[row][peer][round] = ms
        print("round %d of %d done" % (round + 1, args.rounds), file=sys.stderr, flush=True)

    for threads in thread_counts:
        measured = sorted(p for row in rows if row[1] == threads for p in peaks[row])
        print("Measured %s peak on %d thread%s: median %.0f GFLOP/s (%.0f-%.0f over the run)"
              % ("f32 FMA" if args.dtype == "f32"
                 else "bf16 (the fastest of FMA, vdpbf16ps and AMX)",
                 threads, "s" if threads > 1 else "", statistics.median(measured), measured[0],
                 measured[-1]))
        for arithmetic, unit in (("bf16", "vdpbf16ps"), ("amx", "AMX")):
            alone = [p for row in rows if row[1] == threads for p in unit_peaks[arithmetic][row]]
            if alone:
                print("  %s alone: median %.0f GFLOP/s" % (unit, statistics.median(alone)))
    print()
    print("| B, S, D, H | threads | contender | median ms | GFLOP/s | of peak | best peer / mhac |")
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        shape, threads = row
        measured = {peer: [ms for ms in v if ms is not None] for peer, v in samples[row].items()}
        medians = {peer: statistics.median(v) for peer, v in measured.items() if v}
        peer_medians = {peer: ms for peer, ms in medians.items() if not peer.startswith("mhac")}
        best_peer = min(peer_medians, key=peer_medians.get) if peer_medians else None
        ratio = ""
        if best_peer and "mhac" in medians:
            paired = [theirs / ours for theirs, ours
                      in zip(samples[row][best_peer], samples[row]["mhac"])
                      if theirs is not None and ours is not None]
            ratio = "%.2f (%s)" % (statistics.median(paired), best_peer) if paired else ""
        # The Halide backend's speed against the MLIR backend's, paired the same way.
        halide_ratio = ""
        if "mhac" in medians and "mhac-halide" in medians:
            paired = [mlir / halide for mlir, halide
                      in zip(samples[row]["mhac"], samples[row]["mhac-halide"])
                      if mlir is not None and halide is not None]
            halide_ratio = "%.2f of mhac's speed" % statistics.median(paired) if paired else ""
        b, s, d, h, causal = shape
        label = "%d, %d, %d, %d%s" % (b, s, d, h, " causal" if causal else "")
        for peer in peers:
            if peer not in medians:
                print("| %s | %d | %s | n/a (%s) | | | |" % (label, threads, peer,
                                                          errors[row].get(peer, "no result")[:60]))
                continue
            ms = medians[peer]
            of_peak = statistics.median(gflops(shape, ours) / peak
                                        for ours, peak in zip(samples[row][peer], peaks[row])
                                        if ours is not None)
            print("| %s | %d | %s | %.2f | %.1f | %.0f%% | %s |" % (
                label, threads, peer, ms, gflops(shape, ms), 100 * of_peak,
                ratio if peer == "mhac" else halide_ratio if peer == "mhac-halide" else ""))


if __name__ == "__main__":
    main()
