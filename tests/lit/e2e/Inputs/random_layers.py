"""Writes random layers of every kind the language allows (tests/lit/e2e/random-layers.test).

usage: random_layers.py SEED COUNT LAYERS.mha [--decoder]

Unlike random_bf16_layers.py, nothing is drawn to suit a kernel: f32 or bf16, heads of any
width (odd ones too), model widths a few features past a whole number of vectors (the rows
whose last vector holds one feature once met a back-end bug), grouped queries, causal,
cross-attention with its own key width, kv_lens, projections without bias, and sequences of 1
to 130 rows. With --decoder, self-attention layers with random decoder keys instead (rope of
either layout, partial, with any scaling; q/k norm, windows, softcap, sinks, KV caches of odd
capacities, causal or not), and LAYERS.mha.calls gets one line per layer: its name and the
mha-run sizes of a call (rows of different cache lengths).
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


def rope_lines(head, rng):
    lines = [f"  rope      = {rng.choice(['half', 'interleaved'])}",
             f"  rope_base = {rng.choice([10000.0, 500000.0, 1e6])}"]
    if head % 2 or rng.random() < 0.3:
        lines.append(f"  rope_dim  = {2 * rng.randint(1, head // 2)}")
    scaling = rng.choice(["none", "none", "linear", "llama3", "yarn"])
    if scaling != "none":
        lines += [f"  rope_scaling = {scaling}", f"  rope_factor = {rng.choice([2.0, 8.0, 32.0])}"]
    if scaling == "llama3":
        lines += ["  rope_low_freq_factor = 1.0", "  rope_high_freq_factor = 4.0",
                  f"  rope_original_max = {rng.choice([16, 64, 8192])}"]
    if scaling == "yarn":
        lines.append(f"  rope_original_max = {rng.choice([16, 64, 4096])}")
        if rng.random() < 0.5:
            lines.append(f"  rope_truncate = {rng.choice(['true', 'false'])}")
    return lines


def decoder_layer(name, rng):
    """A self-attention layer with random decoder keys, and the mha-run sizes of one call."""
    head = rng.choice([2, 7, 8, 16, 20, 33, 64, 128])
    kv_heads = rng.choice([1, 2, 3])
    heads = kv_heads * rng.choice([1, 2, 4])
    model = rng.choice([heads * head, 16 * rng.randint(1, 12) + rng.choice([0, 1, 9])])
    batch, seq = rng.choice([1, 2, 3]), rng.choice([1, 1, 2, 5, 17, 40])
    lines = [f"layer {name} {{", f"  model_dim = {model}", f"  heads     = {heads}",
             f"  head_dim  = {head}", f"  kv_heads  = {kv_heads}", "  seq       = ?",
             "  batch     = ?", f"  dtype     = {rng.choice(['f32', 'bf16'])}"]
    if rng.random() < 0.3:
        lines.append("  bias      = false")
    if rng.random() < 0.8:
        lines += rope_lines(head, rng)
    if rng.random() < 0.4:
        lines.append("  qk_norm   = rms")
    if rng.random() < 0.4:
        lines.append(f"  window    = {rng.choice([1, 3, 16, 33])}")
    if rng.random() < 0.3:
        lines.append(f"  softcap   = {rng.choice([5.0, 30.0, 50.0])}")
    if rng.random() < 0.3:
        lines.append("  sinks     = true")
    sizes = ["--batch", str(batch), "--seq", str(seq)]
    if rng.random() < 0.7:
        capacity = seq + rng.choice([0, 3, 40, 130])
        lines.append(f"  kv_cache  = {capacity}")
        if rng.random() < 0.2:
            lines.append("  causal    = false")
        lengths = [rng.randint(0, capacity - seq) for _ in range(batch)]
        sizes += ["--cache-len", ",".join(map(str, lengths))]
    else:
        lines.append(f"  causal    = {rng.choice(['true', 'false'])}")
    return "\n".join(lines + ["}"]), f"{name} {' '.join(sizes)}"


def main(seed, count, layers_path, *options):
    rng = random.Random(int(seed))
    if "--decoder" not in options:
        with open(layers_path, "w") as out:
            out.write("\n\n".join(layer(f"r{i}", rng) for i in range(int(count))) + "\n")
        return
    drawn = [decoder_layer(f"d{i}", rng) for i in range(int(count))]
    with open(layers_path, "w") as out:
        out.write("\n\n".join(text for text, _ in drawn) + "\n")
    with open(layers_path + ".calls", "w") as out:
        out.write("".join(call + "\n" for _, call in drawn))


main(*sys.argv[1:])
