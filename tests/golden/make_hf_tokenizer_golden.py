"""Writes tests/golden/tokenizer_hf.golden.jsonl with Hugging Face's own
BertTokenizerFast (the tokenizers library), and records where the slow
BertTokenizer (transformers' Python one) tokenizes otherwise.

Same line format as tokenizer_settings.golden.jsonl (which
tokenizer_reference.py, a port, writes): {"vocab", "options", "text",
"tokens", "ids"} plus "vocab_tokens" for the tiny vocabulary,
"source": "BertTokenizerFast <version>", and where the slow tokenizer
differs its "slow_tokens" and "slow_ids" with "engine_follows" ("fast" or
"slow": which of the two the C++ tokenizer matches, and why, in
engine_follows() below). server/core/tokenizer/tokenizer_settings_test.cc checks
the C++ tokenizer against this file; tests/python/test_hf_oracle.py makes
the cases again with the pinned HF and compares with this file.

Options are the ones both HF tokenizers express: do_lower_case,
strip_accents, tokenize_chinese_chars and extra special tokens
("special_tokens" = HF's defaults + additional_special_tokens). (never_split
exists only in the slow one; the port's goldens cover it.)

Run in the test venv (scripts/make-test-venv.sh):
  build/test-venv/bin/python tests/golden/make_hf_tokenizer_golden.py \\
      ../shared/fixtures/tokenizer tests/golden/tokenizer_hf.golden.jsonl
"""

import json
import os
import sys
import tempfile
import unicodedata

import tokenizers
import transformers

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from tokenizer_reference import CHINESE, DEFAULT_SPECIAL_TOKENS, TINY, TINY_VOCAB, UNCASED  # noqa: E402

CHINESE_TEXTS = [
    "我爱北京天安门",
    "中文English混合123",
    "「你好」，世界！今天天气很好。",
    "北京大学的图书馆在哪里？",
    "\U00020000\U0002A6D6 CJK extension B",
    "ＡＢＣ１２３ full width",
    "日本語のテキストとカタカナ",
]
ACCENT_TEXTS = [
    "Café Déjà vu, naïve RÉSUMÉ",
    "Ångström Øresund Straße façade",
    "cafe\u0301 combining acute",
    "İstanbul ıi",
    "ΟΔΥΣΣΕΥΣ and σοφός",
    "Crème brûlée à la mode",
]
CONTROL_TEXTS = [
    "ctrl\x01chars\x7f here",
    "tab\tnew\nline\rcarriage",
    "zero\u200bwidth joiner\u200d",
    "private\ue000use unassigned\u0378x",
    "replacement\ufffdchar and nul\x00byte",
    "no\u00a0break\u3000ideographic space",
]
SPECIAL_TEXTS = [
    "a[MASK]b [CLS]Hello[SEP] world [PAD][UNK] [mask] [MASK",
    "The capital of France is [MASK].",
    "[CLS] already [SEP] written [SEP]",
    "x[MASK][MASK]y",
]

# (vocab, options, texts)
GROUPS = [
    (CHINESE, {}, CHINESE_TEXTS + ACCENT_TEXTS + CONTROL_TEXTS + SPECIAL_TEXTS),
    (CHINESE, {"tokenize_chinese_chars": False}, CHINESE_TEXTS[:3]),
    (UNCASED, {}, CHINESE_TEXTS[:3] + ACCENT_TEXTS + CONTROL_TEXTS + SPECIAL_TEXTS),
    (UNCASED, {"strip_accents": False}, ACCENT_TEXTS[:3]),
    (UNCASED, {"do_lower_case": False}, ACCENT_TEXTS[:2] + SPECIAL_TEXTS[:2]),
    # Extra special tokens from the vocabulary's reserved entries (HF gives
    # tokens that are not in vocab.txt ids past its end, which the model's
    # embeddings would have to be resized for).
    (UNCASED, {"special_tokens": DEFAULT_SPECIAL_TOKENS + ["[unused0]", "[unused1]"]},
     ["[unused0]Paris[unused1] is in [UNUSED0]France [unused0]x"]),
    (TINY, {}, ACCENT_TEXTS[:1] + ["cafe\u0301 İstanbul cafe\u0301x"]),
    (TINY, {"strip_accents": False}, ACCENT_TEXTS[:1] + ["cafe\u0301 İstanbul"]),
    (TINY, {"do_lower_case": False}, ACCENT_TEXTS[:1] + ["İstanbul Hello LOL"]),
    (TINY, {"do_lower_case": False, "strip_accents": True}, ACCENT_TEXTS[:1]),
]


def hf_kwargs(options):
    kw = {
        "do_lower_case": options.get("do_lower_case", True),
        "strip_accents": options.get("strip_accents"),
        "tokenize_chinese_chars": options.get("tokenize_chinese_chars", True),
    }
    if "special_tokens" in options:
        extra = [t for t in options["special_tokens"] if t not in DEFAULT_SPECIAL_TOKENS]
        assert set(DEFAULT_SPECIAL_TOKENS) <= set(options["special_tokens"]), options
        kw["additional_special_tokens"] = extra
    return kw


class Tokenizers:
    """Fast and slow HF tokenizers per (vocab, options)."""

    def __init__(self, fixture_dir):
        self.fixture_dir = fixture_dir
        # The tiny vocabulary as a file, removed with this object.
        self._tmp = tempfile.TemporaryDirectory(prefix="hf-tokenizer-golden-")
        self.tiny_vocab = os.path.join(self._tmp.name, "tiny-vocab.txt")
        with open(self.tiny_vocab, "w", encoding="utf-8") as f:
            f.write("\n".join(TINY_VOCAB) + "\n")
        self.cache = {}

    def vocab_file(self, vocab):
        if vocab == TINY:
            return self.tiny_vocab
        return os.path.join(self.fixture_dir, vocab)

    def get(self, vocab, options):
        key = (vocab, json.dumps(options, sort_keys=True))
        if key not in self.cache:
            path = self.vocab_file(vocab)
            kw = hf_kwargs(options)
            self.cache[key] = (transformers.BertTokenizerFast(vocab_file=path, **kw),
                               transformers.BertTokenizer(vocab_file=path, **kw))
        return self.cache[key]


def engine_follows(text, special_tokens=()):
    """Which HF tokenizer the engine matches where the two differ; the
    differences seen with the pinned versions have three causes:
    - the slow BertTokenizer NFC-normalizes the text first (transformers
      >= 4.3x), the tokenizers crate does not: the engine follows the fast
      one (AutoTokenizer's default);
    - unassigned code points (category Cn): the slow one drops them as
      control characters (Python's unicodedata), the fast one keeps them
      (its tables list no Cn): the engine follows the slow one, whose rule
      (drop every C* but \\t \\n \\r) it implements.
    - a special token written in another case ("[UNUSED0]" for the extra
      special token "[unused0]"): the slow one lower-cases the text around
      special tokens first and so matches it, the fast one matches special
      tokens as written: the engine follows the fast one.
    Anything else is a new difference: fail, so it gets looked at."""
    if unicodedata.normalize("NFC", text) != text:
        return "fast"
    if any(text.lower().count(t) > text.count(t) for t in special_tokens):
        return "fast"
    if any(unicodedata.category(ch) == "Cn" for ch in text):
        return "slow"
    raise ValueError("fast and slow HF tokenizers differ for an unknown reason: %r" % text)


def case(toks, vocab, options, text):
    fast, slow = toks.get(vocab, options)
    tokens = fast.tokenize(text)
    out = {"vocab": vocab, "options": options, "text": text, "tokens": tokens,
           "ids": fast.convert_tokens_to_ids(tokens),
           "source": "BertTokenizerFast (tokenizers %s)" % tokenizers.__version__}
    slow_tokens = slow.tokenize(text)
    if slow_tokens != tokens:
        out["slow_tokens"] = slow_tokens
        out["slow_ids"] = slow.convert_tokens_to_ids(slow_tokens)
        out["engine_follows"] = engine_follows(text, options.get("special_tokens", ()))
    if vocab == TINY:
        out["vocab_tokens"] = TINY_VOCAB
    return out


def cases(fixture_dir):
    toks = Tokenizers(fixture_dir)
    return [case(toks, vocab, options, text)
            for vocab, options, texts in GROUPS for text in texts]


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    out = cases(sys.argv[1])
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        for c in out:
            f.write(json.dumps(c, ensure_ascii=False) + "\n")
    print("wrote %d cases (%d where the slow BertTokenizer differs) with transformers %s"
          % (len(out), sum("slow_tokens" in c for c in out), transformers.__version__))
    for c in out:
        if "slow_tokens" in c:
            print("  slow differs: %r\n    fast %s\n    slow %s"
                  % (c["text"], c["tokens"], c["slow_tokens"]))


if __name__ == "__main__":
    main()
