#!/usr/bin/env bash
# Makes the Python test environment: a venv with --system-site-packages
# (Debian's torch, numpy, grpcio and protobuf stay visible and in use) that
# adds Hugging Face's own libraries from PyPI, pinned in
# tests/python/requirements-hf.txt: the oracle the goldens, the tokenizer
# and the bench's PyTorch-loop anchor are checked against.
#
#   scripts/make-test-venv.sh [VENV_DIR]     (default build/test-venv)
#
# Idempotent: a venv made from the same requirements (and this script) is
# kept. Run by CTest before the Python tests (fixture test_venv), by
# `make test-venv` and by `make bench`. Fails, naming the index, where PyPI
# cannot be reached: the HF checks are never skipped.
set -euo pipefail
src="$(cd "$(dirname "$0")/.." && pwd)"
venv="${1:-$src/build/test-venv}"
req="$src/tests/python/requirements-hf.txt"
py=/usr/bin/python3

want="$(cat "$req" "$0" | sha256sum | cut -d' ' -f1)"
stamp="$venv/.requirements.sha256"
if [ -x "$venv/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
  exit 0
fi
if ! "$py" -c 'import venv, ensurepip, torch, numpy' 2>/dev/null; then
  "$src/scripts/install-deps.sh"
fi

echo "== test venv: $venv (tests/python/requirements-hf.txt)"
rm -rf "$venv"
"$py" -m venv --system-site-packages "$venv"
# pip must not replace the system torch or numpy (captum 0.9 would pull
# torch 2.x and numpy 2.x from PyPI): their installed versions are
# constraints, so a requirement that needs others fails instead.
"$py" -c 'import numpy, torch
print("torch==" + torch.__version__)
print("numpy==" + numpy.__version__)' >"$venv/system-constraints.txt"
if ! "$venv/bin/pip" install --disable-pip-version-check --no-input -q \
    --only-binary=:all: -r "$req" -c "$venv/system-constraints.txt"; then
  index="${PIP_INDEX_URL:-$("$venv/bin/pip" config get global.index-url \
    2>/dev/null || echo https://pypi.org/simple)}"
  echo "FAIL: cannot install tests/python/requirements-hf.txt from $index" \
    "into $venv (the HF oracle tests need it)" >&2
  rm -rf "$venv"
  exit 1
fi
# The venv must see the system's torch and numpy, and the pinned HF.
"$venv/bin/python" - "$req" <<'PY'
import re, sys
import captum, numpy, safetensors, sentencepiece, tokenizers, torch, transformers
pins = dict(re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)", open(sys.argv[1]).read(), re.M))
assert transformers.__version__ == pins["transformers"], transformers.__version__
assert torch.__file__.startswith("/usr/lib/python3/"), torch.__file__
assert numpy.__file__.startswith("/usr/lib/python3/"), numpy.__file__
print("test venv: transformers %s, tokenizers %s, captum %s on torch %s, numpy %s"
      % (transformers.__version__, tokenizers.__version__, captum.__version__,
         torch.__version__, numpy.__version__))
PY
echo "$want" >"$stamp"
