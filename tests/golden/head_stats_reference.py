#!/usr/bin/python3
"""An independent reference for AnalyzeHeads' per-head statistics.

Written from the definitions (Clark et al. 2019 and the proto's comments,
not from server/core/analysis/), in the style of Clark et al.'s own
analysis code: each statistic is a [T x T] selector matrix S, and a head's
value for one example is sum(p * S) / (number of queries). Works on float64
maps as make_golden.reference_encoder returns them.

tokens: a list of dicts (or objects) with "text", "id", "segment" and
"special" (as the Tokenize RPC returns them); maps: [L, H, T, T].

The pattern classes, from the proto's comments: V ("vertical") = to_cls +
to_sep; D ("diagonal") = the previous/self/next selector with the columns
of special keys zeroed, so [CLS]/[SEP] count toward V only. Each head is
classified on its dataset means, and (per_map) each (example, head) map on
that example's own V, D, to_own_segment and share, giving per head the
share of its maps in each class.
"""

import math
import unicodedata

import numpy as np

STATISTICS = ("to_cls", "to_sep", "to_punctuation", "to_self", "to_previous",
              "to_next", "entropy", "cross_segment_match", "mean_distance",
              "to_own_segment", "vertical", "diagonal")
# The classes in the order of AnalyzeHeadsResult.map_pattern_share's last
# axis (AttentionPattern - 1).
PATTERNS = ("vertical", "diagonal", "vertical+diagonal", "block",
            "heterogeneous")

# The rules of the pattern classes, as stated in the proto and the C++
# header (thresholds are the API), written again here.
VERTICAL_MIN, DIAGONAL_MIN = 0.5, 0.5
MIXED_EACH_MIN, MIXED_SUM_MIN = 0.3, 0.7
BLOCK_WITHIN_MIN, BLOCK_EXCESS_MIN = 0.6, 0.25


def _get(t, key):
    return t[key] if isinstance(t, dict) else getattr(t, key)


def is_punctuation(text):
    if text.startswith("##"):
        text = text[2:]
    return bool(text) and all(unicodedata.category(c).startswith("P")
                              for c in text)


def example_stats(tokens, maps, unk_id):
    """{statistic: [L, H] array or None (undefined for this example)}, plus
    "share" (own-segment share, or None) for one example."""
    t = len(tokens)
    special = np.array([_get(x, "special") for x in tokens])
    segment = np.array([_get(x, "segment") for x in tokens])
    ids = np.array([_get(x, "id") for x in tokens])
    texts = [_get(x, "text") for x in tokens]
    p = np.asarray(maps, dtype=np.float64)  # [L, H, T, T]
    cls = np.zeros(t); cls[0] = 1.0
    sep = np.array([1.0 if special[j] and j > 0 else 0.0 for j in range(t)])
    punct = np.array([0.0 if special[j] else float(is_punctuation(texts[j]))
                      for j in range(t)])
    cols = lambda v: np.tile(v[None, :], (t, 1))  # noqa: E731
    selectors = {
        "to_cls": cols(cls),
        "to_sep": cols(sep),
        "to_punctuation": cols(punct),
        "to_self": np.eye(t),
        "to_previous": np.eye(t, k=-1),
        "to_next": np.eye(t, k=1),
        "mean_distance": np.abs(np.arange(t)[:, None] - np.arange(t)[None, :]),
        "vertical": cols(cls + sep),
        # Three diagonals, every special key's column left out.
        "diagonal": ((np.eye(t) + np.eye(t, k=-1) + np.eye(t, k=1))
                     * cols((~special).astype(np.float64))),
    }
    out = {k: (p * s).sum((-1, -2)) / t for k, s in selectors.items()}
    with np.errstate(divide="ignore", invalid="ignore"):
        plogp = np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0)
    out["entropy"] = -plogp.sum((-1, -2)) / t

    pair = bool(((segment == 1) & ~special).any())
    out["cross_segment_match"] = None
    out["to_own_segment"] = None
    out["share"] = None
    if pair:
        word = ~special
        same_id = ids[:, None] == ids[None, :]
        other_seg = segment[:, None] != segment[None, :]
        match = (same_id & other_seg & word[:, None] & word[None, :]
                 & (ids[:, None] != unk_id))
        has = match.any(1)
        if has.any():
            out["cross_segment_match"] = (p * match).sum((-1, -2)) / has.sum()
        own = (segment[:, None] == segment[None, :]) & word[:, None] & word[None, :]
        n = word.sum()
        out["to_own_segment"] = (p * own).sum((-1, -2)) / n
        seg_sizes = {s: (word & (segment == s)).sum() for s in (0, 1)}
        out["share"] = sum(seg_sizes[segment[i]] / t
                           for i in range(t) if word[i]) / n
    return out


def classify(v, d, own, share):
    if v >= MIXED_EACH_MIN and d >= MIXED_EACH_MIN and v + d >= MIXED_SUM_MIN:
        return "vertical+diagonal"
    if v >= VERTICAL_MIN:
        return "vertical"
    if d >= DIAGONAL_MIN:
        return "diagonal"
    if (not math.isnan(own) and own >= BLOCK_WITHIN_MIN
            and own - share >= BLOCK_EXCESS_MIN):
        return "block"
    return "heterogeneous"


def dataset_stats(examples, unk_id):
    """examples: [(tokens, maps [L, H, T, T])]. The dataset means as
    AnalyzeHeads defines them: per-example means, each example weighing the
    same; the pair-only statistics over the examples where they exist; NaN
    over none. Adds "pattern" ([L, H] of names, from the means),
    "map_pattern_share" ([L, H, 5]: the share of each head's maps, one per
    example, of each class in PATTERNS' order), "examples",
    "pair_examples", "examples_with_match" and "own_segment_share"."""
    per = [example_stats(tok, m, unk_id) for tok, m in examples]
    shape = np.asarray(examples[0][1]).shape[:2]
    out = {}
    for k in STATISTICS:
        vals = [e[k] for e in per if e[k] is not None]
        out[k] = np.mean(vals, axis=0) if vals else np.full(shape, np.nan)
    shares = [e["share"] for e in per if e["share"] is not None]
    out["own_segment_share"] = float(np.mean(shares)) if shares else math.nan
    out["examples"] = len(per)
    out["pair_examples"] = len(shares)
    out["examples_with_match"] = sum(e["cross_segment_match"] is not None
                                     for e in per)
    pattern = np.empty(shape, dtype=object)
    for l in range(shape[0]):
        for h in range(shape[1]):
            pattern[l, h] = classify(
                out["vertical"][l, h], out["diagonal"][l, h],
                out["to_own_segment"][l, h], out["own_segment_share"])
    out["pattern"] = pattern
    share = np.zeros(tuple(shape) + (len(PATTERNS),))
    for e in per:
        for l in range(shape[0]):
            for h in range(shape[1]):
                own = (math.nan if e["to_own_segment"] is None
                       else e["to_own_segment"][l, h])
                cls_ = classify(e["vertical"][l, h], e["diagonal"][l, h], own,
                                math.nan if e["share"] is None else e["share"])
                share[l, h, PATTERNS.index(cls_)] += 1
    out["map_pattern_share"] = share / len(per)
    return out
