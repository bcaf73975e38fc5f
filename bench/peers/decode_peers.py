"""Decode steps of one decoder layer in its peers, each checked against mhac's output before it
is timed: a step is one new token a row (its q/k/v projections, rope, the cache write, attention
over the cache, the output projection), as production runtimes compute it.

- torch: PyTorch 2 with a static cache ([B, Hkv, capacity, Dh], written in place at each row's
  position, Hugging Face's StaticCache layout) and its rotary embedding (cos and sin tables
  computed once, per model); attention by F.scaled_dot_product_attention (enable_gqa; a boolean
  mask where rows have different lengths or a window), or, for softcap and sinks, which SDPA has
  not, in grouped eager matmuls as Hugging Face's eager attention computes them.
- onnxruntime: ONNX Runtime's com.microsoft GroupQueryAttention (the op of production LLM
  exports: rotary inside, past and present caches in one shared buffer bound in place through
  IOBinding, per-row seqlens_k, local_window_size, softcap, head_sink), between MatMul
  projections. f32 only: its CPU kernels have no bf16.
- openvino: the same ONNX graph read by OpenVINO, where its ONNX front end takes
  GroupQueryAttention (it lowers it to its own SDPA with the cache).

usage: decode_peers.py --mha-run BIN --module X.so --layers X.mha --layer NAME --dtype f32|bf16
                       --cache-lens L[,L...] --threads N --calls C --work DIR
                       [--peers torch,onnxruntime,openvino]
prints one line per peer: "PEER: median MS (error E)" or "PEER: n/a (reason)".

The check runs each peer and mha-run on the same weights, token and caches (a row of
min(L, max(4200, 2 W)) past tokens -- twice the window W, if any -- and, for batches, a second
of 37);
a peer whose output differs from mhac's by more than the dtype's tolerance is reported, not timed.
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "lit", "Inputs"))
import decoder_reference  # noqa: E402  (the Python reading of the language's decoder keys)
from numpy_tensors import bf16, write_safetensors  # noqa: E402

TOLERANCE = {"f32": 2e-3, "bf16": 3e-2}


def make_weights(spec, rng):
    d, h, hkv, dh = spec["model_dim"], spec["heads"], spec["kv_heads"], spec["head_dim"]
    w = {}
    for name, out, inp in (("q_proj", h * dh, d), ("k_proj", hkv * dh, d),
                           ("v_proj", hkv * dh, d), ("o_proj", d, h * dh)):
        w[f"{name}.weight"] = rng.uniform(-1, 1, (out, inp)).astype(np.float32) * inp ** -0.5
        if spec["bias"]:
            w[f"{name}.bias"] = rng.uniform(-0.1, 0.1, out).astype(np.float32)
    if spec["qk_norm"]:
        w["q_norm.weight"] = rng.uniform(0.5, 1.5, dh).astype(np.float32)
        w["k_norm.weight"] = rng.uniform(0.5, 1.5, dh).astype(np.float32)
    if spec["sinks"]:
        w["sinks"] = rng.uniform(-2, 2, h).astype(np.float32)
    if spec["dtype"] == "bf16":
        w = {name: bf16(t) for name, t in w.items()}
    return w


def step_inputs(spec, lens, rng, capacity):
    """A token per row and caches [B, capacity, Hkv, Dh] (mhac's layout) whose rows below
    lens[b] are row b's past."""
    b, d, hkv, dh = len(lens), spec["model_dim"], spec["kv_heads"], spec["head_dim"]
    round_ = bf16 if spec["dtype"] == "bf16" else (lambda a: a)
    x = round_(rng.uniform(-1, 1, (b, 1, d)).astype(np.float32))
    caches = [np.zeros((b, capacity, hkv, dh), np.float32) for _ in "kv"]
    for cache in caches:
        for row, n in enumerate(lens):
            cache[row, :n] = round_(rng.uniform(-1, 1, (n, hkv, dh)).astype(np.float32))
    return x, caches


def mhac_output(args, spec, w, x, caches, lens):
    """The layer's output through mha-run's files (caches padded to the layer's capacity)."""
    os.makedirs(args.work, exist_ok=True)
    path = lambda name: os.path.join(args.work, name)
    write_safetensors(path("w.safetensors"), w)
    np.save(path("x.npy"), x)
    for which, cache in zip("kv", caches):
        full = np.zeros((cache.shape[0], spec["kv_cache"]) + cache.shape[2:], np.float32)
        full[:, : cache.shape[1]] = cache
        np.save(path(f"{which}.npy"), full)
    np.save(path("len.npy"), np.asarray(lens, np.int32))
    subprocess.run([args.mha_run, args.module, "--layer", args.layer, "--threads",
                    str(args.threads), "--weights", path("w.safetensors"), "--input", path("x.npy"),
                    "--output", path("y.npy"), "--k-cache", path("k.npy"), "--v-cache",
                    path("v.npy"), "--cache-len", path("len.npy")], check=True)
    return np.load(path("y.npy"))


def rope_tables(spec, capacity):
    """cos and sin [capacity, rope_dim / 2] (the attention factor folded in)."""
    inverse, attention = decoder_reference.frequencies(spec)
    angles = np.arange(capacity, dtype=np.float64)[:, None] * inverse
    return ((np.cos(angles) * attention).astype(np.float32),
            (np.sin(angles) * attention).astype(np.float32))


def torch_peer(spec, w, x, caches, lens, threads):
    """A step function in PyTorch 2 over its own static cache; returns step() -> output."""
    import torch
    import torch.nn.functional as F

    if not hasattr(F, "scaled_dot_product_attention"):
        raise RuntimeError(f"PyTorch {torch.__version__} has no scaled_dot_product_attention")
    torch.set_num_threads(threads)
    dtype = torch.bfloat16 if spec["dtype"] == "bf16" else torch.float32
    h, hkv, dh, rope_dim = spec["heads"], spec["kv_heads"], spec["head_dim"], spec["rope_dim"]
    group, b = h // hkv, len(lens)
    t = {name: torch.from_numpy(a).to(dtype) for name, a in w.items()}
    bias = (lambda name: t[f"{name}.bias"]) if spec["bias"] else (lambda name: None)
    x_ = torch.from_numpy(x).to(dtype)
    k_cache, v_cache = (torch.from_numpy(c).to(dtype).transpose(1, 2).contiguous() for c in caches)
    positions = torch.tensor(lens, dtype=torch.long)
    rows = torch.arange(b)
    if spec["rope"] != "none":
        cos, sin = (torch.from_numpy(a).to(dtype) for a in rope_tables(spec, k_cache.shape[2]))
        cos, sin = cos[positions][:, None, None, :], sin[positions][:, None, None, :]  # [B,1,1,r/2]
    # The keys any row sees (from the shortest row's window on); a mask where rows differ.
    longest = max(lens) + 1
    start = max(0, min(lens) + 1 - spec["window"]) if spec["window"] else 0
    visible = None
    if min(lens) != max(lens):
        j = torch.arange(start, longest)
        visible = j[None, :] <= positions[:, None]
        if spec["window"]:
            visible &= j[None, :] > positions[:, None] - spec["window"]
        visible = visible[:, None, None, :]                                  # [B, 1, 1, keys]
    eager = spec["softcap"] or spec["sinks"]

    def rotate(u):                                                           # u [B, heads, 1, Dh]
        if spec["rope"] == "half":
            x1, x2 = u[..., : rope_dim // 2], u[..., rope_dim // 2: rope_dim]
            turned = torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], -1)
        else:
            x1, x2 = u[..., 0:rope_dim:2], u[..., 1:rope_dim:2]
            turned = torch.stack([x1 * cos - x2 * sin, x2 * cos + x1 * sin], -1).flatten(-2)
        return torch.cat([turned, u[..., rope_dim:]], -1) if rope_dim < dh else turned

    def norm(u, weight):
        return (u.float() * torch.rsqrt(u.float().pow(2).mean(-1, keepdim=True)
                                        + spec["qk_norm_eps"])).to(dtype) * weight

    def step():
        with torch.inference_mode():
            q = F.linear(x_, t["q_proj.weight"], bias("q_proj")).view(b, 1, h, dh).transpose(1, 2)
            k = F.linear(x_, t["k_proj.weight"], bias("k_proj")).view(b, 1, hkv, dh).transpose(1, 2)
            v = F.linear(x_, t["v_proj.weight"], bias("v_proj")).view(b, 1, hkv, dh).transpose(1, 2)
            if spec["qk_norm"]:
                q, k = norm(q, t["q_norm.weight"]), norm(k, t["k_norm.weight"])
            if spec["rope"] != "none":
                q, k = rotate(q), rotate(k)
            k_cache[rows, :, positions] = k[:, :, 0]
            v_cache[rows, :, positions] = v[:, :, 0]
            keys, values = k_cache[:, :, start:longest], v_cache[:, :, start:longest]
            if not eager:
                a = F.scaled_dot_product_attention(q, keys, values, attn_mask=visible,
                                                   scale=spec["scale"], enable_gqa=group > 1)
            else:
                # Grouped: the G query heads of a KV head against its keys, no repeated caches.
                qg = q.view(b, hkv, group, dh)
                scores = (qg @ keys.transpose(-1, -2)).float() * spec["scale"]  # [B,Hkv,G,keys]
                if spec["softcap"]:
                    scores = spec["softcap"] * torch.tanh(scores / spec["softcap"])
                if visible is not None:
                    scores = scores.masked_fill(~visible, float("-inf"))
                if spec["sinks"]:
                    sinks = t["sinks"].float().view(1, hkv, group, 1).expand(b, -1, -1, 1)
                    scores = torch.cat([scores, sinks], -1)
                probabilities = scores.softmax(-1)[..., : keys.shape[2]].to(dtype)
                a = (probabilities @ values).view(b, h, 1, dh)
            a = a.transpose(1, 2).reshape(b, 1, h * dh)
            return F.linear(a, t["o_proj.weight"], bias("o_proj")).float().numpy()

    return step


def gqa_graph(spec, w, capacity, batch):
    """The step as an ONNX graph around com.microsoft GroupQueryAttention."""
    from onnx import TensorProto, helper, numpy_helper

    if spec["qk_norm"]:
        raise RuntimeError("GroupQueryAttention has no q/k norm")
    h, hkv, dh, d = spec["heads"], spec["kv_heads"], spec["head_dim"], spec["model_dim"]
    initializers, nodes = [], []

    def constant(name, array):
        initializers.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def project(name, source):
        out = [f"{name}_mm"]
        nodes.append(helper.make_node("MatMul", [source, constant(f"{name}_w", w[f"{name}.weight"].T)],
                                      out))
        if spec["bias"]:
            nodes.append(helper.make_node("Add", [out[0], constant(f"{name}_b", w[f"{name}.bias"])],
                                          [f"{name}_out"]))
            return f"{name}_out"
        return out[0]

    q, k, v = (project(name, "x") for name in ("q_proj", "k_proj", "v_proj"))
    attributes = {"num_heads": h, "kv_num_heads": hkv, "scale": spec["scale"]}
    inputs = [q, k, v, "past_key", "past_value", "seqlens_k", "total_sequence_length"]
    if spec["rope"] != "none":
        attributes.update(do_rotary=1, rotary_interleaved=int(spec["rope"] == "interleaved"))
        cos, sin = rope_tables(spec, capacity)
        inputs += [constant("cos_cache", cos), constant("sin_cache", sin)]
    if spec["window"]:
        attributes["local_window_size"] = spec["window"]     # its count: the query's own key too
    if spec["softcap"]:
        attributes["softcap"] = spec["softcap"]
    if spec["sinks"]:
        inputs += [""] * (11 - len(inputs)) + [constant("head_sink", w["sinks"])]
    nodes.append(helper.make_node("GroupQueryAttention", inputs,
                                  ["attention", "present_key", "present_value"],
                                  domain="com.microsoft", **attributes))
    out = project("o_proj", "attention")
    nodes.append(helper.make_node("Identity", [out], ["out"]))
    cache = [batch, hkv, capacity, dh]
    graph = helper.make_graph(
        nodes, "decode_step",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 1, d]),
         helper.make_tensor_value_info("past_key", TensorProto.FLOAT, cache),
         helper.make_tensor_value_info("past_value", TensorProto.FLOAT, cache),
         helper.make_tensor_value_info("seqlens_k", TensorProto.INT32, [batch]),
         helper.make_tensor_value_info("total_sequence_length", TensorProto.INT32, [])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [batch, 1, d]),
         helper.make_tensor_value_info("present_key", TensorProto.FLOAT, cache),
         helper.make_tensor_value_info("present_value", TensorProto.FLOAT, cache)],
        initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                   helper.make_opsetid("com.microsoft", 1)])


def onnxruntime_peer(spec, w, x, caches, lens, threads):
    import onnxruntime as ort

    if spec["dtype"] != "f32":
        raise RuntimeError("ONNX Runtime's CPU GroupQueryAttention has no bf16")
    capacity, batch = caches[0].shape[1], len(lens)
    model = gqa_graph(spec, w, capacity, batch)
    options = ort.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
    session = ort.InferenceSession(model.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    past = [ort.OrtValue.ortvalue_from_numpy(np.ascontiguousarray(c.transpose(0, 2, 1, 3)))
            for c in caches]
    binding = session.io_binding()
    binding.bind_output("out")                                                  # output 0
    binding.bind_cpu_input("x", x)
    binding.bind_cpu_input("seqlens_k", np.asarray(lens, np.int32))            # past tokens
    binding.bind_cpu_input("total_sequence_length", np.asarray(max(lens) + 1, np.int32))
    for name, value in zip(("key", "value"), past):
        binding.bind_ortvalue_input(f"past_{name}", value)
        binding.bind_ortvalue_output(f"present_{name}", value)                  # one buffer

    def step():
        session.run_with_iobinding(binding)
        return binding.get_outputs()[0].numpy()

    return step


def openvino_peer(spec, w, x, caches, lens, threads):
    import openvino as ov

    if spec["qk_norm"]:
        raise RuntimeError("GroupQueryAttention has no q/k norm")
    capacity, batch = caches[0].shape[1], len(lens)
    core = ov.Core()
    config = {"INFERENCE_NUM_THREADS": threads, "PERFORMANCE_HINT": "LATENCY",
              "INFERENCE_PRECISION_HINT": "bf16" if spec["dtype"] == "bf16" else "f32"}
    model = core.read_model(gqa_graph(spec, w, capacity, batch).SerializeToString(), b"")
    compiled = core.compile_model(model, "CPU", config)
    request = compiled.create_infer_request()
    feed = {"x": x, "past_key": np.ascontiguousarray(caches[0].transpose(0, 2, 1, 3)),
            "past_value": np.ascontiguousarray(caches[1].transpose(0, 2, 1, 3)),
            "seqlens_k": np.asarray(lens, np.int32),
            "total_sequence_length": np.asarray(max(lens) + 1, np.int32)}
    for name, value in feed.items():
        request.set_tensor(name, ov.Tensor(value))

    def step():
        request.infer()
        return request.get_tensor("out").data.copy()

    return step


PEERS = {"torch": torch_peer, "onnxruntime": onnxruntime_peer, "openvino": openvino_peer}


def relative(got, want):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if got.shape != want.shape or not np.all(np.isfinite(got)):
        return float("inf")
    return float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-30))


def main():
    parser = argparse.ArgumentParser()
    for option in ("--mha-run", "--module", "--layers", "--layer", "--work"):
        parser.add_argument(option, required=True)
    parser.add_argument("--dtype", choices=["f32", "bf16"], default="f32")
    parser.add_argument("--cache-lens", required=True)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--calls", type=int, default=10)
    parser.add_argument("--peers", default=",".join(PEERS))
    args = parser.parse_args()
    with open(args.layers) as f:
        spec = dict(decoder_reference.parse_layers(f.read())[args.layer], dtype=args.dtype)
    rng = np.random.default_rng(0)
    w = make_weights(spec, rng)
    lens = [int(n) for n in args.cache_lens.split(",")]
    # Far enough past a window for the keys it drops to matter (4200 without one).
    check_lens = [min(lens[0], max(4200, 2 * spec["window"]))] + ([37] if len(lens) > 1 else [])
    x, caches = step_inputs(spec, check_lens, rng, max(check_lens) + 1)
    want = mhac_output(args, spec, w, x, caches, check_lens)
    timed = step_inputs(spec, lens, rng, max(lens) + 1)
    for peer in args.peers.split(","):
        sys.stdout.flush()
        child = os.fork()        # a peer that crashes on a layer costs its row, not the others
        if child == 0:
            measure(peer, spec, w, (x, caches, check_lens, want), (*timed, lens), args)
            sys.stdout.flush()
            os._exit(0)
        _, status = os.waitpid(child, 0)
        if os.WIFSIGNALED(status):
            print(f"{peer}: n/a (crashed: signal {os.WTERMSIG(status)})")


def measure(peer, spec, w, check, timed, args):
    """Checks PEER against mhac's output, then times it; prints its line."""
    x, caches, check_lens, want = check
    try:
        error = relative(PEERS[peer](spec, w, x, caches, check_lens, args.threads)(), want)
        if error > TOLERANCE[args.dtype]:
            print(f"{peer}: n/a (differs from mhac by {error:.2e})")
            return
        step = PEERS[peer](spec, w, *timed, args.threads)
        step()
        times = []
        for _ in range(args.calls):
            start = time.perf_counter()
            step()
            times.append((time.perf_counter() - start) * 1e3)
        print(f"{peer}: median {statistics.median(times):.3f} (error {error:.1e})")
    except Exception as failure:  # a peer that cannot run this layer is a row's n/a
        # The last line of a chained message (OpenVINO's) says what failed.
        reason = (str(failure).strip() or type(failure).__name__).splitlines()[-1]
        print(f"{peer}: n/a ({reason[:160]})")

if __name__ == "__main__":
    main()
