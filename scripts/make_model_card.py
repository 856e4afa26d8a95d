#!/usr/bin/env python3
"""Measures a trained query-title model through the real server and writes
its model card: MODEL/card.json (what tests check) and MODEL/RESULTS.md
(card.json as Markdown, scripts/card_markdown.py; MODEL/README.md, the
hand-written half, says how the model was made and quotes it).

  PYTHONPATH=build/python:client/python /usr/bin/python3 \
      scripts/make_model_card.py --bin build/bin \
      --model models/querytitle-zh-tiny --baselines baselines.json \
      --sweep-examples 1000

  PYTHONPATH=build/python:client/python /usr/bin/python3 \
      scripts/make_model_card.py --bin build/bin \
      --model models/querytitle-zh-tiny --only-mean-ablation

re-measures the mean-ablation part alone into the card as it is.
(`make card` runs it on the shipped model, with the baselines of
scripts/querytitle_baselines.py.) Everything it reports is measured here:
test accuracy (with its Wilson 95% interval) and confusion through
Classify, a word-order probe (grade-4 titles with their characters
shuffled: the predicted grades before and after, the mean shift with its
paired 95% interval), the study's sweeps through `bertology sweep`
(figures and results under MODEL/sweep/; every change with the server's
paired 95% interval against the baseline), every single head mean-ablated
beside zero ablation, with one pooled mean per head (MODEL/sweep-mean/) and
with one mean per token role (MODEL/sweep-mean-by-role/; statistics over
the dev split; --only-mean-ablation re-measures that part alone on the card
as it is), what the heads do (scripts/head_findings.py, on the same server:
"head_findings", with MODEL/analysis/), what its grade rests on by token
attribution (scripts/attribution_findings.py: "attribution"), and the
study's claims against
those numbers ("reproduction", card_markdown.reproduction). --train-seconds
defaults to the last epoch's elapsed_s in MODEL/train_log.json.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import card_markdown  # noqa: E402
import evaluate_model  # noqa: E402
import attribution_findings  # noqa: E402
import head_findings  # noqa: E402
from card_measures import baseline_entry, change, order_probe, rounded  # noqa: E402
from card_server import STARTING_POINT, start_server  # noqa: E402

wilson = card_markdown.wilson  # as the server computes it (common/intervals.cc)


def findings(sweep):
    """The zero sweep's single heads, layers and random masks, every change
    with its interval (change())."""
    res = sweep["results"]
    base = sweep["baseline"]
    single = [r for r in res if r["mask_id"].startswith("head-")]
    layers = [r for r in res if r["mask_id"].startswith("layer-")]
    rand = [r for r in res if r["mask_id"].startswith("random-")]
    out = {"baseline_accuracy": base["accuracy"], "baseline": baseline_entry(base)}
    # relative_change_percent is None (JSON null) at a zero baseline: no
    # ratio exists, so those masks are left out of every change figure.
    num_single = len(single)
    single = [r for r in single if r["relative_change_percent"] is not None]
    layers = [r for r in layers if r["relative_change_percent"] is not None]
    rand = [r for r in rand if r["relative_change_percent"] is not None]
    ch = sorted(single, key=lambda r: (r["relative_change_percent"], r["mask_index"]))
    helpful = sorted(single, key=lambda r: (-r["relative_change_percent"], r["mask_index"]))
    out["single_heads"] = {
        "masks": num_single,
        "changed_over_1pct": sum(abs(r["relative_change_percent"]) > 1 for r in single),
        "unchanged": sum(r["correct"] == base["correct"] for r in single),
        "distinguishable_harmful": sum(bool(r["distinguishable"]) and r["accuracy_delta"] < 0
                                       for r in single),
        "distinguishable_helpful": sum(bool(r["distinguishable"]) and r["accuracy_delta"] > 0
                                       for r in single),
        "most_harmful": [change(r, base, head=r["mask_id"].replace("head-", ""))
                         for r in ch[:5]],
        "most_helpful": [change(r, base, head=r["mask_id"].replace("head-", ""))
                         for r in helpful[:5]],
    }
    out["layers"] = [change(r, base, layer=int(r["mask_id"].replace("layer-", "")))
                     for r in layers]
    groups = {}
    for r in rand:
        # ids: random-L{begin}-{end}-k{heads}-s{seed}-r{repeat}, layers
        # [begin, end)
        _, begin, end, k = r["mask_id"].split("-")[:4]
        groups.setdefault((int(begin[1:]), int(end), int(k[1:])), []).append(r)
    total = sweep["num_layers"] * sweep["num_heads"]
    out["random"] = []
    for (begin, end, k), rs in sorted(groups.items(), key=lambda g: (
            g[0][1] - g[0][0] == sweep["num_layers"], g[0])):
        n = (end - begin) * sweep["num_heads"]
        v = [r["relative_change_percent"] for r in rs]
        lo = min(rs, key=lambda r: (r["relative_change_percent"], r["mask_index"]))
        hi = max(rs, key=lambda r: (r["relative_change_percent"], -r["mask_index"]))
        # "k random heads of layers B-E": the share is of the range's heads
        # (the fraction actually masked, not the requested one it was
        # rounded from), and of all heads beside it.
        out["random"].append({
            "first_layer": begin, "last_layer": end - 1, "heads": k,
            "range_heads": n, "all_heads": total,
            "share_of_range": round(k / n, 3), "share_of_all": round(k / total, 3),
            "mean_change_percent": round(statistics.mean(v), 2),
            "min": change(lo, base), "max": change(hi, base), "repeats": len(v),
            "distinguishable_harmful": sum(bool(r["distinguishable"]) and
                                           r["accuracy_delta"] < 0 for r in rs),
            "distinguishable_helpful": sum(bool(r["distinguishable"]) and
                                           r["accuracy_delta"] > 0 for r in rs),
            "masks": [change(r, base) for r in rs]})
    return out


# The two mean-ablation sweeps of every single head: mode, out-dir.
MEAN_MODES = (("mean", "sweep-mean"), ("mean_by_role", "sweep-mean-by-role"))


def mean_ablation(bin_dir, port, m, examples, zero_sweep):
    """Every single head mean-ablated on the same test rows as the zero
    sweep: statistics over the dev split (`bertology statistics`: each
    head's mean output over all real tokens, and per token role), then
    `bertology sweep --heads --mode=mean` (one pooled mean per head; results
    and figures under MODEL/sweep-mean/) and `--mode=mean_by_role` (one
    mean per head and token role: [CLS], each [SEP], each segment's tokens;
    MODEL/sweep-mean-by-role/)."""
    cli = os.path.join(bin_dir, "bertology")
    target = f"--target=127.0.0.1:{port}"
    stats = json.loads(subprocess.run(
        [cli, "statistics", target, "--reference=" + os.path.join(m, "data", "dev.tsv"),
         "--text-a=0", "--text-b=1", "--json"],
        check=True, capture_output=True, text=True).stdout)
    sweeps, seconds = {}, {}
    for mode, folder in MEAN_MODES:
        t0 = time.time()
        subprocess.run([cli, "sweep", target, "--data=" + os.path.join(m, "data", "test.tsv"),
                        "--text-a=0", "--text-b=1", "--label=2", f"--limit={examples}",
                        "--heads", "--mode=" + mode, "--statistics=" + stats["id"],
                        "--out-dir=" + os.path.join(m, folder), "--quiet"],
                       check=True, stdout=subprocess.DEVNULL)
        seconds[mode] = time.time() - t0
        with open(os.path.join(m, folder, "sweep_results.json")) as f:
            sweeps[mode] = json.load(f)
    return mean_findings(zero_sweep, sweeps["mean"], stats, seconds["mean"],
                         sweeps["mean_by_role"], seconds["mean_by_role"])


def mean_findings(zero, mean, stats, seconds, role, role_seconds):
    """The mean sweeps' single heads beside the zero sweep's, head by head:
    pooled mean (`mean`) and role means (`role`)."""
    def single(sweep):
        return {r["mask_id"]: r for r in sweep["results"]
                if r["mask_id"].startswith("head-")}
    z, mn, ro = single(zero), single(mean), single(role)
    both = [h for h in mn if h in z and h in ro and all(
        s[h]["relative_change_percent"] is not None for s in (z, mn, ro))]
    zc = np.array([z[h]["relative_change_percent"] for h in both])
    mc = np.array([mn[h]["relative_change_percent"] for h in both])
    rc = np.array([ro[h]["relative_change_percent"] for h in both])

    def ranks(x):
        return np.argsort(np.argsort(x, kind="stable"), kind="stable").astype(float)

    def corr(a, b):
        return {"pearson": round(float(np.corrcoef(a, b)[0, 1]), 3),
                "spearman": round(float(np.corrcoef(ranks(a), ranks(b))[0, 1]), 3)}
    # The heads that matter most in any mode, by the largest harm.
    worst = sorted(both, key=lambda h: (min(s[h]["relative_change_percent"]
                                            for s in (z, mn, ro)), h))[:8]
    zero_vs_role = corr(zc, rc)
    return {
        "reference": "data/dev.tsv",
        "statistics": {k: stats[k] for k in ("id", "examples", "tokens",
                                             "truncated_examples")},
        "sweep_examples": mean["baseline"]["examples"],
        "sweep_seconds": round(seconds, 1),
        "role_sweep_seconds": round(role_seconds, 1),
        "baseline_accuracy": mean["baseline"]["accuracy"],
        "single_heads": findings(mean)["single_heads"],
        "by_role_single_heads": findings(role)["single_heads"],
        # zero against the pooled mean (the card's first comparison) ...
        **corr(zc, mc),
        "heads_mean_milder": int((mc > zc + 0.5).sum()),
        "heads_mean_harsher": int((mc < zc - 0.5).sum()),
        # ... and against the role means, and the two means against each
        # other.
        "zero_vs_by_role": dict(zero_vs_role,
                                heads_milder=int((rc > zc + 0.5).sum()),
                                heads_harsher=int((rc < zc - 0.5).sum())),
        "mean_vs_by_role": corr(mc, rc),
        "most_harmful_either": [
            {"head": h.replace("head-", ""),
             "zero_change_percent": round(z[h]["relative_change_percent"], 2),
             "mean_change_percent": round(mn[h]["relative_change_percent"], 2),
             "by_role_change_percent": round(ro[h]["relative_change_percent"], 2),
             "zero_correct": z[h]["correct"], "mean_correct": mn[h]["correct"],
             "by_role_correct": ro[h]["correct"],
             "zero": change(z[h], zero["baseline"]),
             "mean": change(mn[h], mean["baseline"]),
             "by_role": change(ro[h], role["baseline"])}
            for h in worst],
    }


def update_mean_ablation(args):
    """--only-mean-ablation: re-measures card["mean_ablation"] alone on the
    card's model and sweep rows, keeping every other figure."""
    m = args.model
    with open(os.path.join(m, "card.json")) as f:
        card = json.load(f)
    with open(os.path.join(m, "sweep", "sweep_results.json")) as f:
        zero = json.load(f)
    proc, client, port, log = start_server(args.bin, m)
    try:
        card["mean_ablation"] = mean_ablation(args.bin, port, m,
                                              card["sweep_examples"], zero)
    finally:
        client.close()
        proc.terminate()
        proc.wait()
    card["reproduction"] = card_markdown.reproduction(card)
    write_card(m, card)


def write_card(m, card):
    with open(os.path.join(m, "card.json"), "w") as f:
        json.dump(card, f, indent=1, ensure_ascii=False)
        f.write("\n")
    with open(os.path.join(m, "RESULTS.md"), "w", encoding="utf-8") as f:
        f.write(card_markdown.render(card))
    print(json.dumps(card, indent=1, ensure_ascii=False))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default="build/bin")
    ap.add_argument("--model", default="models/querytitle-zh-tiny")
    ap.add_argument("--baselines",
                    help="scripts/querytitle_baselines.py's JSON (required "
                         "but with --only-mean-ablation)")
    ap.add_argument("--train-seconds", type=float,
                    help="training time (default: train_log.json's last "
                         "epoch elapsed_s)")
    ap.add_argument("--starting-point",
                    help="the model MODEL was fine-tuned from (default: "
                         "MODEL-mlm when it exists), compared with it")
    ap.add_argument("--sweep-examples", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--only-mean-ablation", action="store_true",
                    help="re-measure only the mean-ablation sweep and update "
                         "MODEL/card.json in place (the rest as it is)")
    findings_options = ap.add_argument_group("head findings (head_findings.py)")
    head_findings.add_arguments(findings_options, prefix="findings-")
    args = ap.parse_args()
    if args.only_mean_ablation:
        update_mean_ablation(args)
        return
    if args.baselines is None:
        ap.error("--baselines is required")
    m = args.model
    start = args.starting_point
    if start is None and os.path.isdir(m.rstrip("/") + "-mlm"):
        start = m.rstrip("/") + "-mlm"
    test_rows = evaluate_model.read_tsv(os.path.join(m, "data", "test.tsv"))
    proc, client, port, log = start_server(args.bin, m, start)
    try:
        info = client.info()["models"][0]
        ev = evaluate_model.evaluate(client, test_rows)
        probe = order_probe(client, test_rows)
        specs = ["--heads", "--layers"]
        half = info["num_layers"] // 2  # the study's low and high layers
        for f in (0.1, 0.2, 0.3, 0.4, 0.5):
            specs += [f"--random={f},{args.repeats},1,0-{half - 1}",
                      f"--random={f},{args.repeats},1,{half}-{info['num_layers'] - 1}"]
        # The study's "a random 10-20% of the 144 heads": drawn from all.
        specs += [f"--random={f},{args.repeats},1" for f in (0.1, 0.2)]
        t0 = time.time()
        subprocess.run([os.path.join(args.bin, "bertology"), "sweep",
                        f"--target=127.0.0.1:{port}", "--data=" + os.path.join(m, "data", "test.tsv"),
                        "--text-a=0", "--text-b=1", "--label=2",
                        f"--limit={args.sweep_examples}", "--out-dir=" + os.path.join(m, "sweep"),
                        "--quiet"] + specs, check=True, stdout=subprocess.DEVNULL)
        sweep_seconds = time.time() - t0
        with open(os.path.join(m, "sweep", "sweep_results.json")) as f:
            sweep = json.load(f)
        mean = mean_ablation(args.bin, port, m, args.sweep_examples, sweep)
        heads = head_findings.measure(
            client, port, args.bin, m, os.path.join(m, "analysis"),
            starting_point=STARTING_POINT if start else None,
            **head_findings.options(args, prefix="findings-"))
        order = heads.get("order_masking", {}).get("order_heads", {})
        attribution = attribution_findings.measure(
            port, test_rows, order.get("heads", []), info["label_names"])
    finally:
        client.close()
        proc.terminate()
        proc.wait()
    with open(args.baselines) as f:
        baselines = json.load(f)
    with open(os.path.join(m, "train_log.json")) as f:
        train_log = json.load(f)
    if args.train_seconds is None:
        args.train_seconds = train_log["epochs"][-1]["elapsed_s"]
    files = {name: os.path.getsize(os.path.join(m, name))
             for name in ("config.json", "model.safetensors", "vocab.txt",
                          "tokenizer_config.json")}
    card = {"name": os.path.basename(m.rstrip("/")), "labels": info["label_names"],
            "layers": info["num_layers"], "heads": info["num_heads"],
            "hidden_size": info["hidden_size"], "vocab_size": info["vocab_size"],
            "files": files, "test_examples": ev["examples"],
            "test_accuracy": round(ev["accuracy"], 4), "test_correct": ev["correct"],
            "test_accuracy_ci": rounded(wilson(ev["correct"], ev["examples"])),
            "confusion": ev["confusion"],
            "baselines": baselines, "order_probe": probe,
            "train_seconds": round(args.train_seconds), "train_log": train_log,
            "sweep_examples": min(args.sweep_examples, len(test_rows)),
            "sweep_seconds": round(sweep_seconds, 1), "findings": findings(sweep),
            "mean_ablation": mean, "head_findings": heads,
            "attribution": attribution}
    if start:
        # The pretraining the classifier was fine-tuned from: its time and
        # masked-character accuracy, from its own train_log.json.
        with open(os.path.join(start, "train_log.json")) as f:
            start_log = json.load(f)
        card["starting_point"] = {
            "dir": os.path.basename(start.rstrip("/")),
            "objective": start_log["objective"],
            "train_seconds": round(start_log["epochs"][-1]["elapsed_s"]),
            "best_dev_masked_token_accuracy": round(
                start_log["best_dev_masked_token_accuracy"], 4)}
    card["reproduction"] = card_markdown.reproduction(card)
    write_card(m, card)


if __name__ == "__main__":
    main()
