#!/usr/bin/python3
"""What the shipped query-title model's grade rests on, by token
attribution (the Attribute RPC), for the model card (make_model_card.py,
`make card`):

For the grade-4 test pairs (card_measures.shuffled_pairs: the same pairs
the order probe reads), in order and with the title's characters shuffled,
with no mask and with the order heads masked (head_findings' order_masking:
the heads with the most attention to the previous plus the next character,
mode zero), each method's attribution of the grade-4 logit to each title
character. A title character either occurs in the query or does not; per
pair, the mean score of the first kind minus that of the second (pairs with
both kinds only), averaged over pairs with a paired 95% interval; and the
share of the title's total |score| on characters in the query, against the
share of those characters among the title's (the level of a method that
spreads its score evenly: the trivial baseline a finding must beat).

Integrated gradients runs with the [PAD] baseline, Gauss-Legendre, STEPS
points; its completeness gap is reported so a reader sees the steps sufficed.
"""
import numpy as np

import grpc

from bertology.v1 import bertology_pb2 as pb
from bertology.v1 import bertology_pb2_grpc as pb_grpc

from card_measures import ORDER_GRADE, excludes_zero, paired_interval, rounded
from card_measures import shuffled_pairs

STEPS = 64
CHUNK = 50  # inputs per call, under the server's --max_inputs_per_call
METHODS = {
    "integrated_gradients": pb.ATTRIBUTION_METHOD_INTEGRATED_GRADIENTS,
    "gradient_x_input": pb.ATTRIBUTION_METHOD_GRADIENT_X_INPUT,
    "saliency": pb.ATTRIBUTION_METHOD_SALIENCY,
    "attention_x_gradient": pb.ATTRIBUTION_METHOD_ATTENTION_X_GRADIENT,
    "attention_rollout": pb.ATTRIBUTION_METHOD_ATTENTION_ROLLOUT,
    "attention_flow": pb.ATTRIBUTION_METHOD_ATTENTION_FLOW,
}


def value(x, digits=4):
    return None if x is None or not np.isfinite(x) else round(float(x), digits)


def attribute(stub, pairs, target, heads):
    """One AttributionResult per pair, grade `target`'s logit, under
    `heads` ablated (mode zero; empty: no mask)."""
    mask = pb.HeadMask(ablate=pb.HeadList(heads=[
        pb.LayerHead(layer=l, head=h) for l, h in heads])) if heads else None
    out = []
    for i in range(0, len(pairs), CHUNK):
        request = pb.AttributeRequest(
            inputs=[pb.TextInput(text_a=q, text_b=t) for q, t in pairs[i:i + CHUNK]],
            methods=list(METHODS.values()), target=target, steps=STEPS)
        if mask is not None:
            request.head_mask.CopyFrom(mask)
        out += [e.result for e in stub.Attribute(request) if e.HasField("result")]
    return out


def title_split(result, query):
    """Indices of the title's characters (segment 1, not special) in the
    query and not in it."""
    inside, outside = [], []
    for i, u in enumerate(result.units):
        if u.segment == 1 and not u.special:
            (inside if u.text in query else outside).append(i)
    return inside, outside


def summarise(results, pairs):
    """Per method: mean in-query minus other score (paired interval),
    shares of |score| against the in-query characters' share."""
    out = {}
    for name, method in METHODS.items():
        diffs, shares, levels = [], [], []
        for r, (q, _) in zip(results, pairs):
            scores = np.array(next(m.scores for m in r.methods if m.method == method))
            inside, outside = title_split(r, q)
            if inside and outside:
                diffs.append(scores[inside].mean() - scores[outside].mean())
            total = np.abs(scores[inside + outside]).sum()
            if inside + outside and total > 0:
                shares.append(np.abs(scores[inside]).sum() / total)
                levels.append(len(inside) / len(inside + outside))
        d = np.array(diffs)
        ci = paired_interval(d)
        s, lv = np.array(shares), np.array(levels)
        sci = paired_interval(s - lv)
        out[name] = {"pairs_with_both": len(d),
                     "in_query_minus_other": value(d.mean()),
                     "ci": rounded(ci), "distinguishable": excludes_zero(ci),
                     "share_in_query": value(s.mean()),
                     "even_share": value(lv.mean()),
                     "share_minus_even_ci": rounded(sci),
                     "share_beats_even": bool(excludes_zero(sci) and sci[0] > 0)}
    gaps = [m.completeness_gap for r in results for m in r.methods
            if m.method == METHODS["integrated_gradients"]]
    spans = [abs(r.output_value - m.baseline_output) for r in results
             for m in r.methods if m.method == METHODS["integrated_gradients"]]
    out["integrated_gradients"].update(
        median_gap=value(np.median(gaps), 6), max_gap=value(np.max(gaps), 6),
        median_output_change=value(np.median(spans)))
    out["mean_output"] = value(np.mean([r.output_value for r in results]))
    return out


def condition(port, rows, label_names, name, order_heads, limit=200):
    """One entry of "conditions": `name` is "no_mask" or "order_heads",
    then "/in_order" or "/shuffled"."""
    mask_name, title = name.split("/")
    fours, shuffled = shuffled_pairs(rows)
    pairs = (fours if title == "in_order" else shuffled)[:limit]
    heads = order_heads if mask_name == "order_heads" else []
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    try:
        results = attribute(pb_grpc.BertologyStub(channel), pairs,
                            label_names.index(ORDER_GRADE), heads)
    finally:
        channel.close()
    return summarise(results, pairs)


CONDITIONS = ("no_mask/in_order", "no_mask/shuffled", "order_heads/in_order",
              "order_heads/shuffled")


def measure(port, rows, order_heads, label_names, limit=200):
    """The card's "attribution" entry (see the module docstring)."""
    fours, _ = shuffled_pairs(rows)
    conditions = {name: condition(port, rows, label_names, name, order_heads,
                                  limit) for name in CONDITIONS}
    return {"pairs": min(limit, len(fours)), "target": ORDER_GRADE, "output": "logit",
            "steps": STEPS, "baseline": "[PAD]", "order_heads": order_heads,
            "methods": list(METHODS), "conditions": conditions}
