"""Writes random bf16 layers and a schedule for them (tests/lit/e2e/random-bf16.test).

usage: random_bf16_layers.py SEED COUNT LAYERS.mha SCHEDULE.sched

The layers are drawn from what real models use, small enough to compile quickly: heads of
16 to 128 features (multiples of 16, so that attention takes the bf16 kernels where it can),
1 to 4 key/value heads in groups of 1 to 7 query heads, causal or not, cross-attention,
projections with and without bias, and sequence lengths that are no whole number of any
block. The schedule splits every reduction into blocks of 256 pairs or features, the knob
whose interplay with AMX's panels once made a layer fail to compile.
"""
import random
import sys


def layer(name, rng):
    head = rng.choice([16, 32, 48, 64, 80, 96, 112, 128])
    kv_heads = rng.choice([1, 2, 3, 4])
    heads = kv_heads * rng.choice([1, 2, 3, 4, 7])
    model = (heads * head + 31) // 32 * 32
    lines = [f"layer {name} {{", f"  model_dim = {model}", f"  heads     = {heads}",
             f"  head_dim  = {head}", f"  kv_heads  = {kv_heads}",
             f"  seq       = {rng.choice([1, 5, 17, 33, 61, 97, 130])}",
             f"  batch     = {rng.choice([1, 2, 3])}", "  dtype     = bf16"]
    shape = rng.random()
    if shape < 0.4:
        lines.append("  causal    = true")
    elif shape < 0.6:
        lines += ["  cross     = true", f"  kv_seq    = {rng.choice([7, 50, 129])}",
                  f"  kv_dim    = {rng.choice([64, 96, 128, 256])}"]
    if rng.random() < 0.3:
        lines.append("  bias      = false")
    return "\n".join(lines + ["}"])


def main(seed, count, layers_path, schedule_path):
    rng = random.Random(int(seed))
    names = [f"r{i}" for i in range(int(count))]
    with open(layers_path, "w") as out:
        out.write("\n\n".join(layer(name, rng) for name in names) + "\n")
    with open(schedule_path, "w") as out:
        out.write("format = 1\n")
        for name in names:
            out.write(f"layer {name} {{\n  projection_panel_reduction_block = 256\n}}\n")


main(*sys.argv[1:])
