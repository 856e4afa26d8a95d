"""Writes the byte-level BPE fixture and its goldens with Hugging Face's own
tokenizers: tests/golden/byte-bpe/{vocab.json,merges.txt,golden.jsonl}.

A small ByteLevelBPETokenizer (the `tokenizers` library) is trained on the
fixed CORPUS below with RoBERTa's special tokens; then every case is
encoded by RobertaTokenizerFast(vocab.json, merges.txt) (the expected ids
and offsets) and by the slow RobertaTokenizer (transformers' Python one).
server/core/tokenizer/byte_level_bpe_test.cc checks the C++ ByteLevelBpe
against golden.jsonl.

One JSON object per line: "text_a", "text_b" (null for a single text),
"add_prefix_space", "ids", "tokens", "sequence_ids" (-1 for specials),
"char_offsets" (HF's, Python str indices, trim_offsets on), "byte_offsets"
(the same converted to UTF-8 byte offsets in the text they point into:
the convention the C++ class uses), and where the slow tokenizer gives
other ids, "slow_ids" and "slow_differs_because".

Run in the test venv (scripts/make-test-venv.sh):
  build/test-venv/bin/python tests/golden/make_byte_bpe_golden.py
"""

import json
import os

import tokenizers
import transformers
from tokenizers import ByteLevelBPETokenizer

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "byte-bpe")
SPECIALS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]

CORPUS = """\
The quick brown fox jumps over the lazy dog. It's what they've said: we'll
see, I'm sure you'd agree they're right. Don't stop; it isn't over!
Numbers: 0 1 2 3 42 123 2024 3.14159 1,000,000 and 99%.
Café, naïve, résumé, façade, jalapeño, Ångström, Zürich, São Paulo.
Привет, мир! Как дела? Москва и Санкт-Петербург — большие города.
Καλημέρα κόσμε. Η Αθήνα είναι η πρωτεύουσα της Ελλάδας.
مرحبا بالعالم. القاهرة مدينة كبيرة.
我爱北京天安门。你好，世界！東京は日本の首都です。ひらがなとカタカナ。
Emoji 😀 🎉 👍🏽 ❤️ and symbols © ® ™ € £ ¥ → ← ✓.
Punctuation... (brackets) [square] {curly} "quotes" 'single' -- dashes --
Whitespace    runs   and\ttabs\tand
newlines

and  double  spaces.   Trailing spaces   
Hello world, hello again: the world is wide and the weather is fine today.
Researchers read attention heads, mask them, and watch the accuracy move.
Bonjour le monde, ça va très bien. Grüße aus München; señor, ¿qué tal?
Здравствуйте, друзья. Спасибо за помощь, до свидания!
Γειά σου κόσμε, ευχαριστώ πολύ. شكرا جزيلا يا صديقي.
今日はいい天気ですね。谢谢你的帮助，再见！
"""

TEXTS = [
    "Hello world",
    "The quick brown fox jumps over the lazy dog.",
    "It's what they've said, we'll see, I'm sure you'd agree they're right.",
    "IT'S CAPS 'S",
    "Don't stop",
    "Café naïve résumé",
    "Cafe\u0301 with a combining acute, n\u0303",
    "Привет, мир!",
    "Καλημέρα κόσμε",
    "مرحبا بالعالم",
    "我爱北京天安门",
    "東京は日本の首都です",
    "Emoji 😀🎉 and 👍🏽",
    "❤️ love",
    "3.14159 and 1,000,000 and 2024",
    "abc123def",
    "   leading spaces",
    "trailing spaces   ",
    "multiple    spaces    between",
    "tabs\tand\ttabs",
    "new\nline\n\ntwo",
    " \n mixed \t whitespace \n",
    "\tindented",
    "\nnewline first",
    "a\u00a0no-break and\u3000ideographic space",
    "vertical\x0btab and\x0cform feed",
    "a<mask>b",
    "a <mask> b",
    "a   <mask>b",
    "<s>",
    "<s>Hello</s>",
    "hello <unk> world <pad>",
    "</s></s>",
    "<mask>",
    "<notspecial> <s",
    "",
    " ",
    "x",
    "(brackets) [square] {curly} \"quotes\"",
    "e-mail: someone@example.com, https://example.org/path?q=1",
    "zzzzzzzzzzzzqqqqqqxxxxx",
    "\u0000\u0001 control",
    "Москва — большие города...",
]

PAIRS = [
    ("Hello world", "How are you?"),
    ("Café", "Привет мир"),
    ("  spaces ", " more  spaces"),
    ("a<mask>b", "<s> c"),
    ("", "only b"),
]


def byte_offsets(text, offsets):
    """HF's character offsets as UTF-8 byte offsets into `text`."""
    starts = [0]
    for ch in text:
        starts.append(starts[-1] + len(ch.encode("utf-8")))
    return [[starts[s], starts[e]] for s, e in offsets]


def train():
    os.makedirs(OUT, exist_ok=True)
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator([CORPUS] * 3, vocab_size=1000, min_frequency=2,
                            special_tokens=SPECIALS, show_progress=False)
    bpe.save_model(OUT)
    return os.path.join(OUT, "vocab.json"), os.path.join(OUT, "merges.txt")


def why_slow_differs(text_a, text_b, add_prefix_space):
    # The slow tokenizer adds the prefix space once to the whole text (and
    # only when it does not start with str.isspace()); the fast one adds it
    # to every piece between special tokens that does not start with ' '.
    texts = [text_a] + ([text_b] if text_b is not None else [])
    if add_prefix_space and any(s in t for t in texts for s in SPECIALS):
        return "prefix space per piece between special tokens (fast)"
    if add_prefix_space and any(t[:1].isspace() and t[:1] != " "
                                for t in texts):
        return "text starting with non-' ' whitespace gets a prefix (fast)"
    return None


def main():
    vocab, merges = train()
    cases = []
    differ = 0
    for add_prefix_space in (False, True):
        fast = transformers.RobertaTokenizerFast(
            vocab, merges, add_prefix_space=add_prefix_space)
        slow = transformers.RobertaTokenizer(
            vocab, merges, add_prefix_space=add_prefix_space)
        inputs = [(t, None) for t in TEXTS] + PAIRS
        for text_a, text_b in inputs:
            args = (text_a,) if text_b is None else (text_a, text_b)
            enc = fast(*args, return_offsets_mapping=True)
            seq = [(-1 if s is None else s) for s in enc.sequence_ids()]
            offs = [list(o) for o in enc["offset_mapping"]]
            boffs = [
                [0, 0] if s < 0 else byte_offsets(
                    text_a if s == 0 else text_b, [o])[0]
                for s, o in zip(seq, offs)
            ]
            case = {
                "text_a": text_a, "text_b": text_b,
                "add_prefix_space": add_prefix_space,
                "ids": enc["input_ids"],
                "tokens": fast.convert_ids_to_tokens(enc["input_ids"]),
                "sequence_ids": seq, "char_offsets": offs,
                "byte_offsets": boffs,
            }
            slow_ids = slow(*args)["input_ids"]
            if slow_ids != enc["input_ids"]:
                reason = why_slow_differs(text_a, text_b, add_prefix_space)
                assert reason, f"unexplained fast/slow difference: {case}"
                case["slow_ids"] = slow_ids
                case["slow_differs_because"] = reason
                differ += 1
            cases.append(case)
    with open(os.path.join(OUT, "golden.jsonl"), "w", encoding="utf-8") as f:
        for case in cases:
            f.write(json.dumps(case, ensure_ascii=False) + "\n")
    print(f"{len(cases)} cases, {differ} where slow ids differ; tokenizers "
          f"{tokenizers.__version__}, transformers {transformers.__version__}")


if __name__ == "__main__":
    main()
