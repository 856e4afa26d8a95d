#!/usr/bin/env python3
"""The measured half of a model card as Markdown, from its card.json
(scripts/make_model_card.py writes both: card.json, then MODEL/RESULTS.md
from it), so that no figure in it is typed by hand.

  /usr/bin/python3 scripts/card_markdown.py models/querytitle-zh-tiny/card.json
"""
import json
import sys


def pct(x, digits=1):
    return "n/a" if x is None else f"{x:+.{digits}f}%"


def head(lh):
    return f"L{lh[0]}H{lh[1]}"


def heads(items):
    return ", ".join(head(h) for h in items)


def accuracy(card):
    b = card["baselines"]
    out = ["## Accuracy", "",
           f"{card['test_examples']:,} test rows, through the server's Classify.", "",
           "| model | accuracy |", "|---|---|",
           f"| majority class (`{b['majority_label']}`) | {b['majority_accuracy']:.3f} |",
           f"| bag of characters (`scripts/querytitle_baselines.py`) | "
           f"{b['bag_of_characters_accuracy']:.3f} |",
           f"| **{card['name']}** | **{card['test_accuracy']:.3f}** |", "",
           "Confusion (rows: gold grade, columns: predicted):", "",
           "| gold \\ pred | " + " | ".join(card["labels"]) + " |",
           "|---" * (len(card["labels"]) + 1) + "|"]
    for label, row in zip(card["labels"], card["confusion"]):
        out.append(f"| {label} | " + " | ".join(str(v) for v in row) + " |")
    p = card["order_probe"]
    out += ["", f"**Word-order probe**: of the {p['pairs']} grade-4 test pairs, "
            f"{100 * p['predicted_4_in_order']:.1f}% are predicted 4; with each "
            f"title's characters shuffled, {100 * p['predicted_4_shuffled']:.1f}% "
            f"(mean predicted grade {p['mean_grade_in_order']:.2f} → "
            f"{p['mean_grade_shuffled']:.2f})."]
    return out


def sweeps(card):
    f = card["findings"]
    s = f["single_heads"]
    out = ["## Sweeps (`bertology sweep`, `sweep/`)", "",
           f"First {card['sweep_examples']:,} test rows (baseline accuracy "
           f"{f['baseline_accuracy']:.3f}); every single head, every layer, random "
           f"masks of layers 0-5 and 6-11; {card['sweep_seconds']:.0f} s.", "",
           "![single heads](sweep/heads_heatmap.svg) ![layers](sweep/layer_bars.svg) "
           "![random fractions](sweep/fraction_curve.svg)", "",
           f"- Single heads: {s['unchanged']} of {s['masks']} leave the count of "
           f"correct answers unchanged, {s['changed_over_1pct']} move accuracy by "
           "more than 1%. Most harmful: "
           + ", ".join(f"{m.replace('head-', '')} {pct(c)}" for m, c in s["most_harmful"])
           + "; most helpful: "
           + ", ".join(f"{m.replace('head-', '')} {pct(c)}" for m, c in s["most_helpful"]) + ".",
           "- Whole layers: " + ", ".join(f"{m.replace('layer-', '')}: {pct(c)}"
                                          for m, c in f["layers"]) + ".",
           "", "| random mask | heads | mean change | min | max | repeats |",
           "|---|---|---|---|---|---|"]
    for r in f["random"]:
        begin, end = r["layers"][1:].split("-")  # "L0-6": layers [0, 6)
        out.append(f"| layers {begin}-{int(end) - 1}, {100 * r['fraction']:.0f}% | "
                   f"{r['heads']} | "
                   f"{pct(r['mean_change_percent'])} | {pct(r['min'])} | "
                   f"{pct(r['max'])} | {r['repeats']} |")
    return out


def mean_ablation(card):
    a = card.get("mean_ablation")
    if not a:
        return []
    st, s = a["statistics"], a["single_heads"]
    z = card["findings"]["single_heads"]
    out = ["## Mean ablation beside zero ablation (`sweep-mean/`)", "",
           f"Every single head's output replaced by its mean output (one mean "
           f"per head over all {st['tokens']:,} real tokens of the "
           f"{st['examples']:,} dev rows, `bertology statistics`, id "
           f"`{st['id']}`) instead of zeroing its attention, on the same first "
           f"{a['sweep_examples']:,} test rows (`bertology sweep --heads "
           f"--mode=mean`, {a['sweep_seconds']:.0f} s).", "",
           "![single heads, mean ablation](sweep-mean/heads_heatmap.svg) "
           "![single heads, zero ablation](sweep/heads_heatmap.svg)", "",
           f"- Heads that move accuracy by more than 1%: {s['changed_over_1pct']} "
           f"of {s['masks']} (zero: {z['changed_over_1pct']}); unchanged count "
           f"of correct answers: {s['unchanged']} (zero: {z['unchanged']}).",
           f"- Correlation of the per-head changes in the two modes: Pearson "
           f"{a['pearson']:.2f}, Spearman {a['spearman']:.2f}; mean ablation is "
           f"milder than zero by more than 0.5 points for {a['heads_mean_milder']} "
           f"heads and harsher for {a['heads_mean_harsher']}.", "",
           "| head | zero ablation | mean ablation |", "|---|---|---|"]
    for r in a["most_harmful_either"]:
        out.append(f"| {r['head']} | {pct(r['zero_change_percent'], 2)} | "
                   f"{pct(r['mean_change_percent'], 2)} |")
    return out


def head_findings(card):
    h = card.get("head_findings")
    if not h:
        return []
    seg = h["segmenting_heads"]
    counts = h["pattern_counts"]
    tm, k = h["term_masking"], h["k"]
    out = ["## What the heads do (`scripts/head_findings.py`, `analysis/`)", "",
           f"AnalyzeHeads and SegmentWords over the first {h['analyze_examples']} "
           "test rows (`analysis/analyze/`, `analysis/segment/`).", "",
           "![statistics](analysis/analyze/cross_segment_match.svg) "
           "![patterns](analysis/analyze/patterns.svg) "
           "![segmentation](analysis/segment/segment_f1.svg)", "",
           "| finding | heads |", "|---|---|",
           "| term matching (attention between identical characters of query "
           "and title) | " + ", ".join(
               f"{head(x['head'])} {x['cross_segment_match']:.3f} ({x['pattern']})"
               for x in h["term_matching_heads"]) + " |",
           "| attends to the previous character | " + ", ".join(
               f"{head(x['head'])} {x['to_previous']:.2f}" for x in h["order_heads"]["previous"]) + " |",
           "| attends to the next character | " + ", ".join(
               f"{head(x['head'])} {x['to_next']:.2f}" for x in h["order_heads"]["next"]) + " |",
           "| segments words (F1 of word ends) | " + ", ".join(
               f"{head(x['head'])} {x['f1']:.2f}" for x in seg["by_f1"]) + " |",
           "", f"- Pattern classes (Kovaleva et al.): " + ", ".join(
               f"{v} {p}" for p, v in counts.items()) + ".",
           f"- Word segmentation over {seg['characters']:,} characters: the best "
           f"head by F1 is right on {100 * seg['best_head_accuracy']:.1f}% of the "
           f"characters, the most accurate one ({head(seg['most_accurate_head']['head'])}) "
           f"on {100 * seg['most_accurate_head']['accuracy']:.1f}%; one of the top "
           f"{k} is right on {100 * seg['any_of_top_k_right']:.1f}%, one of all "
           f"144 on {100 * seg['any_head_right']:.1f}% (the study: 70% and 96%).",
           f"- Masking the {k} term-matching heads ({heads(tm['term_heads']['heads'])}) "
           f"on the first {tm['examples']} test rows (baseline "
           f"{tm['baseline_accuracy']:.3f}): {pct(tm['term_heads']['relative_change_percent'])}; "
           f"{k} random other heads, {tm['random_heads']['repeats']} draws: mean "
           f"{pct(tm['random_heads']['mean'])}, standard deviation "
           f"{tm['random_heads']['stdev']:.1f} points, from {pct(tm['random_heads']['min'])} "
           f"to {pct(tm['random_heads']['max'])} (the study: −52.4% against 0%). "
           f"All of layers 0-5: {pct(tm['layers_0_5']['relative_change_percent'])}; "
           f"layers 0-5 except the term heads: "
           f"{pct(tm['layers_0_5_but_term_heads']['relative_change_percent'])} "
           "(the study: −86.5% and −18.1%)."]
    om = h.get("order_masking")
    if om:
        r = om["random_heads"]
        n = len(om["order_heads"]["heads"])
        out.append(
            f"- Masking the {n} heads with the most attention to the previous plus "
            f"the next character ({heads(om['order_heads']['heads'])}): grade-4 "
            f"titles in order are predicted 4 "
            f"{100 * om['order_heads']['predicted_4_in_order']:.1f}% of the time "
            f"(unmasked {100 * om['no_mask']['predicted_4_in_order']:.1f}%), shuffled "
            f"ones {100 * om['order_heads']['predicted_4_shuffled']:.1f}% (unmasked "
            f"{100 * om['no_mask']['predicted_4_shuffled']:.1f}%); {n} random heads, "
            f"{r['predicted_4_in_order']['repeats']} draws: in order "
            f"{100 * r['predicted_4_in_order']['mean']:.1f}% ± "
            f"{100 * r['predicted_4_in_order']['stdev']:.1f}, shuffled "
            f"{100 * r['predicted_4_shuffled']['mean']:.1f}%.")
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


def render(card):
    lines = [f"# {card['name']}: measured results", "",
             "Written by `scripts/make_model_card.py` (`make card`) from `card.json`; "
             "do not edit by hand.", ""]
    for part in (accuracy, sweeps, mean_ablation, head_findings):
        lines += part(card) + [""]
    return "\n".join(lines)


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        print(render(json.load(f)))
