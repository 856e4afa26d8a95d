"""The loop a researcher writes instead of calling the service: Hugging
Face's own BertForSequenceClassification (transformers, pinned in
tests/python/requirements-hf.txt) loaded with from_pretrained from the
checkpoint directory, one forward pass per (mask, batch) with `head_mask`,
batches of 32 in file order, each padded to its own longest row. The
bench's anchor (issue 15): the engine's sweep rate is reported against this.

Tokenization is HF's too (AutoTokenizer: BertTokenizerFast from the
directory's vocab.txt and tokenizer_config.json, pairs truncated longest
first to max_position_embeddings) and runs once, before the clock starts,
as a researcher's `tokenizer(...)` call would.

Runs in the test venv (scripts/make-test-venv.sh; make bench makes it):
  build/test-venv/bin/python bench/pytorch_loop.py --model DIR --data TSV
         [--examples N] [--masks M] [--batch 32] [--threads auto|N]
         [--dtype float32|bfloat16] [--device cpu|cuda] [--tf32]
         [--json_out PATH]
Masks: the baseline plus M single-head masks at an even stride over all
L*H heads (bench/core_bench.cc's choice, so the two runs score the same
masks); --masks 0 takes every head.
"""
import argparse
import json
import os
import sys
import time

import torch
import transformers


def load_model(model_dir):
    """HF's model and tokenizer as a researcher loads them (the attention
    implementation HF picks itself: eager here, and eager whenever a
    head_mask is given)."""
    model = transformers.AutoModelForSequenceClassification.from_pretrained(model_dir)
    tokenizer = transformers.AutoTokenizer.from_pretrained(model_dir)
    return model.eval(), tokenizer, model.config


def encode(tokenizer, config, rows):
    """(input ids, token types, label) per row: [CLS] a [SEP] b [SEP],
    truncated longest first to max_position_embeddings."""
    names = [config.id2label[i] for i in range(len(config.id2label))]
    out = []
    for a, b, label in rows:
        enc = tokenizer(a, b or None, truncation="longest_first",
                        max_length=config.max_position_embeddings)
        y = names.index(label) if label in names else int(label)
        out.append((enc["input_ids"], enc["token_type_ids"], y))
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
    layers, heads = c.num_hidden_layers, c.num_attention_heads
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


def sweep(model, data, masks, device="cpu"):
    """Correct counts per mask. On CUDA the batches and masks go to the
    device in each step, and the count comes back per batch, as a loop
    that reads its results does."""
    correct = []
    with torch.inference_mode():
        for _, m in masks:
            n = 0
            m = m.to(device) if m is not None else None
            for ids, types, mask, labels in data:
                logits = model(input_ids=ids.to(device),
                               token_type_ids=types.to(device),
                               attention_mask=mask.to(device),
                               head_mask=m).logits
                n += int((logits.argmax(-1).cpu() == labels).sum())
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
    p.add_argument("--device", default="cpu",
                   help="cpu or cuda[:N]: model.to(device), as a researcher "
                   "with a GPU writes it")
    p.add_argument("--tf32", action="store_true",
                   help="torch.backends.cuda.matmul.allow_tf32 = True")
    p.add_argument("--json_out", default="")
    a = p.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = a.tf32
    model, tokenizer, c = load_model(a.model)
    model = model.to(getattr(torch, a.dtype)).to(a.device)
    rows = []
    with open(a.data, encoding="utf-8") as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) >= 3:
                rows.append((parts[0], parts[1], parts[2]))
            if len(rows) == a.examples:
                break
    examples = encode(tokenizer, c, rows)
    data = batches(examples, a.batch)
    masks = head_masks(c, a.masks)
    # The researcher's best thread count: each candidate on the baseline
    # pass over the first batches (after one untimed warm-up pass).
    probe = {}
    candidates = ([1, os.cpu_count()] if a.threads == "auto"
                  else [int(a.threads)])
    for n in sorted(set(candidates)):
        torch.set_num_threads(n)
        sweep(model, data[:2], masks[:1], a.device)
        t0 = time.perf_counter()
        sweep(model, data[:2], masks[:2], a.device)
        probe[n] = time.perf_counter() - t0
    threads = min(probe, key=probe.get)
    torch.set_num_threads(threads)
    t0 = time.perf_counter()
    correct = sweep(model, data, masks, a.device)
    seconds = time.perf_counter() - t0
    pairs = len(examples) * len(masks)
    tokens = sum(len(e[0]) for e in examples)
    result = {"examples": len(examples), "masks": len(masks) - 1,
              "batch": a.batch, "threads": threads,
              "probe_seconds": {str(k): v for k, v in probe.items()},
              "mean_tokens": tokens / max(1, len(examples)),
              "seconds": seconds, "rate": pairs / seconds,
              "dtype": a.dtype, "device": a.device, "tf32": a.tf32,
              "correct": correct, "mask_ids": [m[0] for m in masks],
              "torch": torch.__version__,
              "transformers": transformers.__version__,
              "attn_implementation": c._attn_implementation}
    print("pytorch loop: %d examples x %d masks in %.1f s = %.0f "
          "(mask x ex)/s, %d threads, baseline accuracy %.3f" % (
              len(examples), len(masks), seconds, result["rate"], threads,
              correct[0] / max(1, len(examples))), file=sys.stderr)
    if a.json_out:
        with open(a.json_out, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
