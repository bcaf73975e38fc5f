"""Compiles the layers of random-layers.mha with random legal schedules and checks each one.

usage: random-schedules.py WORKDIR --bin DIR --target T --count N [--emulate-amx]
                           [--first-seed S]

For each seed, schedule-sampler draws a legal schedule for every layer from the constraint
table of target T; mhac compiles the module with it (--emulate-amx: T, with AVX512-BF16, taken
as a CPU with AMX whose tiles are written as vector code, so that AMX's knobs are drawn and run
here); mha-run checks every layer against the float64 reference and runs it on the same files
with 1 and 2 threads, whose outputs must be the same bytes. With the MLIR backend, the decoder
layers of random-decoder-layers.mha get schedules too, each checked on a prefill and on decode
steps of rows with different cache lengths. Prints one line per seed and exits 1 at the first
failure, naming the seed and keeping its schedule file. CI runs a few seeds; the slow tier (scripts/test.sh --slow) forty more per target.
"""
import argparse
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

# make-tensors.py arguments and mha-run sizes of each layer of random-layers.mha.
LAYERS = {
    "odd_self": (["--model-dim", "72", "--heads", "3", "--batch", "3", "--seq", "19"],
                 ["--batch", "3", "--seq", "19"]),
    "gqa_causal": (["--model-dim", "512", "--heads", "8", "--kv-heads", "4", "--batch", "2",
                    "--seq", "37"], []),
    "cross_masked": (["--model-dim", "64", "--heads", "2", "--head-dim", "40", "--batch", "2",
                      "--seq", "11", "--cross", "--kv-seq", "29", "--kv-dim", "48", "--no-bias",
                      "--kv-lens", "29,7"], []),
    "bf16_self": (["--model-dim", "96", "--heads", "2", "--batch", "2", "--seq", "21"], []),
}

# mha-run --check calls of each layer of random-decoder-layers.mha.
DECODER_LAYERS = {
    "decoder_f32": [["--batch", "2", "--seq", "17", "--cache-len", "0,5"],
                    ["--batch", "3", "--seq", "1", "--cache-len", "0,13,47"]],
    "decoder_bf16": [["--seq", "11", "--cache-len", "29,0"],
                     ["--seq", "1", "--cache-len", "39,2"]],
}


def run(command, **kwargs):
    result = subprocess.run(command, capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        raise RuntimeError("%s failed (%d):\n%s%s" % (" ".join(command), result.returncode,
                                                      result.stdout, result.stderr))
    return result.stdout


def check_seed(args, seed):
    tools = {name: os.path.join(args.bin, name) for name in ("mhac", "mha-run", "schedule-sampler")}
    layers = os.path.join(HERE, "random-layers.mha")
    schedule = os.path.join(args.workdir, "seed-%d.sched" % seed)
    emulate = ["--emulate-amx"] if args.emulate_amx else []
    with open(schedule, "w") as f:
        f.write(run([tools["schedule-sampler"], layers, "--target", args.target,
                     "--seed", str(seed), "--backend", args.backend] + emulate))
    module = os.path.join(args.workdir, "seed-%d" % seed)
    run([tools["mhac"], "compile", layers, "--target", args.target, "--schedule", schedule,
         "--backend", args.backend, "--shared", "-o", module] + emulate)
    for name, (tensors, sizes) in LAYERS.items():
        run([tools["mha-run"], module + ".so", "--layer", name, "--check"] + sizes)
        data = os.path.join(args.workdir, name)
        files = ["--weights", os.path.join(data, "weights.safetensors"),
                 "--input", os.path.join(data, "x.npy")]
        if "--cross" in tensors:
            files += ["--memory", os.path.join(data, "memory.npy")]
        if "--kv-lens" in tensors:
            files += ["--kv-lens", os.path.join(data, "kv_lens.npy")]
        outputs = []
        for threads in ("1", "2"):
            out = os.path.join(args.workdir, "%s-%s.npy" % (name, threads))
            run([tools["mha-run"], module + ".so", "--layer", name, "--threads", threads,
                 "--output", out] + files)
            with open(out, "rb") as f:
                outputs.append(f.read())
        if outputs[0] != outputs[1]:
            raise RuntimeError("layer %s: 1 and 2 threads give different bits" % name)
    if args.backend == "mlir":
        check_decoder_layers(args, tools, seed, emulate)
    os.remove(schedule)


def check_decoder_layers(args, tools, seed, emulate):
    layers = os.path.join(HERE, "random-decoder-layers.mha")
    schedule = os.path.join(args.workdir, "decoder-seed-%d.sched" % seed)
    with open(schedule, "w") as f:
        f.write(run([tools["schedule-sampler"], layers, "--target", args.target,
                     "--seed", str(seed)] + emulate))
    module = os.path.join(args.workdir, "decoder-seed-%d" % seed)
    run([tools["mhac"], "compile", layers, "--target", args.target, "--schedule", schedule,
         "--shared", "-o", module] + emulate)
    for name, calls in DECODER_LAYERS.items():
        for sizes in calls:
            run([tools["mha-run"], module + ".so", "--layer", name, "--check"] + sizes)
    os.remove(schedule)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("workdir")
    parser.add_argument("--bin", required=True)
    parser.add_argument("--target", required=True)
    parser.add_argument("--count", type=int, required=True)
    parser.add_argument("--backend", default="mlir", choices=["mlir", "halide"])
    parser.add_argument("--first-seed", type=int, default=1)
    parser.add_argument("--emulate-amx", action="store_true")
    args = parser.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    for name, (tensors, _) in LAYERS.items():
        run([sys.executable, os.path.join(HERE, "..", "..", "Inputs", "make-tensors.py"),
             os.path.join(args.workdir, name)] + tensors)
    for seed in range(args.first_seed, args.first_seed + args.count):
        try:
            check_seed(args, seed)
        except RuntimeError as error:
            print("seed %d: FAILED\n%s" % (seed, error))
            return 1
        print("seed %d: ok" % seed)
    print("%d random schedules passed" % args.count)
    return 0


if __name__ == "__main__":
    sys.exit(main())
