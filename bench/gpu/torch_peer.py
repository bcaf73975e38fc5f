"""PyTorch's bf16 attention layer on the GPU, the peer of scripts/gpu-check.sh: the four
projections on cuBLAS (F.linear) around F.scaled_dot_product_attention (FlashAttention on
Ampere and Hopper), and nn.MultiheadAttention itself; each timed with CUDA events, median of
--calls calls after warm-up. Prints one line per shape: NAME median_ms_sdpa median_ms_module.

usage: torch_peer.py --calls N NAME:B:S:D:H:CAUSAL ...
"""
import argparse
import statistics

import torch
import torch.nn.functional as F


def median_ms(function, calls):
    for _ in range(3):
        function()
    times = []
    for _ in range(calls):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        function()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=30)
    parser.add_argument("shapes", nargs="+")
    args = parser.parse_args()
    torch.manual_seed(0)
    device, dtype = torch.device("cuda"), torch.bfloat16
    for shape in args.shapes:
        name, b, s, d, h, causal = shape.split(":")
        b, s, d, h, causal = int(b), int(s), int(d), int(h), causal == "1"
        dh = d // h
        x = torch.randn(b, s, d, device=device, dtype=dtype)
        w = [torch.randn(d, d, device=device, dtype=dtype) / d**0.5 for _ in range(4)]
        bias = [torch.randn(d, device=device, dtype=dtype) / d**0.5 for _ in range(4)]

        def sdpa():
            q, k, v = (F.linear(x, w[i], bias[i]).view(b, s, h, dh).transpose(1, 2)
                       for i in range(3))
            o = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
            return F.linear(o.transpose(1, 2).reshape(b, s, d), w[3], bias[3])

        module = torch.nn.MultiheadAttention(d, h, batch_first=True, device=device, dtype=dtype)
        module.eval()
        mask = (torch.nn.Transformer.generate_square_subsequent_mask(s, device=device, dtype=dtype)
                if causal else None)

        def mha():
            return module(x, x, x, need_weights=False, attn_mask=mask, is_causal=causal)[0]

        with torch.inference_mode():
            print(f"{name} {median_ms(sdpa, args.calls):.4f} {median_ms(mha, args.calls):.4f}",
                  flush=True)


if __name__ == "__main__":
    main()
