#!/usr/bin/env bash
# `make demo`: the main job on the shipped default model, from the command
# line. Starts bertology-server, classifies a few query-title pairs (among
# them an in-order title and the same characters shuffled), writes the
# attention views of one example, runs the study's ablation sweeps on the
# test set and prints the summary table. Outputs land in out/demo/.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
MODEL=${BERTOLOGY_DEMO_MODEL:-models/querytitle-zh-tiny}
EXAMPLES=${BERTOLOGY_DEMO_EXAMPLES:-500}  # test rows the sweeps score
OUT=out/demo
BIN=$BUILD/bin
mkdir -p "$OUT"

if [ ! -f "$MODEL/config.json" ]; then
  echo "demo: no model at $MODEL (see models/README.md)" >&2
  exit 1
fi
DATA=$MODEL/data/test.tsv

# Port 0: the server picks free ports and prints them.
"$BIN/bertology-server" --model="querytitle=$MODEL" --listen=127.0.0.1:0 \
  --metrics_listen=127.0.0.1:0 --threads=1 >"$OUT/server.log" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null; wait $SERVER 2>/dev/null || true' EXIT
PORT=""
for _ in $(seq 1 300); do
  PORT=$(sed -n 's/.*listening on port \([0-9]*\).*/\1/p' "$OUT/server.log" | head -1)
  [ -n "$PORT" ] && break
  kill -0 $SERVER 2>/dev/null || { cat "$OUT/server.log" >&2; exit 1; }
  sleep 0.1
done
[ -n "$PORT" ] || { echo "demo: server did not start" >&2; exit 1; }
T="--target=127.0.0.1:$PORT"
METRICS=$(sed -n 's/.*metrics on port \([0-9]*\).*/\1/p' "$OUT/server.log" | head -1)
until "$BIN/bertology" health "$T" >/dev/null 2>&1; do
  kill -0 $SERVER 2>/dev/null || { cat "$OUT/server.log" >&2; exit 1; }
  sleep 0.2
done

section() { printf '\n== %s\n' "$*"; }

section "bertology info"
"$BIN/bertology" info "$T"

# A grade-4 pair from the test set, and its title with the characters in a
# fixed shuffled order (the study's word-order probe).
read -r QUERY TITLE < <(awk -F'\t' '$3 == 4 {print $1 "\t" $2; exit}' "$DATA")
SHUFFLED=$(/usr/bin/python3 -c 'import random,sys; c=list(sys.argv[1]); random.Random(7).shuffle(c); print("".join(c))' "$TITLE")
PARTIAL=$(awk -F'\t' '$3 == 2 {print $2; exit}' "$DATA")
PQUERY=$(awk -F'\t' '$3 == 2 {print $1; exit}' "$DATA")

section "bertology classify: in-order title vs the same characters shuffled"
"$BIN/bertology" classify "$T" --text-a="$QUERY" --text-b="$TITLE"
"$BIN/bertology" classify "$T" --text-a="$QUERY" --text-b="$SHUFFLED"
"$BIN/bertology" classify "$T" --text-a="$PQUERY" --text-b="$PARTIAL"

section "bertology attention (all 144 heads of the in-order pair)"
"$BIN/bertology" attention "$T" --text-a="$QUERY" --text-b="$TITLE" \
  --out-dir="$OUT/attention" >/dev/null
echo "wrote $OUT/attention/attention.html (head view) and one SVG per head"

section "bertology sweep: every head, every layer, random 10-50% of low (0-5) and high (6-11) layers ($EXAMPLES test examples)"
RANDOM_SPECS=()
for f in 0.1 0.2 0.3 0.4 0.5; do
  RANDOM_SPECS+=("--random=$f,5,1,0-5" "--random=$f,5,1,6-11")
done
"$BIN/bertology" sweep "$T" --data="$DATA" --text-a=0 --text-b=1 --label=2 \
  --limit="$EXAMPLES" --heads --layers "${RANDOM_SPECS[@]}" \
  --out-dir="$OUT/sweep"

section "a few of the server's metrics"
if [ -n "$METRICS" ]; then
  curl -s "http://127.0.0.1:$METRICS/metrics" 2>/dev/null |
    grep -E '^bertology_(requests_total|masks_processed_total|examples_processed_total)' | head -8 || true
fi
echo
echo "demo: outputs in $OUT/ (sweep figures in $OUT/sweep/, head view in $OUT/attention/attention.html)"
