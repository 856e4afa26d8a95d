#!/usr/bin/env python3
"""Attribution patching against exact activation patching on the shipped
model, side by side on one server (not part of `make bench`: about 1.5
minutes on 2 cores). `make bench-attribution` runs it.

  PYTHONPATH=build/python:client/python /usr/bin/python3 \\
      bench/attribution_patching.py --bin build/bin [--pairs 8]

For PAIRS grade-4 test rows, two corruptions of the title (its characters
shuffled; the characters it shares with the query replaced by one in
neither), both directions, every site of every kind Patch has (144 heads,
144 x T (head, position), 13 x T residual positions) in one call per
method. Per site kind: Pearson and Spearman correlation of the estimated
with the exact effect (the patched logit difference minus the target's),
top-10 overlap by |effect|, and the time of each call. Then where the
estimate fails: its error on (head, position) sites against how saturated
the head's attention is at that query on the target input (its largest
probability, GetAttention).
"""
import argparse
import os
import random
import sys
import time

import grpc
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "scripts"))
import evaluate_model  # noqa: E402
import make_model_card  # noqa: E402  (start_server)
from bertology.v1 import bertology_pb2 as pb  # noqa: E402
from bertology.v1 import bertology_pb2_grpc as pb_grpc  # noqa: E402

MODEL = "models/querytitle-zh-tiny"
KINDS = ("head", "head x position", "residual x position")


def kind_of(site):
    if site.kind == pb.PATCH_SITE_KIND_RESIDUAL:
        return KINDS[2]
    return KINDS[1] if site.HasField("position") else KINDS[0]


def run_patch(stub, clean, corrupted, direction, method):
    request = pb.PatchRequest(
        clean=pb.TextInput(text_a=clean[0], text_b=clean[1]),
        corrupted=pb.TextInput(text_a=corrupted[0], text_b=corrupted[1]),
        all_heads=True, all_head_positions=True, all_residual_positions=True,
        direction=direction, method=method)
    t0 = time.time()
    events = list(stub.Patch(request))
    secs = time.time() - t0
    results = [r for e in events if e.HasField("results")
               for r in e.results.results]
    return secs, events[0].plan, results


def spearman(a, b):
    ra = np.argsort(np.argsort(a)).astype(float)
    rb = np.argsort(np.argsort(b)).astype(float)
    return float(np.corrcoef(ra, rb)[0, 1])


def top_overlap(a, b, k=10):
    ta = set(np.argsort(-np.abs(a))[:k])
    tb = set(np.argsort(-np.abs(b))[:k])
    return len(ta & tb) / k


def saturation(stub, text):
    """[L, H, T]: each head's largest attention probability at each query
    position (1: all on one key, the softmax saturated)."""
    r = stub.GetAttention(pb.GetAttentionRequest(
        input=pb.TextInput(text_a=text[0], text_b=text[1])))
    out = np.zeros((12, 12, r.size))
    for m in r.maps:
        a = np.frombuffer(m.data, dtype="<f4").reshape(r.size, r.size)
        out[m.layer, m.head] = a.max(1)
    return out


def corruptions(rows, n):
    chars = sorted({c for a, b, _ in rows for c in a + b})
    out = []
    for a, b, _ in [r for r in rows if r[2] == "4"][:n]:
        shuffled = list(b)
        random.Random(1).shuffle(shuffled)
        out.append(("shuffled", (a, b), (a, "".join(shuffled))))
        filler = next(c for c in chars if c not in a and c not in b)
        out.append(("terms removed", (a, b),
                    (a, "".join(filler if c in a else c for c in b))))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default="build/bin")
    ap.add_argument("--pairs", type=int, default=8)
    args = ap.parse_args()
    proc, client, port, _ = make_model_card.start_server(args.bin, MODEL)
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    stub = pb_grpc.BertologyStub(channel)
    try:
        rows = evaluate_model.read_tsv(os.path.join(MODEL, "data", "test.tsv"))
        cases = corruptions(rows, args.pairs)
        est = {k: [] for k in KINDS}
        exact = {k: [] for k in KINDS}
        per_call = {k: [] for k in KINDS}  # (pearson, spearman, top10)
        times = {pb.PATCH_METHOD_EXACT: 0.0, pb.PATCH_METHOD_ATTRIBUTION: 0.0}
        sat_err = []  # (saturation, |error|, |exact effect|) per (head, pos)
        n_sites = 0
        run_patch(stub, cases[0][1], cases[0][2], 1, 1)  # warm
        for name, clean, corrupted in cases:
            for direction in (pb.PATCH_DIRECTION_CLEAN_INTO_CORRUPTED,
                              pb.PATCH_DIRECTION_CORRUPTED_INTO_CLEAN):
                got = {}
                for method in times:
                    secs, plan, results = run_patch(stub, clean, corrupted,
                                                     direction, method)
                    times[method] += secs
                    got[method] = results
                n_sites += len(results)
                target_ld = (plan.corrupted_logit_diff
                             if direction == pb.PATCH_DIRECTION_CLEAN_INTO_CORRUPTED
                             else plan.clean_logit_diff)
                target_text = (corrupted if direction ==
                               pb.PATCH_DIRECTION_CLEAN_INTO_CORRUPTED else clean)
                sat = saturation(stub, target_text)
                for k in KINDS:
                    pairs = [(a.logit_diff - target_ld, b.logit_diff - target_ld)
                             for a, b in zip(got[pb.PATCH_METHOD_ATTRIBUTION],
                                             got[pb.PATCH_METHOD_EXACT])
                             if kind_of(b.site) == k]
                    e, x = map(np.array, zip(*pairs))
                    est[k].extend(e)
                    exact[k].extend(x)
                    per_call[k].append((np.corrcoef(e, x)[0, 1], spearman(e, x),
                                        top_overlap(e, x)))
                for a, b in zip(got[pb.PATCH_METHOD_ATTRIBUTION],
                                got[pb.PATCH_METHOD_EXACT]):
                    if kind_of(b.site) == KINDS[1]:
                        site = b.site
                        sat_err.append((
                            sat[site.layer, site.head, site.position],
                            abs(a.logit_diff - b.logit_diff),
                            abs(b.logit_diff - target_ld)))
        calls = len(cases) * 2
        print(f"{len(cases)} (clean, corrupted) pairs x 2 directions = {calls} "
              f"calls per method, {n_sites // calls} sites each")
        print("| site kind | sites | Pearson (pooled) | Spearman (pooled) | "
              "median per call: Pearson, Spearman, top-10 overlap |")
        print("|---|---|---|---|---|")
        for k in KINDS:
            e, x = np.array(est[k]), np.array(exact[k])
            med = np.median(np.array(per_call[k]), axis=0)
            print(f"| {k} | {len(e)} | {np.corrcoef(e, x)[0, 1]:.3f} | "
                  f"{spearman(e, x):.3f} | {med[0]:.3f}, {med[1]:.3f}, "
                  f"{med[2]:.2f} |")
        ex, at = times[pb.PATCH_METHOD_EXACT], times[pb.PATCH_METHOD_ATTRIBUTION]
        print(f"time for all sites, {calls} calls: exact {ex:.2f} s, "
              f"attribution {at:.2f} s ({ex / at:.1f}x faster)")
        s, err, eff = map(np.array, zip(*sat_err))
        print(f"(head, position) sites: |error| against the head's largest "
              f"probability at that query: Spearman {spearman(s, err):.3f}")
        print("| largest probability | sites | median abs error | median abs "
              "exact effect | relative error (sum abs error / sum abs effect) |")
        print("|---|---|---|---|---|")
        for lo, hi in ((0, 0.5), (0.5, 0.9), (0.9, 1.01)):
            sel = (s >= lo) & (s < hi)
            if sel.any():
                print(f"| [{lo}, {min(hi, 1)}{')' if hi < 1 else ']'} | "
                      f"{sel.sum()} | {np.median(err[sel]):.2e} | "
                      f"{np.median(eff[sel]):.2e} | "
                      f"{err[sel].sum() / max(eff[sel].sum(), 1e-12):.2f} |")
    finally:
        channel.close()
        client.close()
        proc.terminate()
        proc.wait()


if __name__ == "__main__":
    main()
