#!/usr/bin/env bash
# `make demo`: the project's range on the shipped default model, from the
# command line, in one pass. Starts bertology-server with the fine-tuned
# model and its MLM starting point, then, a few lines and a picture each:
# classify (an in-order title and the same characters shuffled), the
# attention head view, the seed study's ablation sweeps, AnalyzeHeads'
# pattern grid, HeadImportance and the pruning curve, CompareAttention
# against the starting point, SegmentWords against the study's 70 % / 96 %,
# mean ablation of the most harmful head beside zero ablation, a Patch
# heatmap of the shuffled-title pair, and the token attribution heatmap of
# the same pair in order and shuffled. Ends with out/demo/index.html, which
# links every figure with one sentence each.
#   scripts/demo.sh [BUILD_DIR]
# BERTOLOGY_DEMO_EXAMPLES (test rows per study, default 500) and
# BERTOLOGY_DEMO_OUT (default out/demo) override; tests/demo/ runs it small.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
MODEL=${BERTOLOGY_DEMO_MODEL:-models/querytitle-zh-tiny}
START=${BERTOLOGY_DEMO_START_MODEL:-models/querytitle-zh-tiny-mlm}
EXAMPLES=${BERTOLOGY_DEMO_EXAMPLES:-500}
OUT=${BERTOLOGY_DEMO_OUT:-out/demo}
BIN=$BUILD/bin
PY=/usr/bin/python3
DATA=$MODEL/data/test.tsv
COLUMNS=(--text-a=0 --text-b=1 --label=2)

section() { printf '\n== %s\n' "$*"; }

start_server() {
  # Port 0: the server picks free ports and prints them.
  "$BIN/bertology-server" --model="querytitle=$MODEL" --model="start=$START" \
    --listen=127.0.0.1:0 --metrics_listen=127.0.0.1:0 --threads=1 \
    >"$OUT/server.log" 2>&1 &
  SERVER=$!
  trap 'kill $SERVER 2>/dev/null; wait $SERVER 2>/dev/null || true' EXIT
  PORT=""
  for _ in $(seq 1 300); do
    PORT=$(sed -n 's/.*listening on port \([0-9]*\).*/\1/p' "$OUT/server.log" |
      head -1)
    [ -n "$PORT" ] && break
    kill -0 "$SERVER" 2>/dev/null || { cat "$OUT/server.log" >&2; exit 1; }
    sleep 0.1
  done
  [ -n "$PORT" ] || { echo "demo: server did not start" >&2; exit 1; }
  T="--target=127.0.0.1:$PORT"
  METRICS=$(sed -n 's/.*metrics on port \([0-9]*\).*/\1/p' "$OUT/server.log" |
    head -1)
  until "$BIN/bertology" health "$T" >/dev/null 2>&1; do
    kill -0 "$SERVER" 2>/dev/null || { cat "$OUT/server.log" >&2; exit 1; }
    sleep 0.2
  done
}

# The rows of CSV `file` with the `n` largest (or, with `asc`, smallest)
# values of `column`, as "L<layer>H<head> <value>" (or the `label` column).
top() {
  "$PY" - "$@" <<'EOF'
import csv, math, sys
path, column, n, order = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
rows = [r for r in csv.DictReader(open(path)) if r[column] not in ("", "nan")]
rows.sort(key=lambda r: float(r[column]), reverse=(order == "desc"))
for r in rows[:n]:
    name = r["mask_id"] if "mask_id" in r else "L%sH%s" % (r["layer"], r["head"])
    print("  %-12s %s %.4f" % (name, column, float(r[column])))
EOF
}

classify_and_attention() {
  # A grade-4 pair from the test set, and its title with the characters in
  # a fixed shuffled order (the study's word-order probe).
  read -r QUERY TITLE < <(awk -F'\t' '$3 == 4 {print $1 "\t" $2; exit}' "$DATA")
  SHUFFLED=$("$PY" -c 'import random,sys; c=list(sys.argv[1]); random.Random(7).shuffle(c); print("".join(c))' "$TITLE")
  section "classify: an in-order title, then the same characters shuffled"
  "$BIN/bertology" classify "$T" --text-a="$QUERY" --text-b="$TITLE"
  "$BIN/bertology" classify "$T" --text-a="$QUERY" --text-b="$SHUFFLED" |
    tail -n +2
  section "attention: all 144 heads of the in-order pair"
  "$BIN/bertology" attention "$T" --text-a="$QUERY" --text-b="$TITLE" \
    --out-dir="$OUT/attention" >/dev/null
  echo "  head view: $OUT/attention/attention.html"
}

sweeps() {
  section "sweep (the seed study): every head, every layer, random 10-50% of layers 0-5 and 6-11, $EXAMPLES test rows"
  local specs=()
  for f in 0.1 0.2 0.3 0.4 0.5; do
    specs+=("--random=$f,5,1,0-5" "--random=$f,5,1,6-11")
  done
  "$BIN/bertology" sweep "$T" --data="$DATA" "${COLUMNS[@]}" \
    --limit="$EXAMPLES" --heads --layers "${specs[@]}" --quiet \
    --out-dir="$OUT/sweep" >"$OUT/sweep.txt"
  sed -n '1,12p' "$OUT/sweep.txt"
  echo "  (full table: $OUT/sweep.txt)"
}

heads_and_importance() {
  section "analyze: per-head statistics and pattern classes; the strongest neighbour heads"
  "$BIN/bertology" analyze "$T" --data="$DATA" "${COLUMNS[@]}" \
    --limit="$EXAMPLES" --quiet --out-dir="$OUT/analyze" >/dev/null
  top "$OUT/analyze/head_stats.csv" to_previous 3 desc
  top "$OUT/analyze/head_stats.csv" to_next 3 desc
  section "importance (|d loss / d mask|) and the pruning curve"
  "$BIN/bertology" importance "$T" --data="$DATA" "${COLUMNS[@]}" \
    --limit="$EXAMPLES" --quiet --out-dir="$OUT/importance" >/dev/null
  top "$OUT/importance/importance.csv" importance 3 desc
  "$BIN/bertology" prune "$T" --data="$DATA" "${COLUMNS[@]}" \
    --limit="$EXAMPLES" --quiet --out-dir="$OUT/prune" >/dev/null
  "$PY" -c 'import json,sys; j=json.load(open(sys.argv[1])); k=j["kept"]; print("  pruning keeps step %d: %d heads left, accuracy %.3f (unmasked %.3f)" % (k["step"], k["heads_left"], k["accuracy"], j["steps"][0]["accuracy"]))' \
    "$OUT/prune/prune_curve.json"
}

compare_and_segment() {
  section "compare: the fine-tuned model against its MLM starting point; the heads fine-tuning changed most"
  "$BIN/bertology" compare "$T" --model-a=start --model-b=querytitle \
    --data="$DATA" --text-a=0 --text-b=1 --limit="$EXAMPLES" --quiet \
    --detail=0:0:3 --out-dir="$OUT/compare" >/dev/null
  top "$OUT/compare/similarity.csv" cosine_similarity 3 asc
  section "segment: heads read as word segmenters (the study: one head 70%, any of several 96%)"
  "$BIN/bertology" segment "$T" --data="$MODEL/data/test_words.tsv" \
    --limit="$EXAMPLES" --quiet --out-dir="$OUT/segment" >"$OUT/segment.txt"
  grep -E "^(rank|1 |2 |base|some head)" "$OUT/segment.txt"
}

mean_and_patch() {
  local head
  head=$("$PY" - "$OUT/sweep/sweep_results.csv" <<'EOF'
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1]))
        if r["mask_id"].startswith("head-")]
worst = min(rows, key=lambda r: float(r["accuracy_delta"]))
l, h = worst["ablated"][1:].split("H")
print("%s:%s" % (l, h))
EOF
)
  section "mean ablation of the most harmful head ($head) beside zero ablation"
  local id
  id=$("$BIN/bertology" statistics "$T" --reference="$MODEL/data/dev.tsv" |
    head -1)
  for mode in zero mean; do
    local reference=()
    [ "$mode" = mean ] && reference=(--statistics="$id")
    "$BIN/bertology" sweep "$T" --data="$DATA" "${COLUMNS[@]}" \
      --limit="$EXAMPLES" --mask="$head" --mode="$mode" "${reference[@]}" \
      --quiet --out-dir="$OUT/ablation-$mode" >/dev/null
    "$PY" -c 'import csv,sys; r=list(csv.DictReader(open(sys.argv[1]))); print("  %-5s accuracy %.3f (baseline %.3f)" % (sys.argv[2], float(r[1]["accuracy"]), float(r[0]["accuracy"])))' \
      "$OUT/ablation-$mode/sweep_results.csv" "$mode"
  done
  section "patch: which heads carry the in-order title's score into the shuffled one"
  "$BIN/bertology" patch "$T" --clean="$QUERY" --clean-b="$TITLE" \
    --corrupted="$QUERY" --corrupted-b="$SHUFFLED" --quiet --top=5 \
    --out="$OUT/patch" | sed -n '1,8p'
}

attribute() {
  section "attribute: which title characters the grade-4 logit rests on, in order and shuffled (integrated gradients and five other methods)"
  printf '%s\t%s\n%s\t%s\n' "$QUERY" "$TITLE" "$QUERY" "$SHUFFLED" \
    >"$OUT/attribute-pairs.tsv"
  "$BIN/bertology" attribute "$T" --data="$OUT/attribute-pairs.tsv" \
    --text-a=0 --text-b=1 --label= --target-class=4 --steps=64 --quiet \
    --out-dir="$OUT/attribute" | grep '^input'
}

index_page() {
  "$PY" - "$OUT" <<'EOF'
import html, os, sys
out = sys.argv[1]
figures = [
    ("attention/attention.html", "The head view: every head's attention on the in-order pair; pick a layer and a head."),
    ("sweep/heads_heatmap.svg", "The seed study: accuracy change when each single head is masked (zero ablation)."),
    ("sweep/layer_bars.svg", "Accuracy change when a whole layer's heads are masked."),
    ("sweep/fraction_curve.svg", "Masking random fractions of the low (0-5) and high (6-11) layers' heads."),
    ("analyze/patterns.svg", "Each head's pattern class (Kovaleva et al.): vertical, diagonal, block, heterogeneous."),
    ("analyze/to_previous.svg", "How much each head attends to the previous token (Clark et al.)."),
    ("importance/importance.svg", "Head importance |d loss / d mask| (Michel et al.), normalised per layer."),
    ("prune/prune_curve.svg", "Accuracy as the least important heads are pruned step by step."),
    ("compare/similarity.svg", "How similar each head's attention stayed through fine-tuning (cosine, 1 = unchanged)."),
    ("compare/difference.svg", "One head's attention after minus before fine-tuning, on the first input."),
    ("segment/segment_f1.svg", "Each head read as a word segmenter: word-end F1 against the gold words."),
    ("segment/segmentation.svg", "The best segmenting head's word ends beside the gold words on one example."),
    ("ablation-zero/heads_heatmap.svg", "Zero ablation of the most harmful head."),
    ("ablation-mean/heads_heatmap.svg", "Mean ablation of the same head: its output replaced by its mean."),
    ("patch/patch_heads.svg", "Activation patching: which heads restore the in-order title's score in the shuffled one."),
    ("attribute/heatmap.html", "Token attribution of the grade-4 logit, in order and shuffled: a row per method, a column per character."),
]
items = []
for path, sentence in figures:
    if not os.path.exists(os.path.join(out, path)):
        continue
    link = html.escape(path)
    picture = ("" if path.endswith(".html") else
               '<br><img src="%s" alt="%s" style="max-width:100%%">' % (link, link))
    items.append('<li><a href="%s">%s</a>: %s%s</li>' % (link, link, html.escape(sentence), picture))
with open(os.path.join(out, "index.html"), "w") as f:
    f.write("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>bertology demo</title></head>\n"
            "<body><h1>bertology demo: the shipped query-title model</h1>\n<ul>\n"
            + "\n".join(items) + "\n</ul></body></html>\n")
print("  %s/index.html: %d figures" % (out, len(items)))
EOF
}

main() {
  mkdir -p "$OUT"
  for m in "$MODEL" "$START"; do
    if [ ! -f "$m/config.json" ]; then
      echo "demo: no model at $m (see models/README.md)" >&2
      exit 1
    fi
  done
  start_server
  section "bertology info"
  "$BIN/bertology" info "$T" | "$PY" -c 'import json,sys; j=json.load(sys.stdin); [print("  %s: %s, %d layers x %d heads, labels %s" % (m["name"], m["architecture"], m["layers"], m["heads"], ",".join(m["labels"]) or "-")) for m in j["models"]]'
  classify_and_attention
  sweeps
  heads_and_importance
  compare_and_segment
  mean_and_patch
  attribute
  section "the index"
  index_page
  if [ -n "$METRICS" ]; then
    section "a few of the server's metrics"
    curl -s "http://127.0.0.1:$METRICS/metrics" 2>/dev/null |
      grep -E '^bertology_(requests_total|masks_processed_total)' |
      head -4 || true
  fi
  echo
  echo "demo: open $OUT/index.html"
}

main "$@"
