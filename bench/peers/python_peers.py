"""Times one multi-head attention layer in a Python framework: PyTorch's nn.MultiheadAttention
(eval, no_grad, need_weights=False: its fast path), the same weights through one fused in-projection
F.linear, scaled_dot_product_attention and the out-projection F.linear (torch-sdpa, PyTorch 2),
and the module exported to ONNX and run by ONNX Runtime and by OpenVINO.

usage: python_peers.py PEER B S D H CAUSAL THREADS CALLS [f32|bf16]     prints "median MS"
PEER: torch-mha | torch-sdpa | onnxruntime | openvino

With bf16, PyTorch's module, weights and input are bf16 (its bf16 kernels: oneDNN's on CPUs
with AVX512-BF16 or AMX); OpenVINO runs the f32 graph with a bf16 inference precision; ONNX
Runtime's CPU provider has no bf16 attention and is not a bf16 peer.
"""
import os
import statistics
import sys
import tempfile
import time


def main():
    peer = sys.argv[1]
    b, s, d, h, causal, threads, calls = (int(a) for a in sys.argv[2:9])
    bf16 = len(sys.argv) > 9 and sys.argv[9] == "bf16"
    if bf16 and peer == "onnxruntime":
        sys.exit("ONNX Runtime's CPU provider has no bf16 attention")
    import torch

    torch.manual_seed(0)
    torch.set_num_threads(threads)
    mha = torch.nn.MultiheadAttention(d, h, batch_first=True).eval()
    x = torch.rand(b, s, d) * 2 - 1
    if bf16 and peer.startswith("torch"):
        mha, x = mha.to(torch.bfloat16), x.to(torch.bfloat16)
    mask = torch.triu(torch.ones(s, s, dtype=torch.bool), 1) if causal else None

    if peer == "torch-mha":
        def call():
            with torch.no_grad():
                mha(x, x, x, attn_mask=mask, need_weights=False)
    elif peer == "torch-sdpa":
        functional = torch.nn.functional
        dh = d // h

        def call():
            with torch.inference_mode():
                qkv = functional.linear(x, mha.in_proj_weight, mha.in_proj_bias)
                q, k, v = (t.view(b, s, h, dh).transpose(1, 2) for t in qkv.chunk(3, dim=-1))
                a = functional.scaled_dot_product_attention(q, k, v, is_causal=bool(causal))
                functional.linear(a.transpose(1, 2).reshape(b, s, d), mha.out_proj.weight,
                                  mha.out_proj.bias)
    else:
        class Layer(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.mha = mha

            def forward(self, x):
                return self.mha(x, x, x, attn_mask=mask, need_weights=False)[0]

        path = os.path.join(tempfile.mkdtemp(), "mha.onnx")
        # Exported in training mode (dropout is 0): the eval-mode fast path is a fused op that
        # has no ONNX form; the exported graph computes the same function.
        layer = Layer().train()
        with torch.no_grad():
            torch.onnx.export(layer, (x,), path, input_names=["x"], output_names=["out"],
                              opset_version=14, training=torch.onnx.TrainingMode.PRESERVE)
        feed = x.numpy()
        if peer == "onnxruntime":
            import onnxruntime as ort
            options = ort.SessionOptions()
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
            session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
            call = lambda: session.run(None, {"x": feed})
        elif peer == "openvino":
            import openvino as ov
            core = ov.Core()
            compiled = core.compile_model(core.read_model(path), "CPU",
                                          {"INFERENCE_NUM_THREADS": threads,
                                           "PERFORMANCE_HINT": "LATENCY",
                                           # As asked: on AMX machines OpenVINO would
                                           # otherwise compute an f32 model in bf16.
                                           "INFERENCE_PRECISION_HINT": "bf16" if bf16 else "f32"})
            request = compiled.create_infer_request()
            call = lambda: request.infer({"x": feed})
        else:
            sys.exit("unknown peer " + peer)

    call()
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    print("median %.4f" % (statistics.median(times) * 1e3))


if __name__ == "__main__":
    main()
