"""What the model-card scripts (make_model_card.py, head_findings.py)
measure alike: the server's paired 95% interval computed again per example,
a sweep result as the card reports a change, and the word-order probe
(grade-4 pairs against the same titles with their characters shuffled).
"""
import random

import numpy as np

import card_markdown

# The two-sided 95% normal quantile (common/intervals.h's kZ95).
Z95 = card_markdown.Z95
# The grade whose pairs the word-order probe shuffles: the whole query in
# order (scripts/querytitle_data.py's top grade).
ORDER_GRADE = "4"


def paired_interval(diffs, z=Z95):
    """The normal 95% interval of the mean of paired differences (one per
    example), for the order probe's grade shifts; None with fewer than 2.
    Not the server's interval of an accuracy change (common/intervals.cc),
    which adds Bonett & Price's two pseudo-examples (+1 and -1) because its
    differences are 0/+-1 and often few are non-zero; accuracy changes in
    the card take the server's interval as it sends it (change())."""
    d = np.asarray(diffs, dtype=np.float64)
    k = len(d)
    if k < 2:
        return None
    r = float(d.mean())
    se = float(np.sqrt(k / (k - 1) * np.sum((d - r) ** 2)) / k)
    return [r - z * se, r + z * se]


def excludes_zero(ci):
    return ci is not None and (ci[0] > 0 or ci[1] < 0)


def rounded(ci, digits=4):
    return None if ci is None else [round(float(x), digits) for x in ci]


def change(r, baseline, **extra):
    """One sweep result (the CLI's sweep_results.json or the client's
    dict) as the card reports a change: relative change, the net count of
    rows gained (+) or lost (-), the accuracy difference with the server's
    paired 95% interval and whether that excludes 0. The difference and its
    interval are kept as the server sent them, not rounded, so that
    "distinguishable" can be checked against the bounds exactly (a bound a
    hair from 0 would round to 0.0); card_markdown.py rounds for reading."""
    ci = r.get("accuracy_delta_ci")
    rel = r["relative_change_percent"]
    return dict(extra, **{
        "mask": r["mask_id"], "correct": r["correct"],
        "rows_delta": r["correct"] - baseline["correct"],
        "change_percent": None if rel is None else round(rel, 2),
        "accuracy_delta": float(r["accuracy_delta"]),
        "delta_ci": None if ci is None else [float(x) for x in ci],
        "distinguishable": bool(r.get("distinguishable")),
    })


def baseline_entry(b):
    """A sweep's baseline: its accuracy with the server's Wilson interval."""
    return {"examples": b["examples"], "correct": b["correct"],
            "accuracy": round(b["accuracy"], 4),
            "accuracy_ci": rounded(b["accuracy_ci"])}



def shuffled_pairs(rows):
    """The grade-4 pairs of `rows` and the same pairs with each title's
    characters shuffled (random.Random(7): the same shuffle every call)."""
    fours = [(q, t) for q, t, y in rows if y == ORDER_GRADE]
    rng = random.Random(7)
    shuffled = []
    for q, t in fours:
        c = list(t)
        rng.shuffle(c)
        shuffled.append((q, "".join(c)))
    return fours, shuffled


def order_predictions(client, rows, mask=None):
    """The predicted label indices of the grade-4 pairs in order and
    shuffled, under `mask` (any form Client.classify takes; None: none)."""
    fours, shuffled = shuffled_pairs(rows)

    def labels(pairs):  # in calls under the server's --max_inputs_per_call
        return np.concatenate([client.classify(pairs[i:i + 200], mask=mask).labels
                               for i in range(0, len(pairs), 200)])
    return labels(fours), labels(shuffled)


def grade_counts(pred, names):
    return {n: int((pred == i).sum()) for i, n in enumerate(names)}


def order_summary(before, after, names):
    """What shuffling does to the predicted grades of the same pairs: the
    grade distribution in order and shuffled, the mean grade (a label's
    index: "0".."4" are 0..4) and the mean per-pair shift (shuffled - in
    order) with its paired 95% interval."""
    top = names.index(ORDER_GRADE)
    shift = after.astype(np.float64) - before
    ci = paired_interval(shift)
    return {"pairs": int(len(before)),
            "predicted_4_in_order": round(float((before == top).mean()), 4),
            "predicted_4_shuffled": round(float((after == top).mean()), 4),
            "mean_grade_in_order": round(float(before.mean()), 4),
            "mean_grade_shuffled": round(float(after.mean()), 4),
            "grades_in_order": grade_counts(before, names),
            "grades_shuffled": grade_counts(after, names),
            "shift": round(float(shift.mean()), 4), "shift_ci": rounded(ci),
            "shift_distinguishable": excludes_zero(ci),
            "pairs_down": int((shift < 0).sum()), "pairs_up": int((shift > 0).sum()),
            "pairs_same": int((shift == 0).sum())}


def order_probe(client, rows, mask=None):
    """Grade-4 pairs vs the same titles with characters shuffled, under
    `mask` (any form Client.classify takes; None: no mask): order_summary."""
    names = client.info()["models"][0]["label_names"]
    return order_summary(*order_predictions(client, rows, mask), names)
