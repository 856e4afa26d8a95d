"""Which OpenBLAS flavour to install for libtorch: pthread or openmp.

libtorch 1.13 (Debian) calls the system libblas.so.3 for float32 GEMM. This
times BERT-shaped matrix products (batch 8 x 128 tokens, hidden 768,
intermediate 3072) with torch's own thread pool set to 2, loading the BLAS
given by LD_LIBRARY_PATH. Run it once per flavour, interleaved:

  for i in 1 2 3; do
    /usr/bin/python3 bench/blas_flavour.py pthread
    LD_LIBRARY_PATH=/path/to/openblas-openmp /usr/bin/python3 bench/blas_flavour.py openmp
  done
"""
import sys
import time

import torch

torch.set_num_threads(2)
torch.manual_seed(0)
x = torch.randn(8 * 128, 768)
w1 = torch.randn(768, 3072)
w2 = torch.randn(3072, 768)
wq = torch.randn(768, 768)
for _ in range(3):
    (x @ w1) @ w2
n = 20
t0 = time.perf_counter()
for _ in range(n):
    (x @ w1) @ w2
    x @ wq
t = (time.perf_counter() - t0) / n
flops = 2 * 1024 * 768 * 3072 * 2 + 2 * 1024 * 768 * 768
print(f"{sys.argv[1] if len(sys.argv) > 1 else '?'}: {flops / t / 1e9:.1f} GFLOP/s")
