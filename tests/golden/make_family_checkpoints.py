#!/usr/bin/env python3
"""Writes tiny HF checkpoints of the non-BERT encoder families, with HF's
own classes and HF's own save_pretrained (model and tokenizer).

For tests/python/test_families.py and the self-check of
tests/golden/family_reference.py. Every family in both weight formats:

  roberta-seqcls     RobertaForSequenceClassification (3 labels), safetensors
  roberta-tokcls     RobertaForTokenClassification (5 labels), pytorch_model.bin
  xlmr-seqcls        XLMRobertaForSequenceClassification (2 labels), .bin
  xlmr-tokcls        XLMRobertaForTokenClassification (5 labels), safetensors
  distilbert-seqcls  DistilBertForSequenceClassification (3 labels), .bin
  distilbert-tokcls  DistilBertForTokenClassification (5 labels), safetensors
  electra-seqcls     ElectraForSequenceClassification (3 labels), safetensors,
                     embedding_size 16 != hidden 32 (electra.embeddings_project)
  electra-tokcls     ElectraForTokenClassification (5 labels), .bin,
                     embedding_size == hidden (no projection)

Tokenizers (each saved with its own save_pretrained):
  RoBERTa      RobertaTokenizerFast on tests/golden/byte-bpe (vocab.json,
               merges.txt; <s>=0 <pad>=1 </s>=2 <unk>=3 <mask>=4)
  XLM-RoBERTa  the slow XLMRobertaTokenizer on
               tests/golden/sentencepiece-bpe/sentencepiece.bpe.model
               (writes sentencepiece.bpe.model + tokenizer_config.json)
  DistilBERT   DistilBertTokenizer on tests/golden/tiny-bert-cls/vocab.txt
  ELECTRA      ElectraTokenizer on the same vocab.txt
tiny-bert-cls/vocab.txt lists "a" twice (the letter, line 5, and the word,
line 58). HF's vocab dict keeps the last id, and save_vocabulary writes the
dict's tokens in id order: the saved vocab.txt has 119 lines, every token
after line 5 one id lower than in the source file (HF warns "vocabulary
indices are not consecutive"). The saved directory is what both HF and the
server read, so the model's vocab_size is taken from the tokenizer reloaded
from it (119), not from the source file.

Sizes: hidden 32, 4 heads, 2 layers, intermediate 64, inputs of at most 64
tokens (RoBERTa/XLM-R: max_position_embeddings 66, their positions start at
pad_token_id + 1 = 2). Weights: HF's init, then (torch.manual_seed per
variant) every Linear / Embedding weight ~ N(0, 0.2^2) (the word embeddings
N(0, 1), positions N(0, 0.5^2): they go through a LayerNorm at once),
LayerNorm weights 1 + U(-0.2, 0.2), biases U(-0.1, 0.1), so masking one head
moves the logits by far more than the tests' tolerances.

  build/test-venv/bin/python tests/golden/make_family_checkpoints.py OUT_DIR
writes OUT_DIR/<variant>/ and OUT_DIR/variants.json ({name: {family,
architecture, format, num_labels, head, weights_file, ...}}).
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
BYTE_BPE = os.path.join(HERE, "byte-bpe")
SENTENCEPIECE_BPE = os.path.join(HERE, "sentencepiece-bpe", "sentencepiece.bpe.model")
BERT_VOCAB = os.path.join(HERE, "tiny-bert-cls", "vocab.txt")

HIDDEN, HEADS, LAYERS, INTERMEDIATE = 32, 4, 2, 64
MAX_TOKENS = 64
SEED = 20240611

SEQUENCE_LABELS = {3: ["negative", "neutral", "positive"],
                   2: ["not_entailment", "entailment"]}
TOKEN_LABELS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]

# name: (family (HF model_type), architecture, format, num_labels, options)
VARIANTS = {
    "roberta-seqcls": ("roberta", "RobertaForSequenceClassification", "safetensors", 3, {}),
    "roberta-tokcls": ("roberta", "RobertaForTokenClassification", "bin", 5, {}),
    "xlmr-seqcls": ("xlm-roberta", "XLMRobertaForSequenceClassification", "bin", 2, {}),
    "xlmr-tokcls": ("xlm-roberta", "XLMRobertaForTokenClassification", "safetensors", 5, {}),
    "distilbert-seqcls": ("distilbert", "DistilBertForSequenceClassification", "bin", 3, {}),
    "distilbert-tokcls": ("distilbert", "DistilBertForTokenClassification", "safetensors", 5, {}),
    "electra-seqcls": ("electra", "ElectraForSequenceClassification", "safetensors", 3,
                       {"embedding_size": 16}),
    "electra-tokcls": ("electra", "ElectraForTokenClassification", "bin", 5,
                       {"embedding_size": HIDDEN}),
}
# The key prefix of each family's encoder in its For* classes.
PREFIX = {"roberta": "roberta.", "xlm-roberta": "roberta.",
          "distilbert": "distilbert.", "electra": "electra."}
# Per family: an encoder weight every checkpoint of the family needs (the
# bad-checkpoint tests delete it), in the file's own key names.
ENCODER_KEY = {
    "roberta": "roberta.encoder.layer.0.attention.self.query.weight",
    "xlm-roberta": "roberta.encoder.layer.1.output.dense.weight",
    "distilbert": "distilbert.transformer.layer.1.attention.q_lin.weight",
    "electra": "electra.encoder.layer.0.attention.output.LayerNorm.weight",
}


def head_of(architecture):
    return ("token_classification" if architecture.endswith("TokenClassification")
            else "sequence_classification")


def label_names(architecture, num_labels):
    if head_of(architecture) == "token_classification":
        return TOKEN_LABELS[:num_labels]
    return SEQUENCE_LABELS[num_labels]


def make_tokenizer(family):
    """The family's tokenizer, as the module docstring says, with
    model_max_length = MAX_TOKENS."""
    import transformers
    if family == "roberta":
        return transformers.RobertaTokenizerFast(
            vocab_file=os.path.join(BYTE_BPE, "vocab.json"),
            merges_file=os.path.join(BYTE_BPE, "merges.txt"),
            model_max_length=MAX_TOKENS)
    if family == "xlm-roberta":
        return transformers.XLMRobertaTokenizer(
            vocab_file=SENTENCEPIECE_BPE, model_max_length=MAX_TOKENS)
    if family == "distilbert":
        return transformers.DistilBertTokenizer(
            vocab_file=BERT_VOCAB, model_max_length=MAX_TOKENS)
    if family == "electra":
        return transformers.ElectraTokenizer(
            vocab_file=BERT_VOCAB, model_max_length=MAX_TOKENS)
    raise ValueError(family)


def make_config(family, architecture, num_labels, vocab_size, options):
    import transformers
    names = label_names(architecture, num_labels)
    labels = dict(id2label={i: n for i, n in enumerate(names)},
                  label2id={n: i for i, n in enumerate(names)})
    if family in ("roberta", "xlm-roberta"):
        cls = (transformers.RobertaConfig if family == "roberta"
               else transformers.XLMRobertaConfig)
        return cls(vocab_size=vocab_size, hidden_size=HIDDEN,
                   num_hidden_layers=LAYERS, num_attention_heads=HEADS,
                   intermediate_size=INTERMEDIATE, hidden_act="gelu",
                   max_position_embeddings=MAX_TOKENS + 2, type_vocab_size=1,
                   pad_token_id=1, bos_token_id=0, eos_token_id=2,
                   layer_norm_eps=1e-5, **labels)
    if family == "distilbert":
        return transformers.DistilBertConfig(
            vocab_size=vocab_size, dim=HIDDEN, hidden_dim=INTERMEDIATE,
            n_layers=LAYERS, n_heads=HEADS, activation="gelu",
            max_position_embeddings=MAX_TOKENS, pad_token_id=0, **labels)
    if family == "electra":
        return transformers.ElectraConfig(
            vocab_size=vocab_size, embedding_size=options["embedding_size"],
            hidden_size=HIDDEN, num_hidden_layers=LAYERS,
            num_attention_heads=HEADS, intermediate_size=INTERMEDIATE,
            hidden_act="gelu", max_position_embeddings=MAX_TOKENS,
            type_vocab_size=2, pad_token_id=0, layer_norm_eps=1e-12, **labels)
    raise ValueError(family)


def scale_weights(model):
    """Re-initialises every parameter (module docstring) from torch's
    global generator, in named_modules order."""
    import torch
    from torch import nn
    with torch.no_grad():
        for name, module in model.named_modules():
            if isinstance(module, nn.Embedding):
                std = 1.0 if "word_embeddings" in name else (
                    0.5 if "position_embeddings" in name else 0.3)
                module.weight.normal_(0.0, std)
            elif isinstance(module, nn.Linear):
                module.weight.normal_(0.0, 0.2)
                if module.bias is not None:
                    module.bias.uniform_(-0.1, 0.1)
            elif isinstance(module, nn.LayerNorm):
                module.weight.uniform_(0.8, 1.2)
                module.bias.uniform_(-0.1, 0.1)


def write_variant(out_dir, name, index):
    import torch
    import transformers
    family, architecture, fmt, num_labels, options = VARIANTS[name]
    d = os.path.join(out_dir, name)
    os.makedirs(d, exist_ok=True)
    # The tokenizer first: the model's vocab_size is the saved one's.
    verbosity = transformers.logging.get_verbosity()
    transformers.logging.set_verbosity_error()  # the duplicate "a" warning
    try:
        make_tokenizer(family).save_pretrained(d)
    finally:
        transformers.logging.set_verbosity(verbosity)
    saved = transformers.AutoTokenizer.from_pretrained(d)
    vocab_size = max(len(saved), max(saved.get_vocab().values()) + 1)
    config = make_config(family, architecture, num_labels, vocab_size, options)
    torch.manual_seed(SEED + index)
    model = getattr(transformers, architecture)(config)
    scale_weights(model)
    model.eval()
    model.save_pretrained(d, safe_serialization=(fmt == "safetensors"))
    weights = "model.safetensors" if fmt == "safetensors" else "pytorch_model.bin"
    assert os.path.exists(os.path.join(d, weights)), (name, os.listdir(d))
    return {"family": family, "architecture": architecture, "format": fmt,
            "num_labels": num_labels, "head": head_of(architecture),
            "label_names": label_names(architecture, num_labels),
            "weights_file": weights, "vocab_size": vocab_size,
            "prefix": PREFIX[family], "encoder_key": ENCODER_KEY[family],
            "embeddings_project": (family == "electra"
                                   and options["embedding_size"] != HIDDEN)}


def main(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    meta = {name: write_variant(out_dir, name, i)
            for i, name in enumerate(VARIANTS)}
    with open(os.path.join(out_dir, "variants.json"), "w") as f:
        json.dump(meta, f, indent=2)
    return meta


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    if len(sys.argv) != 2:
        sys.exit("usage: make_family_checkpoints.py OUT_DIR")
    main(sys.argv[1])
