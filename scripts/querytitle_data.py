#!/usr/bin/env python3
"""Synthetic Chinese query-title relevance data, deterministic from a seed.

Mirrors study 1 of ../shared/BRIEF.md: a character-level model grades how
relevant a title is to a search query in 5 grades. The "words" are made up:
each is 2-4 characters drawn from a shared pool of a few hundred CJK
characters, so characters recur across words and only the lexicon (which the
model must learn from data) says where word boundaries are.

Grades are computed from the final strings by `grade()`, never assumed from
how a title was built:
  4  the title holds the whole query, in order and contiguously
  3  every query word is in the title, but split apart or reordered
  2  more than half of the query words are in the title
  1  query characters occur in the title but no whole query word does
  0  no query character occurs in the title
Titles are built to aim at each grade, and a share of them are "shuffled":
the characters of a grade-4 title in random order (the study's example: such
a title scores low, so the model must use word order).

Usage: querytitle_data.py OUT_DIR [--seed N] [--train N] [--dev N] [--test N]
                            [--words]
Writes OUT_DIR/{train,dev,test}.tsv with rows `query<TAB>title<TAB>label`.
--words also writes OUT_DIR/{split}_words.tsv: the same rows in the same
order with query and title split into their words by spaces (the gold
segmentation SegmentWords scores heads against). A title's words are the
units it was built from: lexicon and filler words, and the fragments of
query words in grade-1 titles; a shuffled title has no words left, so each
of its characters is its own word. Tracking words draws nothing from the
random streams, so {train,dev,test}.tsv are byte for byte the same with or
without --words.
Standard library only, so it runs on any Python 3.
"""
import argparse
import os
import random

# CJK Unified Ideographs; a fixed, seed-independent pool so every split and
# every seed shares the same character set.
POOL_START = 0x4E00
POOL_SIZE = 300
LEXICON_SIZE = 120
FILLER_SIZE = 80


def make_lexicon(rng):
    pool = [chr(POOL_START + 7 * i) for i in range(POOL_SIZE)]
    words = set()
    while len(words) < LEXICON_SIZE + FILLER_SIZE:
        n = rng.choice([2, 2, 3, 3, 4])
        words.add("".join(rng.choice(pool) for _ in range(n)))
    words = sorted(words)
    rng.shuffle(words)
    # Query words and filler words are disjoint lists, but share characters.
    return words[:LEXICON_SIZE], words[LEXICON_SIZE:]


def grade(query_words, title):
    query = "".join(query_words)
    if query in title:
        return 4
    present = sum(1 for w in query_words if w in title)
    if present == len(query_words):
        return 3
    if present * 2 > len(query_words):
        return 2
    if any(c in title for c in query):
        return 1
    return 0


def fillers(rng, filler_words, query_chars, k):
    out = []
    while len(out) < k:
        w = rng.choice(filler_words)
        if w not in out and not any(c in query_chars for c in w):
            out.append(w)
    return out


def flatten(parts):
    """The words of a title's parts: a tuple part holds several words."""
    out = []
    for p in parts:
        out.extend(p if isinstance(p, tuple) else [p])
    return out


def interleave(rng, pieces, filler):
    """Puts each piece in `pieces` (in order) between filler words."""
    out = list(filler)
    for p in pieces:
        out.insert(rng.randint(0, len(out)), p)
    return out


def make_title(rng, target, query_words, filler_words):
    qchars = set("".join(query_words))
    n_fill = rng.randint(2, 3)
    fill = fillers(rng, filler_words, qchars, n_fill)
    if target == 4:
        parts = interleave(rng, [tuple(query_words)], fill)
    elif target == 3:
        words = list(query_words)
        if rng.random() < 0.5:
            while words == list(query_words):
                rng.shuffle(words)
            parts = interleave(rng, [tuple(words)], fill)
        else:
            # Words in order, but a filler word between the last two.
            parts = interleave(rng, words[:-1], fill[1:])
            parts.insert(parts.index(words[-2]) + 1, fill[0])
            parts.insert(parts.index(fill[0]) + 1, words[-1])
    elif target == 2:
        k = len(query_words) // 2 + 1
        keep = sorted(rng.sample(range(len(query_words)), k))
        words = [query_words[i] for i in keep]
        if rng.random() < 0.5:
            rng.shuffle(words)
        parts = interleave(rng, words, fill)
    elif target == 1:
        # Pieces of query words, never a whole one.
        frags = []
        for w in rng.sample(query_words, rng.randint(1, len(query_words))):
            i = rng.randrange(len(w) - 1)
            frags.append(w[i : i + rng.randint(1, len(w) - 1)])
        parts = interleave(rng, frags, fill)
    else:
        parts = fill + fillers(rng, filler_words, qchars, 1)
        rng.shuffle(parts)
    words = flatten(parts)
    return "".join(words), words


def make_row(rng, lexicon, filler_words):
    query_words = rng.sample(lexicon, rng.choice([3, 3, 4]))
    r = rng.random()
    if r < 0.12:
        # A shuffled grade-4 title: same characters, order destroyed.
        title, _ = make_title(rng, 4, query_words, filler_words)
        chars = list(title)
        for _ in range(10):
            rng.shuffle(chars)
            if grade(query_words, "".join(chars)) < 4:
                break
        title = "".join(chars)
        title_words = chars  # no words survive the shuffle
    else:
        title, title_words = make_title(rng, rng.randrange(5), query_words,
                                        filler_words)
    return ("".join(query_words), title, grade(query_words, title),
            list(query_words), title_words)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out_dir")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--train", type=int, default=60000)
    ap.add_argument("--dev", type=int, default=2000)
    ap.add_argument("--test", type=int, default=3000)
    ap.add_argument("--words", action="store_true",
                    help="also write {split}_words.tsv (the segmentation)")
    args = ap.parse_args()
    # The lexicon depends on the seed only; the splits draw from separate
    # streams so changing one split's size leaves the others unchanged.
    lexicon, filler_words = make_lexicon(random.Random(args.seed))
    os.makedirs(args.out_dir, exist_ok=True)
    seen = set()
    for i, (name, n) in enumerate(
        [("test", args.test), ("dev", args.dev), ("train", args.train)]
    ):
        rng = random.Random(args.seed * 1000 + i + 1)
        path = os.path.join(args.out_dir, name + ".tsv")
        words_path = os.path.join(args.out_dir, name + "_words.tsv")
        rows = 0
        words_file = (open(words_path, "w", encoding="utf-8")
                      if args.words else None)
        with open(path, "w", encoding="utf-8") as f:
            while rows < n:
                q, t, y, qw, tw = make_row(rng, lexicon, filler_words)
                if (q, t) in seen:  # no pair in two splits (or twice)
                    continue
                seen.add((q, t))
                f.write(f"{q}\t{t}\t{y}\n")
                if words_file is not None:
                    assert "".join(qw) == q and "".join(tw) == t
                    words_file.write(f"{' '.join(qw)}\t{' '.join(tw)}\t{y}\n")
                rows += 1
        print(f"wrote {path}: {rows} rows")
        if words_file is not None:
            words_file.close()
            print(f"wrote {words_path}: {rows} rows")


if __name__ == "__main__":
    main()
