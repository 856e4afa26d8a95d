#!/usr/bin/env bash
# The device check of issue 30, one script for the lent GPU machine (one
# H100 or H200, 16 cores, pip torch 2.11+cu130, nvcc 13, CMake; no apt, no
# network, no gRPC / protobuf / abseil headers), rehearsed here on CPU:
#   1. unpack the carried Debian 12 packages (scripts/gpu-carry.sh) into a
#      prefix and HF transformers' wheels into a folder on PYTHONPATH;
#   2. build the server, the CLI, the benches and the engine's tests against
#      the torch wheel's libtorch (the rehearsal: Debian's) and the carried
#      packages, and check that every carried library resolves from the
#      prefix, not from the system (which the GPU machine does not have);
#   3. tests on the device: fused attention against explicit (CPU),
#      device_check_test at F32, TF32 and BF16 (float64 goldens under every
#      mask mode, sweeps equal across workers and batch rows, masks isolated
#      under concurrency), and explicit against fused attention there;
#   4. the bench rows: sweep pairs/s of the shipped model and of a
#      BERT-base-shaped one over 872 SST-2-length sentences (every single
#      head: 145 masks) against bench/pytorch_loop.py on the same device;
#      Classify under load and GetAttention latency through the server;
#   5. the table (bench/gpu_report.py) and every log in $OUT.
#
# On the device machine (the device tool; $OUT is set there):
#   scripts/gpu_check.sh            carry: build-gpu-carry/debs,
#                                          build-gpu-carry/wheels-3.12
# Rehearsal here (CPU, Debian's libtorch, the same carried-packages path,
# smaller bench sizes):
#   scripts/gpu-carry.sh && scripts/gpu-carry.sh "" 3.11 &&
#   scripts/gpu_check.sh --rehearse
# Env: PYTHON (a python with torch; default python3, the rehearsal
# /usr/bin/python3), OUT (default out/gpu-check), WORK (default
# build-gpu-check), JOBS. Each step's seconds go to $OUT/steps.tsv.
set -euo pipefail

main() {
  ROOT=$(cd "$(dirname "$0")/.." && pwd)
  cd "$ROOT"
  DEVICE=cuda
  REHEARSE=0
  for arg in "$@"; do
    case $arg in
      --rehearse) REHEARSE=1; DEVICE=cpu ;;
      --device=*) DEVICE=${arg#--device=} ;;
      *) echo "gpu_check: unknown argument $arg" >&2; exit 2 ;;
    esac
  done
  # What comes back from the device tool is at most 8 files: everything is
  # written under $RUN, and Collect leaves the table, the log, the step
  # times, the facts and one archive of the rest in $OUT.
  OUT=${OUT:-$ROOT/out/gpu-check}
  WORK=${WORK:-$ROOT/build-gpu-check}
  RUN=$WORK/run
  # The carried libraries (protoc, grpc_cpp_plugin, pkgconf at build time;
  # the servers, tests and benches after) load from the unpacked prefix.
  export LD_LIBRARY_PATH=$WORK/deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  CARRY=${CARRY:-$ROOT/build-gpu-carry}
  JOBS=${JOBS:-$(nproc)}
  if [ "$REHEARSE" = 1 ]; then
    PYTHON=${PYTHON:-/usr/bin/python3}
  else
    PYTHON=${PYTHON:-python3}
  fi
  rm -rf "$RUN"
  # The default $OUT is this script's own: a rerun starts it empty, as the
  # device tool's is.
  [ "$OUT" = "$ROOT/out/gpu-check" ] && rm -rf "$OUT"
  mkdir -p "$OUT" "$RUN"
  : >"$RUN/steps.tsv"
  T_START=$(date +%s)
  trap Collect EXIT
  # The log and the step times go straight to $OUT: they come back even
  # when the device tool stops the command at its limit.
  exec > >(tee "$OUT/gpu_check.log") 2>&1

  step facts Facts
  step unpack Unpack
  step build Build
  step linkage Linkage
  step tests Tests
  step bench Bench
  step report Report
  echo "gpu_check: passed in $(( $(date +%s) - T_START )) s; table in" \
    "$OUT/gpu-table.md, logs in $OUT/gpu-check-logs.tar.gz"
}

# $RUN's table, log, step times and facts into $OUT, and the rest as one
# archive (the device tool returns at most 8 files).
Collect() {
  local f
  for f in gpu-table.md steps.tsv facts.txt; do
    [ -f "$RUN/$f" ] && cp "$RUN/$f" "$OUT/"
  done
  tar -C "$RUN" -czf "$OUT/gpu-check-logs.tar.gz" . 2>/dev/null || true
}

# Runs function $2 as step $1, timing it into $RUN/steps.tsv.
step() {
  local t0 rc
  t0=$(date +%s)
  echo "== gpu_check: $1 ($(( t0 - T_START )) s in)"
  set +e
  ( set -e; "$2" )
  rc=$?
  set -e
  printf '%s\t%d\t%s\n' "$1" "$(( $(date +%s) - t0 ))" \
    "$([ $rc = 0 ] && echo ok || echo "failed ($rc)")" >>"$RUN/steps.tsv"
  cp "$RUN/steps.tsv" "$OUT/steps.tsv"
  if [ $rc != 0 ]; then
    echo "gpu_check: step $1 failed ($rc); steps so far:" >&2
    cat "$RUN/steps.tsv" >&2
    exit $rc
  fi
}

Facts() {
  {
    echo "date: $(date -u +%FT%TZ)"
    echo "device: $DEVICE$([ "$REHEARSE" = 1 ] && echo ' (CPU rehearsal)')"
    echo "cores: $(nproc)"
    echo "glibc: $(ldd --version | sed -n 1p)"
    echo "cmake: $(cmake --version | sed -n 1p)"
    echo "c++: $(c++ --version | sed -n 1p)"
    command -v nvcc >/dev/null && echo "nvcc: $(nvcc --version | tail -1)"
    command -v nvidia-smi >/dev/null &&
      nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap \
        --format=csv,noheader | sed 's/^/gpu: /'
    "$PYTHON" -c 'import sys, torch; print("python:", sys.version.split()[0]);
print("torch:", torch.__version__, "cuda", torch.version.cuda,
      "available", torch.cuda.is_available())'
  } | tee "$RUN/facts.txt"
  # Debian 12's libraries need glibc 2.36 (bookworm's); an older one fails
  # at the first protoc run, far less clearly.
  local v
  v=$(ldd --version | sed -n 1p | grep -oE '[0-9]+\.[0-9]+$')
  if ! printf '2.36\n%s\n' "$v" | sort -V -C; then
    echo "gpu_check: glibc $v is older than Debian 12's 2.36: the carried" \
      "packages cannot run here" >&2
    return 1
  fi
}

# The carried .debs into $WORK/deps (dpkg -x; without dpkg, ar + tar), and
# the wheels into $WORK/pylib (a wheel is a zip laid out for site-packages).
Unpack() {
  local deps=$WORK/deps py
  rm -rf "$deps" "$WORK/pylib"
  mkdir -p "$deps" "$WORK/pylib"
  ls "$CARRY"/debs/*.deb >/dev/null ||
    { echo "gpu_check: no .debs in $CARRY/debs (scripts/gpu-carry.sh)" >&2
      return 1; }
  for deb in "$CARRY"/debs/*.deb; do
    if command -v dpkg >/dev/null; then
      dpkg -x "$deb" "$deps"
    else
      (cd "$WORK" && rm -rf ar && mkdir ar && cd ar && ar x "$deb" &&
        tar -xf data.tar.* -C "$deps")
    fi
  done
  py=$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  "$PYTHON" - "$CARRY/wheels-$py" "$WORK/pylib" <<'EOF'
import glob, importlib.metadata, os, sys, zipfile
wheels = glob.glob(sys.argv[1] + "/*.whl")
if not wheels:
    sys.exit("gpu_check: no wheels in %s (scripts/gpu-carry.sh)" % sys.argv[1])
# The loop's pins go first on PYTHONPATH whatever the python has (the GPU
# image's transformers 5 has no head_mask); the modules they import only
# where it lacks them (keeping numpy and the like built for its torch).
PINNED = {"transformers", "tokenizers", "huggingface_hub", "safetensors"}
kept, added = [], []
for w in sorted(wheels):
    name = os.path.basename(w).split("-")[0]
    if name not in PINNED:
        try:
            importlib.metadata.distribution(name)
            kept.append(name)
            continue
        except importlib.metadata.PackageNotFoundError:
            pass
    zipfile.ZipFile(w).extractall(sys.argv[2])
    added.append(name)
print("gpu_check: wheels into %s: %s; the python's own: %s" % (
    sys.argv[2], " ".join(added), " ".join(kept) or "none"))
EOF
  echo "gpu_check: $(ls "$CARRY"/debs/*.deb | wc -l) packages into $deps"
}

Build() {
  local deps=$WORK/deps lib=$WORK/deps/usr/lib/x86_64-linux-gnu
  # pkg-config only in the prefix: the .pc files say prefix=/usr, which the
  # sysroot turns into the prefix's paths.
  # libmicrohttpd.pc lists gnutls under Requires.private, which pkg-config
  # resolves even for --cflags; nothing here compiles against GnuTLS (the
  # server links -lmicrohttpd, which loads the carried libgnutls30 itself),
  # so an empty gnutls.pc stands in for libgnutls28-dev and its own chain.
  mkdir -p "$WORK/pkgconfig-stubs"
  printf 'Name: gnutls\nDescription: stub (scripts/gpu_check.sh)\nVersion: 3.7.9\nLibs:\nCflags:\n' \
    >"$WORK/pkgconfig-stubs/gnutls.pc"
  export PKG_CONFIG_LIBDIR=$lib/pkgconfig:$deps/usr/share/pkgconfig:$WORK/pkgconfig-stubs
  export PKG_CONFIG_SYSROOT_DIR=$deps
  local cmake_args=(-DCMAKE_BUILD_TYPE=Release -DBERTOLOGY_BUILD_TESTS=ON
    -DPKG_CONFIG_EXECUTABLE="$deps/usr/bin/pkgconf"
    -DProtobuf_PROTOC_EXECUTABLE="$deps/usr/bin/protoc"
    -DBERTOLOGY_GRPC_CPP_PLUGIN="$deps/usr/bin/grpc_cpp_plugin"
    -DOPENSSL_ROOT_DIR="$deps/usr")
  local torch_prefix=""  # rehearsal: Debian's libtorch, found by default
  if [ "$REHEARSE" = 0 ]; then
    # The wheel's libtorch, as make check-cuda-link builds against it.
    source scripts/torch-wheel.sh
    torch_wheel "$PYTHON"
    cmake_args+=("${TORCH_CMAKE_ARGS[@]}")
    torch_prefix=$TORCH_DIR
  fi
  # After the wheel's arguments: the prefix list with the carried packages.
  cmake_args+=(-DCMAKE_PREFIX_PATH="${torch_prefix:+$torch_prefix;}$deps/usr")
  command -v ninja >/dev/null && cmake_args+=(-G Ninja)
  cmake -S . -B "$WORK/build" "${cmake_args[@]}" >"$RUN/cmake.log" 2>&1 ||
    { tail -30 "$RUN/cmake.log" >&2; return 1; }
  grep -E 'libtorch from|Found (Protobuf|PkgConfig)' "$RUN/cmake.log" || true
  timeout "${BUILD_TIMEOUT:-360}" cmake --build "$WORK/build" -j "$JOBS" --target bertology-server bertology \
    bertology-bench-core bertology-bench-grpc device_check_test \
    fused_attention_test sweep_test >"$RUN/build.log" 2>&1 ||
    { grep -E 'error|Error' "$RUN/build.log" | head -30 >&2; return 1; }
  echo "gpu_check: built $(ls "$WORK/build/bin" | wc -l) programs"
}

# Every library the carried packages provide must load from the prefix: on
# the GPU machine there is no other copy. (Here there is, in /usr: a
# library found there means the build would fail or not start there.)
Linkage() {
  local bad=0 bin
  local carried='lib(grpc|gpr|upb|address_sorting|protobuf|protoc|absl|cares|re2|prometheus|civetweb|microhttpd|utf8proc|gnutls)'
  for bin in "$WORK"/build/bin/bertology-server \
             "$WORK"/build/bin/bertology "$WORK"/build/tests/device_check_test; do
    if ldd "$bin" | grep -q 'not found'; then
      ldd "$bin" | grep 'not found' >&2
      bad=1
    fi
    if ldd "$bin" | grep -E "$carried" | grep -v "$WORK/deps" >&2; then
      echo "gpu_check: $(basename "$bin") loads the libraries above from" \
        "the system, not the carried prefix" >&2
      bad=1
    fi
  done
  # Headers likewise: no object may have read gRPC's, protobuf's, abseil's
  # or prometheus-cpp's headers from /usr/include.
  local leaked
  leaked=$(cd "$WORK/build" && { ninja -t deps 2>/dev/null ||
    find . -name '*.d' -exec cat {} +; } |
    grep -oE '(^|[ ])/usr/include/(grpcpp?|google/protobuf|absl|prometheus)/[^ ]*' |
    sort -u | head -5 || true)
  if [ -n "$leaked" ]; then
    echo "gpu_check: headers read from /usr/include, not the prefix:" >&2
    echo "$leaked" >&2
    bad=1
  fi
  [ $bad = 0 ] && echo "gpu_check: every carried library and header from $WORK/deps"
  return $bad
}

Tests() {
  local t=$WORK/build/tests
  export BERTOLOGY_SOURCE_DIR=$ROOT BERTOLOGY_TEST_DEVICE=$DEVICE
  run_test() {  # NAME LOG [ENV=VALUE ...]
    local name=$1 log=$2
    shift 2
    if timeout 120 env "$@" "$t/$name" >"$RUN/$log.log" 2>&1; then
      echo "gpu_check: $log: $(grep -E '^\[  PASSED  \]' "$RUN/$log.log")" \
        "$(grep -h 'device_check:.*gap' "$RUN/$log.log" | tr '\n' ' ')"
    else
      tail -40 "$RUN/$log.log" >&2
      return 1
    fi
  }
  run_test fused_attention_test fused_attention_cpu
  run_test sweep_test sweep_cpu
  run_test device_check_test device_f32 BERTOLOGY_TEST_DTYPE=F32
  run_test device_check_test device_f32_explicit BERTOLOGY_TEST_DTYPE=F32 \
    BERTOLOGY_TEST_ATTENTION=explicit
  run_test device_check_test device_bf16 BERTOLOGY_TEST_DTYPE=BF16
  if [ "$DEVICE" != cpu ]; then
    run_test device_check_test device_tf32 BERTOLOGY_TEST_DTYPE=F32 \
      BERTOLOGY_TEST_TF32=1
    run_test device_check_test device_fused BERTOLOGY_TEST_DTYPE=F32 \
      BERTOLOGY_TEST_ATTENTION=fused
  fi
}

Bench() {
  local bin=$WORK/build/bin
  export PYTHONPATH=$WORK/pylib${PYTHONPATH:+:$PYTHONPATH}
  local data=$WORK/data b=$RUN/bench
  mkdir -p "$data" "$b"
  # GPU sizes: the issue's goal (145 masks x 872 sentences on BERT-base) and
  # the shipped model over 1,000 test rows; the CPU rehearsal runs the same
  # steps on a sliver of that.
  local tiny_ex=1000 tiny_masks=0 base_ex=872 base_masks=0
  local engine_rows=4096 seconds=3
  if [ "$DEVICE" = cpu ]; then
    tiny_ex=64 tiny_masks=12 base_ex=16 base_masks=6 engine_rows=64 seconds=1
  fi
  "$PYTHON" scripts/querytitle_data.py "$data/qt" --seed 1 --train 0 \
    --dev 0 --test 1000 >/dev/null
  "$PYTHON" bench/sst2_shape_data.py \
    --vocab models/querytitle-zh-tiny/vocab.txt --out "$data/sst2-shape.tsv"
  [ -f "$data/bert-base/model.safetensors" ] ||
    "$bin/bertology-bench-core" --model=models/querytitle-zh-tiny \
      --make_random_model="$data/bert-base" >/dev/null
  core() {  # NAME DIR DATA EXAMPLES MASKS DTYPE [FLAGS...]
    local name=$1 dir=$2 tsv=$3 ex=$4 masks=$5 dtype=$6
    shift 6
    echo "gpu_check: engine sweep, $name" >&2
    timeout 150 "$bin/bertology-bench-core" --device="$DEVICE" --model="$dir" \
      --name="$name" --data="$tsv" --examples="$ex" --masks="$masks" \
      --dtype="$dtype" --engine_batch="$engine_rows" --lever_shares=false \
      --worker_share=false --json_out="$b/core-$name.json" "$@" \
      >"$b/core-$name.log" 2>&1 || { tail "$b/core-$name.log" >&2; return 1; }
  }
  loop() {  # NAME DIR DATA EXAMPLES MASKS DTYPE
    echo "gpu_check: plain PyTorch loop, $1" >&2
    timeout 150 "$PYTHON" bench/pytorch_loop.py --device="$DEVICE" --model="$2" \
      --data="$3" --examples="$4" --masks="$5" --dtype="$6" --threads=auto \
      --json_out="$b/loop-$1.json" >"$b/loop-$1.log" 2>&1 ||
      { tail "$b/loop-$1.log" >&2; return 1; }
  }
  local qt=$data/qt/test.tsv sst=$data/sst2-shape.tsv
  core default-f32 models/querytitle-zh-tiny "$qt" $tiny_ex $tiny_masks F32
  core default-auto models/querytitle-zh-tiny "$qt" $tiny_ex $tiny_masks auto \
    --naive=false
  loop default-f32 models/querytitle-zh-tiny "$qt" $tiny_ex $tiny_masks float32
  # BERT-base: the engine alone, at the wide batch only.
  local wide=(--naive=false --batch="$engine_rows" --engine_batch=0)
  core base-f32 "$data/bert-base" "$sst" $base_ex $base_masks F32 "${wide[@]}"
  core base-auto "$data/bert-base" "$sst" $base_ex $base_masks auto "${wide[@]}"
  loop base-f32 "$data/bert-base" "$sst" $base_ex $base_masks float32
  loop base-bf16 "$data/bert-base" "$sst" $base_ex $base_masks bfloat16
  # Through the server: Classify under load (batched) and GetAttention.
  local port
  port=$("$PYTHON" -c 'import socket; s = socket.socket()
s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  "$bin/bertology-server" --model="bert-base=$data/bert-base" \
    --device="$DEVICE" --listen="127.0.0.1:$port" --metrics_listen= \
    --max_batch_size=128 --max_seq_len=128 --warmup_passes=1 \
    >"$b/server.log" 2>&1 &
  local pid=$!
  timeout 120 "$bin/bertology-bench-grpc" --target="127.0.0.1:$port" --data="$sst" \
    --clients=1,32 --seconds="$seconds" --attention=true \
    --json_out="$b/grpc-base.json" >"$b/grpc-base.log" 2>&1 || {
      tail "$b/grpc-base.log" "$b/server.log" >&2
      kill $pid; return 1; }
  kill $pid
  wait $pid 2>/dev/null || true
}

Report() {
  cp "$OUT/gpu_check.log" "$RUN/" 2>/dev/null || true
  "$PYTHON" bench/gpu_report.py "$RUN" >"$RUN/gpu-table.md"
  cat "$RUN/gpu-table.md"
}

main "$@"
