"""Whether this CPU's libtorch runs BF16 matrix products fast (issue 15's
opt-in BF16 path): the CPU's AVX-512 flags, and Linear's GFLOP/s at one
BERT-base product ([512, 768] x [768, 768]) in float32 and bfloat16, plus
whether oneDNN's BF16 Linear accepts this CPU.

Usage: bf16_check.py [--json_out PATH]   (uses /usr/bin/python3's torch,
the same libtorch 1.13 the server links)
"""
import argparse
import json
import time

import torch


def cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return line.split(":", 1)[1].split()
    except OSError:
        pass
    return []


def gflops(fn, flop, reps):
    fn()
    start = time.perf_counter()
    for _ in range(reps):
        fn()
    return flop * reps / (time.perf_counter() - start) / 1e9


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--json_out", default="")
    args = p.parse_args()
    torch.manual_seed(0)
    x = torch.randn(512, 768)
    w = torch.randn(768, 768)
    flop = 2 * 512 * 768 * 768
    xb, wb = x.bfloat16(), w.bfloat16()
    result = {
        "avx512_flags": sorted(f for f in cpu_flags() if f.startswith("avx512")),
        "torch": torch.__version__,
        "mkldnn": torch.backends.mkldnn.is_available(),
        "threads": torch.get_num_threads(),
        "f32_gflops": gflops(lambda: torch.nn.functional.linear(x, w), flop, 20),
        "bf16_gflops": gflops(lambda: torch.nn.functional.linear(xb, wb), flop, 2),
    }
    try:
        torch._C._nn.mkldnn_linear(xb.to_mkldnn(), wb.to_mkldnn(), None)
        result["onednn_bf16"] = "accepted"
    except RuntimeError as e:
        result["onednn_bf16"] = str(e).splitlines()[0]
    # The error a BF16 path would bring, on this product.
    ref = torch.nn.functional.linear(x.double(), w.double())
    got = torch.nn.functional.linear(xb, wb).double()
    result["bf16_max_rel_error"] = float(((got - ref).abs().max() / ref.abs().max()))
    print(f"bf16 check: AVX-512 flags {result['avx512_flags'] or 'none'}; Linear "
          f"[512,768]x[768,768]: float32 {result['f32_gflops']:.1f} GFLOP/s, "
          f"bfloat16 {result['bf16_gflops']:.1f} GFLOP/s; oneDNN BF16: "
          f"{result['onednn_bf16']}")
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(result, f, indent=2)
            f.write("\n")


if __name__ == "__main__":
    main()
