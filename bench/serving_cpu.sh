#!/usr/bin/env bash
# Where the CPU goes when Classify is under load: CPU-seconds used by the
# server (from /proc/PID/stat) and by the load generator (/usr/bin/time)
# while 32 clients call it for 5 s, with and without the dynamic batcher.
# The measurement behind the batcher paragraph of bench/RESULTS.md.
# Usage: bench/serving_cpu.sh [BUILD_DIR] [MODEL_DIR] [DATA_TSV]
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-build}/bin
MODEL=${2:-models/querytitle-zh-tiny}
DATA=${3:-$MODEL/data/test.tsv}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cpu_s() { awk '{print ($14 + $15) / 100}' "/proc/$1/stat"; }
for mb in 1 32; do
  port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  "$BIN/bertology-server" --model="m=$MODEL" --listen="127.0.0.1:$port" \
    --metrics_listen= --max_batch_size="$mb" --warmup_passes=1 \
    >"$TMP/server.log" 2>&1 &
  server=$!
  sleep 3
  before=$(cpu_s "$server")
  /usr/bin/time -f "%U %S" -o "$TMP/client.time" "$BIN/bertology-bench-grpc" \
    --target="127.0.0.1:$port" --data="$DATA" --clients=32 --seconds=5 \
    --json_out="$TMP/load.json" >/dev/null 2>&1
  after=$(cpu_s "$server")
  kill "$server"
  wait "$server" 2>/dev/null || true
  /usr/bin/python3 - "$mb" "$before" "$after" "$TMP/client.time" "$TMP/load.json" <<'PY'
import json, sys
mb, before, after, client_time, load = sys.argv[1:]
user, system = map(float, open(client_time).read().split()[-2:])
point = json.load(open(load))["classify"][0]
server = float(after) - float(before)
print(f"max_batch_size={mb}: {point['calls_per_s']:.0f} calls/s, server "
      f"{server:.1f} CPU-s, load generator {user + system:.1f} CPU-s, "
      f"{1000 * server / max(point['calls'], 1):.1f} ms server CPU per call")
PY
done
