# Faithful port of google-research/bert tokenization.py (BasicTokenizer,
# WordpieceTokenizer), used as an independent reference.
import unicodedata, sys, json

def _is_whitespace(c):
    if c in " \t\n\r": return True
    return unicodedata.category(c) == "Zs"
def _is_control(c):
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

def basic(text, lower=True):
    out = []
    for c in text:
        cp = ord(c)
        if cp == 0 or cp == 0xFFFD or _is_control(c): continue
        out.append(" " if _is_whitespace(c) else c)
    text = "".join(out)
    out = []
    for c in text:
        if _is_chinese_char(ord(c)): out += [" ", c, " "]
        else: out.append(c)
    text = "".join(out)
    split = []
    for tok in whitespace_tokenize(text):
        if lower:
            tok = tok.lower()
            tok = "".join(c for c in unicodedata.normalize("NFD", tok) if unicodedata.category(c) != "Mn")
        words = [[]]; start_new = True
        for c in tok:
            if _is_punctuation(c):
                words.append([c]); start_new = True
            else:
                if start_new: words.append([])
                start_new = False
                words[-1].append(c)
        split += ["".join(w) for w in words if w]
    return whitespace_tokenize(" ".join(split))

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

if __name__ == "__main__":
    for line in sys.stdin:
        print(json.dumps(basic(json.loads(line)), ensure_ascii=False))
