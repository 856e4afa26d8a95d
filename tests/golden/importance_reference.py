#!/usr/bin/env python3
"""Head importance of the float64 reference BERT (make_golden.py), two ways.

Michel, Levy and Neubig 2019 / HF run_bertology.py compute_heads_importance
at its default --batch_size 1: put a mask m [L, H] on the heads (ones, or the
mask importance is taken at), take the cross-entropy with the gold label of
each example, and sum |d loss(x) / d m| over the examples. Here in float64:

  autograd_importance: one backward pass with a copy of the mask per row
      (the summed loss's gradient with respect to row r's copy is example
      r's gradient), as the server does it;
  finite_difference_importance: central differences of each example's loss
      in each head's mask value, independent of any autograd.

The two must agree (check_agreement, also run by test_importance.py and by
`python3 importance_reference.py`), and the server's raw_importance must
match them; normalize() is HF's normalisation (per-layer L2 norm with
exponent 2 and +1e-20, then (I - min) / (max - min)).
"""

import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_golden  # noqa: E402

LAYERS = make_golden.CONFIG["num_hidden_layers"]
HEADS = make_golden.CONFIG["num_attention_heads"]


def pad(rows):
    """(input_ids, token_type_ids, attention_mask) [B, T] from rows of
    (ids, segments), padded with 0 to the longest."""
    t_len = max(len(ids) for ids, _ in rows)
    ids = torch.zeros(len(rows), t_len, dtype=torch.long)
    types = torch.zeros_like(ids)
    mask = torch.zeros_like(ids)
    for r, (i, s) in enumerate(rows):
        ids[r, :len(i)] = torch.tensor(i)
        types[r, :len(s)] = torch.tensor(s)
        mask[r, :len(i)] = 1
    return ids, types, mask


def row_losses(w, batch, labels, head_mask, uniform):
    """Per-example cross-entropy [B] (natural log) and logits [B, C] under
    head_mask [B, L, H], every row in uniform mode when `uniform`."""
    ids, types, mask = batch
    rows = torch.full((ids.shape[0],), 1 if uniform else 0)
    logits, _ = make_golden.reference_forward(w, ids, types, mask, head_mask, rows)
    lp = torch.log_softmax(logits, -1)
    return -lp.gather(1, torch.tensor(labels)[:, None])[:, 0], logits


def autograd_importance(w, batch, labels, mask, uniform=False):
    """sum over examples of |d loss / d m| [L, H], float64, by autograd."""
    b = batch[0].shape[0]
    m = torch.tensor(mask, dtype=torch.float64).view(1, LAYERS, HEADS)
    m = m.repeat(b, 1, 1).requires_grad_(True)
    losses, _ = row_losses(w, batch, labels, m, uniform)
    (g,) = torch.autograd.grad(losses.sum(), m)
    return g.abs().sum(0)


def finite_difference_importance(w, batch, labels, mask, uniform=False,
                                 eps=1e-6):
    """As autograd_importance, by central differences per example: moving
    one head's value in every row at once moves each row's loss by its own
    derivative only (rows do not interact)."""
    b = batch[0].shape[0]
    base = torch.tensor(mask, dtype=torch.float64).view(1, LAYERS, HEADS)
    base = base.repeat(b, 1, 1)
    out = torch.zeros(LAYERS, HEADS, dtype=torch.float64)
    with torch.no_grad():
        for l in range(LAYERS):
            for h in range(HEADS):
                plus, minus = base.clone(), base.clone()
                plus[:, l, h] += eps
                minus[:, l, h] -= eps
                lp, _ = row_losses(w, batch, labels, plus, uniform)
                lm, _ = row_losses(w, batch, labels, minus, uniform)
                out[l, h] = ((lp - lm) / (2 * eps)).abs().sum()
    return out


def scores(w, batch, labels, mask, uniform=False):
    """(correct, loss_sum, predictions) under `mask` [L * H]."""
    b = batch[0].shape[0]
    m = torch.tensor(mask, dtype=torch.float64).view(1, LAYERS, HEADS)
    with torch.no_grad():
        losses, logits = row_losses(w, batch, labels, m.repeat(b, 1, 1), uniform)
    preds = logits.argmax(-1).tolist()
    return sum(int(p == y) for p, y in zip(preds, labels)), losses.sum().item(), preds


def normalize(raw, layer_norm=True, global_norm=True):
    """HF run_bertology.py's normalisation of [L, H] importances."""
    x = raw.clone()
    if layer_norm:
        x = x / (x.pow(2).sum(-1).pow(0.5)[:, None] + 1e-20)
    if global_norm:
        x = (x - x.min()) / (x.max() - x.min())
    return x


def check_agreement(w, batch, labels, mask, uniform=False, rtol=1e-6):
    """(autograd, finite differences); raises if they disagree."""
    a = autograd_importance(w, batch, labels, mask, uniform)
    f = finite_difference_importance(w, batch, labels, mask, uniform)
    err = ((a - f).abs() / a.abs().clamp_min(1e-12)).max().item()
    if err > rtol:
        raise AssertionError("autograd and finite differences differ by %g "
                             "(relative):\n%s\n%s" % (err, a, f))
    return a, f


def main():
    # make_golden.main() draws the weights first from this seed, so these
    # are the tensors of tiny-bert-cls/model.safetensors.
    w = make_golden.make_weights(torch.Generator().manual_seed(20240517))
    golden = json.load(open(make_golden.GOLDEN))
    ids = golden["input_ids"]
    types = golden["token_type_ids"]
    rows = [([i for i, m in zip(r, am) if m], t[:sum(am)])
            for r, t, am in zip(ids, types, golden["attention_mask"])]
    batch = pad(rows)
    labels = [0, 1, 2, 1]
    for mask, uniform in (([1.0] * 12, False),
                          ([1.0] * 5 + [0.0] + [1.0] * 5 + [0.3], True)):
        a, f = check_agreement(w, batch, labels, mask, uniform)
        print("mask", mask, "uniform" if uniform else "zero")
        print("autograd\n", a.numpy(), "\nfinite differences\n", f.numpy())
        print("max relative difference",
              ((a - f).abs() / a.abs()).max().item())


if __name__ == "__main__":
    main()
