#!/usr/bin/env python3
"""What the heads of a query-title model do (study 1 of ../shared/BRIEF.md),
measured through the real server: the model card's "head_findings".

  PYTHONPATH=build/python:client/python /usr/bin/python3 \
      scripts/head_findings.py --model models/querytitle-zh-tiny

starts `bertology-server` on MODEL (make_model_card.start_server), writes
OUT/findings.json (OUT defaults to MODEL/analysis) and keeps the CLI's
tables and pictures in OUT/analyze/ (`bertology analyze`) and OUT/segment/
(`bertology segment`). make_model_card.py calls measure() while its own
server is up and puts the result in card.json under "head_findings".

  term-matching heads  AnalyzeHeads over the first --analyze-examples rows of
                       MODEL/data/test.tsv: the top --k heads by
                       cross_segment_match (attention from a text_a token to
                       the identical tokens of text_b and back)
  segmenting heads     SegmentWords over the same number of rows of
                       MODEL/data/test_words.tsv: the top --k heads by
                       word-end F1, the best single head's character
                       accuracy, and the share of characters that at least
                       one of the top --k heads (and any head) gets right
  word-order heads     the top --k heads by attention to the previous and to
                       the next token (AnalyzeHeads)
  pattern classes      heads per Kovaleva class (AnalyzeHeads' rules) and
                       the class of every head named above
  term masking         one SweepAblation over the first --mask-examples rows
                       of test.tsv: the top --k term-matching heads masked,
                       --repeats masks of --k random heads (drawn from the
                       other heads, random.Random(--seed)), all of layers 0-5,
                       and layers 0-5 but the term heads; relative change =
                       accuracy with the mask / without - 1, in percent
  order masking        the card's word-order probe (make_model_card.
                       order_probe: grade-4 test pairs, titles shuffled)
                       under the top --order-k heads by to_previous +
                       to_next masked, and under --repeats masks of
                       --order-k random other heads (the study: 7 of each)
  fine-tuning          with the model it was fine-tuned from served too
                       (--starting-point, e.g. MODEL-mlm): CompareAttention
                       over the same rows (per-head cosine similarity of the
                       two models' maps, per-layer means, the difference map
                       of the top term-matching head on the first row) and
                       AnalyzeHeads of the starting point: the mean over
                       heads of cross_segment_match, to_self and to_sep
                       before and after (the study: fine-tuning strengthens
                       term matching, weakens self and [SEP] attention)

Head lists are [layer, head]; ties are broken by (layer, head).
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import evaluate_model  # noqa: E402
from make_model_card import STARTING_POINT, order_probe, start_server  # noqa: E402

PATTERNS = ("vertical", "diagonal", "vertical+diagonal", "block",
            "heterogeneous")


# measure()'s options: (keyword, default, help); the flag is --KEYWORD with
# "-" for "_" (make_model_card.py adds them with a "findings-" prefix).
OPTIONS = [
    ("analyze_examples", 500,
     "rows of test.tsv / test_words.tsv for AnalyzeHeads and SegmentWords"),
    ("mask_examples", 1000, "rows of test.tsv scored under each mask"),
    ("k", 5, "heads per list and per mask, as the study"),
    ("order_k", 7, "order heads masked in the order probe, as the study; "
                   "0 skips that experiment"),
    ("repeats", 20, "random masks per experiment"),
    ("seed", 1, "seed of the random head draws"),
]


def add_arguments(ap, prefix=""):
    for name, default, text in OPTIONS:
        ap.add_argument("--" + prefix + name.replace("_", "-"), type=int,
                        default=default, help=f"{text} ({default})")


def options(args, prefix=""):
    """measure()'s keyword arguments from parsed add_arguments flags."""
    return {name: getattr(args, prefix.replace("-", "_") + name)
            for name, _, _ in OPTIONS}


def top_heads(grid, k):
    """The k (layer, head) pairs with the largest values of grid, NaN
    last, ties by (layer, head)."""
    layers, heads = grid.shape
    order = sorted(((l, h) for l in range(layers) for h in range(heads)),
                   key=lambda lh: (np.isnan(grid[lh]), -np.nan_to_num(grid[lh],
                                                                      nan=0.0), lh))
    return order[:k]


def value(x, digits=4):
    x = float(x)
    return None if np.isnan(x) else round(x, digits)


def read_grid(table, name):
    return np.array([[np.nan if v is None else v for v in row]
                     for row in table[name]], dtype=np.float64)


def fine_tuning(bin_dir, port, test_tsv, out_dir, examples, starting_point,
                tuned_stats, detail_head):
    """The starting point (server name `starting_point`) against the
    default model: CompareAttention and the starting point's AnalyzeHeads,
    through the CLI (their pictures land in out_dir/compare, out_dir/
    analyze-starting-point)."""
    cdir = os.path.join(out_dir, "compare")
    sdir = os.path.join(out_dir, "analyze-starting-point")
    layer, head = detail_head
    run_cli(bin_dir, port, "compare", test_tsv, cdir,
            ["--label=", f"--limit={examples}", f"--model-a={starting_point}",
             f"--detail=0:{layer}:{head}"])
    run_cli(bin_dir, port, "analyze", test_tsv, sdir,
            ["--label=", f"--limit={examples}", f"--model={starting_point}"])
    with open(os.path.join(cdir, "similarity.json")) as f:
        sim = read_grid(json.load(f), "cosine_similarity")
    with open(os.path.join(sdir, "head_stats.json")) as f:
        before = json.load(f)

    def mean_change(name):
        a = read_grid(before["stats"], name)
        b = read_grid(tuned_stats["stats"], name)
        return {"before": value(np.nanmean(a)), "after": value(np.nanmean(b)),
                "heads_up": int(np.sum(b > a)), "heads_down": int(np.sum(b < a))}

    lowest = top_heads(-sim, 5)
    return {
        "starting_point": starting_point, "examples": before["examples"],
        "cosine_similarity_by_layer": [value(np.nanmean(row)) for row in sim],
        "least_similar_heads": [{"head": list(lh), "cosine_similarity": value(sim[lh])}
                                for lh in lowest],
        "difference_map": {"example": 0, "head": [layer, head]},
        "mean_over_heads": {n: mean_change(n) for n in
                            ("cross_segment_match", "to_self", "to_sep")},
        "starting_point_pattern_counts": {
            p: sum(row.count(p) for row in before["pattern"]) for p in PATTERNS},
    }


def run_cli(bin_dir, port, command, data, out_dir, flags):
    subprocess.run([os.path.join(bin_dir, "bertology"), command,
                    f"--target=127.0.0.1:{port}", "--data=" + data,
                    "--header=no", "--text-a=0", "--text-b=1", "--quiet",
                    "--timeout=3600", "--out-dir=" + out_dir] + flags,
                   check=True, stdout=subprocess.DEVNULL)


def random_masks(rng, layers, heads, exclude, k, repeats):
    """`repeats` sorted lists of k distinct heads, none in `exclude`."""
    pool = [(l, h) for l in range(layers) for h in range(heads)
            if (l, h) not in set(exclude)]
    return [sorted(rng.sample(pool, k)) for _ in range(repeats)]


def spread(values, digits):
    """Mean, sample standard deviation, min and max of `values`."""
    return {"mean": value(statistics.mean(values), digits),
            "stdev": (value(statistics.stdev(values), digits)
                      if len(values) > 1 else None),
            "min": value(min(values), digits), "max": value(max(values), digits),
            "repeats": len(values)}


def term_masking(client, rows, term, randoms, layers, heads):
    """One SweepAblation: the term heads, each random mask, layers 0-5 and
    layers 0-5 but the term heads."""
    low = [(l, h) for l in range(min(6, layers)) for h in range(heads)]
    masks = [{"id": "term", "ablate": term}]
    masks += [{"id": f"random-{i}", "ablate": m} for i, m in enumerate(randoms)]
    masks += [{"id": "layers-0-5", "ablate": low},
              {"id": "layers-0-5-but-term",
               "ablate": [lh for lh in low if lh not in set(term)]}]
    labels = {name: i for i, name in enumerate(client.info()["models"][0]["label_names"])}
    sweep = client.sweep_results([(a, b, labels[y]) for a, b, y in rows], masks)
    res = {r["mask_id"]: r for r in sweep["results"]}

    def change(mask_id):
        return res[mask_id]["relative_change_percent"]

    def entry(mask_id, heads):
        r = res[mask_id]
        return {"heads": heads, "correct": r["correct"],
                "accuracy": value(r["accuracy"]),
                "relative_change_percent": value(change(mask_id), 2)}

    rand = [change(f"random-{i}") for i in range(len(randoms))]
    base = sweep["baseline"]
    return {"examples": base["examples"], "baseline_correct": base["correct"],
            "baseline_accuracy": value(base["accuracy"]),
            "term_heads": entry("term", term),
            "random_heads": dict(spread([c for c in rand if c is not None], 2),
                                 masks=randoms),
            "layers_0_5": entry("layers-0-5", None),
            "layers_0_5_but_term_heads": entry("layers-0-5-but-term", None)}


def order_masking(client, rows, order, randoms):
    """make_model_card.order_probe with no mask, the order heads masked and
    each random mask."""
    def probe(heads):
        p = order_probe(client, rows, mask={"ablate": heads} if heads else None)
        return {k: value(v) if isinstance(v, float) else v for k, v in p.items()}

    rand = [probe(m) for m in randoms]
    keys = ("predicted_4_in_order", "predicted_4_shuffled",
            "mean_grade_in_order", "mean_grade_shuffled")
    return {"no_mask": probe(None), "order_heads": dict(probe(order), heads=order),
            "random_heads": {k: spread([r[k] for r in rand], 4) for k in keys},
            "random_masks": randoms}


def measure(client, port, bin_dir, model_dir, out_dir, analyze_examples=500,
            mask_examples=1000, k=5, order_k=7, repeats=20, seed=1,
            starting_point=None):
    """Runs every measurement against the server at `port` (`client` talks
    to it; `starting_point`: the server's name for the model the default
    one was fine-tuned from, or None), writes out_dir/findings.json and the
    CLI's outputs, and returns the findings dict."""
    info = client.info()["models"][0]
    layers, heads = info["num_layers"], info["num_heads"]
    test_tsv = os.path.join(model_dir, "data", "test.tsv")
    words_tsv = os.path.join(model_dir, "data", "test_words.tsv")
    rows = evaluate_model.read_tsv(test_tsv)
    os.makedirs(out_dir, exist_ok=True)

    # AnalyzeHeads and SegmentWords through the CLI: one pass each gives the
    # pictures and the numbers (its JSON holds the RPC's floats).
    adir, sdir = os.path.join(out_dir, "analyze"), os.path.join(out_dir, "segment")
    run_cli(bin_dir, port, "analyze", test_tsv, adir,
            ["--label=", f"--limit={analyze_examples}"])
    run_cli(bin_dir, port, "segment", words_tsv, sdir,
            ["--label=", f"--limit={analyze_examples}", f"--top={k}"])
    with open(os.path.join(adir, "head_stats.json")) as f:
        stats = json.load(f)
    with open(os.path.join(sdir, "segment_heads.json")) as f:
        seg = json.load(f)
    pattern = stats["pattern"]
    match = read_grid(stats["stats"], "cross_segment_match")
    prev = read_grid(stats["stats"], "to_previous")
    nxt = read_grid(stats["stats"], "to_next")
    f1, acc = read_grid(seg, "f1"), read_grid(seg, "accuracy")
    precision, recall = read_grid(seg, "precision"), read_grid(seg, "recall")

    def named(lh, **numbers):
        return dict({"head": list(lh), "pattern": pattern[lh[0]][lh[1]]},
                    **{n: value(g[lh]) for n, g in numbers.items()})

    term = top_heads(match, k)
    best_seg = [tuple(x) for x in seg["best_heads"]]
    most_accurate = top_heads(acc, 1)[0]
    order = top_heads(prev + nxt, order_k) if order_k else []
    counts = {p: sum(row.count(p) for row in pattern) for p in PATTERNS}
    findings = {
        "analyze_examples": stats["examples"],
        "pair_examples_with_match": stats["examples_with_match"],
        "term_matching_heads": [named(lh, cross_segment_match=match)
                                for lh in term],
        "segmenting_heads": {
            "examples": seg["examples"], "characters": seg["characters"],
            "by_f1": [named(lh, precision=precision, recall=recall, f1=f1,
                            accuracy=acc) for lh in best_seg],
            "best_head_accuracy": value(acc[best_seg[0]]),
            "most_accurate_head": named(most_accurate, accuracy=acc),
            "any_of_top_k_right": value(seg["oracle_top_heads"]),
            "any_head_right": value(seg["oracle_all_heads"]),
        },
        "order_heads": {
            "previous": [named(lh, to_previous=prev) for lh in top_heads(prev, k)],
            "next": [named(lh, to_next=nxt) for lh in top_heads(nxt, k)],
        },
        "pattern_counts": counts,
        "k": k, "seed": seed,
    }
    rng = random.Random(seed)
    findings["term_masking"] = term_masking(
        client, rows[:mask_examples], term,
        random_masks(rng, layers, heads, term, k, repeats), layers, heads)
    if order_k:
        findings["order_masking"] = order_masking(
            client, rows, order,
            random_masks(rng, layers, heads, order, order_k, repeats))
    dirs = [adir, sdir]
    if starting_point:
        findings["fine_tuning"] = fine_tuning(
            bin_dir, port, test_tsv, out_dir, analyze_examples, starting_point,
            stats, term[0])
        dirs += [os.path.join(out_dir, "compare"),
                 os.path.join(out_dir, "analyze-starting-point")]
    findings = json.loads(json.dumps(findings))  # tuples as lists
    findings["outputs"] = sorted(  # relative to out_dir
        os.path.join(os.path.basename(d), name)
        for d in dirs for name in os.listdir(d))
    with open(os.path.join(out_dir, "findings.json"), "w") as f:
        json.dump(findings, f, indent=1, ensure_ascii=False)
        f.write("\n")
    return findings


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default="build/bin")
    ap.add_argument("--model", default="models/querytitle-zh-tiny")
    ap.add_argument("--out", help="output folder (default MODEL/analysis)")
    ap.add_argument("--starting-point",
                    help="the model MODEL was fine-tuned from, compared with it")
    add_arguments(ap)
    args = ap.parse_args()
    proc, client, port, log = start_server(args.bin, args.model,
                                           args.starting_point)
    try:
        findings = measure(client, port, args.bin, args.model,
                           args.out or os.path.join(args.model, "analysis"),
                           starting_point=(STARTING_POINT if args.starting_point
                                           else None),
                           **options(args))
    finally:
        client.close()
        proc.terminate()
        proc.wait()
    print(json.dumps(findings, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
