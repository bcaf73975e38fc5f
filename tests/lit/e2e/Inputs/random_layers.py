"""Writes random layers of every kind the language allows (tests/lit/e2e/random-layers.test).

usage: random_layers.py SEED COUNT LAYERS.mha

Unlike random_bf16_layers.py, nothing is drawn to suit a kernel: f32 or bf16, heads of any
width (odd ones too), model widths a few features past a whole number of vectors (the rows
whose last vector holds one feature once met a back-end bug), grouped queries, causal,
cross-attention with its own key width, kv_lens, projections without bias, and sequences of 1
to 130 rows.
"""
import random
import sys


def layer(name, rng):
    head = rng.choice([2, 8, 9, 16, 24, 33, 40, 50, 64, 72, 80, 96, 112, 128, 144])
    kv_heads = rng.choice([1, 2, 3])
    heads = kv_heads * rng.choice([1, 2, 3, 5])
    model = rng.choice([heads * head, 16 * rng.randint(1, 24) + rng.choice([1, 2, 7, 9, 15])])
    lines = [f"layer {name} {{", f"  model_dim = {model}", f"  heads     = {heads}",
             f"  head_dim  = {head}", f"  kv_heads  = {kv_heads}",
             f"  seq       = {rng.choice([1, 2, 7, 16, 31, 33, 64, 100, 130])}",
             f"  batch     = {rng.choice([1, 2, 3, 5])}",
             f"  dtype     = {rng.choice(['f32', 'bf16'])}"]
    shape = rng.random()
    if shape < 0.3:
        lines.append("  causal    = true")
    elif shape < 0.55:
        lines += ["  cross     = true", f"  kv_seq    = {rng.choice([1, 5, 77, 129])}",
                  f"  kv_dim    = {rng.choice([model, rng.randint(8, 300)])}"]
    if rng.random() < 0.3:
        lines.append("  kv_lens   = true")
    if rng.random() < 0.3:
        lines.append("  bias      = false")
    return "\n".join(lines + ["}"])


def main(seed, count, layers_path):
    rng = random.Random(int(seed))
    with open(layers_path, "w") as out:
        out.write("\n\n".join(layer(f"r{i}", rng) for i in range(int(count))) + "\n")


main(*sys.argv[1:])
