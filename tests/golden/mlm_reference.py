#!/usr/bin/python3
"""An independent reading of a BertForMaskedLM checkpoint: HF transformers'
eager BertOnlyMLMHead (v4.x modeling_bert.py: BertPredictionHeadTransform =
dense, GELU, LayerNorm; the decoder's weight tied to the word embeddings,
its bias `cls.predictions.bias`) on make_golden.reference_encoder, in
float64. It does not use the project's C++ code or its trainer, so a
checkpoint whose keys or head the trainer wrote wrongly predicts masked
characters no better than their frequency.

masked_token_accuracy() masks fixed positions of character-level pairs
(every `stride`-th character, offsets varying by row; [CLS]/[SEP] never)
with [MASK] and counts how many the head predicts right; it also reports
the accuracy of always guessing the most frequent character (the floor).

  /usr/bin/python3 tests/golden/mlm_reference.py models/querytitle-zh-tiny-mlm \\
      models/querytitle-zh-tiny/data/dev.tsv 400   (needs only torch)
"""
import collections
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_golden  # noqa: E402  (reference_encoder, gelu, layer_norm)


def mlm_logits(w, config, hidden):
    """HF BertLMPredictionHead on hidden [N, D] -> logits [N, V] (float64)."""
    w = {k: v.double() for k, v in w.items()}
    p = "cls.predictions."
    h = make_golden.gelu(make_golden.linear(hidden, w, p + "transform.dense"))
    h = make_golden.layer_norm(h, w[p + "transform.LayerNorm.weight"],
                               w[p + "transform.LayerNorm.bias"],
                               config["layer_norm_eps"])
    # Tied decoder: HF's save_pretrained leaves cls.predictions.decoder.weight
    # out; when a file has it, it must be the embeddings anyway.
    emb = w["bert.embeddings.word_embeddings.weight"]
    return h @ emb.t() + w[p + "bias"]


def encode(text_a, text_b, vocab):
    """[CLS] a [SEP] b [SEP] for texts of single CJK characters (each its own
    token in the vocabulary, as the generated query-title data is)."""
    ids = [vocab["[CLS]"]] + [vocab.get(c, vocab["[UNK]"]) for c in text_a]
    ids.append(vocab["[SEP]"])
    segments = [0] * len(ids)
    ids += [vocab.get(c, vocab["[UNK]"]) for c in text_b] + [vocab["[SEP]"]]
    segments += [1] * (len(ids) - len(segments))
    return ids, segments


def masked_token_accuracy(model_dir, weights, rows, stride=7):
    with open(os.path.join(model_dir, "config.json")) as f:
        config = json.load(f)
    with open(os.path.join(model_dir, "vocab.txt"), encoding="utf-8") as f:
        vocab = {t.rstrip("\n"): i for i, t in enumerate(f)}
    special = {vocab["[CLS]"], vocab["[SEP]"]}
    correct = total = 0
    gold_counts = collections.Counter()
    all_counts = collections.Counter()
    for r, (a, b) in enumerate(rows):
        ids, segments = encode(a, b, vocab)
        all_counts.update(i for i in ids if i not in special)
        chosen = [p for p in range(len(ids))
                  if ids[p] not in special and (p + r) % stride == 0]
        if not chosen:
            continue
        masked = list(ids)
        for p in chosen:
            masked[p] = vocab["[MASK]"]
        t = torch.tensor([masked])
        hidden, _ = make_golden.reference_encoder(
            weights, t, torch.tensor([segments]), torch.ones_like(t),
            torch.ones(1, config["num_hidden_layers"],
                       config["num_attention_heads"]),
            torch.zeros(1), config)
        logits = mlm_logits(weights, config, hidden[0, chosen])
        gold = torch.tensor([ids[p] for p in chosen])
        correct += int((logits.argmax(-1) == gold).sum())
        total += len(chosen)
        gold_counts.update(gold.tolist())
    most_frequent = all_counts.most_common(1)[0][0]
    return {"masked": total, "accuracy": correct / total,
            "most_frequent_accuracy": gold_counts[most_frequent] / total}


def main():
    model_dir, data, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    weights = make_golden.read_safetensors(os.path.join(model_dir, "model.safetensors"))
    with open(data, encoding="utf-8") as f:
        rows = [line.rstrip("\n").split("\t")[:2] for line in f][:n]
    print(json.dumps(masked_token_accuracy(model_dir, weights, rows)))


if __name__ == "__main__":
    main()
