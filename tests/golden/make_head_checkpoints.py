#!/usr/bin/python3
"""Writes one HF model directory per BERT head, the way HF saves them.

An independent writer for tests/python/test_heads.py: the key layout of
each head is transformers 4.x modeling_bert.py's (save_pretrained writes
`model.state_dict()`):
  BertModel                      embeddings.*, encoder.*, pooler.* (no
                                 "bert." prefix; pooler optional via
                                 add_pooling_layer)
  BertForPreTraining             bert.* with pooler, cls.predictions.*
                                 (transform.dense, transform.LayerNorm,
                                 decoder, bias), cls.seq_relationship.*
  BertForMaskedLM                bert.* without pooler, cls.predictions.*
  BertForNextSentencePrediction  bert.* with pooler, cls.seq_relationship.*
  BertForSequenceClassification  bert.* with pooler, classifier [labels, d]
  BertForMultipleChoice          bert.* with pooler, classifier [1, d]
  BertForTokenClassification     bert.* without pooler, classifier [labels, d]
  BertForQuestionAnswering       bert.* without pooler, qa_outputs [2, d]
Transformers before 4.31 also saved the `embeddings.position_ids` buffer
(int64 [1, max_positions]); some variants carry it. Weights go to
`model.safetensors` (written by hand by make_golden.write_safetensors) or to `pytorch_model.bin` by torch.save (the zip format, as
save_pretrained(safe_serialization=False) writes it).

The encoder weights are make_golden.py's (same seed), so its float64
reference (reference_encoder) is the answer for every directory.

  /usr/bin/python3 tests/golden/make_head_checkpoints.py OUT_DIR
writes OUT_DIR/<variant>/ (18 of them) and OUT_DIR/variants.json ({name: {architecture,
head, format, prefix, pooler, position_ids}}).
"""

import json
import os
import sys

import torch

import make_golden

SEED = 20240517
NUM_TOKEN_LABELS = 5
TOKEN_LABELS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]

# name: (architecture, format, keep "bert." prefix, pooler, position_ids).
# Every head in both formats, the .bin ones with the position_ids buffer (as
# transformers < 4.31 saved it); BertModel also without pooler and with a
# "bert." prefix (a state dict taken from a BertFor* model's .bert), that
# one in safetensors with the buffer as I64.
ARCHITECTURES = {
    # architecture: (short name, pooler)
    "BertModel": ("base", True),
    "BertForPreTraining": ("pretraining", True),
    "BertForMaskedLM": ("mlm", False),
    "BertForNextSentencePrediction": ("nsp", True),
    "BertForSequenceClassification": ("seqcls", True),
    "BertForMultipleChoice": ("mc", True),
    "BertForTokenClassification": ("tokcls", False),
    "BertForQuestionAnswering": ("qa", False),
}
VARIANTS = {}
for _arch, (_short, _pooler) in ARCHITECTURES.items():
    for _fmt, _tag in (("safetensors", "st"), ("bin", "bin")):
        VARIANTS["%s-%s" % (_short, _tag)] = (
            _arch, _fmt, _arch != "BertModel", _pooler, _fmt == "bin")
VARIANTS["base-nopool-bin"] = ("BertModel", "bin", False, False, True)
VARIANTS["base-prefixed-st"] = ("BertModel", "safetensors", True, False, True)

HEADS = {
    "BertForSequenceClassification": "sequence_classification",
    "BertForTokenClassification": "token_classification",
}


def head_weights(architecture, gen):
    """The head's own keys (HF names) for `architecture`."""
    c = make_golden.CONFIG
    d, v = c["hidden_size"], c["vocab_size"]

    def randn(*shape, std=0.5):
        return (torch.randn(*shape, generator=gen, dtype=torch.float64) * std).float()

    w = {}
    if architecture in ("BertForPreTraining", "BertForMaskedLM"):
        p = "cls.predictions."
        w[p + "transform.dense.weight"] = randn(d, d)
        w[p + "transform.dense.bias"] = randn(d)
        w[p + "transform.LayerNorm.weight"] = 1 + randn(d, std=0.1)
        w[p + "transform.LayerNorm.bias"] = randn(d, std=0.1)
        w[p + "decoder.weight"] = randn(v, d)
        w[p + "decoder.bias"] = randn(v)
        w[p + "bias"] = w[p + "decoder.bias"].clone()
    if architecture in ("BertForPreTraining", "BertForNextSentencePrediction"):
        w["cls.seq_relationship.weight"] = randn(2, d)
        w["cls.seq_relationship.bias"] = randn(2)
    if architecture == "BertForSequenceClassification":
        w["classifier.weight"] = randn(make_golden.NUM_LABELS, d)
        w["classifier.bias"] = randn(make_golden.NUM_LABELS, std=0.1)
    if architecture == "BertForMultipleChoice":
        w["classifier.weight"] = randn(1, d)
        w["classifier.bias"] = randn(1)
    if architecture == "BertForTokenClassification":
        w["classifier.weight"] = randn(NUM_TOKEN_LABELS, d, std=0.5)
        w["classifier.bias"] = randn(NUM_TOKEN_LABELS, std=0.1)
    if architecture == "BertForQuestionAnswering":
        w["qa_outputs.weight"] = randn(2, d)
        w["qa_outputs.bias"] = randn(2)
    return w


def state_dict(architecture, prefix, pooler, position_ids):
    gen = torch.Generator().manual_seed(SEED)
    encoder = make_golden.make_weights(gen)  # bert.* + pooler + classifier
    out = {}
    for k, t in encoder.items():
        if k.startswith("classifier."):
            continue
        if k.startswith("bert.pooler.") and not pooler:
            continue
        out[k if prefix else k[len("bert."):]] = t
    if position_ids:
        key = ("bert." if prefix else "") + "embeddings.position_ids"
        out[key] = torch.arange(make_golden.CONFIG["max_position_embeddings"])[None]
    out.update(head_weights(architecture, torch.Generator().manual_seed(SEED + 1)))
    decoder = "cls.predictions.decoder.weight"
    if decoder in out:
        # HF ties the MLM decoder to the word embeddings (tie_word_embeddings,
        # true by default) and save_pretrained writes both keys with the
        # same values; from_pretrained loads them into one tensor, so
        # different values would overwrite the embeddings.
        words = [k for k in out if k.endswith("embeddings.word_embeddings.weight")]
        out[decoder] = out[words[0]].clone()
    return out


def config_for(architecture):
    c = {k: v for k, v in make_golden.CONFIG.items()
         if k not in ("id2label", "label2id")}
    c["architectures"] = [architecture]
    if architecture == "BertForSequenceClassification":
        c["id2label"] = make_golden.CONFIG["id2label"]
        c["label2id"] = make_golden.CONFIG["label2id"]
    if architecture == "BertForTokenClassification":
        c["id2label"] = {str(i): n for i, n in enumerate(TOKEN_LABELS)}
        c["label2id"] = {n: i for i, n in enumerate(TOKEN_LABELS)}
    return c


def write_variant(out_dir, name):
    architecture, fmt, prefix, pooler, position_ids = VARIANTS[name]
    d = os.path.join(out_dir, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(config_for(architecture), f, indent=2)
    with open(os.path.join(d, "vocab.txt"), "w") as f:
        f.write("\n".join(make_golden.vocab_tokens()) + "\n")
    with open(os.path.join(d, "tokenizer_config.json"), "w") as f:
        json.dump({"do_lower_case": True}, f)
    sd = state_dict(architecture, prefix, pooler, position_ids)
    if fmt == "safetensors":
        make_golden.write_safetensors(sd, os.path.join(d, "model.safetensors"))
    else:
        torch.save(sd, os.path.join(d, "pytorch_model.bin"))
    return {"architecture": architecture,
            "head": HEADS.get(architecture, "encoder"), "format": fmt,
            "prefix": prefix, "pooler": pooler, "position_ids": position_ids}


def main(out_dir):
    meta = {name: write_variant(out_dir, name) for name in VARIANTS}
    with open(os.path.join(out_dir, "variants.json"), "w") as f:
        json.dump(meta, f, indent=2)


if __name__ == "__main__":
    main(sys.argv[1])
