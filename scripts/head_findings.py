#!/usr/bin/env python3
"""What the heads of a query-title model do (study 1 of ../shared/BRIEF.md),
measured through the real server: the model card's "head_findings".

  PYTHONPATH=build/python:client/python /usr/bin/python3 \
      scripts/head_findings.py --model models/querytitle-zh-tiny

starts `bertology-server` on MODEL (card_server.start_server), writes
OUT/findings.json (OUT defaults to MODEL/analysis) and keeps the CLI's
tables and pictures in OUT/analyze/ (`bertology analyze`) and OUT/segment/
(`bertology segment`). make_model_card.py calls measure() while its own
server is up and puts the result in card.json under "head_findings".

  term-matching heads  AnalyzeHeads over the first --analyze-examples rows of
                       MODEL/data/test.tsv: the top --k heads by
                       cross_segment_match (attention from a text_a token to
                       the identical tokens of text_b and back), beside the
                       uniform level: what a head attending uniformly over
                       the real tokens would score on the same rows
                       (uniform_match, from Tokenize)
  segmenting heads     SegmentWords over the same number of rows of
                       MODEL/data/test_words.tsv: the top --k heads by the
                       Matthews correlation of word ends (MCC), beside the
                       two trivial heads scored alike (always the next
                       character, always [SEP]), the best single head's
                       character accuracy, and the share of characters that
                       at least one of the top --k heads (any head; one of
                       the two trivial heads) gets right
  word-order heads     the top --k heads by attention to the previous and to
                       the next token (AnalyzeHeads)
  pattern classes      heads per Kovaleva class (AnalyzeHeads' rules on each
                       head's means), the share of all maps in each class
                       (each map classified on its own values, --per-map)
                       and the class of every head named above
  term masking         one SweepAblation over the first --mask-examples rows
                       of test.tsv: the top --k term-matching heads masked,
                       --repeats masks of --k random heads (drawn from the
                       other heads, random.Random(--seed)), all of layers 0-5,
                       the top --k term-matching heads of layers 0-5 (those
                       above the uniform level; the study's term heads are
                       there) and layers 0-5 but those (dropped, with the
                       reason, when no head of layers 0-5 is above it);
                       relative change = accuracy with the mask / without -
                       1, in percent, each with the server's paired 95%
                       interval of the accuracy difference
  order masking        the card's word-order probe (card_measures.
                       order_probe: grade-4 test pairs, titles shuffled; the
                       predicted grades, their mean and the mean shift with
                       a paired 95% interval) under no mask, the top
                       --order-k heads by to_previous + to_next masked, and
                       --repeats masks of --order-k random other heads (the
                       study: 7 of each), each mask's grades against the
                       unmasked ones pair by pair
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
from card_measures import (baseline_entry, change, excludes_zero,  # noqa: E402
                           order_predictions, order_summary, paired_interval,
                           rounded)
from card_server import STARTING_POINT, start_server  # noqa: E402

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


def unk_id(model_dir):
    """The vocabulary id of the unknown token (tokenizer_config.json's
    unk_token, "[UNK]" by default): the server never counts it as a match."""
    name = "[UNK]"
    path = os.path.join(model_dir, "tokenizer_config.json")
    if os.path.exists(path):
        with open(path) as f:
            name = json.load(f).get("unk_token", name)
    with open(os.path.join(model_dir, "vocab.txt"), encoding="utf-8") as f:
        for i, line in enumerate(f):
            if line.rstrip("\n") == name:
                return i
    return None


def uniform_match(client, pairs, unk):
    """What cross_segment_match would be for a head attending uniformly
    over the T real tokens of each input: per token with a match,
    (identical tokens in the other segment) / T, averaged as the server
    averages cross_segment_match (server/core/analysis/head_stats.cc): over
    the tokens with a match of an example, then over the examples with one.
    Tokens as Tokenize gives them (the same encoding, truncation included);
    special tokens and `unk` never match."""
    per_example = []
    for a, b in pairs:
        tokens = client.tokenize(a, b)["tokens"]
        t = len(tokens)
        seg = {0: [], 1: []}
        for tok in tokens:
            if not tok["special"]:
                seg[1 if tok["segment"] == 1 else 0].append(tok["id"])
        if not seg[1]:
            continue  # not a pair: no match is defined
        shares = [seg[1 - s].count(i) / t for s in (0, 1) for i in seg[s]
                  if i != unk and i in seg[1 - s]]
        if shares:
            per_example.append(statistics.mean(shares))
    return (statistics.mean(per_example) if per_example else float("nan"),
            len(per_example))


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


def term_masking(client, rows, term, randoms, low_layers, low_term, dropped):
    """One SweepAblation: the term heads, each random mask, all of
    `low_layers` (e.g. layers 0-5), and, when `low_term` (the term heads of
    those layers) is not empty, those alone and the low layers but those;
    else `dropped` says why that comparison is left out."""
    heads = client.info()["models"][0]["num_heads"]
    low = [(l, h) for l in low_layers for h in range(heads)]
    masks = [{"id": "term", "ablate": term}]
    masks += [{"id": f"random-{i}", "ablate": m} for i, m in enumerate(randoms)]
    masks += [{"id": "low-layers", "ablate": low}]
    if low_term:
        masks += [{"id": "low-term", "ablate": low_term},
                  {"id": "low-layers-but-term",
                   "ablate": [lh for lh in low if lh not in set(low_term)]}]
    labels = {name: i for i, name in enumerate(client.info()["models"][0]["label_names"])}
    sweep = client.sweep_results([(a, b, labels[y]) for a, b, y in rows], masks)
    res = {r["mask_id"]: r for r in sweep["results"]}
    base = sweep["baseline"]

    def entry(mask_id, heads):
        r = res[mask_id]
        return dict(change(r, base, heads=heads), accuracy=value(r["accuracy"]),
                    relative_change_percent=value(r["relative_change_percent"], 2))

    rand = [res[f"random-{i}"] for i in range(len(randoms))]
    rand_ok = [r for r in rand if r["relative_change_percent"] is not None]
    lo = min(rand_ok, key=lambda r: r["relative_change_percent"]) if rand_ok else None
    hi = max(rand_ok, key=lambda r: r["relative_change_percent"]) if rand_ok else None
    layer_range = [low_layers[0], low_layers[-1]]
    return {"examples": base["examples"], "baseline_correct": base["correct"],
            "baseline_accuracy": value(base["accuracy"]),
            "baseline": baseline_entry(base),
            "term_heads": entry("term", term),
            "random_heads": dict(
                spread([r["relative_change_percent"] for r in rand_ok], 2),
                masks=randoms,
                min_mask=change(lo, base) if lo else None,
                max_mask=change(hi, base) if hi else None,
                distinguishable_harmful=sum(r["distinguishable"] and r["accuracy_delta"] < 0
                                            for r in rand),
                distinguishable_helpful=sum(r["distinguishable"] and r["accuracy_delta"] > 0
                                            for r in rand),
                changes=[change(r, base) for r in rand]),
            "low_layers": layer_range,
            "layers_0_5": entry("low-layers", None),
            "low_term_heads": entry("low-term", low_term) if low_term else None,
            "layers_0_5_but_term_heads": (entry("low-layers-but-term", None)
                                          if low_term else None),
            "layers_0_5_but_term_heads_dropped": None if low_term else dropped}


def order_masking(client, rows, order, randoms):
    """The word-order probe (card_measures.order_summary) with no mask,
    the order heads masked and each random mask; each mask's predicted
    grades against the unmasked ones on the same pairs: the mean change of
    the in-order pairs' grade and of the shuffled pairs' grade, with paired
    95% intervals."""
    names = client.info()["models"][0]["label_names"]
    b0, a0 = order_predictions(client, rows)

    def probe(heads):
        b, a = order_predictions(client, rows, mask={"ablate": heads})
        out = order_summary(b, a, names)
        for key, x, x0 in (("in_order", b, b0), ("shuffled", a, a0)):
            d = x.astype(np.float64) - x0
            ci = paired_interval(d)
            out[f"{key}_vs_no_mask"] = {"mean": value(d.mean()), "ci": rounded(ci),
                                        "distinguishable": excludes_zero(ci)}
        return {k: value(v) if isinstance(v, float) else v for k, v in out.items()}

    rand = [probe(m) for m in randoms]
    keys = ("predicted_4_in_order", "predicted_4_shuffled",
            "mean_grade_in_order", "mean_grade_shuffled", "shift")
    no_mask = order_summary(b0, a0, names)
    summary = {k: spread([r[k] for r in rand], 4) for k in keys}
    for key in ("in_order", "shuffled"):
        v = [r[f"{key}_vs_no_mask"] for r in rand]
        summary[f"{key}_vs_no_mask"] = dict(
            spread([x["mean"] for x in v], 4),
            up=sum(x["distinguishable"] and x["mean"] > 0 for x in v),
            down=sum(x["distinguishable"] and x["mean"] < 0 for x in v))
    # The grade distributions pooled over the random masks (mean counts).
    for key in ("grades_in_order", "grades_shuffled"):
        summary[key] = {n: value(statistics.mean(r[key][n] for r in rand), 2)
                        for n in names}
    summary["repeats"] = len(rand)
    return {"no_mask": {k: value(v) if isinstance(v, float) else v
                        for k, v in no_mask.items()},
            "order_heads": dict(probe(order), heads=order),
            "random_heads": summary,
            "random_results": [{k: r[k] for k in ("mean_grade_in_order",
                                                  "mean_grade_shuffled", "shift",
                                                  "shuffled_vs_no_mask")}
                               for r in rand],
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
            ["--label=", f"--limit={analyze_examples}", "--per-map"])
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
    seg_grids = {n: read_grid(seg, n) for n in
                 ("mcc", "balanced_accuracy", "precision", "recall", "f1", "accuracy")}
    acc, mcc = seg_grids["accuracy"], seg_grids["mcc"]

    def named(lh, **numbers):
        return dict({"head": list(lh), "pattern": pattern[lh[0]][lh[1]]},
                    **{n: value(g[lh]) for n, g in numbers.items()})

    # The uniform level of term matching, on the same rows AnalyzeHeads read.
    uniform, with_match = uniform_match(
        client, [(a, b) for a, b, _ in rows[:analyze_examples]], unk_id(model_dir))
    if with_match != stats["examples_with_match"]:
        raise RuntimeError(
            f"the uniform level covers {with_match} examples with a match, "
            f"AnalyzeHeads {stats['examples_with_match']}: not the same rows")
    term = top_heads(match, k)
    # The study's term heads are in the low layers (the first half): the
    # "low layers but the term heads" mask is built on the top term heads
    # there, counting only heads above the uniform level.
    low_layers = list(range(layers // 2))
    low_grid = np.full_like(match, np.nan)
    low_grid[low_layers] = match[low_layers]
    low_best = top_heads(low_grid, 1)[0]
    low_term = [lh for lh in top_heads(low_grid, k) if match[lh] > uniform]
    dropped = None
    if not low_term:
        dropped = (f"no head of layers {low_layers[0]}-{low_layers[-1]} matches "
                   f"identical terms above the uniform level {uniform:.4f} (the "
                   f"best there, L{low_best[0]}H{low_best[1]}, scores "
                   f"{match[low_best]:.4f}), so there are no term heads to "
                   "leave out: the mask would be all of those layers again")
    best_seg = [tuple(x) for x in seg["best_heads"]]
    most_accurate = top_heads(acc, 1)[0]
    order = top_heads(prev + nxt, order_k) if order_k else []
    counts = {p: sum(row.count(p) for row in pattern) for p in PATTERNS}
    # The share of all (example, head) maps in each class, each map
    # classified on its own values (Kovaleva et al. classified maps).
    shares = stats.get("map_pattern_share") or {}
    map_share = {p: value(np.nanmean(read_grid(shares, p.replace("+", "_"))))
                 for p in PATTERNS if p.replace("+", "_") in shares}

    def baseline(b):
        return {n: value(b[n]) if isinstance(b[n], float) else b[n] for n in
                ("mcc", "balanced_accuracy", "precision", "recall", "f1",
                 "accuracy", "true_ends", "predicted_ends", "correct")}
    always_next = seg["baselines"]["always_next"]
    findings = {
        "analyze_examples": stats["examples"],
        "pair_examples_with_match": stats["examples_with_match"],
        "term_matching_heads": [dict(named(lh, cross_segment_match=match),
                                     times_uniform=value(match[lh] / uniform, 2))
                                for lh in term],
        "term_matching_uniform": {
            "cross_segment_match": value(uniform, 5),
            "examples_with_match": with_match,
            "heads_above": int(np.sum(match > uniform)),
            "heads": layers * heads,
            "heads_above_by_layer": [int(np.sum(row > uniform)) for row in match],
        },
        "low_layer_term_heads": {
            "layers": [low_layers[0], low_layers[-1]],
            "heads": [dict(named(lh, cross_segment_match=match),
                           times_uniform=value(match[lh] / uniform, 2))
                      for lh in low_term],
            "best": dict(named(low_best, cross_segment_match=match),
                         times_uniform=value(match[low_best] / uniform, 2)),
        },
        "segmenting_heads": {
            "examples": seg["examples"], "characters": seg["characters"],
            "gold_ends": seg["gold_ends"],
            "ranked_by": "mcc, then balanced_accuracy, then (layer, head)",
            "by_mcc": [named(lh, **seg_grids) for lh in best_seg],
            "baselines": {"always_next": baseline(always_next),
                          "always_sep": baseline(seg["baselines"]["always_sep"])},
            "heads_above_always_next_mcc": int(np.sum(mcc > always_next["mcc"])),
            "heads_above_always_next_accuracy": int(np.sum(acc > always_next["accuracy"])),
            "best_head_accuracy": value(acc[best_seg[0]]),
            "most_accurate_head": named(most_accurate, accuracy=acc, mcc=mcc),
            "any_of_top_k_right": value(seg["oracle_top_heads"]),
            "any_head_right": value(seg["oracle_all_heads"]),
            "baselines_oracle": value(seg["oracle_baselines"]),
        },
        "order_heads": {
            "previous": [named(lh, to_previous=prev) for lh in top_heads(prev, k)],
            "next": [named(lh, to_next=nxt) for lh in top_heads(nxt, k)],
        },
        "pattern_counts": counts,
        "map_pattern_share": map_share,
        "k": k, "seed": seed,
    }
    rng = random.Random(seed)
    findings["term_masking"] = term_masking(
        client, rows[:mask_examples], term,
        random_masks(rng, layers, heads, term, k, repeats), low_layers,
        low_term, dropped)
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
    u = findings["term_matching_uniform"]
    print("term matching (cross_segment_match), uniform attention "
          f"{u['cross_segment_match']:.4f}; top heads: " + ", ".join(
              f"L{x['head'][0]}H{x['head'][1]} {x['cross_segment_match']:.4f}"
              for x in findings["term_matching_heads"]), file=sys.stderr)
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
