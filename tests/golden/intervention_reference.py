#!/usr/bin/python3
"""An independent float64 reference for the per-head interventions: mean
ablation, resample ablation and activation patching.

Written from the definitions (the contract that the C++ code in
server/core/model/bert_layer.cc and server/core/patch/ implements), not from
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
    head_mask [B, L, H]: probs' = m * probs; with fill ([L, H, D]) the
    ablated part is replaced: ctx' = probs' @ V + (1 - m) * fill[l, h].
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
        if fill is not None:
            ctx = ctx + (1.0 - m) * fill[l][None, :, None, :]
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


def draw_examples(seed, draws, n):
    """j_k for k = 0..draws-1: perm[k mod n], perm a Fisher-Yates shuffle."""
    rng, perm = splitmix64(seed), list(range(n))
    for i in range(n - 1, 0, -1):
        j = next(rng) % (i + 1)
        perm[i], perm[j] = perm[j], perm[i]
    return [perm[k % n] for k in range(draws)]


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

    # 1. Reference statistics from the unmasked run.
    _, ctxs, _ = forward(w, ids, types, amask, ones)
    real = amask.double()[:, None, :, None]                 # [N, 1, T, 1]
    tokens = int(amask.sum())
    mean = torch.stack([(c * real).sum((0, 2)) / tokens for c in ctxs])          # [L, H, D]
    pooled = torch.stack([(c * real).sum(2) / real.sum(2) for c in ctxs], 1)     # [N, L, H, D]

    # 2-3. Mean / resample / zero ablation cases.
    ablate = [[1.0, 0.0, 1.0, 1.0], [0.0, 1.0, 1.0, 0.0], [1.0, 1.0, 0.0, 1.0]]
    frac = [[1.0, 0.3, 1.0, 0.7], [0.7, 1.0, 0.0, 1.0], [0.3, 0.3, 1.0, 1.0]]
    zeros = [[0.0] * H for _ in range(L)]
    specs = [("mean_ablate", "mean", ablate, 0, 0), ("mean_fractional", "mean", frac, 0, 0),
             ("mean_all", "mean", zeros, 0, 0), ("resample_ablate", "resample", ablate, 3, 7),
             ("resample_fractional", "resample", frac, 5, 12345),
             ("zero_ablate", "zero", ablate, 0, 0)]
    ablation_cases, logits_by = [], {}
    for name, mode, mask, draws, seed in specs:
        hm = torch.tensor([mask] * n, dtype=torch.float64)
        case = {"name": name, "mode": mode, "head_mask": hm.tolist(),
                "draws": draws, "seed": seed}
        if mode == "zero":
            logits = forward(w, ids, types, amask, hm)[0]
        elif mode == "mean":
            logits = forward(w, ids, types, amask, hm, fill=mean)[0]
        else:
            js = draw_examples(seed, draws, n)
            case["draw_examples"] = js
            logits = sum(forward(w, ids, types, amask, hm, fill=pooled[j])[0]
                         for j in js) / draws
        logits_by[name] = logits
        case["logits"] = rounded(logits)
        ablation_cases.append(case)
    assert close(logits_by["zero_ablate"], cases["zero"]["logits"], 1e-9)
    mean_vs_zero = (logits_by["mean_ablate"] - logits_by["zero_ablate"]).abs().max().item()
    assert mean_vs_zero > 1e-3, mean_vs_zero

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
        "reference": {"input_ids": base["input_ids"],
                      "token_type_ids": base["token_type_ids"],
                      "attention_mask": base["attention_mask"],
                      "tokens": tokens, "mean": rounded(mean), "pooled": rounded(pooled)},
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
        print("%-20s %s" % (c["name"], c.get("draw_examples", "")), c["logits"][0])
    print("clean logits    ", rounded(clean_logits))
    print("corrupted logits", rounded(corrupted_logits))
    print("site effects (max |patched - unpatched dst|): clean->corrupted, corrupted->clean")
    for kind, layer, head, pos, a, b in effects:
        print("  %-8s l=%d h=%s p=%s  %.4g  %.4g" % (kind, layer, head, pos, a, b))
    print("all heads all layers: max |logits - clean| = %.6g" % all_diff)


if __name__ == "__main__":
    main()
