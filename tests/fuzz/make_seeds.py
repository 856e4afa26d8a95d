#!/usr/bin/python3
"""Writes the seed corpora of the fuzz targets into tests/fuzz/corpus/.

Run with Debian's /usr/bin/python3 (torch for the torch.save seeds) from the
repository root: /usr/bin/python3 tests/fuzz/make_seeds.py. Seeds are small
real inputs of each parser (the golden checkpoint's files, torch.save and
safetensors files, datasets, serialized requests made by protoc from text
format). Regression inputs (regression-*) are kept, not rewritten.
"""
import io
import json
import os
import pathlib
import pickle
import struct
import subprocess
import zipfile
from collections import OrderedDict

ROOT = pathlib.Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests/fuzz/corpus"
GOLDEN = ROOT / "tests/golden/tiny-bert-cls"


def put(target, name, data):
    d = CORPUS / target
    d.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    (d / name).write_bytes(data)


def tokenizer_seeds():
    texts = [
        (0x0F, 64, "Hello, world! unaffable [MASK] x"),
        (0x09, 32, "Héllo naïve CAFÉ\tthe second text"),
        (0x1F, 16, "中文分词 lol [E1] 测试\t你好"),
        (0x2B, 8, "a[MASK]b [SEP]\u3000\u200b\x00\x7f tabs\tand\tmore"),
        (0x41, 255, "supercalifragilistic " * 4),
        (0x00, 3, "What was the theme of Super Bowl 50?"),
    ]
    for i, (flags, max_len, text) in enumerate(texts):
        put("tokenizer_fuzz", f"seed-{i}", bytes([flags, max_len]) +
            text.encode())


def vocab_seeds():
    put("vocab_fuzz", "golden-vocab.txt", (GOLDEN / "vocab.txt").read_bytes())
    put("vocab_fuzz", "crlf.txt", "[PAD]\r\n[UNK]\r\n[CLS]\r\n[SEP]\r\n"
        "[MASK]\r\nhello\r\n##lo\r\n")
    put("vocab_fuzz", "no-unk.txt", "[PAD]\n[CLS]\n[SEP]\nhello\n\n")
    put("vocab_fuzz", "dup.txt", "[UNK]\n[CLS]\n[SEP]\na\na\n中\n##文\n")


def config_seeds():
    put("tokenizer_config_fuzz", "golden.json",
        (GOLDEN / "tokenizer_config.json").read_bytes())
    put("tokenizer_config_fuzz", "full.json", json.dumps({
        "do_lower_case": False, "strip_accents": None,
        "tokenize_chinese_chars": False, "never_split": ["lol", "[E1]"],
        "model_max_length": 128, "tokenizer_class": "BertTokenizerFast",
        "additional_special_tokens": ["[E1]", "[E2]"],
        "added_tokens_decoder": {"0": {"content": "[PAD]", "special": True}},
        "mask_token": {"content": "[MASK]", "lstrip": True}}))
    config = json.loads((GOLDEN / "config.json").read_text())
    put("bert_config_fuzz", "golden.json", json.dumps(config))
    tok = dict(config, architectures=["BertForTokenClassification"],
               id2label={"0": "O", "1": "B-PER", "2": "I-PER"},
               label2id={"O": 0, "B-PER": 1, "I-PER": 2})
    put("bert_config_fuzz", "token-classification.json", json.dumps(tok))
    bare = {k: config[k] for k in ("hidden_size", "num_hidden_layers",
                                   "num_attention_heads", "vocab_size")}
    put("bert_config_fuzz", "bare.json", json.dumps(bare))


def safetensors_file(tensors, metadata=None):
    header, data = {}, b""
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + data


def safetensors_seeds():
    f32 = struct.pack("<6f", *range(6))
    put("safetensors_fuzz", "f32.safetensors", safetensors_file(
        {"w": ("F32", [2, 3], f32)}, {"format": "pt"}))
    put("safetensors_fuzz", "mixed.safetensors", safetensors_file({
        "a": ("I64", [2], struct.pack("<2q", 1, -2)),
        "b": ("BF16", [1, 2], b"\x80\x3f\x00\x40"),
        "c": ("BOOL", [0], b""), "d": ("U8", [], b"\x07")}))


def torch_seeds():
    import torch  # only here: the other seeds need no torch
    w = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    dicts = {
        "plain.bin": OrderedDict(w=w, b=torch.tensor([1, 2])),
        "views.bin": {"t": w.t(), "row": w[1], "half": w.half(),
                      "step": 3, "p": torch.nn.Parameter(torch.ones(2))},
    }
    for name, sd in dicts.items():
        buf = io.BytesIO()
        torch.save(sd, buf)
        put("pytorch_bin_fuzz", name, buf.getvalue())
        with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as z:
            pkl = [n for n in z.namelist() if n.endswith("data.pkl")][0]
            put("pickle_fuzz", "torch-" + name.replace(".bin", ".pkl"),
                z.read(pkl))
    objs = [{"a": [1, 2.5, None, True], "b": ("x", b"y", -(2**40))},
            [list(range(300)), {"k": {"n": 1}}, 2**70, "é" * 3]]
    for i, o in enumerate(objs):
        for proto in (2, 4):
            put("pickle_fuzz", f"obj{i}-p{proto}.pkl",
                pickle.dumps(o, protocol=proto))


def dataset_seeds():
    # Byte 0: format (0 auto=tsv, 1 tsv, 2 csv, 3 jsonl), 4: by name,
    # 8: no text_b, 16/32: header yes/no; see common/pair_dataset_fuzz.cc.
    put("pair_dataset_fuzz", "tsv", b"\x01" +
        "a\tb\t1\nhello world\tsecond\t0\n中文\t\t1\n".encode())
    put("pair_dataset_fuzz", "tsv-header", b"\x15" +
        b"sentence1\tsentence2\tlabel\nx\ty\tpos\n")
    put("pair_dataset_fuzz", "csv", b"\x02" +
        b'"quoted, text","with ""quotes""",1\nplain,row,0\n')
    put("pair_dataset_fuzz", "csv-header", b"\x16" +
        b"sentence1,sentence2,label\nq,t,yes\n")
    put("pair_dataset_fuzz", "jsonl", b"\x07" + "\n".join(json.dumps(r)
        for r in [{"sentence1": "a", "sentence2": "b", "label": 1},
                  {"sentence1": "c", "sentence2": "d", "label": "neg"}])
        .encode() + b"\n")
    put("pair_dataset_fuzz", "jsonl-index", b"\x0b" +
        b'["only text", 1]\n["more", 0]\n')


REQUESTS = [  # (type byte, message, text format); see request_validation_fuzz
    (0, "ClassifyRequest", 'inputs { text_a: "hello world" text_b: "x" } '
     'inputs { text_a: "中文" } head_mask { ablate { heads { layer: 1 '
     'head: 2 } } mode: ABLATION_MODE_UNIFORM }'),
    (0, "ClassifyRequest", 'inputs { text_a: "a" } head_mask { dense { '
     'values: [1, 0, 0.5, 1, 1, 1, 1, 1, 1, 1, 1, 1] } }'),
    (1, "GetAttentionRequest", 'input { text_a: "the cat sat" } layers: '
     '[0, 2] heads: [3, 1] head_mask { keep { heads { layer: 0 head: 0 } } }'),
    (2, "SweepAblationRequest", 'examples { input { text_a: "x y" } label: '
     '1 } masks { all_single_heads {} } masks { all_layers {} } masks { '
     'random { fraction: 0.5 repeats: 3 seed: 7 layer_end: 2 } } masks { '
     'keep_only { layer_begin: 1 keep { layer: 1 head: 3 } } } masks { '
     'explicit_mask { id: "m" mask { ablate { heads { layer: 2 head: 0 } '
     '} } } } mode: ABLATION_MODE_ZERO'),
    (3, "TokenizeRequest", 'text_a: "Hello, WORLD!" text_b: "naïve 中"'),
]


def request_seeds():
    for i, (kind, message, text) in enumerate(REQUESTS):
        data = subprocess.run(
            ["protoc", f"--encode=bertology.v1.{message}",
             f"-I{ROOT / 'proto'}", "bertology/v1/bertology.proto"],
            input=text.encode(), capture_output=True, check=True).stdout
        put("request_validation_fuzz", f"seed-{i}-{message}",
            bytes([kind]) + data)


if __name__ == "__main__":
    tokenizer_seeds()
    vocab_seeds()
    config_seeds()
    safetensors_seeds()
    torch_seeds()
    dataset_seeds()
    request_seeds()
    total = sum(f.stat().st_size for f in CORPUS.rglob("*") if f.is_file())
    print(f"{CORPUS}: {total} bytes")
