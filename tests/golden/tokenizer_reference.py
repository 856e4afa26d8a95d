# Independent reference for server/core/tokenizer: a port of HF's
# BertTokenizer (transformers src/transformers/models/bert/tokenization_bert.py
# and PreTrainedTokenizer.tokenize in tokenization_utils.py), with its
# tokenizer_config.json settings: do_lower_case, strip_accents (None follows
# do_lower_case), tokenize_chinese_chars, never_split and special tokens
# written in the text.
#
# Control characters: this ports HF's _is_control, which drops every
# category C* (Cc, Cf, Cs, Co, Cn) except \t \n \r. google-research/bert's
# tokenization.py drops only Cc and Cf (so it keeps private-use and
# unassigned code points); that is the one place the two differ here.
#
# Where this port departs from HF, and why:
# - HF's tokenize() lower-cases the whole text one character at a time
#   (outside special tokens) before BasicTokenizer, and BertTokenizerFast
#   lower-cases code point by code point too; this port lower-cases each
#   whitespace token one character at a time, which is the same. (str.lower()
#   on the whole token, as google-research/bert and HF's BasicTokenizer on
#   its own do, differs for a final capital sigma: final form U+03C2 instead
#   of U+03C3.) never_split entries are therefore compared with the
#   lower-cased token when do_lower_case, which is what HF's pre-lowering
#   amounts to.
# - Special tokens are matched case-sensitively in the raw text, leftmost
#   first, then longest (HF's Trie.split), with AddedToken's defaults
#   lstrip = rstrip = single_word = False.
# - Newer HF versions NFC-normalize the text in BasicTokenizer; the
#   tokenizers crate (BertTokenizerFast) does not, nor does this port.
#
# Usage:
#   python3 tokenizer_reference.py < lines-of-json-strings   (basic words)
#   python3 tokenizer_reference.py --golden FIXTURE_DIR OUT.json
#       writes the settings cases below with their tokens and ids.
#   python3 tokenizer_reference.py --check-squad FIXTURE_DIR
#       checks this port against squad-questions-uncased.jsonl.
import json
import os
import sys
import unicodedata

DEFAULT_SPECIAL_TOKENS = ["[UNK]", "[SEP]", "[PAD]", "[CLS]", "[MASK]"]


def _is_whitespace(c):
    if c in " \t\n\r": return True
    return unicodedata.category(c) == "Zs"
def _is_control(c):  # HF's, not Google's (see above)
    if c in "\t\n\r": return False
    return unicodedata.category(c).startswith("C")
def _is_punctuation(c):
    cp = ord(c)
    if (33 <= cp <= 47) or (58 <= cp <= 64) or (91 <= cp <= 96) or (123 <= cp <= 126): return True
    return unicodedata.category(c).startswith("P")
def _is_chinese_char(cp):
    return ((0x4E00 <= cp <= 0x9FFF) or (0x3400 <= cp <= 0x4DBF) or (0x20000 <= cp <= 0x2A6DF) or
            (0x2A700 <= cp <= 0x2B73F) or (0x2B740 <= cp <= 0x2B81F) or (0x2B820 <= cp <= 0x2CEAF) or
            (0xF900 <= cp <= 0xFAFF) or (0x2F800 <= cp <= 0x2FA1F))
def whitespace_tokenize(t):
    t = t.strip()
    return t.split() if t else []
def _strip_accents(tok):
    return "".join(c for c in unicodedata.normalize("NFD", tok) if unicodedata.category(c) != "Mn")
def _split_on_punc(tok):
    words = [[]]; start_new = True
    for c in tok:
        if _is_punctuation(c):
            words.append([c]); start_new = True
        else:
            if start_new: words.append([])
            start_new = False
            words[-1].append(c)
    return ["".join(w) for w in words if w]


def basic(text, lower=True, strip_accents=None, chinese=True, never_split=()):
    """HF's BasicTokenizer.tokenize: words, and whether each is never_split."""
    never_split = set(never_split)
    out = []
    for c in text:
        cp = ord(c)
        if cp == 0 or cp == 0xFFFD or _is_control(c): continue
        out.append(" " if _is_whitespace(c) else c)
    text = "".join(out)
    if chinese:
        out = []
        for c in text:
            if _is_chinese_char(ord(c)): out += [" ", c, " "]
            else: out.append(c)
        text = "".join(out)
    split = []
    for tok in whitespace_tokenize(text):
        if lower:
            tok = "".join(c.lower() for c in tok)  # HF's, not str.lower()
        if tok in never_split:
            split.append((tok, True))
            continue
        if strip_accents if strip_accents is not None else lower:
            tok = _strip_accents(tok)
        split += [(w, False) for w in _split_on_punc(tok)]
    # HF re-splits " ".join(split) on whitespace; a word can only hold
    # whitespace that str.split() knows and _is_whitespace does not (U+2028).
    return [(w, kept) for word, kept in split for w in whitespace_tokenize(word)]


def wordpiece(tokens, vocab, maxc=100):
    out = []
    for token in tokens:
        chars = list(token)
        if len(chars) > maxc: out.append("[UNK]"); continue
        bad = False; start = 0; subs = []
        while start < len(chars):
            end = len(chars); cur = None
            while start < end:
                s = "".join(chars[start:end])
                if start > 0: s = "##" + s
                if s in vocab: cur = s; break
                end -= 1
            if cur is None: bad = True; break
            subs.append(cur); start = end
        out += ["[UNK]"] if bad else subs
    return out


def split_on_special(text, special_tokens):
    """HF's Trie.split: [(chunk, is_special)], leftmost then longest match."""
    specials = sorted({s for s in special_tokens if s}, key=len, reverse=True)
    out = []; start = 0; i = 0
    while i < len(text):
        match = next((s for s in specials if text.startswith(s, i)), None)
        if match is None:
            i += 1; continue
        if i > start: out.append((text[start:i], False))
        out.append((match, True))
        i += len(match); start = i
    if start < len(text): out.append((text[start:], False))
    return out


def tokenize(text, vocab, do_lower_case=True, strip_accents=None,
             tokenize_chinese_chars=True, never_split=(),
             special_tokens=DEFAULT_SPECIAL_TOKENS):
    """BertTokenizer.tokenize + convert_tokens_to_ids: (tokens, ids)."""
    tokens = []
    for chunk, is_special in split_on_special(text, special_tokens):
        if is_special:
            tokens.append(chunk); continue
        for word, kept in basic(chunk, do_lower_case, strip_accents,
                                tokenize_chinese_chars, never_split):
            tokens += [word] if kept else wordpiece([word], vocab)
    return tokens, [vocab.get(t, vocab["[UNK]"]) for t in tokens]


def load_vocab(path):
    with open(path, encoding="utf-8") as f:
        return {line.rstrip("\n"): i for i, line in enumerate(f)}


UNCASED = "bert-base-uncased-vocab.txt"
CHINESE = "bert-base-chinese-vocab.txt"
# A vocabulary with accented and cased entries, which the uncased fixture
# lacks (it holds no accented letters at all); cases with it need no
# fixture and are written with their vocabulary.
TINY = "tiny"
TINY_VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "café", "cafe",
              "Café", "caf", "##é", "##e", "##\u0301", "\u0301", "déjà", "deja",
              "Déjà", "vu", ",", "naïve", "naive", "résumé", "resume", "RÉSUMÉ",
              "Resume", "i\u0307stanbul", "istanbul", "İstanbul", "[", "]", "e1",
              "E1", "lol", "LOL", "hello", "Hello", "x"]
# (vocab, options, text): each case shows one setting; tokenizer_settings_test
# checks the C++ tokenizer gives the same tokens and ids.
CASES = [
    (TINY, {}, "Café Déjà vu, naïve RÉSUMÉ"),
    (TINY, {"strip_accents": False}, "Café Déjà vu, naïve RÉSUMÉ"),
    (TINY, {"strip_accents": None}, "Café Déjà vu, naïve RÉSUMÉ"),
    (TINY, {"strip_accents": True}, "Café Déjà vu, naïve RÉSUMÉ"),
    (TINY, {"strip_accents": False}, "cafe\u0301 İstanbul cafe\u0301x"),
    (TINY, {"do_lower_case": False}, "Café Déjà vu, naïve RÉSUMÉ İstanbul"),
    (TINY, {"do_lower_case": False, "strip_accents": True}, "Café Déjà vu, naïve RÉSUMÉ"),
    (TINY, {"do_lower_case": False, "strip_accents": False}, "Café cafe\u0301"),
    (TINY, {"never_split": ["lol", "[e1]"]}, "LOL lol [E1] [e1]"),
    (TINY, {"never_split": ["LOL", "[E1]"], "do_lower_case": False}, "LOL lol [E1] [e1]"),
    (TINY, {"never_split": ["[E1]"]}, "[E1]"),  # lower-cased first: no match
    (TINY, {"never_split": ["café"]}, "Café café cafe\u0301"),
    (UNCASED, {}, "Café Déjà vu, naïve RÉSUMÉ"),
    (UNCASED, {"strip_accents": False}, "Café Déjà vu, naïve RÉSUMÉ"),
    (UNCASED, {"do_lower_case": False, "strip_accents": True}, "Café Déjà vu"),
    (CHINESE, {}, "我爱北京abc天安门"),
    (CHINESE, {"tokenize_chinese_chars": False}, "我爱北京abc天安门"),
    (UNCASED, {"tokenize_chinese_chars": False}, "hello 中文 world"),
    (UNCASED, {"never_split": ["lol", "[e1]", "c++"]}, "LOL that's funny lol c++ [E1] [e1]x"),
    (UNCASED, {"never_split": ["qqzzyy"]}, "qqzzyy zz"),
    (UNCASED, {}, "a[MASK]b [CLS]Hello[SEP] world [PAD][UNK] [mask] [MASK"),
    (UNCASED, {}, "The capital of France is [MASK]."),
    (UNCASED, {"do_lower_case": False}, "The capital of France is [MASK]."),
    (UNCASED, {"special_tokens": DEFAULT_SPECIAL_TOKENS + ["[E1]", "[E1]x", "<ent>"]},
     "[E1]Paris[/E1] and [E1]xy <ent> [e1]"),
    (UNCASED, {"special_tokens": ["<s>", "</s>"]}, "<s>Hello [MASK]</s>"),
    (UNCASED, {"special_tokens": []}, "a[MASK]b"),
    (UNCASED, {}, "ctrl\x01chars\x7f private\ue000use unassigned\u0378x zero\u200bwidth"),
]


def golden(fixture_dir):
    vocabs = {TINY: {t: i for i, t in enumerate(TINY_VOCAB)}}
    out = []
    for vocab_name, options, text in CASES:
        if vocab_name not in vocabs:
            vocabs[vocab_name] = load_vocab(os.path.join(fixture_dir, vocab_name))
        tokens, ids = tokenize(text, vocabs[vocab_name], **options)
        case = {"vocab": vocab_name, "options": options, "text": text,
                "tokens": tokens, "ids": ids}
        if vocab_name == TINY:
            case["vocab_tokens"] = TINY_VOCAB
        out.append(case)
    return out


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--golden":
        with open(sys.argv[3], "w", encoding="utf-8") as f:
            for case in golden(sys.argv[2]):
                f.write(json.dumps(case, ensure_ascii=False) + "\n")
    elif len(sys.argv) == 3 and sys.argv[1] == "--check-squad":
        vocab = load_vocab(os.path.join(sys.argv[2], UNCASED))
        bad = 0; n = 0
        with open(os.path.join(sys.argv[2], "squad-questions-uncased.jsonl"), encoding="utf-8") as f:
            for line in f:
                c = json.loads(line); n += 1
                if tokenize(c["text"], vocab) != (c["tokens"], c["ids"]):
                    bad += 1; print("mismatch:", c["text"])
        print(f"{n - bad}/{n} match")
        sys.exit(1 if bad else 0)
    else:
        for line in sys.stdin:
            print(json.dumps([w for w, _ in basic(json.loads(line))], ensure_ascii=False))
