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
test accuracy and confusion through Classify, a word-order probe (grade-4
titles with their characters shuffled), the study's sweeps through
`bertology sweep` (figures and results under MODEL/sweep/), every single
head mean-ablated beside zero ablation (statistics over the dev split,
MODEL/sweep-mean/; --only-mean-ablation re-measures that part alone on the
card as it is), and what the
heads do (scripts/head_findings.py, on the same server: "head_findings",
with MODEL/analysis/). --train-seconds defaults to the last epoch's
elapsed_s in MODEL/train_log.json.
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import card_markdown  # noqa: E402
import evaluate_model  # noqa: E402
from bertology_client import Client  # noqa: E402


STARTING_POINT = "querytitle-mlm"  # the starting point's name on the server


def start_server(bin_dir, model, starting_point=None):
    """The server with MODEL as its default model "querytitle" and, when
    given, the model it was fine-tuned from as STARTING_POINT."""
    log = tempfile.NamedTemporaryFile(prefix="card-server-", suffix=".log")
    extra = ([f"--model={STARTING_POINT}={starting_point}"]
             if starting_point else [])
    proc = subprocess.Popen(
        [os.path.join(bin_dir, "bertology-server"), "--model=querytitle=" + model]
        + extra + ["--listen=127.0.0.1:0", "--metrics_listen=", "--threads=1"],
        stdout=log, stderr=subprocess.STDOUT)
    port = None
    while port is None:
        if proc.poll() is not None:
            sys.exit("server exited: " + open(log.name).read())
        for line in open(log.name):
            if "listening on port" in line:
                port = int(line.split("listening on port")[1].split(",")[0])
        time.sleep(0.1)
    client = Client(f"127.0.0.1:{port}", timeout=600)
    while client.health() != "SERVING":
        time.sleep(0.2)
    return proc, client, port, log


def order_probe(client, rows, mask=None):
    """Grade-4 pairs vs the same titles with characters shuffled, under
    `mask` (any form Client.classify takes; None: no mask)."""
    fours = [(q, t) for q, t, y in rows if y == "4"]
    rng = random.Random(7)
    shuffled = []
    for q, t in fours:
        c = list(t)
        rng.shuffle(c)
        shuffled.append((q, "".join(c)))
    def labels(pairs):  # in calls under the server's --max_inputs_per_call
        return np.concatenate([client.classify(pairs[i:i + 200], mask=mask).labels
                               for i in range(0, len(pairs), 200)])

    before = labels(fours)
    after = labels(shuffled)
    return {"pairs": len(fours),
            "predicted_4_in_order": float((before == 4).mean()),
            "predicted_4_shuffled": float((after == 4).mean()),
            "mean_grade_in_order": float(before.mean()),
            "mean_grade_shuffled": float(after.mean())}


def findings(sweep):
    res = sweep["results"]
    single = [r for r in res if r["mask_id"].startswith("head-")]
    layers = [r for r in res if r["mask_id"].startswith("layer-")]
    rand = [r for r in res if r["mask_id"].startswith("random-")]
    out = {"baseline_accuracy": sweep["baseline"]["accuracy"]}
    # relative_change_percent is None (JSON null) at a zero baseline: no
    # ratio exists, so those masks are left out of every change figure.
    num_single = len(single)
    single = [r for r in single if r["relative_change_percent"] is not None]
    layers = [r for r in layers if r["relative_change_percent"] is not None]
    rand = [r for r in rand if r["relative_change_percent"] is not None]
    ch = sorted(single, key=lambda r: r["relative_change_percent"])
    out["single_heads"] = {
        "masks": num_single,
        "changed_over_1pct": sum(abs(r["relative_change_percent"]) > 1 for r in single),
        "unchanged": sum(r["correct"] == sweep["baseline"]["correct"] for r in single),
        "most_harmful": [(r["mask_id"], round(r["relative_change_percent"], 2)) for r in ch[:5]],
        "most_helpful": [(r["mask_id"], round(r["relative_change_percent"], 2)) for r in ch[::-1][:5]],
    }
    out["layers"] = [(r["mask_id"], round(r["relative_change_percent"], 2)) for r in layers]
    groups = {}
    for r in rand:
        # ids: random-L{begin}-{end}-k{heads}-s{seed}-r{repeat}
        _, begin, end, k = r["mask_id"].split("-")[:4]
        rng = f"{begin}-{end}"
        n = (int(end) - int(begin[1:])) * sweep["num_heads"]
        groups.setdefault((rng, int(k[1:]), n), []).append(
            r["relative_change_percent"])
    # The fraction actually masked (heads / heads in the range), not the
    # requested one it was rounded from.
    out["random"] = [{"layers": k[0], "heads": k[1], "fraction": round(k[1] / k[2], 3),
                      "mean_change_percent": round(statistics.mean(v), 2),
                      "min": round(min(v), 2), "max": round(max(v), 2), "repeats": len(v)}
                     for k, v in sorted(groups.items())]
    return out


def mean_ablation(bin_dir, port, m, examples, zero_sweep):
    """Every single head mean-ablated on the same test rows as the zero
    sweep: statistics over the dev split (`bertology statistics`: each
    head's mean output over all real tokens), then `bertology sweep --heads
    --mode=mean` (results and figures under MODEL/sweep-mean/)."""
    cli = os.path.join(bin_dir, "bertology")
    target = f"--target=127.0.0.1:{port}"
    stats = json.loads(subprocess.run(
        [cli, "statistics", target, "--reference=" + os.path.join(m, "data", "dev.tsv"),
         "--text-a=0", "--text-b=1", "--json"],
        check=True, capture_output=True, text=True).stdout)
    t0 = time.time()
    subprocess.run([cli, "sweep", target, "--data=" + os.path.join(m, "data", "test.tsv"),
                    "--text-a=0", "--text-b=1", "--label=2", f"--limit={examples}",
                    "--heads", "--mode=mean", "--statistics=" + stats["id"],
                    "--out-dir=" + os.path.join(m, "sweep-mean"), "--quiet"],
                   check=True, stdout=subprocess.DEVNULL)
    seconds = time.time() - t0
    with open(os.path.join(m, "sweep-mean", "sweep_results.json")) as f:
        mean = json.load(f)
    return mean_findings(zero_sweep, mean, stats, seconds)


def mean_findings(zero, mean, stats, seconds):
    """The mean sweep's single heads beside the zero sweep's, head by head."""
    def single(sweep):
        return {r["mask_id"]: r for r in sweep["results"]
                if r["mask_id"].startswith("head-")}
    z, mn = single(zero), single(mean)
    both = [h for h in mn if h in z and mn[h]["relative_change_percent"] is not None
            and z[h]["relative_change_percent"] is not None]
    zc = np.array([z[h]["relative_change_percent"] for h in both])
    mc = np.array([mn[h]["relative_change_percent"] for h in both])

    def ranks(x):
        return np.argsort(np.argsort(x, kind="stable"), kind="stable").astype(float)
    # The heads that matter most in either mode, by the larger harm.
    worst = sorted(both, key=lambda h: min(z[h]["relative_change_percent"],
                                           mn[h]["relative_change_percent"]))[:8]
    return {
        "reference": "data/dev.tsv",
        "statistics": {k: stats[k] for k in ("id", "examples", "tokens",
                                             "truncated_examples")},
        "sweep_examples": mean["baseline"]["examples"],
        "sweep_seconds": round(seconds, 1),
        "baseline_accuracy": mean["baseline"]["accuracy"],
        "single_heads": findings(mean)["single_heads"],
        "pearson": round(float(np.corrcoef(zc, mc)[0, 1]), 3),
        "spearman": round(float(np.corrcoef(ranks(zc), ranks(mc))[0, 1]), 3),
        "heads_mean_milder": int((mc > zc + 0.5).sum()),
        "heads_mean_harsher": int((mc < zc - 0.5).sum()),
        "most_harmful_either": [
            {"head": h.replace("head-", ""),
             "zero_change_percent": round(z[h]["relative_change_percent"], 2),
             "mean_change_percent": round(mn[h]["relative_change_percent"], 2),
             "zero_correct": z[h]["correct"], "mean_correct": mn[h]["correct"]}
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
    # Imported here: head_findings imports this module's start_server.
    import head_findings
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
        for f in (0.1, 0.2, 0.3, 0.4, 0.5):
            specs += [f"--random={f},{args.repeats},1,0-5", f"--random={f},{args.repeats},1,6-11"]
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
            "test_accuracy": round(ev["accuracy"], 4), "confusion": ev["confusion"],
            "baselines": baselines, "order_probe": probe,
            "train_seconds": round(args.train_seconds), "train_log": train_log,
            "sweep_examples": min(args.sweep_examples, len(test_rows)),
            "sweep_seconds": round(sweep_seconds, 1), "findings": findings(sweep),
            "mean_ablation": mean, "head_findings": heads}
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
    write_card(m, card)


if __name__ == "__main__":
    main()
