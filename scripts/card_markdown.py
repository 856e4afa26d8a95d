#!/usr/bin/env python3
"""The measured half of a model card as Markdown, from its card.json
(scripts/make_model_card.py writes both: card.json, then MODEL/RESULTS.md
from it), so that no figure in it is typed by hand. reproduction() holds
the study's claims (../shared/BRIEF.md, study 1) and judges each against
the card's numbers by a stated test; make_model_card.py keeps its verdicts
in card.json ("reproduction") and render() lists them.

  /usr/bin/python3 scripts/card_markdown.py models/querytitle-zh-tiny/card.json
"""
import json
import math
import sys

# The two-sided 95% normal quantile (common/intervals.h's kZ95).
Z95 = 1.959963984540054


def pct(x, digits=1):
    return "n/a" if x is None else f"{x:+.{digits}f}%"


def points(x):
    """An accuracy difference in percentage points."""
    return f"{100 * x:+.1f}"


def interval(ci):
    """A 95% interval of an accuracy difference, in points."""
    return "none" if ci is None else f"[{points(ci[0])}, {points(ci[1])}]"


def verdict(c):
    return ("distinguishable from 0" if c["distinguishable"]
            else "not distinguishable from 0")


def chg(c, of=None):
    """A change as the card reports it (card_measures.change): relative
    change, net rows gained or lost, the accuracy difference in points with
    its paired 95% interval, and whether that excludes 0."""
    rows = f"{c['rows_delta']:+d} rows" + (f" of {of:,}" if of else "")
    return (f"{pct(c['change_percent'])} ({rows}; {points(c['accuracy_delta'])} "
            f"points, 95% CI {interval(c['delta_ci'])}, {verdict(c)})")


def change_cells(c):
    """Table cells: change | rows | points [95% CI] | distinguishable."""
    return (f"{pct(c['change_percent'], 2)} | {c['rows_delta']:+d} | "
            f"{points(c['accuracy_delta'])} {interval(c['delta_ci'])} | "
            + ("yes" if c["distinguishable"] else "no"))


CHANGE_HEADER = ("relative change | rows | Δ accuracy, points [95% CI] | "
                 "distinguishable from 0")


def share(x, digits=1):
    return f"{100 * x:.{digits}f}%"


def acc_ci(acc, ci):
    return f"{acc:.3f} (95% CI {ci[0]:.3f}-{ci[1]:.3f})"


def head(lh):
    return f"L{lh[0]}H{lh[1]}"


def heads(items):
    return ", ".join(head(h) for h in items)


def listing(items):
    """"a, b and c"."""
    return " and ".join([", ".join(items[:-1]), items[-1]] if len(items) > 1 else items)


def layer_range(first, last):
    return f"{first}-{last}"


def wilson(successes, n, z=Z95):
    """Wilson's 95% interval of successes / n, as the server computes it
    (common/intervals.cc); [0, 1] for n = 0. make_model_card uses it too."""
    if n <= 0:
        return [0.0, 1.0]
    p = successes / n
    denom = 1 + z * z / n
    center = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(max(0.0, p * (1 - p) / n + z * z / (4 * n * n))) / denom
    return [max(0.0, center - half), min(1.0, center + half)]


def grade_shift(v):
    """A mean grade change with its paired 95% interval."""
    ci = v["ci"] if "ci" in v else v["shift_ci"]
    mean = v["mean"] if "mean" in v else v["shift"]
    dist = v["distinguishable"] if "distinguishable" in v else v["shift_distinguishable"]
    return (f"{mean:+.2f} (95% CI {ci[0]:+.2f} to {ci[1]:+.2f}, "
            + ("distinguishable from 0" if dist else "not distinguishable from 0") + ")")


def most_common(grades):
    return max(grades, key=lambda g: (grades[g], g))


def intro():
    return ["Every accuracy change below is given as the relative change (accuracy "
            "with the mask / without - 1), the net number of rows it gains or "
            "loses, and the accuracy difference in points with its paired 95% "
            "interval (the server's, over the same rows with and without the mask); "
            "a change is *distinguishable from 0* when that interval excludes 0. "
            "Accuracies carry Wilson's 95% interval.", ""]


def accuracy(card):
    b = card["baselines"]
    ci = card.get("test_accuracy_ci")
    ours = (acc_ci(card["test_accuracy"], ci) if ci else f"{card['test_accuracy']:.3f}")
    out = ["## Accuracy", "",
           f"{card['test_examples']:,} test rows, through the server's Classify.", "",
           "| model | accuracy |", "|---|---|",
           f"| majority class (`{b['majority_label']}`) | {b['majority_accuracy']:.3f} |",
           f"| bag of characters (`scripts/querytitle_baselines.py`) | "
           f"{b['bag_of_characters_accuracy']:.3f} |",
           f"| **{card['name']}** | **{ours}** |", "",
           "Confusion (rows: gold grade, columns: predicted):", "",
           "| gold \\ pred | " + " | ".join(card["labels"]) + " |",
           "|---" * (len(card["labels"]) + 1) + "|"]
    for label, row in zip(card["labels"], card["confusion"]):
        out.append(f"| {label} | " + " | ".join(str(v) for v in row) + " |")
    p = card["order_probe"]
    out += ["", f"**Word-order probe**: the {p['pairs']} grade-4 test pairs, and the "
            "same pairs with each title's characters shuffled; the grades the "
            "model predicts for them:", "",
            "| title | " + " | ".join(card["labels"]) + " | mean grade |",
            "|---" * (len(card["labels"]) + 2) + "|",
            "| in order | " + " | ".join(str(p["grades_in_order"][n]) for n in card["labels"])
            + f" | {p['mean_grade_in_order']:.2f} |",
            "| shuffled | " + " | ".join(str(p["grades_shuffled"][n]) for n in card["labels"])
            + f" | {p['mean_grade_shuffled']:.2f} |", "",
            f"Shuffling moves the predicted grade by {grade_shift(p)} on average "
            f"({p['pairs_down']} pairs down, {p['pairs_up']} up, {p['pairs_same']} "
            f"unchanged); predicted 4: {share(p['predicted_4_in_order'])} in order, "
            f"{share(p['predicted_4_shuffled'])} shuffled."]
    return out


def random_label(r):
    """"k random heads of layers B-E", the share of the range's heads and of
    all heads."""
    rng = (f"layers {layer_range(r['first_layer'], r['last_layer'])}"
           if r["range_heads"] != r["all_heads"] else f"all {r['all_heads']} heads")
    if r["range_heads"] == r["all_heads"]:
        return f"{r['heads']} random heads of {rng} ({share(r['share_of_all'], 0)})"
    return (f"{r['heads']} random heads of {rng} ({share(r['share_of_range'], 0)} of "
            f"its {r['range_heads']}; {share(r['share_of_all'], 0)} of all "
            f"{r['all_heads']})")


def sweeps(card):
    f = card["findings"]
    s = f["single_heads"]
    b = f["baseline"]
    n = b["examples"]
    out = ["## Sweeps (`bertology sweep`, `sweep/`)", "",
           f"First {n:,} test rows (baseline accuracy "
           f"{acc_ci(b['accuracy'], b['accuracy_ci'])}, {b['correct']:,} right); "
           "every single head, every layer, and random heads drawn "
           + listing(list(dict.fromkeys(
               "from all heads" if r["range_heads"] == r["all_heads"] else
               f"within layers {layer_range(r['first_layer'], r['last_layer'])}"
               for r in f["random"])))
           + f"; {card['sweep_seconds']:.0f} s.", "",
           "![single heads](sweep/heads_heatmap.svg) ![layers](sweep/layer_bars.svg) "
           "![random fractions](sweep/fraction_curve.svg)", "",
           f"Single heads: {s['unchanged']} of {s['masks']} leave the count of "
           f"correct answers unchanged, {s['changed_over_1pct']} move accuracy by "
           f"more than 1%; {s['distinguishable_harmful']} lose and "
           f"{s['distinguishable_helpful']} gain accuracy distinguishably from 0, "
           f"so {s['masks'] - s['distinguishable_harmful'] - s['distinguishable_helpful']} "
           "are not distinguishable from no change. The five most harmful and the "
           "five most helpful:", "",
           "| head | " + CHANGE_HEADER + " |", "|---|---|---|---|---|"]
    for c in s["most_harmful"] + s["most_helpful"]:
        out.append(f"| {c['head']} | {change_cells(c)} |")
    out += ["", "Whole layers:", "", "| layer | " + CHANGE_HEADER + " |",
            "|---|---|---|---|---|"]
    for c in f["layers"]:
        out.append(f"| {c['layer']} | {change_cells(c)} |")
    out += ["", "Random heads (the share is of the heads of the layers named, "
            "then of all heads); min and max are the repeats with the lowest "
            "and the highest change:", "",
            "| random mask | repeats | mean change | min, points [95% CI] | "
            "max, points [95% CI] | distinguishable losses | gains |",
            "|---|---|---|---|---|---|---|"]
    for r in f["random"]:
        lo, hi = r["min"], r["max"]
        out.append(f"| {random_label(r)} | {r['repeats']} | "
                   f"{pct(r['mean_change_percent'])} | {pct(lo['change_percent'])}: "
                   f"{points(lo['accuracy_delta'])} {interval(lo['delta_ci'])} | "
                   f"{pct(hi['change_percent'])}: {points(hi['accuracy_delta'])} "
                   f"{interval(hi['delta_ci'])} | {r['distinguishable_harmful']} | "
                   f"{r['distinguishable_helpful']} |")
    return out


# Pearson correlations of zero with the two means this far apart or more
# are reported as a result that depends on the choice of mean.
MEAN_CHOICE_GAP = 0.1


def moved(single):
    """Single heads whose change is distinguishable from 0, either way."""
    return single["distinguishable_harmful"] + single["distinguishable_helpful"]


def mean_ablation(card):
    a = card.get("mean_ablation")
    if not a:
        return []
    st, s = a["statistics"], a["single_heads"]
    z = card["findings"]["single_heads"]
    role = a.get("zero_vs_by_role")
    out = ["## Mean ablation beside zero ablation (`sweep-mean/`"
           + (", `sweep-mean-by-role/`" if role else "") + ")", "",
           f"Every single head's output replaced by its mean output instead of "
           f"zeroing its attention: one pooled mean per head over all "
           f"{st['tokens']:,} real tokens of the {st['examples']:,} dev rows "
           f"(`bertology statistics`, id `{st['id']}`; `bertology sweep --heads "
           f"--mode=mean`, {a['sweep_seconds']:.0f} s)"
           + (", and one mean per head and token role ([CLS], each [SEP], each "
              "segment's tokens) from the same statistics (`--mode=mean_by_role`, "
              f"{a['role_sweep_seconds']:.0f} s)" if role else "")
           + f", on the same first {a['sweep_examples']:,} test rows.", "",
           "![single heads, mean ablation](sweep-mean/heads_heatmap.svg) "
           + ("![single heads, mean by role](sweep-mean-by-role/heads_heatmap.svg) "
              if role else "")
           + "![single heads, zero ablation](sweep/heads_heatmap.svg)", "",
           f"- Heads that move accuracy by more than 1%: pooled mean "
           f"{s['changed_over_1pct']} of {s['masks']}"
           + (f", role means {a['by_role_single_heads']['changed_over_1pct']}"
              if role else "")
           + f" (zero: {z['changed_over_1pct']}); distinguishable from 0: pooled "
           f"{moved(s)}"
           + (f", role means {moved(a['by_role_single_heads'])}" if role else "")
           + f" (zero: {moved(z)}).",
           f"- Correlation of the per-head changes, zero against the pooled mean: "
           f"Pearson {a['pearson']:.2f}, Spearman {a['spearman']:.2f}; mean "
           f"ablation is milder than zero by more than 0.5 points for "
           f"{a['heads_mean_milder']} heads and harsher for {a['heads_mean_harsher']}."]
    if role:
        gap = abs(a["pearson"] - role["pearson"])
        out.append(
            f"- Zero against the role means: Pearson {role['pearson']:.2f}, "
            f"Spearman {role['spearman']:.2f} (milder by more than 0.5 points for "
            f"{role['heads_milder']} heads, harsher for {role['heads_harsher']}); "
            f"pooled against role means: Pearson {a['mean_vs_by_role']['pearson']:.2f}. "
            + (f"So the agreement of zero and mean ablation depends on the mean "
               f"chosen (Pearson {a['pearson']:.2f} with the pooled mean, "
               f"{role['pearson']:.2f} with role means, {gap:.2f} apart; a gap of "
               f"{MEAN_CHOICE_GAP} or more is read as depending on it): the "
               "pooled-mean figure is not a result about mean ablation in general."
               if gap >= MEAN_CHOICE_GAP else
               f"The agreement holds with either mean (Pearson {a['pearson']:.2f} "
               f"and {role['pearson']:.2f}, less than {MEAN_CHOICE_GAP} apart)."))
    out += ["", "The heads that matter most in any mode (changes with their paired "
            "95% intervals, in points):", "",
            "| head | zero ablation | pooled mean |" + (" mean by role |" if role else ""),
            "|---|---|---|" + ("---|" if role else "")]
    for r in a["most_harmful_either"]:
        cells = []
        for mode in ("zero", "mean") + (("by_role",) if role else ()):
            c = r.get(mode)
            if c is None:  # a card written before the intervals
                cells.append(pct(r[f"{mode}_change_percent"], 2))
            else:
                cells.append(f"{pct(c['change_percent'], 2)} {interval(c['delta_ci'])}")
        out.append(f"| {r['head']} | " + " | ".join(cells) + " |")
    return out


def segmentation_rows(seg):
    out = ["| head | MCC | balanced accuracy | F1 of word ends | accuracy |",
           "|---|---|---|---|---|"]
    for x in seg["by_mcc"]:
        out.append(f"| {head(x['head'])} ({x['pattern']}) | {x['mcc']:.3f} | "
                   f"{x['balanced_accuracy']:.3f} | {x['f1']:.3f} | {x['accuracy']:.3f} |")
    for name, label in (("always_next", "always the next character"),
                        ("always_sep", "always [SEP]")):
        b = seg["baselines"][name]
        out.append(f"| *{label}* | {b['mcc']:.3f} | {b['balanced_accuracy']:.3f} | "
                   f"{b['f1']:.3f} | {b['accuracy']:.3f} |")
    return out


def head_findings(card):
    h = card.get("head_findings")
    if not h:
        return []
    seg = h["segmenting_heads"]
    counts = h["pattern_counts"]
    tm, k = h["term_masking"], h["k"]
    u = h["term_matching_uniform"]
    low = h["low_layer_term_heads"]
    lo_first, lo_last = tm["low_layers"]
    out = ["## What the heads do (`scripts/head_findings.py`, `analysis/`)", "",
           f"AnalyzeHeads and SegmentWords over the first {h['analyze_examples']} "
           "test rows (`analysis/analyze/`, `analysis/segment/`).", "",
           "![statistics](analysis/analyze/cross_segment_match.svg) "
           "![patterns](analysis/analyze/patterns.svg) "
           "![segmentation](analysis/segment/segment_f1.svg)", "",
           "| finding | heads |", "|---|---|",
           "| term matching (attention between identical characters of query "
           "and title) | " + ", ".join(
               f"{head(x['head'])} {x['cross_segment_match']:.3f} ({x['pattern']}, "
               f"{x['times_uniform']:.1f}× uniform)"
               for x in h["term_matching_heads"])
           + f"; uniform attention: {u['cross_segment_match']:.3f} |",
           "| attends to the previous character | " + ", ".join(
               f"{head(x['head'])} {x['to_previous']:.2f}" for x in h["order_heads"]["previous"]) + " |",
           "| attends to the next character | " + ", ".join(
               f"{head(x['head'])} {x['to_next']:.2f}" for x in h["order_heads"]["next"]) + " |",
           "",
           f"- Term matching against the uniform level: a head attending uniformly "
           f"over the real tokens would score {u['cross_segment_match']:.4f} on the "
           f"same {u['examples_with_match']} pairs with a shared character (from "
           f"the tokenization, averaged as cross_segment_match is); "
           f"{u['heads_above']} of {u['heads']} heads score above it (by layer: "
           + ", ".join(f"{i}: {v}" for i, v in enumerate(u["heads_above_by_layer"]))
           + "). In layers " + layer_range(*low["layers"]) + " the best is "
           f"{head(low['best']['head'])} at {low['best']['cross_segment_match']:.4f} "
           f"({low['best']['times_uniform']:.1f}× uniform)"
           + (f"; above the uniform level there: {heads(x['head'] for x in low['heads'])}."
              if low["heads"] else "; none there is above the uniform level."),
           "- Pattern classes (Kovaleva et al.), by each head's means: " + ", ".join(
               f"{v} {p}" for p, v in counts.items()) + "."
           + (" Each (example, head) map classified on its own values: " + ", ".join(
               f"{share(v)} {p}" for p, v in h["map_pattern_share"].items()) + " of the maps."
              if h.get("map_pattern_share") else ""),
           "", f"Word segmentation over {seg['characters']:,} characters "
           f"({seg['gold_ends']:,} word ends): the top {k} heads by the Matthews "
           "correlation of word ends (MCC; accuracy and F1 are not corrected for "
           "chance), and two trivial heads scored alike:", ""]
    out += segmentation_rows(seg)
    nxt = seg["baselines"]["always_next"]
    out += ["",
            f"- {seg['heads_above_always_next_mcc']} of {u['heads']} heads beat "
            f"always-next by MCC ({nxt['mcc']:.3f}), "
            f"{seg['heads_above_always_next_accuracy']} by accuracy "
            f"({nxt['accuracy']:.3f}). The most accurate head, "
            f"{head(seg['most_accurate_head']['head'])}, is right on "
            f"{share(seg['most_accurate_head']['accuracy'])} of the characters.",
            f"- Some head is right on {share(seg['any_head_right'])} of the "
            f"characters, one of the top {k} on {share(seg['any_of_top_k_right'])}; "
            f"always-next or always-[SEP] alone on {share(seg['baselines_oracle'])} "
            "(the study's 96% for any head has to be read against this).", ""]
    r = tm["random_heads"]
    out += [f"Masking on the first {tm['examples']:,} test rows (baseline "
            f"{acc_ci(tm['baseline']['accuracy'], tm['baseline']['accuracy_ci'])}):", "",
            f"- The {k} term-matching heads ({heads(tm['term_heads']['heads'])}): "
            f"{chg(tm['term_heads'])}.",
            f"- {k} random other heads, {r['repeats']} draws: mean {pct(r['mean'])}, "
            f"standard deviation {r['stdev']:.1f} points, from "
            f"{chg(r['min_mask'])} to {chg(r['max_mask'])}; "
            f"{r['distinguishable_harmful']} of {r['repeats']} lose and "
            f"{r['distinguishable_helpful']} gain accuracy distinguishably.",
            f"- All of layers {layer_range(lo_first, lo_last)}: {chg(tm['layers_0_5'])}."]
    if tm.get("low_term_heads"):
        out += [f"- The term-matching heads of layers {layer_range(lo_first, lo_last)} "
                f"above the uniform level ({heads(tm['low_term_heads']['heads'])}): "
                f"{chg(tm['low_term_heads'])}; all of layers "
                f"{layer_range(lo_first, lo_last)} but those: "
                f"{chg(tm['layers_0_5_but_term_heads'])}."]
    else:
        out += [f"- Layers {layer_range(lo_first, lo_last)} but their term-matching "
                f"heads: not measured, because "
                f"{tm['layers_0_5_but_term_heads_dropped']}."]
    om = h.get("order_masking")
    if om:
        r = om["random_heads"]
        o = om["order_heads"]
        n = len(o["heads"])
        out += ["", f"Word order: the probe above with the {n} heads with the most "
                f"attention to the previous plus the next character masked "
                f"({heads(o['heads'])}), and with {n} random other heads masked "
                f"({r['repeats']} draws; grade counts are their means):", "",
                "| mask | title | " + " | ".join(card["labels"]) + " | mean grade |",
                "|---" * (len(card["labels"]) + 3) + "|"]
        for name, p in (("none", om["no_mask"]), ("order heads", o),
                        (f"{n} random heads", r)):
            for key, label in (("in_order", "in order"), ("shuffled", "shuffled")):
                grades = p[f"grades_{key}"]
                mean = p[f"mean_grade_{key}"]
                mean = mean["mean"] if isinstance(mean, dict) else mean
                out.append(f"| {name} | {label} | " + " | ".join(
                    (f"{grades[g]:g}") for g in card["labels"]) + f" | {mean:.2f} |")
        out += ["",
                f"- Shuffling moves the grade by {grade_shift(om['no_mask'])} "
                f"unmasked, by {grade_shift(o)} with the order heads masked, and by "
                f"{r['shift']['mean']:+.2f} on average with random heads masked "
                f"(from {r['shift']['min']:+.2f} to {r['shift']['max']:+.2f}).",
                f"- Against no mask, pair by pair: masking the order heads changes "
                f"the in-order pairs' grade by {grade_shift(o['in_order_vs_no_mask'])} "
                f"and the shuffled pairs' by {grade_shift(o['shuffled_vs_no_mask'])}; "
                f"random heads raise the shuffled pairs' grade distinguishably in "
                f"{r['shuffled_vs_no_mask']['up']} of {r['repeats']} draws and lower it "
                f"in {r['shuffled_vs_no_mask']['down']}, and lower the in-order "
                f"pairs' grade distinguishably in {r['in_order_vs_no_mask']['down']}."]
    ft = h.get("fine_tuning")
    if ft:
        m = ft["mean_over_heads"]
        out += ["", "## What fine-tuning changed (`analysis/compare/`)", "",
                f"CompareAttention and AnalyzeHeads of the starting point "
                f"(`{card.get('starting_point', {}).get('dir', ft['starting_point'])}`) "
                f"and this model over the first {ft['examples']} test rows.", "",
                "![cosine similarity](analysis/compare/similarity.svg) "
                "![difference map](analysis/compare/difference.svg)", "",
                "- Mean cosine similarity of the maps before and after, by layer: "
                + ", ".join(f"{i}: {v:.2f}" for i, v in
                            enumerate(ft["cosine_similarity_by_layer"])) + ".",
                "- Least similar heads: " + ", ".join(
                    f"{head(x['head'])} {x['cosine_similarity']:.2f}"
                    for x in ft["least_similar_heads"]) + ".",
                "- Mean over heads, before → after: " + "; ".join(
                    f"{name} {v['before']:.4f} → {v['after']:.4f} (up in "
                    f"{v['heads_up']} heads, down in {v['heads_down']})"
                    for name, v in m.items()) + ".",
                f"- The difference map is head {head(ft['difference_map']['head'])} "
                f"(the top term-matching head) on test row "
                f"{ft['difference_map']['example']}; red: more attention after."]
    return out


ATTRIBUTION_NAMES = {
    "integrated_gradients": "integrated gradients",
    "gradient_x_input": "gradient × input",
    "saliency": "saliency (‖∇‖, unsigned)",
    "attention_x_gradient": "attention × gradient",
    "attention_rollout": "attention rollout",
    "attention_flow": "attention flow",
}


def attribution(card):
    """What the grade rests on, by token attribution (attribution_findings)."""
    a = card.get("attribution")
    if not a:
        return []
    conds = a["conditions"]
    ig = conds["no_mask/in_order"]["integrated_gradients"]
    out = ["## What the grade rests on: token attribution (Attribute)", "",
           f"The {a['pairs']} grade-{a['target']} test pairs of the order probe, "
           "in order and with the title's characters shuffled, with no mask and "
           f"with the {len(a['order_heads'])} order heads masked "
           f"({heads(a['order_heads'])}, mode zero): each method's attribution "
           f"of the grade-{a['target']} logit to each title character "
           f"(integrated gradients: {a['baseline']} baseline, Gauss-Legendre, "
           f"{a['steps']} points). Per pair, the mean score of the title's "
           "characters that occur in the query minus that of those that do not "
           "(pairs with both), with its paired 95% interval; and the share of "
           "the title's |score| on characters in the query against their share "
           "of the title's characters (what a method spreading its score evenly "
           "would give; ✓: the share is above it beyond the interval).", "",
           "| method | mask | title | in query − other | share of \|score\| in query (even share) |",
           "|---|---|---|---|---|"]
    for name in a["methods"]:
        for key, c in conds.items():
            mask, title = key.split("/")
            x = c[name]
            lo, hi = x["ci"]
            out.append(
                f"| {ATTRIBUTION_NAMES.get(name, name)} | "
                f"{'none' if mask == 'no_mask' else 'order heads'} | "
                f"{title.replace('_', ' ')} | {x['in_query_minus_other']:+.4f} "
                f"[{lo:+.4f}, {hi:+.4f}]{'' if x['distinguishable'] else ' (≈0)'} | "
                f"{x['share_in_query']:.3f} ({x['even_share']:.3f})"
                f"{' ✓' if x['share_beats_even'] else ''} |")
    cells = [c[name] for c in conds.values() for name in a["methods"]]
    beats = sum(x["share_beats_even"] for x in cells)
    ig_share = {k: c["integrated_gradients"]["share_in_query"]
                for k, c in conds.items()}
    out += ["", f"- Title characters that occur in the query carry more of the "
            f"score than their share of the title in {beats} of {len(cells)} "
            f"(method, condition) cells; by integrated gradients "
            f"{ig_share['no_mask/in_order']:.3f} in order and "
            f"{ig_share['no_mask/shuffled']:.3f} shuffled against an even "
            f"{ig['even_share']:.3f}, and with the order heads masked "
            f"{ig_share['order_heads/in_order']:.3f} in order: without them the "
            "in-order title's grade rests on term matches as much as the "
            "shuffled one's does."]
    gaps = [c["integrated_gradients"] for c in conds.values()]
    out += [f"- Integrated gradients' completeness gap: median "
            f"{max(g['median_gap'] for g in gaps):.2g} or less, largest "
            f"{max(g['max_gap'] for g in gaps):.2g}, against a median "
            f"|f(x) − f(baseline)| of {ig['median_output_change']:.3f} "
            "(no mask, in order): the points sufficed."]
    return out


# --- The study's claims against the card -------------------------------

REPRODUCED, NOT_REPRODUCED, NOT_MEASURED = "reproduced", "not reproduced", "not measured"
# "Costs nothing" claims allow the share of masks a 95% interval flags by
# chance alone.
CHANCE = 0.05


def claim(text, measured, test, ok, source="study 1"):
    status = NOT_MEASURED if ok is None else (REPRODUCED if ok else NOT_REPRODUCED)
    return {"claim": text, "source": source, "measured": measured, "test": test,
            "status": status}


def not_measured(text, why, source="study 1"):
    return claim(text, why, "", None, source)


def random_groups(card, first, last):
    return {r["heads"]: r for r in card["findings"]["random"]
            if r["first_layer"] == first and r["last_layer"] == last}


def sweep_claims(card):
    f = card["findings"]
    layers, total = card["layers"], card["layers"] * card["heads"]
    half = layers // 2
    out = []
    text = ("Masking a random 10-20% of the 144 heads costs nothing (10% even "
            "gains 1%).")
    groups = [r for r in random_groups(card, 0, layers - 1).values()
              if 0.095 <= r["share_of_all"] <= 0.205]
    if groups:
        masks = sum(r["repeats"] for r in groups)
        lost = sum(r["distinguishable_harmful"] for r in groups)
        out.append(claim(
            text, "; ".join(f"{r['heads']} random heads of all {total}: mean "
                            f"{pct(r['mean_change_percent'])}, distinguishable losses "
                            f"{r['distinguishable_harmful']} of {r['repeats']}, gains "
                            f"{r['distinguishable_helpful']}" for r in groups),
            f"at most {share(CHANCE, 0)} of these masks lose accuracy "
            "distinguishably", lost <= CHANCE * masks))
    else:
        out.append(not_measured(text, "no random masks drawn from all heads"))
    low, high = random_groups(card, 0, half - 1), random_groups(card, half, layers - 1)
    shared = sorted(set(low) & set(high))
    text = ("Masking heads of layers 0-5 hurts far more than masking the same "
            "share of layers 6-11.")
    if shared:
        lost_low = sum(low[k]["distinguishable_harmful"] for k in shared)
        lost_high = sum(high[k]["distinguishable_harmful"] for k in shared)
        masks = sum(low[k]["repeats"] for k in shared)
        out.append(claim(
            text, "mean change, layers 0-%d against %d-%d: " % (half - 1, half, layers - 1)
            + ", ".join(f"{k} of {low[k]['range_heads']} heads "
                        f"{pct(low[k]['mean_change_percent'])} against "
                        f"{pct(high[k]['mean_change_percent'])}" for k in shared)
            + f"; distinguishable losses {lost_low} of {masks} against {lost_high} "
            f"of {sum(high[k]['repeats'] for k in shared)}",
            "at every share the low layers' mean change is below the high "
            "layers', and more low-layer masks lose accuracy distinguishably",
            all(low[k]["mean_change_percent"] < high[k]["mean_change_percent"]
                for k in shared) and lost_low > lost_high))
    else:
        out.append(not_measured(text, "no random masks of both halves"))
    lay = f["layers"]
    hurt = [c for c in lay if c["distinguishable"] and c["accuracy_delta"] < 0]
    out.append(claim(
        "Masking one whole layer rarely hurts.",
        f"{len(hurt)} of {len(lay)} layers lose accuracy distinguishably"
        + (": " + ", ".join(f"{c['layer']} {pct(c['change_percent'])}" for c in hurt)
           if hurt else ""),
        "at most a quarter of the layers lose accuracy distinguishably",
        len(hurt) <= len(lay) / 4))
    l8 = [c for c in lay if c["layer"] == 8]
    text = "Masking layer 8 gains 2.3%."
    out.append(claim(text, "layer 8: " + chg(l8[0]), "its interval lies above 0",
                     l8[0]["distinguishable"] and l8[0]["accuracy_delta"] > 0)
               if l8 else not_measured(text, "the model has no layer 8"))
    s = f["single_heads"]
    moved = s["distinguishable_harmful"] + s["distinguishable_helpful"]
    worst = s["most_harmful"][0]
    out.append(claim(
        "In the grid of single-head masks most heads change nothing, a few "
        "matter a lot.",
        f"{s['masks'] - moved} of {s['masks']} heads are not distinguishable from "
        f"0, {s['distinguishable_harmful']} lose and {s['distinguishable_helpful']} "
        f"gain distinguishably; the worst, {worst['head']}: {chg(worst)}",
        "more than half the heads are not distinguishable from 0 and at least "
        "one loses accuracy distinguishably",
        s["masks"] - moved > s["masks"] / 2 and s["distinguishable_harmful"] > 0))
    return out


def head_claims(card):
    h = card.get("head_findings")
    out = []
    if not h:
        return [not_measured("What the heads do (segmentation, order, term "
                             "matching, fine-tuning).", "no head findings")]
    seg = h["segmenting_heads"]
    best = seg["by_mcc"][0]
    nxt, sep = seg["baselines"]["always_next"], seg["baselines"]["always_sep"]
    out.append(claim(
        "Some heads segment words: one head alone segments 70% of the "
        "characters correctly.",
        f"the best head by MCC, {head(best['head'])}: MCC {best['mcc']:.3f}, "
        f"accuracy {share(best['accuracy'])}; always the next character: MCC "
        f"{nxt['mcc']:.3f}, accuracy {share(nxt['accuracy'])}; always [SEP]: MCC "
        f"{sep['mcc']:.3f}, accuracy {share(sep['accuracy'])}; "
        f"{seg['heads_above_always_next_mcc']} heads beat always-next by MCC",
        "the best head's MCC is above always-next's",
        best["mcc"] > nxt["mcc"]))
    out.append(claim(
        "96% of the characters are segmented right if any of several heads is "
        "right.",
        f"some head of all {h['term_matching_uniform']['heads']}: "
        f"{share(seg['any_head_right'])}; one of the top {h['k']}: "
        f"{share(seg['any_of_top_k_right'])}; always-next or always-[SEP]: "
        f"{share(seg['baselines_oracle'])}",
        "the any-head oracle is above the two trivial heads' oracle",
        seg["any_head_right"] > seg["baselines_oracle"]))
    p = card["order_probe"]
    out.append(claim(
        "With the title's characters shuffled, a grade-4 pair's predicted grade "
        "drops (the study: from 4 to 2).",
        f"mean predicted grade {p['mean_grade_in_order']:.2f} in order, "
        f"{p['mean_grade_shuffled']:.2f} shuffled (most often "
        f"{most_common(p['grades_shuffled'])}); shift {grade_shift(p)}",
        "the mean shift's interval lies below 0",
        p["shift_distinguishable"] and p["shift"] < 0))
    om = h.get("order_masking")
    if om:
        o, r = om["order_heads"], om["random_heads"]
        n = len(o["heads"])
        out.append(claim(
            f"Masking {n} order heads lifts the shuffled pairs' grade back "
            "(the study: to 3).",
            f"shuffled pairs' mean grade {om['no_mask']['mean_grade_shuffled']:.2f} "
            f"unmasked, {o['mean_grade_shuffled']:.2f} with {heads(o['heads'])} "
            f"masked: {grade_shift(o['shuffled_vs_no_mask'])}; the in-order pairs' "
            f"{grade_shift(o['in_order_vs_no_mask'])}",
            "the shuffled pairs' change has an interval above 0",
            o["shuffled_vs_no_mask"]["distinguishable"]
            and o["shuffled_vs_no_mask"]["mean"] > 0))
        up = r["shuffled_vs_no_mask"]["up"]
        out.append(claim(
            f"Masking {n} random heads does not lift it (the study: 100 repeats).",
            f"{up} of {r['repeats']} random masks lift the shuffled pairs' grade "
            f"distinguishably (mean change {r['shuffled_vs_no_mask']['mean']:+.2f})",
            f"at most {share(CHANCE, 0)} of the random masks lift it distinguishably",
            up <= CHANCE * r["repeats"]))
    else:
        out.append(not_measured("Masking 7 order heads lifts the shuffled pairs' "
                                "grade back.", "the order probe was skipped"))
    u = h["term_matching_uniform"]
    term = h["term_matching_heads"]
    in_2_4 = sum(u["heads_above_by_layer"][2:5])
    out.append(claim(
        "Five heads in layers 2-4 match identical terms across query and title.",
        f"the top {len(term)} by cross_segment_match are "
        + ", ".join(f"{head(x['head'])} {x['cross_segment_match']:.3f}" for x in term)
        + f", against {u['cross_segment_match']:.3f} for uniform attention; heads of "
        f"layers 2-4 above the uniform level: {in_2_4}",
        "the top heads lie in layers 2-4 and score above the uniform level",
        all(2 <= x["head"][0] <= 4 and x["cross_segment_match"] > u["cross_segment_match"]
            for x in term)))
    tm = h["term_masking"]
    t = tm["term_heads"]
    lt = tm.get("low_term_heads")
    out.append(claim(
        "Masking those term-matching heads costs 52.4%.",
        f"{heads(t['heads'])}: {chg(t)}"
        + (f"; the ones of layers {layer_range(*tm['low_layers'])} "
           f"({heads(lt['heads'])}): {chg(lt)}" if lt else ""),
        "a distinguishable loss",
        t["distinguishable"] and t["accuracy_delta"] < 0))
    r = tm["random_heads"]
    out.append(claim(
        "Masking 5 random heads costs 0%.",
        f"{r['repeats']} draws: mean {pct(r['mean'])}; {r['distinguishable_harmful']} "
        f"lose and {r['distinguishable_helpful']} gain accuracy distinguishably",
        f"at most {share(CHANCE, 0)} of the draws lose accuracy distinguishably",
        r["distinguishable_harmful"] <= CHANCE * r["repeats"]))
    lay = tm["layers_0_5"]
    out.append(claim(
        "Masking all of layers 0-5 costs 86.5%.",
        f"layers {layer_range(*tm['low_layers'])}: {chg(lay)}",
        "a distinguishable loss", lay["distinguishable"] and lay["accuracy_delta"] < 0))
    text = "Masking layers 0-5 except the five term heads costs only 18.1%."
    if lt:
        but = tm["layers_0_5_but_term_heads"]
        out.append(claim(
            text, f"all but {heads(lt['heads'])}: {chg(but)}, against {chg(lay)} "
            "for all of them",
            "the interval without the term heads lies wholly above the one with "
            "all of those layers",
            but["delta_ci"][0] > lay["delta_ci"][1]))
    else:
        out.append(claim(text, tm["layers_0_5_but_term_heads_dropped"],
                         "there are term heads in those layers to leave out", False))
    out.append(not_measured(
        "A head in layer 10 gathers those matches into [CLS]; masking the five "
        "low heads scatters its attention.", "not measured by this card"))
    ft = h.get("fine_tuning")
    for name, text, up in (("cross_segment_match", "Fine-tuning strengthens "
                            "cross-segment term matching.", True),
                           ("to_self", "Fine-tuning weakens attention to the token "
                            "itself.", False),
                           ("to_sep", "Fine-tuning weakens attention to [SEP].", False)):
        if not ft:
            out.append(not_measured(text, "no starting point served"))
            continue
        v = ft["mean_over_heads"][name]
        moved = v["heads_up"] if up else v["heads_down"]
        n = v["heads_up"] + v["heads_down"]
        ci = wilson(moved, n)
        out.append(claim(
            text, f"mean over heads {v['before']:.4f} → {v['after']:.4f}; "
            f"{moved} of {n} heads moved that way ({share(moved / n)}, 95% CI "
            f"{share(ci[0])}-{share(ci[1])})",
            "the mean moves that way and the interval of the share of heads "
            "moving that way lies above one half",
            (v["after"] > v["before"] if up else v["after"] < v["before"])
            and ci[0] > 0.5))
    counts = h["pattern_counts"]
    n = sum(counts.values())
    maps = h.get("map_pattern_share") or {}
    out.append(claim(
        "At least a third of the heads are vertical (attend mostly to [CLS] "
        "and [SEP]).",
        f"{counts['vertical']} of {n} heads by their means"
        + (f"; {share(maps['vertical'])} of the maps" if "vertical" in maps else ""),
        "at least a third of the heads are vertical by their means",
        counts["vertical"] >= n / 3, source="Kovaleva et al. (study 2)"))
    return out


def reproduction(card):
    """The study's claims (../shared/BRIEF.md) against this card's numbers:
    a list of {claim, source, measured, test, status}, status "reproduced",
    "not reproduced" (the test fails) or "not measured"."""
    return sweep_claims(card) + head_claims(card)


def reproduction_section(card):
    claims = card.get("reproduction")
    if not claims:
        return []
    out = ["## What this model does not reproduce", "",
           "The findings of the study this model mirrors (`../shared/BRIEF.md`, "
           "study 1; one of Kovaleva et al.'s), each against this card's numbers "
           "by the test beside it (`card_markdown.reproduction`). Not reproduced:", "",
           "| claim | measured here | test |", "|---|---|---|"]
    failed = [c for c in claims if c["status"] == NOT_REPRODUCED]
    out += [f"| {c['claim']} | {c['measured']} | {c['test']} |" for c in failed]
    if not failed:
        out += ["| (none) | | |"]
    done = [c for c in claims if c["status"] == REPRODUCED]
    if done:
        out += ["", "Reproduced:", "", "| claim | measured here | test |", "|---|---|---|"]
        out += [f"| {c['claim']} | {c['measured']} | {c['test']} |" for c in done]
    rest = [c for c in claims if c["status"] == NOT_MEASURED]
    if rest:
        out += ["", "Not measured: " + " ".join(
            f"{c['claim']} ({c['measured']})" for c in rest)]
    return out


def render(card):
    lines = [f"# {card['name']}: measured results", "",
             "Written by `scripts/make_model_card.py` (`make card`) from `card.json`; "
             "do not edit by hand.", ""] + intro()
    for part in (accuracy, reproduction_section, sweeps, mean_ablation,
                 head_findings, attribution):
        lines += part(card) + [""]
    return "\n".join(lines)


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        print(render(json.load(f)))
