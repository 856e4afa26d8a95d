"""What the Python tests share: where the sources and binaries are, the
project's Python folders on sys.path, and helpers more than one test uses.

CTest runs each test as `python -m unittest MODULE` from this folder
(tests/python/CMakeLists.txt), with BERTOLOGY_SOURCE_DIR and
BERTOLOGY_BIN_DIR set and the generated stubs on PYTHONPATH; by hand they
default to this checkout and its build/bin. Importing this module puts the
Python client (client/python), the float64 references (tests/golden) and
the model-card scripts (scripts) on sys.path, in that order of precedence.
Tests take helpers from here and from the other helper modules of this
folder (live_server, pki, hf_oracle), never from one another.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.environ.get("BERTOLOGY_SOURCE_DIR",
                            os.path.dirname(os.path.dirname(HERE)))
BIN_DIR = os.environ.get("BERTOLOGY_BIN_DIR",
                         os.path.join(SOURCE_DIR, "build", "bin"))
GOLDEN_DIR = os.path.join(SOURCE_DIR, "tests", "golden")
# The tiny BERT classifier the goldens are made on (tests/golden/make_golden.py).
TINY_MODEL_DIR = os.path.join(GOLDEN_DIR, "tiny-bert-cls")

for _folder in (os.path.join(SOURCE_DIR, "scripts"), GOLDEN_DIR,
                os.path.join(SOURCE_DIR, "client", "python")):
    sys.path.insert(0, _folder)


def load_weights(directory):
    """The file's tensors with HF's BertFor* names (bert. prefix), floats."""
    import torch  # imported here: not every test needs torch
    from make_golden import read_safetensors
    st = os.path.join(directory, "model.safetensors")
    if os.path.exists(st):
        raw = read_safetensors(st)
    else:
        raw = torch.load(os.path.join(directory, "pytorch_model.bin"))
    out = {}
    for k, t in raw.items():
        if k.startswith(("embeddings.", "encoder.", "pooler.")):
            k = "bert." + k
        if t.is_floating_point():
            out[k] = t
    return out
