"""Decoder layers through mha-run's files against the NumPy reference (tests/lit/Inputs/
decoder_reference.py), which shares no code with mhac's C++ reference.

usage: decoder_check.py reference MHA_RUN MODULE.so LAYERS.mha WORKDIR
       decoder_check.py steps MHA_RUN MODULE.so LAYERS.mha WORKDIR LAYER TOKENS CHUNK

`reference`: for every layer, random weights and inputs (and caches, with rows of different
lengths), one call through mha-run --weights/--input/--k-cache/--v-cache/--cache-len with
--reference: mhac's float64 reference must match NumPy's (1e-6), the layer's output must match
it within the dtype's tolerance, the cache rows the call wrote must hold NumPy's new keys and
values, and every other cache element must keep its bits. Layers whose names differ only in a
_half / _interleaved suffix get the same weights and inputs, and must differ from each other.

`steps`: LAYER (with a cache) run on TOKENS tokens three ways, each call through mha-run's
files, the caches carried from call to call: one prefill, TOKENS one-token decode steps, and a
prefill in chunks of CHUNK; outputs and caches must agree within the dtype's tolerance.
"""
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "Inputs"))
import decoder_reference  # noqa: E402
from numpy_tensors import bf16, write_safetensors  # noqa: E402

TOLERANCE = {"f32": 1e-4, "bf16": 2e-2}


def relative(got, want):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if not np.all(np.isfinite(got)):
        return float("inf")
    scale = np.abs(want).max()
    return float(np.abs(got - want).max() / (scale if scale > 0 else 1))


def make_weights(spec, rng):
    d, h, hkv, dh = spec["model_dim"], spec["heads"], spec["kv_heads"], spec["head_dim"]
    round_ = bf16 if spec["dtype"] == "bf16" else (lambda a: np.asarray(a, np.float32))

    def uniform(shape, bound):
        return round_(rng.uniform(-bound, bound, shape))

    w = {}
    for name, out, inp in (("q_proj", h * dh, d), ("k_proj", hkv * dh, d),
                           ("v_proj", hkv * dh, d), ("o_proj", d, h * dh)):
        w[f"{name}.weight"] = uniform((out, inp), inp ** -0.5)
        if spec["bias"]:
            w[f"{name}.bias"] = uniform((out,), inp ** -0.5)
    if spec["qk_norm"]:
        w["q_norm.weight"] = round_(1 + rng.uniform(-0.5, 0.5, dh))
        w["k_norm.weight"] = round_(1 + rng.uniform(-0.5, 0.5, dh))
    if spec["sinks"]:
        w["sinks"] = uniform((h,), 2.0)
    return w, round_


def run(command):
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"{' '.join(command)} failed:\n{result.stderr}")
    return result.stdout


def call(mha_run, module, name, spec, folder, x, weights_path, caches, cache_len):
    """One call through mha-run's files: returns (output, reference, caches after)."""
    np.save(os.path.join(folder, "x.npy"), np.asarray(x, np.float32))
    command = [mha_run, module, "--layer", name, "--weights", weights_path,
               "--input", os.path.join(folder, "x.npy"),
               "--output", os.path.join(folder, "y.npy"),
               "--reference", os.path.join(folder, "r.npy")]
    if spec["kv_cache"]:
        for which, cache in zip("kv", caches):
            np.save(os.path.join(folder, f"{which}.npy"), np.asarray(cache, np.float32))
        np.save(os.path.join(folder, "len.npy"), np.asarray(cache_len, np.int32))
        command += ["--k-cache", os.path.join(folder, "k.npy"),
                    "--v-cache", os.path.join(folder, "v.npy"),
                    "--cache-len", os.path.join(folder, "len.npy")]
    run(command)
    after = [np.load(os.path.join(folder, f"{w}.npy")) for w in "kv"] if spec["kv_cache"] else None
    return (np.load(os.path.join(folder, "y.npy")), np.load(os.path.join(folder, "r.npy")), after)


def random_cache(spec, batch, seq, rng, round_):
    """Caches with rows of different lengths: row b holds lengths[b] past tokens."""
    n, hkv, dh = spec["kv_cache"], spec["kv_heads"], spec["head_dim"]
    room = n - seq
    lengths = [0, room, rng.integers(0, room + 1)][:batch] + [
        int(rng.integers(0, room + 1)) for _ in range(max(0, batch - 3))]
    caches = [round_(rng.uniform(-1, 1, (batch, n, hkv, dh))) for _ in range(2)]
    return caches, np.asarray(lengths, np.int32)


def check_reference(mha_run, module, layers_path, work):
    with open(layers_path) as f:
        layers = decoder_reference.parse_layers(f.read())
    outputs, failed = {}, 0
    for name, spec in layers.items():
        folder = os.path.join(work, name)
        os.makedirs(folder, exist_ok=True)
        # The two rope kinds of one layer share their data.
        base = name.replace("_interleaved", "").replace("_half", "")
        rng = np.random.default_rng(sum(map(ord, base)))
        w, round_ = make_weights(spec, rng)
        weights_path = os.path.join(folder, "weights.safetensors")
        write_safetensors(weights_path, w)
        batch, seq = 3, 11
        x = round_(rng.uniform(-1, 1, (batch, seq, spec["model_dim"])))
        caches, lengths = (random_cache(spec, batch, seq, rng, round_) if spec["kv_cache"]
                           else (None, None))
        got, ref, after = call(mha_run, module, name, spec, folder, x, weights_path, caches,
                               lengths)
        want, new_k, new_v = decoder_reference.layer(spec, w, x, *(caches or (None, None)),
                                                     cache_len=lengths)
        tolerance = TOLERANCE[spec["dtype"]]
        errors = {"reference": relative(ref, want), "output": relative(got, want)}
        ok = errors["reference"] <= 1e-6 and errors["output"] <= tolerance
        if spec["kv_cache"]:
            for which, before, written, new in zip("kv", caches, after, (new_k, new_v)):
                rows = np.stack([written[b, lengths[b]:lengths[b] + seq] for b in range(batch)])
                errors[f"{which}_rows"] = relative(rows, new)
                ok = ok and errors[f"{which}_rows"] <= tolerance
                untouched = before.copy()
                for b in range(batch):
                    untouched[b, lengths[b]:lengths[b] + seq] = written[b, lengths[b]:lengths[b] + seq]
                if untouched.tobytes() != written.tobytes():
                    errors[f"{which}_others"] = "changed"
                    ok = False
        outputs[name] = want
        print(f"{name}: " + ", ".join(f"{k} {v:.2g}" if isinstance(v, float) else f"{k} {v}"
                                      for k, v in errors.items()) + (": ok" if ok else ": FAILED"))
        failed += not ok
    for name in outputs:
        if name.endswith("_half") and name.replace("_half", "_interleaved") in outputs:
            other = name.replace("_half", "_interleaved")
            differ = relative(outputs[other], outputs[name]) > 1e-3
            print(f"{name} and {other} differ: {differ}")
            failed += not differ
    print(f"{len(layers)} layers, {failed} failed")


def check_steps(mha_run, module, layers_path, work, name, tokens, chunk):
    with open(layers_path) as f:
        spec = decoder_reference.parse_layers(f.read())[name]
    tokens, chunk = int(tokens), int(chunk)
    rng = np.random.default_rng(7)
    w, round_ = make_weights(spec, rng)
    os.makedirs(work, exist_ok=True)
    weights_path = os.path.join(work, "weights.safetensors")
    write_safetensors(weights_path, w)
    batch, n = 2, spec["kv_cache"]
    x = round_(rng.uniform(-1, 1, (batch, tokens, spec["model_dim"])))

    def generate(step):
        caches = [np.zeros((batch, n, spec["kv_heads"], spec["head_dim"]), np.float32)] * 2
        lengths = np.zeros(batch, np.int32)
        outs = []
        for start in range(0, tokens, step):
            got, _, caches = call(mha_run, module, name, spec, work, x[:, start:start + step],
                                  weights_path, caches, lengths)
            outs.append(got)
            lengths = lengths + got.shape[1]
        return np.concatenate(outs, axis=1), caches

    prefill, prefill_caches = generate(tokens)
    tolerance = TOLERANCE[spec["dtype"]]
    for label, step in (("decode steps", 1), (f"chunks of {chunk}", chunk)):
        out, caches = generate(step)
        error = relative(out, prefill)
        cache_error = max(relative(c[:, :tokens], p[:, :tokens])
                          for c, p in zip(caches, prefill_caches))
        ok = error <= tolerance and cache_error <= tolerance
        print(f"{name}: {tokens} tokens in {label} against one prefill: output {error:.2g}, "
              f"caches {cache_error:.2g}: {'ok' if ok else 'FAILED'}")


if sys.argv[1] == "reference":
    check_reference(*sys.argv[2:])
else:
    check_steps(*sys.argv[2:])
