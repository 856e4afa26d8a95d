"""The table of scripts/gpu_check.sh, from what it wrote under OUT: the
machine, each step's seconds, the test precisions' largest gaps from the
float64 goldens, and the bench rows (engine sweep rates against the plain
PyTorch loop on the same device, Classify under load, GetAttention).

  python3 bench/gpu_report.py OUT > OUT/gpu-table.md

Markdown, for bench/RESULTS.md; every figure comes from a file OUT holds.
"""
import glob
import json
import os
import re
import sys


def load(path):
    with open(path) as f:
        return json.load(f)


def main():
    out = sys.argv[1]
    b = os.path.join(out, "bench")
    lines = ["# Device check (scripts/gpu_check.sh)", ""]
    with open(os.path.join(out, "facts.txt")) as f:
        lines += ["    " + l.rstrip() for l in f]
    lines += ["", "| step | seconds | |", "|---|---:|---|"]
    with open(os.path.join(out, "steps.tsv")) as f:
        for row in f:
            name, sec, state = row.rstrip("\n").split("\t")
            lines.append("| %s | %s | %s |" % (name, sec, state))

    lines += ["", "## Numerics (device_check_test, largest gap from "
              "float64)", "", "| run | result | gaps |", "|---|---|---|"]
    for log in sorted(glob.glob(os.path.join(out, "device_*.log"))):
        text = open(log).read()
        passed = re.search(r"\[  PASSED  \] (\d+) tests?", text)
        failed = re.search(r"\[  FAILED  \] (\d+) tests?", text)
        head = re.search(r"device_check: (.*attention; tolerances.*)", text)
        gaps = "; ".join(re.findall(r"device_check: (\S+ goldens: .*)", text))
        lines.append("| %s (%s) | %s | %s |" % (
            os.path.basename(log)[:-4], head.group(1) if head else "?",
            ("FAILED %s" % failed.group(1)) if failed else
            ("passed %s" % passed.group(1) if passed else "?"), gaps))

    lines += ["", "## Sweeps: (mask, example) pairs per second", "",
              "| run | device, dtype, attention | examples x masks | "
              "rate | vs loop (F32) | correct counts vs loop |",
              "|---|---|---|---:|---:|---|"]
    loops = {}
    for path in sorted(glob.glob(os.path.join(b, "loop-*.json"))):
        loops[os.path.basename(path)[5:-5]] = load(path)
    for path in sorted(glob.glob(os.path.join(b, "core-*.json"))):
        name = os.path.basename(path)[5:-5]
        r = load(path)
        s = r["sweep"]
        rate = s.get("engine_wide_rate", s["engine_rate"])
        model = name.split("-")[0]
        anchor = loops.get(model + "-f32")
        versus = "%.1fx" % (rate / anchor["rate"]) if anchor else "-"
        agree = "-"
        if anchor and len(anchor["correct"]) == len(s["correct"]):
            diff = [abs(a - c) for a, c in zip(s["correct"],
                                               anchor["correct"])]
            agree = "max diff %d of %d" % (max(diff), s["examples"])
        lines.append("| engine %s | %s %s %s | %d x %d | %.0f | %s | %s |" % (
            name, r.get("device", "cpu"), r["dtype"], r.get("attention", ""),
            s["examples"], s["masks"] + 1, rate, versus, agree))
        if "naive_rate" in s:
            lines.append("| C++ naive loop %s | %s %s | %d x %d | %.0f | "
                         "%s | |" % (name, r.get("device", "cpu"), r["dtype"],
                                     s["examples"], s["masks"] + 1,
                                     s["naive_rate"],
                                     "%.1fx" % (s["naive_rate"] /
                                                anchor["rate"])
                                     if anchor else "-"))
        if model == "base":
            # The goal's sweep (every head of BERT-base, 145 masks with the
            # baseline, over 872 sentences) at this run's rate.
            lines.append("| (goal: 145 x 872 in < 5 s) | at this rate | "
                         "145 x 872 | %.1f s | | |" % (145 * 872 / rate))
    for name, r in sorted(loops.items()):
        anchor = loops.get(name.split("-")[0] + "-f32")
        lines.append("| PyTorch loop %s | %s %s | %d x %d | %.0f | %s | |" % (
            name, r.get("device", "cpu"), r["dtype"], r["examples"],
            r["masks"] + 1, r["rate"],
            "%.1fx" % (r["rate"] / anchor["rate"]) if anchor else "-"))

    grpc = os.path.join(b, "grpc-base.json")
    if os.path.exists(grpc):
        g = load(grpc)
        lines += ["", "## Through the server (BERT-base shape)", "",
                  "| call | clients | calls/s | p50 ms | p99 ms | errors |",
                  "|---|---:|---:|---:|---:|---:|"]
        for c in g.get("classify", []):
            if not c["calls"]:  # none finished in the measured window
                lines.append("| Classify | %d | 0 | - | - | %d |" % (
                    c["clients"], c["errors"]))
                continue
            lines.append("| Classify | %d | %.0f | %.1f | %.1f | %d |" % (
                c["clients"], c["calls_per_s"], c["p50_ms"], c["p99_ms"],
                c["errors"]))
        a = g.get("attention", {})
        for enc in ("float32", "float16"):
            if enc in a and "p50_ms" in a[enc]:
                lines.append("| GetAttention %s, %s tokens | 1 | | %.1f | | "
                             "|" % (enc, a.get("tokens"), a[enc]["p50_ms"]))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
