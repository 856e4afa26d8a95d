#!/usr/bin/env python3
"""Makes the XLM-RoBERTa SentencePiece fixtures and their goldens.

Run with the test venv's python (HF transformers 4.46.3, tokenizers 0.20.3,
sentencepiece 0.2.0):

  build/test-venv/bin/python tests/golden/make_sentencepiece_golden.py

Trains two small SentencePiece models from the fixed corpus below (BPE, as
the brief's file name says, and unigram, which is what xlm-roberta-base's
`sentencepiece.bpe.model` really is) into tests/golden/sentencepiece-<type>/,
then writes golden.jsonl beside each: for every text and pair, the ids of
HF's slow XLMRobertaTokenizer (which runs sentencepiece itself) and of the
fast XLMRobertaTokenizerFast(from_slow=True), the fast one's offsets as
UTF-8 byte spans, and whether the two agree. The C++ class
(server/core/tokenizer/sentencepiece_tokenizer.h) must match the slow ids.
"""
import io
import json
import os
import sys

import sentencepiece as spm
from transformers import XLMRobertaTokenizer, XLMRobertaTokenizerFast

HERE = os.path.dirname(os.path.abspath(__file__))

CORPUS = """\
The quick brown fox jumps over the lazy dog.
Hello world, hello again.
Attention heads in BERT learn syntax, coreference and positional patterns.
We mask one head at a time and measure the drop in accuracy.
Researchers fine-tune multilingual encoders on classification tasks.
She said: "It's 3:45 pm, isn't it?" and left (quietly) at 16:00.
Prices rose 12.5% in 2023; the index closed at 4,321.09 points.
Email me at someone@example.com or visit https://example.org/path?q=1.
Café, naïve, résumé, façade, coöperate, jalapeño, über, Ångström.
Le cœur a ses raisons que la raison ne connaît point.
¿Dónde está la biblioteca? ¡Está aquí, señor!
Die Straße ist schön, und die Bäume blühen im Frühling.
Ça va très bien, merci beaucoup. Où est la gare?
São Paulo é a maior cidade do Brasil, não é?
Zażółć gęślą jaźń. Příliš žluťoučký kůň úpěl ďábelské ódy.
Привет, как дела? Сегодня хорошая погода.
Москва — столица России. Я люблю читать книги.
Внимание модели распределяется по токенам предложения.
Καλημέρα, τι κάνεις; Η γλώσσα μας είναι όμορφη.
Αθήνα είναι η πρωτεύουσα της Ελλάδας.
مرحبا بالعالم. كيف حالك اليوم؟
اللغة العربية جميلة جدا، والكتابة من اليمين إلى اليسار.
你好，世界！今天天气很好。
我们研究注意力头的作用和语言模型的结构。
北京是中国的首都，上海是最大的城市。
こんにちは、世界。今日はいい天気ですね。
東京は日本の首都です。ひらがなとカタカナを使います。
注意機構の頭を一つずつ消して精度を測ります。
안녕하세요, 만나서 반갑습니다.
0 1 2 3 4 5 6 7 8 9 10 100 1000 2024 3.14159 42 007 1e-5
One, two, three; four: five! six? seven... eight -- nine / ten.
[brackets] {braces} <angles> 'quotes' "double" `back` #hash $dollar
Emoji time 😀 😂 👍 🎉 ❤️ 🚀 and more 😀👍🎉 together.
tabs	between	words	and    runs   of   spaces.
Full-width ＡＢＣ ｄｅｆ １２３ and half-width ｶﾀｶﾅ characters.
Ligatures ﬁ ﬂ and superscripts x² y³ and fractions ½ ¼.
the the the and and and of of of to to to in in in is is is
running jumped walking talked heads masked pruned attention attended
tokenization tokenizer tokens tokenize tokenized retokenize detokenize
international internationalization multilingual multilinguality
un deux trois quatre cinq six sept huit neuf dix
один два три четыре пять шесть семь восемь девять десять
ένα δύο τρία τέσσερα πέντε έξι επτά οκτώ εννέα δέκα
واحد اثنان ثلاثة أربعة خمسة ستة سبعة ثمانية تسعة عشرة
一 二 三 四 五 六 七 八 九 十 百 千 万
"""

# Texts of the goldens; pairs are consecutive texts.
TEXTS = [
    "Hello world",
    "The quick brown fox jumps over the lazy dog.",
    "Café naïve résumé",
    "Cafe\u0301 with a combining acute",
    "Привет, мир!",
    "Καλημέρα κόσμε",
    "مرحبا بالعالم",
    "你好，世界！",
    "こんにちは、世界。",
    "ＡＢＣ full-width １２３",
    "ﬁ ligature and x²",
    "ｶﾀｶﾅ half-width",
    "  leading spaces",
    "trailing spaces   ",
    "multiple    spaces   inside",
    "line\nbreak and\ttab",
    "\n\nnewlines first",
    " ",
    "",
    "a<mask>b",
    "a <mask> b",
    "a  <mask>  b",
    "<mask>",
    " <mask>",
    "<s>inside</s>",
    "x <s> y </s> z",
    "<pad><unk>",
    "before<unk>after",
    "not <special> and <masks>",
    "12345 3.14159 2024-01-01",
    "Emoji 😀👍 🎉!",
    "☃ snowman ⛄ unknown ∰",
    "ไทย ภาษา",
    "Ångström Zażółć jaźń",
    "Straße und Bäume",
    "注意力头",
    "mixed English и русский και ελληνικά",
    "punctuation!!! ??? ... ---",
    "email someone@example.com",
    "tab\there",
]
PAIRS = [
    ("Hello world", "Привет, мир!"),
    ("a<mask>b", "你好"),
    ("  spaces  ", "tab\there"),
    ("Café", "ＡＢＣ"),
    ("", "empty first"),
]


def byte_span(text, start, end):
    """Fast offsets are code point spans; the C++ class gives bytes."""
    return [len(text[:start].encode()), len(text[:end].encode())]


def sp_tokenize(slow, text):
    """(piece, byte_start, byte_end) of `text`: HF's slow tokenize (its trie
    split on special tokens, `<mask>`'s lstrip of the text before it, each
    other segment through sentencepiece) replayed with python
    sentencepiece's immutable_proto, whose begin/end are bytes of the
    original segment. A special's span includes the whitespace it strips."""
    segments, pos = [], 0
    for seg in slow.tokens_trie.split(text):
        size = len(seg.encode())
        segments.append({"text": seg, "start": pos, "end": pos + size})
        pos += size
    for i, seg in enumerate(segments):
        special = slow.added_tokens_encoder.get(seg["text"])
        seg["special"] = special is not None
        if i > 0 and seg["special"] and \
                slow._added_tokens_decoder[special].lstrip:
            left = segments[i - 1]
            left["text"] = left["text"].rstrip()
            left["end"] = seg["start"] = left["start"] + len(
                left["text"].encode())
    out = []
    for seg in segments:
        if seg["special"]:
            out.append((seg["text"], seg["start"], seg["end"]))
            continue
        proto = slow.sp_model.encode(seg["text"], out_type="immutable_proto")
        for p in proto.pieces:
            span = byte_span(seg["text"], p.begin, p.end)
            out.append((p.piece, seg["start"] + span[0], seg["start"] + span[1]))
    return out


def row_agree(slow, fast, text):
    return slow(text)["input_ids"] == fast(text)["input_ids"]


def fast_spans(fast, text):
    enc = fast(text, add_special_tokens=False, return_offsets_mapping=True)
    return [byte_span(text, *o) for o in enc["offset_mapping"]]


def train(model_type, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    # From an iterator into memory: a file input would put its (temporary)
    # path into the model's trainer_spec and change the bytes every run.
    model = io.BytesIO()
    spm.set_random_generator_seed(1)
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(CORPUS.splitlines()), model_writer=model,
        model_type=model_type, vocab_size=1000, character_coverage=1.0,
        num_threads=1, input_sentence_size=0, shuffle_input_sentence=False,
        hard_vocab_limit=False, minloglevel=2)
    model = model.getvalue()
    path = os.path.join(out_dir, "sentencepiece.bpe.model")
    with open(path, "wb") as f:
        f.write(model)
    return path


def golden(model_path, out_dir):
    slow = XLMRobertaTokenizer(vocab_file=model_path)
    fast = XLMRobertaTokenizerFast(vocab_file=model_path, from_slow=True)
    assert slow.mask_token_id == len(slow.sp_model) + 1
    lines, disagree, spans, same = [], 0, 0, 0
    cases = [(t, None) for t in TEXTS] + list(PAIRS)
    for a, b in cases:
        row = {"text": a, "text_pair": b}
        if b is None:
            tokens = slow.tokenize(a)
            row["tokenize_ids"] = slow.convert_tokens_to_ids(tokens)
            row["tokenize_pieces"] = tokens
            sp = sp_tokenize(slow, a)
            assert [p for p, _, _ in sp] == tokens, (a, sp, tokens)
            row["sp_offsets"] = [[b, e] for _, b, e in sp]
            if row_agree(slow, fast, a):
                spans += len(sp)
                same += sum(list(x) == y for x, y in zip(
                    row["sp_offsets"], fast_spans(fast, a)))
        row["slow_ids"] = slow(a, b)["input_ids"]
        enc = fast(a, b, return_offsets_mapping=True)
        row["fast_ids"] = enc["input_ids"]
        texts = (a, b)
        seq = enc.sequence_ids()
        row["fast_offsets"] = [
            [0, 0] if s is None else byte_span(texts[s], *o)
            for s, o in zip(seq, enc["offset_mapping"])]
        row["agree"] = row["slow_ids"] == row["fast_ids"]
        if not row["agree"]:
            disagree += 1
            print(f"  fast != slow: {a!r} {b!r}\n    slow {row['slow_ids']}\n"
                  f"    fast {row['fast_ids']}", file=sys.stderr)
        lines.append(json.dumps(row, ensure_ascii=False))
    with open(os.path.join(out_dir, "golden.jsonl"), "w",
              encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    print(f"{out_dir}: {len(cases)} cases, {disagree} fast/slow "
          f"disagreements, sp vocab {len(slow.sp_model)}; sentencepiece's "
          f"spans equal the fast offsets on {same} of {spans} pieces")


def main():
    for model_type in ("bpe", "unigram"):
        out_dir = os.path.join(HERE, f"sentencepiece-{model_type}")
        golden(train(model_type, out_dir), out_dir)


if __name__ == "__main__":
    main()
