#!/usr/bin/python3
"""An independent float64 reference for the per-head interventions: mean
ablation (pooled and per token role), resample ablation (per input, per
position, per draw) and activation patching.

Written from the definitions (the contract that the C++ code in
server/core/model/head_mask_tensors.cc and server/core/patch/ implement), not from
that code, which this script does not import. Its own BERT forward, HF eager
BertForSequenceClassification in eval mode, has hooks on each head's context
vector ctx[b, h, t, :] = (probs' @ V)[b, h, t, :] (before
attention.output.dense) and on each layer's input hidden state. Only the
weight reader and the elementwise helpers come from make_golden.py. The
checkpoint is tests/golden/tiny-bert-cls; the golden rows come from
tiny-bert-cls.golden.json, whose "none" and "zero" logits this forward must
reproduce.

Writes tests/golden/interventions.golden.json.
Run: /usr/bin/python3 tests/golden/intervention_reference.py  (needs torch)
"""

import json
import math
import os

import torch

from make_golden import (CONFIG, gelu, layer_norm, linear, read_safetensors,
                         reference_forward)

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL_DIR = os.path.join(HERE, "tiny-bert-cls")
BASE_GOLDEN = os.path.join(HERE, "tiny-bert-cls.golden.json")
OUT = os.path.join(HERE, "interventions.golden.json")

L, H = CONFIG["num_hidden_layers"], CONFIG["num_attention_heads"]
D = CONFIG["hidden_size"] // H
EPS = CONFIG["layer_norm_eps"]
MASK64 = (1 << 64) - 1


def forward(w, ids, types, amask, head_mask, fill=None, ctx_hook=None,
            hidden_hook=None):
    """Logits [B, C] plus the per-layer ctx [B, H, T, D] and the hidden
    states (inputs of layers 0..L, entry L the encoder output).
    head_mask [B, L, H]: probs' = m * probs; with fill ([L, H, D], or
    [B, T, L, H, D] per row and position) the ablated part is replaced:
    ctx' = probs' @ V + (1 - m) * fill[l, h].
    ctx_hook(l, ctx) / hidden_hook(l, x) may return a replacement."""
    b_size, t_len = ids.shape
    e = "bert.embeddings."
    x = (w[e + "word_embeddings.weight"][ids]
         + w[e + "token_type_embeddings.weight"][types]
         + w[e + "position_embeddings.weight"][torch.arange(t_len)][None])
    x = layer_norm(x, w[e + "LayerNorm.weight"], w[e + "LayerNorm.bias"], EPS)
    extended = (1.0 - amask.double()[:, None, None, :]) * torch.finfo(torch.float64).min

    def heads(t):
        return t.view(b_size, t_len, H, D).permute(0, 2, 1, 3)

    ctxs, hiddens = [], []
    for l in range(L + 1):
        if hidden_hook is not None:
            x = hidden_hook(l, x)
        hiddens.append(x)
        if l == L:
            break
        p = "bert.encoder.layer.%d." % l
        q = heads(linear(x, w, p + "attention.self.query"))
        k = heads(linear(x, w, p + "attention.self.key"))
        v = heads(linear(x, w, p + "attention.self.value"))
        probs = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(D) + extended, -1)
        m = head_mask[:, l, :].double()[:, :, None, None]  # [B, H, 1, 1]
        ctx = (probs * m) @ v                               # [B, H, T, D]
        if fill is not None and fill.dim() == 3:
            ctx = ctx + (1.0 - m) * fill[l][None, :, None, :]
        elif fill is not None:  # [B, T, L, H, D] -> [B, H, T, D]
            ctx = ctx + (1.0 - m) * fill[:, :, l].permute(0, 2, 1, 3)
        if ctx_hook is not None:
            ctx = ctx_hook(l, ctx)
        ctxs.append(ctx)
        flat = ctx.permute(0, 2, 1, 3).reshape(b_size, t_len, -1)
        a = layer_norm(linear(flat, w, p + "attention.output.dense") + x,
                       w[p + "attention.output.LayerNorm.weight"],
                       w[p + "attention.output.LayerNorm.bias"], EPS)
        f = linear(gelu(linear(a, w, p + "intermediate.dense")), w, p + "output.dense")
        x = layer_norm(f + a, w[p + "output.LayerNorm.weight"],
                       w[p + "output.LayerNorm.bias"], EPS)
    pooled = torch.tanh(linear(x[:, 0], w, "bert.pooler.dense"))
    return linear(pooled, w, "classifier"), ctxs, hiddens


def splitmix64(seed):
    state = seed & MASK64
    while True:
        state = (state + 0x9E3779B97F4A7C15) & MASK64
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        yield z ^ (z >> 31)


def fnv1a_key(ids, types):
    """FNV-1a 64 of the token count, ids and token types, each as 8
    little-endian bytes (the draw rule's per-input key)."""
    h = 0xCBF29CE484222325
    for v in [len(ids)] + [x for pair in zip(ids, types) for x in pair]:
        for byte in (v & MASK64).to_bytes(8, "little"):
            h = ((h ^ byte) * 0x100000001B3) & MASK64
    return h


def layout(ids, types):
    """(len_a, len_b, pair) of [CLS] a [SEP] (b [SEP])."""
    in_b = sum(types)
    return (len(ids) - in_b - 2, max(0, in_b - 1), in_b > 0)


def roles(ids, types):
    """Role per position: 0 [CLS], 1 first [SEP], 2 second [SEP], 3 text_a,
    4 text_b."""
    len_a, len_b, pair = layout(ids, types)
    out = []
    for t in range(len(ids)):
        if t == 0:
            out.append(0)
        elif t < 1 + len_a:
            out.append(3)
        elif t == 1 + len_a or not pair:
            out.append(1)
        elif t < 2 + len_a + len_b:
            out.append(4)
        else:
            out.append(2)
    return out


def resample_sources(ref_rows, row, seed, draws, alignment):
    """The reference rows draws 0..draws-1 of `row` take: the pool (matched
    segment lengths, or as many segments for "scaled"; the row itself left
    out), pool[x_k mod |pool|], x_k from splitmix64(seed ^ key)."""
    key = fnv1a_key(*row)
    lay = layout(*row)
    pool = [j for j, r in enumerate(ref_rows)
            if fnv1a_key(*r) != key and layout(*r)[2] == lay[2]
            and (alignment == "scaled" or layout(*r) == lay)]
    rng = splitmix64(seed ^ key)
    return [pool[next(rng) % len(pool)] for _ in range(draws)]


def aligned_position(row, ref, t, alignment):
    """The reference position that position t of `row` takes."""
    if alignment == "matched":
        return t
    (a, b, _), (ra, rb, _) = layout(*row), layout(*ref)
    role = roles(*row)[t]
    if role == 0:
        return 0
    if role == 1:
        return 1 + ra
    if role == 2:
        return 2 + ra + rb
    if role == 3:
        return 1 + (t - 1) * ra // a if ra else 1 + ra
    return 2 + ra + (t - 2 - a) * rb // b if rb else 2 + ra + rb


def rounded(t):
    if t.dim() == 0:
        return float("%.9g" % t.item())
    return [rounded(s) for s in t]


def close(a, b, tol):
    """|a - b| <= tol plus the rounding error of b (9 significant digits)."""
    a, b = torch.as_tensor(a, dtype=torch.float64), torch.tensor(b, dtype=torch.float64)
    return bool(((a - b).abs() <= tol + 5e-9 * b.abs()).all())


def main():
    w = {k: v.double() for k, v in read_safetensors(
        os.path.join(MODEL_DIR, "model.safetensors")).items()}
    base = json.load(open(BASE_GOLDEN))
    ids = torch.tensor(base["input_ids"])
    types = torch.tensor(base["token_type_ids"])
    amask = torch.tensor(base["attention_mask"])
    n = ids.shape[0]
    ones = torch.ones(n, L, H, dtype=torch.float64)

    # Cross-check against make_golden.py: its stored (rounded) logits and,
    # unrounded, its reference_forward.
    cases = {c["name"]: c for c in base["cases"]}
    raw = read_safetensors(os.path.join(MODEL_DIR, "model.safetensors"))
    for name in ("none", "zero"):
        hm = torch.tensor(cases[name]["head_mask"])
        logits, _, _ = forward(w, ids, types, amask, hm)
        assert close(logits, cases[name]["logits"], 1e-9), name
        theirs = reference_forward(raw, ids, types, amask, hm, torch.zeros(n))[0]
        assert (logits - theirs).abs().max().item() <= 1e-9, name

    # 1. Reference statistics from the unmasked run over the reference set:
    #    the golden inputs and two copies of each with every non-special
    #    token changed (same segment lengths, so resample has a matched
    #    pool besides the input itself).
    vocab = CONFIG["vocab_size"]
    ref_rows = []
    for r in range(n):
        t_len = int(amask[r].sum())
        row_ids, row_types = base["input_ids"][r][:t_len], base["token_type_ids"][r][:t_len]
        ref_rows.append((row_ids, row_types))
    for c in (1, 2):
        for r in range(n):
            row_ids, row_types = ref_rows[r]
            new_ids = [i if i in (2, 3) else 5 + (i * (3 + 2 * c) + 11 * c) % (vocab - 5)
                       for i in row_ids]
            assert all(x != y for x, y in zip(new_ids, row_ids) if y not in (2, 3))
            ref_rows.append((new_ids, row_types))
    ref_len = max(len(r[0]) for r in ref_rows)
    pad = lambda x: x + [0] * (ref_len - len(x))
    ref_ids = torch.tensor([pad(r[0]) for r in ref_rows])
    ref_types = torch.tensor([pad(r[1]) for r in ref_rows])
    ref_mask = torch.tensor([pad([1] * len(r[0])) for r in ref_rows])
    _, ctxs, _ = forward(w, ref_ids, ref_types, ref_mask,
                         torch.ones(len(ref_rows), L, H, dtype=torch.float64))
    # Per reference row, every real token's outputs [T_r, L, H, D].
    token_out = [torch.stack([c[r, :, :len(row[0])].permute(1, 0, 2) for c in ctxs], 1)
                 for r, row in enumerate(ref_rows)]
    tokens = sum(len(r[0]) for r in ref_rows)
    mean = sum(t.sum(0) for t in token_out) / tokens                       # [L, H, D]
    role_sum = torch.zeros(5, L, H, D, dtype=torch.float64)
    role_tokens = [0] * 5
    for r, row in enumerate(ref_rows):
        for t, role in enumerate(roles(*row)):
            role_sum[role] += token_out[r][t]
            role_tokens[role] += 1
    role_means = role_sum / torch.tensor([max(1, c) for c in role_tokens],
                                         dtype=torch.float64)[:, None, None, None]

    # 2-3. Mean / role mean / resample / zero ablation cases on the golden
    #      inputs. Resample: one forward per draw, each row's fill its drawn
    #      reference row's outputs at the aligned positions.
    rows = ref_rows[:n]
    t_max = ids.shape[1]

    def role_fill():
        fill = torch.zeros(n, t_max, L, H, D, dtype=torch.float64)
        for r, row in enumerate(rows):
            for t, role in enumerate(roles(*row)):
                fill[r, t] = role_means[role]
        return fill

    def resample_fill(sources, k, alignment):
        fill = torch.zeros(n, t_max, L, H, D, dtype=torch.float64)
        for r, row in enumerate(rows):
            src = sources[r][k]
            for t in range(len(row[0])):
                fill[r, t] = token_out[src][aligned_position(row, ref_rows[src], t, alignment)]
        return fill

    ablate = [[1.0, 0.0, 1.0, 1.0], [0.0, 1.0, 1.0, 0.0], [1.0, 1.0, 0.0, 1.0]]
    frac = [[1.0, 0.3, 1.0, 0.7], [0.7, 1.0, 0.0, 1.0], [0.3, 0.3, 1.0, 1.0]]
    zeros = [[0.0] * H for _ in range(L)]
    specs = [("mean_ablate", "mean", ablate, 0, 0, ""),
             ("mean_fractional", "mean", frac, 0, 0, ""),
             ("mean_all", "mean", zeros, 0, 0, ""),
             ("role_mean_ablate", "mean_by_role", ablate, 0, 0, ""),
             ("role_mean_fractional", "mean_by_role", frac, 0, 0, ""),
             ("resample_ablate", "resample", ablate, 3, 7, "matched"),
             ("resample_fractional", "resample", frac, 2, 12345, "matched"),
             ("resample_scaled", "resample", ablate, 4, 99, "scaled"),
             ("zero_ablate", "zero", ablate, 0, 0, "")]
    ablation_cases, logits_by = [], {}
    for name, mode, mask, draws, seed, alignment in specs:
        hm = torch.tensor([mask] * n, dtype=torch.float64)
        case = {"name": name, "mode": mode, "head_mask": hm.tolist(),
                "draws": draws, "seed": seed, "alignment": alignment}
        if mode == "zero":
            logits = forward(w, ids, types, amask, hm)[0]
        elif mode == "mean":
            logits = forward(w, ids, types, amask, hm, fill=mean)[0]
        elif mode == "mean_by_role":
            logits = forward(w, ids, types, amask, hm, fill=role_fill())[0]
        else:
            sources = [resample_sources(ref_rows, row, seed, draws, alignment) for row in rows]
            case["draw_sources"] = sources
            draw_logits = [forward(w, ids, types, amask, hm,
                                   fill=resample_fill(sources, k, alignment))[0]
                           for k in range(draws)]
            case["draw_logits"] = [rounded(x) for x in draw_logits]
            logits = draw_logits[0]
        logits_by[name] = logits
        if mode != "resample":
            case["logits"] = rounded(logits)
        ablation_cases.append(case)
    assert close(logits_by["zero_ablate"], cases["zero"]["logits"], 1e-9)
    mean_vs_zero = (logits_by["mean_ablate"] - logits_by["zero_ablate"]).abs().max().item()
    assert mean_vs_zero > 1e-3, mean_vs_zero
    role_vs_mean = (logits_by["role_mean_ablate"] - logits_by["mean_ablate"]).abs().max().item()
    assert role_vs_mean > 1e-3, role_vs_mean
    # Draws from different sources must differ (else the per-draw check
    # could not tell draws apart).
    sources = ablation_cases[5]["draw_sources"]
    assert any(len(set(s)) > 1 for s in sources), sources

    # 4. Activation patching on a clean / corrupted pair.
    clean_ids = base["input_ids"][0]
    clean_types = base["token_type_ids"][0]
    corrupted_ids = list(clean_ids)
    for pos, new in ((1, 101), (2, 37), (8, 66)):
        assert 5 <= new < CONFIG["vocab_size"] and new != clean_ids[pos]
        corrupted_ids[pos] = new
    one = torch.ones(1, L, H, dtype=torch.float64)
    t_mask = torch.ones(1, len(clean_ids), dtype=torch.long)
    runs = {}
    for key, row in (("clean", clean_ids), ("corrupted", corrupted_ids)):
        runs[key] = forward(w, torch.tensor([row]), torch.tensor([clean_types]), t_mask, one)

    def patched(src, dst, kind, layer, head=None, pos=None):
        """dst's run with the site's value taken from src's run."""
        _, s_ctx, s_hid = runs[src]
        sel = slice(None) if pos is None else slice(pos, pos + 1)
        heads = range(H) if head is None else [head]
        layers = range(L) if layer is None else [layer]

        def ctx_hook(l, ctx):
            if kind != "head" or l not in layers:
                return ctx
            ctx = ctx.clone()
            for h in heads:
                ctx[:, h, sel] = s_ctx[l][:, h, sel]
            return ctx

        def hidden_hook(l, x):
            if kind != "residual" or l != layer:
                return x
            x = x.clone()
            x[:, sel] = s_hid[l][:, sel]
            return x

        row = clean_ids if dst == "clean" else corrupted_ids
        return forward(w, torch.tensor([row]), torch.tensor([clean_types]), t_mask, one,
                       ctx_hook=ctx_hook, hidden_hook=hidden_hook)[0][0]

    site_specs = [("head", l, h, None) for l in range(L) for h in range(H)]
    site_specs += [("head", 1, 2, 1), ("head", 0, 0, 8), ("head", 2, 3, 0),
                   ("residual", 0, None, None), ("residual", 1, None, 2),
                   ("residual", L, None, None)]
    clean_logits, corrupted_logits = runs["clean"][0][0], runs["corrupted"][0][0]
    sites, effects = [], []
    for kind, layer, head, pos in site_specs:
        site = {"kind": kind, "layer": layer}
        if head is not None:
            site["head"] = head
        if pos is not None:
            site["position"] = pos
        c2x = patched("clean", "corrupted", kind, layer, head, pos)
        x2c = patched("corrupted", "clean", kind, layer, head, pos)
        site["clean_into_corrupted"] = rounded(c2x)
        site["corrupted_into_clean"] = rounded(x2c)
        sites.append(site)
        effects.append((kind, layer, head, pos,
                        (c2x - corrupted_logits).abs().max().item(),
                        (x2c - clean_logits).abs().max().item()))
    head_effects = [e[4] for e in effects if e[0] == "head"]
    assert max(head_effects) > 1e-3, head_effects
    res0 = patched("clean", "corrupted", "residual", 0)
    assert (res0 - clean_logits).abs().max().item() <= 1e-12
    # A head whose ctx is the same in both runs would leave logits unchanged;
    # with corrupted positions 1, 2, 8 every head's ctx differs, so the check
    # is skipped unless such a head exists.
    for l in range(L):
        for h in range(H):
            if torch.equal(runs["clean"][1][l][:, h], runs["corrupted"][1][l][:, h]):
                e = patched("clean", "corrupted", "head", l, h)
                assert torch.equal(e, corrupted_logits), (l, h)

    all_heads = patched("clean", "corrupted", "head", None)
    all_diff = (all_heads - clean_logits).abs().max().item()

    golden = {
        "generator": "tests/golden/intervention_reference.py",
        "model_dir": "tests/golden/tiny-bert-cls",
        "reference": {"input_ids": ref_ids.tolist(),
                      "token_type_ids": ref_types.tolist(),
                      "attention_mask": ref_mask.tolist(),
                      "tokens": tokens, "mean": rounded(mean),
                      "role_means": rounded(role_means), "role_tokens": role_tokens},
        "inputs": {"input_ids": base["input_ids"],
                   "token_type_ids": base["token_type_ids"],
                   "attention_mask": base["attention_mask"]},
        "ablation_cases": ablation_cases,
        "patching": {"clean_ids": clean_ids, "clean_types": clean_types,
                     "corrupted_ids": corrupted_ids, "corrupted_types": clean_types,
                     "clean_logits": rounded(clean_logits),
                     "corrupted_logits": rounded(corrupted_logits),
                     "sites": sites,
                     "all_heads_all_layers": {"logits": rounded(all_heads),
                                              "max_abs_diff_from_clean": float("%.9g" % all_diff)}},
    }
    with open(OUT, "w") as f:
        json.dump(golden, f, separators=(",", ":"))
        f.write("\n")

    print("wrote", OUT, "(%d bytes)" % os.path.getsize(OUT))
    print("reference tokens:", tokens)
    print("max |mean_ablate - zero_ablate| logits: %.6g" % mean_vs_zero)
    for c in ablation_cases:
        print("%-20s %s" % (c["name"], c.get("draw_sources", "")),
              c["logits"][0] if "logits" in c else c["draw_logits"][0][0])
    print("clean logits    ", rounded(clean_logits))
    print("corrupted logits", rounded(corrupted_logits))
    print("site effects (max |patched - unpatched dst|): clean->corrupted, corrupted->clean")
    for kind, layer, head, pos, a, b in effects:
        print("  %-8s l=%d h=%s p=%s  %.4g  %.4g" % (kind, layer, head, pos, a, b))
    print("all heads all layers: max |logits - clean| = %.6g" % all_diff)


if __name__ == "__main__":
    main()
