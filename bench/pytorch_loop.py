"""The loop a researcher writes instead of calling the service: HF's eager
BERT in plain PyTorch, one forward pass per (mask, batch) with `head_mask`,
batches of 32 in file order, each padded to its own longest row. The
bench's anchor (issue 15): the engine's sweep rate is reported against this.

The model classes below are transcribed from HF transformers'
modeling_bert.py (eager attention; BertForSequenceClassification), not
taken from this project; weights come straight from the checkpoint's
model.safetensors. Tokenization (tests/golden/tokenizer_reference.py, the
independent BertTokenizer the tokenizer tests check against) runs once,
before the clock starts, as a researcher's `tokenizer(...)` call would.

Usage: pytorch_loop.py --model DIR --data TSV [--examples N] [--masks M]
         [--batch 32] [--threads auto|N] [--dtype float32|bfloat16]
         [--json_out PATH]
Masks: the baseline plus M single-head masks at an even stride over all
L*H heads (bench/core_bench.cc's choice, so the two runs score the same
masks); --masks 0 takes every head.
"""
import argparse
import json
import math
import os
import struct
import sys
import time

import torch
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests",
                                "golden"))
import tokenizer_reference  # noqa: E402


# ---- HF modeling_bert.py, eager path, inference only -----------------------
class BertEmbeddings(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.word_embeddings = nn.Embedding(c["vocab_size"], c["hidden_size"])
        self.position_embeddings = nn.Embedding(c["max_position_embeddings"],
                                                c["hidden_size"])
        self.token_type_embeddings = nn.Embedding(c["type_vocab_size"],
                                                  c["hidden_size"])
        self.LayerNorm = nn.LayerNorm(c["hidden_size"],
                                      eps=c["layer_norm_eps"])
        self.register_buffer("position_ids", torch.arange(
            c["max_position_embeddings"]).expand((1, -1)), persistent=False)

    def forward(self, input_ids, token_type_ids):
        position_ids = self.position_ids[:, :input_ids.size(1)]
        e = (self.word_embeddings(input_ids) +
             self.token_type_embeddings(token_type_ids) +
             self.position_embeddings(position_ids))
        return self.LayerNorm(e)


class BertSelfAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.num_attention_heads = c["num_attention_heads"]
        self.attention_head_size = c["hidden_size"] // c["num_attention_heads"]
        self.all_head_size = c["hidden_size"]
        self.query = nn.Linear(c["hidden_size"], self.all_head_size)
        self.key = nn.Linear(c["hidden_size"], self.all_head_size)
        self.value = nn.Linear(c["hidden_size"], self.all_head_size)

    def transpose_for_scores(self, x):
        x = x.view(x.size()[:-1] + (self.num_attention_heads,
                                    self.attention_head_size))
        return x.permute(0, 2, 1, 3)

    def forward(self, hidden_states, attention_mask, head_mask):
        q = self.transpose_for_scores(self.query(hidden_states))
        k = self.transpose_for_scores(self.key(hidden_states))
        v = self.transpose_for_scores(self.value(hidden_states))
        scores = torch.matmul(q, k.transpose(-1, -2))
        scores = scores / math.sqrt(self.attention_head_size)
        scores = scores + attention_mask
        probs = nn.functional.softmax(scores, dim=-1)
        if head_mask is not None:
            probs = probs * head_mask
        context = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous()
        return context.view(context.size()[:-2] + (self.all_head_size,))


class BertSelfOutput(nn.Module):
    def __init__(self, c, in_size):
        super().__init__()
        self.dense = nn.Linear(in_size, c["hidden_size"])
        self.LayerNorm = nn.LayerNorm(c["hidden_size"],
                                      eps=c["layer_norm_eps"])

    def forward(self, hidden_states, input_tensor):
        return self.LayerNorm(self.dense(hidden_states) + input_tensor)


class BertAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.self = BertSelfAttention(c)
        self.output = BertSelfOutput(c, c["hidden_size"])

    def forward(self, hidden_states, attention_mask, head_mask):
        return self.output(self.self(hidden_states, attention_mask, head_mask),
                           hidden_states)


class BertIntermediate(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["hidden_size"], c["intermediate_size"])
        self.act = {"gelu": nn.functional.gelu, "relu": nn.functional.relu,
                    "gelu_new": lambda x: nn.functional.gelu(
                        x, approximate="tanh")}[c.get("hidden_act", "gelu")]

    def forward(self, x):
        return self.act(self.dense(x))


class BertLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attention = BertAttention(c)
        self.intermediate = BertIntermediate(c)
        self.output = BertSelfOutput(c, c["intermediate_size"])

    def forward(self, hidden_states, attention_mask, head_mask):
        a = self.attention(hidden_states, attention_mask, head_mask)
        return self.output(self.intermediate(a), a)


class BertEncoder(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.layer = nn.ModuleList(
            [BertLayer(c) for _ in range(c["num_hidden_layers"])])

    def forward(self, hidden_states, attention_mask, head_mask):
        for i, layer in enumerate(self.layer):
            hidden_states = layer(hidden_states, attention_mask,
                                  head_mask[i] if head_mask is not None
                                  else None)
        return hidden_states


class BertPooler(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["hidden_size"], c["hidden_size"])

    def forward(self, hidden_states):
        return torch.tanh(self.dense(hidden_states[:, 0]))


class BertModel(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embeddings = BertEmbeddings(c)
        self.encoder = BertEncoder(c)
        self.pooler = BertPooler(c)

    def forward(self, input_ids, token_type_ids, attention_mask, head_mask):
        # get_extended_attention_mask and get_head_mask, as HF does them
        # (both in the model's dtype, self.dtype there).
        dtype = self.embeddings.word_embeddings.weight.dtype
        ext = attention_mask[:, None, None, :].to(dtype)
        ext = (1.0 - ext) * torch.finfo(dtype).min
        if head_mask is not None:  # [L, H] -> [L, 1, H, 1, 1]
            head_mask = head_mask.unsqueeze(1).unsqueeze(-1).unsqueeze(-1)
            head_mask = head_mask.to(dtype)
        h = self.embeddings(input_ids, token_type_ids)
        return self.pooler(self.encoder(h, ext, head_mask))


class BertForSequenceClassification(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.bert = BertModel(c)
        self.classifier = nn.Linear(c["hidden_size"], c["num_labels"])

    def forward(self, input_ids, token_type_ids, attention_mask, head_mask):
        return self.classifier(self.bert(input_ids, token_type_ids,
                                         attention_mask, head_mask))
# ---- end of HF's classes ---------------------------------------------------


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    dtypes = {"F32": torch.float32, "F16": torch.float16,
              "BF16": torch.bfloat16, "I64": torch.int64}
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        b, e = t["data_offsets"]
        out[name] = torch.frombuffer(bytearray(data[b:e]),
                                     dtype=dtypes[t["dtype"]]).reshape(
                                         t["shape"]).clone()
    return out


def load_model(model_dir):
    with open(os.path.join(model_dir, "config.json")) as f:
        c = json.load(f)
    c.setdefault("layer_norm_eps", 1e-12)
    c.setdefault("type_vocab_size", 2)
    c["num_labels"] = len(c.get("id2label", {})) or c.get("num_labels", 2)
    model = BertForSequenceClassification(c)
    weights = read_safetensors(os.path.join(model_dir, "model.safetensors"))
    state = {k: v for k, v in weights.items()
             if k.startswith(("bert.", "classifier."))}
    missing, _ = model.load_state_dict(state, strict=False)
    missing = [k for k in missing if not k.endswith("position_ids")]
    if missing:
        raise SystemExit("pytorch_loop: %s lacks %s" % (model_dir, missing))
    return model.eval(), c


def encode(model_dir, c, rows):
    """[CLS] a [SEP] b [SEP] ids, token types and labels, truncated longest
    first to max_position_embeddings (BertTokenizer's pair truncation)."""
    vocab = tokenizer_reference.load_vocab(os.path.join(model_dir,
                                                        "vocab.txt"))
    lower = True
    tc = os.path.join(model_dir, "tokenizer_config.json")
    if os.path.exists(tc):
        with open(tc) as f:
            lower = json.load(f).get("do_lower_case", True)
    names = [c["id2label"][str(i)] for i in range(len(c["id2label"]))]
    out = []
    limit = c["max_position_embeddings"]
    for a, b, label in rows:
        ia = tokenizer_reference.tokenize(a, vocab, lower)[1]
        ib = tokenizer_reference.tokenize(b, vocab, lower)[1] if b else None
        budget = limit - (3 if ib is not None else 2)
        while len(ia) + (len(ib) if ib is not None else 0) > budget:
            if ib is not None and len(ib) > len(ia):
                ib.pop()
            else:
                ia.pop()
        ids = [vocab["[CLS]"]] + ia + [vocab["[SEP]"]]
        types = [0] * len(ids)
        if ib is not None:
            ids += ib + [vocab["[SEP]"]]
            types += [1] * (len(ib) + 1)
        y = names.index(label) if label in names else int(label)
        out.append((ids, types, y))
    return out


def batches(examples, size):
    """Batches in file order, each padded to its longest row."""
    out = []
    for s in range(0, len(examples), size):
        chunk = examples[s:s + size]
        t = max(len(e[0]) for e in chunk)
        ids = torch.zeros(len(chunk), t, dtype=torch.long)
        types = torch.zeros(len(chunk), t, dtype=torch.long)
        mask = torch.zeros(len(chunk), t, dtype=torch.long)
        for i, (x, tt, _) in enumerate(chunk):
            ids[i, :len(x)] = torch.tensor(x)
            types[i, :len(x)] = torch.tensor(tt)
            mask[i, :len(x)] = 1
        labels = torch.tensor([e[2] for e in chunk])
        out.append((ids, types, mask, labels))
    return out


def head_masks(c, want):
    """None (baseline), then single heads at core_bench.cc's stride."""
    layers, heads = c["num_hidden_layers"], c["num_attention_heads"]
    total = layers * heads
    stride = max(1, total // want) if want > 0 else 1
    masks = [("baseline", None)]
    i = 0
    while i < total and (want <= 0 or len(masks) - 1 < want):
        m = torch.ones(layers, heads)
        m[i // heads, i % heads] = 0
        masks.append(("L%dH%d" % (i // heads, i % heads), m))
        i += stride
    return masks


def sweep(model, data, masks):
    correct = []
    with torch.inference_mode():
        for _, m in masks:
            n = 0
            for ids, types, mask, labels in data:
                logits = model(ids, types, mask, m)
                n += int((logits.argmax(-1) == labels).sum())
            correct.append(n)
    return correct


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", required=True)
    p.add_argument("--data", required=True)
    p.add_argument("--examples", type=int, default=128)
    p.add_argument("--masks", type=int, default=24)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--threads", default="auto")
    p.add_argument("--dtype", choices=["float32", "bfloat16"],
                   default="float32",
                   help="bfloat16: the researcher's model.to(torch.bfloat16)")
    p.add_argument("--json_out", default="")
    a = p.parse_args()
    model, c = load_model(a.model)
    model = model.to(getattr(torch, a.dtype))
    rows = []
    with open(a.data, encoding="utf-8") as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) >= 3:
                rows.append((parts[0], parts[1], parts[2]))
            if len(rows) == a.examples:
                break
    examples = encode(a.model, c, rows)
    data = batches(examples, a.batch)
    masks = head_masks(c, a.masks)
    # The researcher's best thread count: each candidate on the baseline
    # pass over the first batches (after one untimed warm-up pass).
    probe = {}
    candidates = ([1, os.cpu_count()] if a.threads == "auto"
                  else [int(a.threads)])
    for n in sorted(set(candidates)):
        torch.set_num_threads(n)
        sweep(model, data[:2], masks[:1])
        t0 = time.perf_counter()
        sweep(model, data[:2], masks[:2])
        probe[n] = time.perf_counter() - t0
    threads = min(probe, key=probe.get)
    torch.set_num_threads(threads)
    t0 = time.perf_counter()
    correct = sweep(model, data, masks)
    seconds = time.perf_counter() - t0
    pairs = len(examples) * len(masks)
    tokens = sum(len(e[0]) for e in examples)
    result = {"examples": len(examples), "masks": len(masks) - 1,
              "batch": a.batch, "threads": threads,
              "probe_seconds": {str(k): v for k, v in probe.items()},
              "mean_tokens": tokens / max(1, len(examples)),
              "seconds": seconds, "rate": pairs / seconds,
              "dtype": a.dtype,
              "correct": correct, "mask_ids": [m[0] for m in masks],
              "torch": torch.__version__}
    print("pytorch loop: %d examples x %d masks in %.1f s = %.0f "
          "(mask x ex)/s, %d threads, baseline accuracy %.3f" % (
              len(examples), len(masks), seconds, result["rate"], threads,
              correct[0] / max(1, len(examples))), file=sys.stderr)
    if a.json_out:
        with open(a.json_out, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
