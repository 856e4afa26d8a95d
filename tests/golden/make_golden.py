#!/usr/bin/python3
"""Makes the numerical goldens for the C++ BERT (server/core/model/model_test.cc).

An independent reference: a BERT for sequence classification written in
plain PyTorch, mirroring HF transformers' eager BertForSequenceClassification
(v4.x modeling_bert.py: embeddings, BertSelfAttention with `head_mask`
multiplied into the probabilities after the softmax, BertSelfOutput,
BertIntermediate, BertOutput, BertPooler, classifier). The uniform ablation
mode follows the formula documented in common/head_mask.h:
    p' = m * p + (1 - m) * u,  u[b, h, i, j] = mask[b, j] / sum_j mask[b, j].
The reference computes in float64 from the float32 weights it writes, so the
goldens are the exact answer for those weights, not another float32 run.

Writes, next to this script:
  tiny-bert-cls/        an HF model dir (config.json, model.safetensors
                        written by hand, vocab.txt, tokenizer_config.json)
  tiny-bert-cls.golden.json   inputs (token ids given directly), per-case
                        head masks, logits and attention maps of all layers.

Run: /usr/bin/python3 tests/golden/make_golden.py   (needs only torch)
"""

import json
import math
import os
import struct

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL_DIR = os.path.join(HERE, "tiny-bert-cls")
GOLDEN = os.path.join(HERE, "tiny-bert-cls.golden.json")

CONFIG = {
    "architectures": ["BertForSequenceClassification"],
    "model_type": "bert",
    "vocab_size": 120,
    "hidden_size": 32,
    "num_hidden_layers": 3,
    "num_attention_heads": 4,
    "intermediate_size": 64,
    "hidden_act": "gelu",
    "hidden_dropout_prob": 0.1,
    "attention_probs_dropout_prob": 0.1,
    "max_position_embeddings": 64,
    "type_vocab_size": 2,
    "initializer_range": 0.02,
    "layer_norm_eps": 1e-12,
    "pad_token_id": 0,
    "position_embedding_type": "absolute",
    "id2label": {"0": "negative", "1": "neutral", "2": "positive"},
    "label2id": {"negative": 0, "neutral": 1, "positive": 2},
}
NUM_LABELS = 3


def make_weights(gen):
    """Random float32 weights with HF key names. Scales are larger than HF's
    init (0.02) so attention is peaked and masks change the logits a lot."""
    c = CONFIG
    d, inter = c["hidden_size"], c["intermediate_size"]
    w = {}

    def randn(*shape, std):
        return (torch.randn(*shape, generator=gen, dtype=torch.float64) * std).float()

    def linear(name, out_f, in_f, std):
        w[name + ".weight"] = randn(out_f, in_f, std=std)
        w[name + ".bias"] = randn(out_f, std=0.1)

    def layer_norm(name):
        w[name + ".weight"] = 1.0 + randn(d, std=0.1)
        w[name + ".bias"] = randn(d, std=0.1)

    e = "bert.embeddings."
    w[e + "word_embeddings.weight"] = randn(c["vocab_size"], d, std=1.0)
    w[e + "position_embeddings.weight"] = randn(c["max_position_embeddings"], d, std=0.5)
    w[e + "token_type_embeddings.weight"] = randn(c["type_vocab_size"], d, std=0.5)
    layer_norm(e + "LayerNorm")
    for i in range(c["num_hidden_layers"]):
        p = "bert.encoder.layer.%d." % i
        linear(p + "attention.self.query", d, d, std=0.35)
        linear(p + "attention.self.key", d, d, std=0.35)
        linear(p + "attention.self.value", d, d, std=0.25)
        linear(p + "attention.output.dense", d, d, std=0.2)
        layer_norm(p + "attention.output.LayerNorm")
        linear(p + "intermediate.dense", inter, d, std=0.25)
        linear(p + "output.dense", d, inter, std=0.2)
        layer_norm(p + "output.LayerNorm")
    linear("bert.pooler.dense", d, d, std=0.25)
    linear("classifier", NUM_LABELS, d, std=0.5)
    return w


def write_safetensors(tensors, path):
    """The safetensors format by hand: u64 LE header length, JSON header
    (dtype, shape, [begin, end) data offsets), raw little-endian data."""
    header, blobs, offset = {}, [], 0
    formats = {torch.float32: ("F32", "f"), torch.int64: ("I64", "q")}
    for name in sorted(tensors):
        t = tensors[name].contiguous()
        dtype, code = formats[t.dtype]  # F32 weights, I64 buffers
        data = struct.pack("<%d%s" % (t.numel(), code), *t.flatten().tolist())
        header[name] = {"dtype": dtype, "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    header["__metadata__"] = {"format": "pt"}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def read_safetensors(path):
    """{name: tensor} from a safetensors file, read by hand as
    write_safetensors writes it: F32 weights and the I64 buffers
    (position_ids) older saves carry; any other dtype fails."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        data = f.read()
    formats = {"F32": torch.float32, "I64": torch.int64}
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype = formats[info["dtype"]]
        begin, end = info["data_offsets"]
        out[name] = torch.frombuffer(bytearray(data[begin:end]),
                                     dtype=dtype).reshape(info["shape"])
    return out


def vocab_tokens():
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    letters = "abcdefghijklmnopqrstuvwxyz"
    tokens += list(letters) + ["##" + ch for ch in letters]
    words = ["the", "a", "of", "to", "and", "is", "in", "it", "that", "was",
             "for", "on", "are", "with", "as", "be", "at", "by", "this", "had",
             "not", "but", "from", "or", "have", "an", "they", "which", "one",
             "you", "were", "her", "all", "she", "there", "would", "their",
             "we", "him", "been", "has", "when", "who", "will", "more", "no",
             "if", "out", "so", "said", "what", "up", "its", "about", "into",
             "than", "them", "can", "only", "other", ".", ",", "!"]
    tokens += words
    assert len(tokens) >= CONFIG["vocab_size"], len(tokens)
    return tokens[:CONFIG["vocab_size"]]


# ---------------------------------------------------------------- reference

def gelu(x):
    return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))


def layer_norm(x, w, b, eps):
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + eps) * w + b


def linear(x, w, name):
    return x @ w[name + ".weight"].t() + w[name + ".bias"]


def reference_forward(w, input_ids, token_type_ids, attention_mask,
                      head_mask, uniform_rows):
    """HF eager BertForSequenceClassification in float64, eval mode (dropout
    is the identity). head_mask: [B, L, H]; uniform_rows: [B] (1 = uniform).
    Returns (logits [B, C], [attention probs [B, H, T, T] per layer])."""
    x, attentions = reference_encoder(w, input_ids, token_type_ids,
                                      attention_mask, head_mask, uniform_rows)
    w = {k: v.double() for k, v in w.items()}
    pooled = torch.tanh(linear(x[:, 0], w, "bert.pooler.dense"))
    logits = linear(pooled, w, "classifier")
    return logits, attentions


def reference_encoder(w, input_ids, token_type_ids, attention_mask,
                      head_mask, uniform_rows, config=None):
    """HF eager BertModel's encoder in float64 (as reference_forward).
    Returns (last hidden state [B, T, D], [attention probs per layer])."""
    c = config or CONFIG
    eps = c["layer_norm_eps"]
    n_heads = c["num_attention_heads"]
    d_head = c["hidden_size"] // n_heads
    b_size, t_len = input_ids.shape
    w = {k: v.double() for k, v in w.items()}

    # BertEmbeddings (absolute positions 0..T-1).
    e = "bert.embeddings."
    pos = torch.arange(t_len)
    x = (w[e + "word_embeddings.weight"][input_ids]
         + w[e + "token_type_embeddings.weight"][token_type_ids]
         + w[e + "position_embeddings.weight"][pos][None])
    x = layer_norm(x, w[e + "LayerNorm.weight"], w[e + "LayerNorm.bias"], eps)

    # get_extended_attention_mask: (1 - mask) * finfo(dtype).min.
    mask = attention_mask.double()
    extended = (1.0 - mask[:, None, None, :]) * torch.finfo(torch.float64).min
    # The uniform distribution over each row's real tokens.
    u = (mask / mask.sum(-1, keepdim=True))[:, None, None, :]
    u = u.expand(b_size, n_heads, t_len, t_len)

    def heads(t):  # transpose_for_scores
        return t.view(b_size, t_len, n_heads, d_head).permute(0, 2, 1, 3)

    attentions = []
    for i in range(c["num_hidden_layers"]):
        p = "bert.encoder.layer.%d." % i
        q = heads(linear(x, w, p + "attention.self.query"))
        k = heads(linear(x, w, p + "attention.self.key"))
        v = heads(linear(x, w, p + "attention.self.value"))
        scores = q @ k.transpose(-1, -2)
        scores = scores / math.sqrt(d_head)
        scores = scores + extended
        probs = torch.softmax(scores, dim=-1)
        m = head_mask[:, i, :].double()[:, :, None, None]  # [B, H, 1, 1]
        zero = probs * m
        unif = probs * m + (1.0 - m) * u
        sel = uniform_rows.double()[:, None, None, None]
        probs = sel * unif + (1.0 - sel) * zero
        attentions.append(probs)
        ctx = (probs @ v).permute(0, 2, 1, 3).reshape(b_size, t_len, -1)
        a = linear(ctx, w, p + "attention.output.dense")
        a = layer_norm(a + x, w[p + "attention.output.LayerNorm.weight"],
                       w[p + "attention.output.LayerNorm.bias"], eps)
        h = gelu(linear(a, w, p + "intermediate.dense"))
        h = linear(h, w, p + "output.dense")
        x = layer_norm(h + a, w[p + "output.LayerNorm.weight"],
                       w[p + "output.LayerNorm.bias"], eps)
    return x, attentions


# ------------------------------------------------------------------- inputs

def make_inputs(gen):
    """Four sentence pairs of different lengths, padded to the longest."""
    lengths = [(5, 4), (4, 2), (2, 2), (1, 1)]  # word pieces of (a, b)
    rows = []
    for la, lb in lengths:
        a = torch.randint(5, CONFIG["vocab_size"], (la,), generator=gen).tolist()
        b = torch.randint(5, CONFIG["vocab_size"], (lb,), generator=gen).tolist()
        ids = [2] + a + [3] + b + [3]
        types = [0] * (la + 2) + [1] * (lb + 1)
        rows.append((ids, types))
    t_len = max(len(r[0]) for r in rows)
    input_ids = [r[0] + [0] * (t_len - len(r[0])) for r in rows]
    token_type_ids = [r[1] + [0] * (t_len - len(r[1])) for r in rows]
    attention_mask = [[1] * len(r[0]) + [0] * (t_len - len(r[0])) for r in rows]
    return input_ids, token_type_ids, attention_mask


def make_cases(b_size):
    n_layers, n_heads = CONFIG["num_hidden_layers"], CONFIG["num_attention_heads"]

    def same(mask):
        return [mask] * b_size

    ones = [[1.0] * n_heads for _ in range(n_layers)]
    ablate = [[1.0, 0.0, 1.0, 1.0], [0.0, 1.0, 1.0, 0.0], [1.0, 1.0, 0.0, 1.0]]
    frac = [[1.0, 0.3, 1.0, 0.7], [0.7, 1.0, 0.0, 1.0], [0.3, 0.3, 1.0, 1.0]]
    upper = [[1.0] * n_heads, [1.0, 1.0, 0.0, 0.0], [0.5, 1.0, 1.0, 0.0]]
    return [
        ("none", same(ones), [0] * b_size),
        ("zero", same(ablate), [0] * b_size),
        ("uniform", same(ablate), [1] * b_size),
        ("fractional_zero", same(frac), [0] * b_size),
        ("fractional_uniform", same(frac), [1] * b_size),
        # Different masks and modes per row in one batch.
        ("per_row", [ones, ablate, frac, upper], [0, 1, 1, 0]),
    ]


def rounded(t):
    """Nested lists with 9 significant digits (well below the tolerances)."""
    if t.dim() == 0:
        return float("%.9g" % t.item())
    return [rounded(s) for s in t]


def main():
    gen = torch.Generator().manual_seed(20240517)
    weights = make_weights(gen)
    os.makedirs(MODEL_DIR, exist_ok=True)
    with open(os.path.join(MODEL_DIR, "config.json"), "w") as f:
        json.dump(CONFIG, f, indent=2)
        f.write("\n")
    write_safetensors(weights, os.path.join(MODEL_DIR, "model.safetensors"))
    with open(os.path.join(MODEL_DIR, "vocab.txt"), "w") as f:
        f.write("\n".join(vocab_tokens()) + "\n")
    with open(os.path.join(MODEL_DIR, "tokenizer_config.json"), "w") as f:
        json.dump({"do_lower_case": True, "model_max_length": 64,
                   "tokenizer_class": "BertTokenizer"}, f, indent=2)
        f.write("\n")

    input_ids, token_type_ids, attention_mask = make_inputs(gen)
    ids = torch.tensor(input_ids)
    types = torch.tensor(token_type_ids)
    mask = torch.tensor(attention_mask)
    cases = []
    for name, head_mask, uniform_rows in make_cases(len(input_ids)):
        logits, attentions = reference_forward(
            weights, ids, types, mask, torch.tensor(head_mask),
            torch.tensor(uniform_rows))
        cases.append({
            "name": name,
            "head_mask": head_mask,
            "uniform_rows": uniform_rows,
            "logits": rounded(logits),
            "attentions": [rounded(a) for a in attentions],
        })
    golden = {
        "generator": "tests/golden/make_golden.py",
        "model_dir": "tests/golden/tiny-bert-cls",
        "input_ids": input_ids,
        "token_type_ids": token_type_ids,
        "attention_mask": attention_mask,
        "cases": cases,
    }
    with open(GOLDEN, "w") as f:
        json.dump(golden, f, separators=(",", ":"))
        f.write("\n")
    print("wrote", MODEL_DIR, "and", GOLDEN)
    for c in cases:
        print(c["name"], c["logits"])


if __name__ == "__main__":
    main()
