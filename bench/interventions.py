#!/usr/bin/env python3
"""What the interventions of issue 16 cost on the shipped model, side by
side in one run on one server (not part of `make bench`: about 3 minutes).

  PYTHONPATH=build/python:client/python /usr/bin/python3 \
      bench/interventions.py --bin build/bin [--examples 300]

1. A single-head sweep (`bertology sweep --heads`) over the first EXAMPLES
   test rows in mode zero, mean and resample (4 draws): mean replaces a
   head's output by a constant, so it should cost what zero costs; a
   resample row runs once per draw from the first masked layer on.
2. Activation patching of one test pair (grade 4) against the same query
   with the title's characters shuffled (same length): every head in one
   Patch call, every (head, position), and the loop a notebook writes: one
   call (one patched forward pass plus the two source runs) per head; and
   144 Classify calls of one input, the floor of any one-pass-per-site loop.
3. The strongest heads when the corruption removes the query's terms from
   the title instead (3 pairs).
"""
import argparse
import os
import random
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "scripts"))
import evaluate_model  # noqa: E402
import make_model_card  # noqa: E402  (start_server)

MODEL = "models/querytitle-zh-tiny"


def timed(fn):
    t0 = time.time()
    out = fn()
    return time.time() - t0, out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default="build/bin")
    ap.add_argument("--examples", type=int, default=300)
    args = ap.parse_args()
    proc, client, port, _ = make_model_card.start_server(args.bin, MODEL)
    cli = [os.path.join(args.bin, "bertology")]
    target = f"--target=127.0.0.1:{port}"
    try:
        dev = evaluate_model.read_tsv(os.path.join(MODEL, "data", "dev.tsv"))
        secs, st = timed(lambda: client.compute_head_statistics(
            [(a, b) for a, b, _ in dev]))
        print(f"ComputeHeadStatistics over {st['examples']} dev rows "
              f"({st['tokens']} tokens): {secs:.2f} s, id {st['id']}")
        sweep = cli + ["sweep", target, "--data=" + os.path.join(MODEL, "data", "test.tsv"),
                       "--text-a=0", "--text-b=1", "--label=2",
                       f"--limit={args.examples}", "--heads", "--quiet"]
        base = None
        for mode in (["--mode=zero"], ["--mode=mean", "--statistics=" + st["id"]],
                     ["--mode=resample", "--statistics=" + st["id"], "--draws=4",
                      "--seed=1"]):
            secs, _ = timed(lambda: subprocess.run(sweep + mode, check=True,
                                                   stdout=subprocess.DEVNULL))
            base = base or secs
            print(f"sweep {args.examples} rows x 144 heads {' '.join(mode[:1] + mode[2:])}: "
                  f"{secs:.1f} s ({secs / base:.2f}x zero)")

        rows = evaluate_model.read_tsv(os.path.join(MODEL, "data", "test.tsv"))
        a, b, _ = next(r for r in rows if r[2] == "4")
        shuffled = list(b)
        random.Random(1).shuffle(shuffled)
        clean, corrupted = (a, b), (a, "".join(shuffled))
        client.patch(clean, corrupted)  # warm
        heads, out = timed(lambda: client.patch(clean, corrupted, sites="heads"))
        positions, pos = timed(lambda: client.patch(clean, corrupted,
                                                    sites="head-positions"))
        loop, _ = timed(lambda: [client.patch(clean, corrupted, sites=[(l, h)])
                                 for l in range(12) for h in range(12)])
        floor, _ = timed(lambda: [client.classify([clean]) for _ in range(144)])
        print(f"Patch, {out['plan']['num_tokens']} tokens: 144 head sites in one "
              f"call {heads:.3f} s; {len(pos['results'])} (head, position) sites "
              f"{positions:.2f} s; 144 one-site calls {loop:.2f} s "
              f"({loop / heads:.1f}x); 144 Classify calls {floor:.2f} s "
              f"({floor / heads:.1f}x)")
        best = sorted(out["results"], key=lambda r: -abs(r["normalized_effect"] or 0))[:3]
        print("strongest heads (normalized effect): " + ", ".join(
            f"L{r['layer']}H{r['head']} {r['normalized_effect']:.3f}" for r in best))
        # Another corruption: the title's characters that occur in the
        # query replaced by one that occurs in neither (term matching).
        chars = sorted({c for x, y, _ in rows for c in x + y})
        for a, b, _ in [r for r in rows if r[2] == "4"][:3]:
            filler = next(c for c in chars if c not in a and c not in b)
            out = client.patch((a, b), (a, "".join(filler if c in a else c
                                                   for c in b)))
            best = sorted(out["results"],
                          key=lambda r: -abs(r["normalized_effect"] or 0))[:3]
            print("query terms removed from the title: " + ", ".join(
                f"L{r['layer']}H{r['head']} {r['normalized_effect']:.3f}"
                for r in best))
    finally:
        client.close()
        proc.terminate()
        proc.wait()


if __name__ == "__main__":
    main()
