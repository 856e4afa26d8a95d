"""Single sentences shaped like GLUE's SST-2 dev set, for the GPU goal's
sweep (issue 30: every single head of a BERT-base-shaped model over 872
movie-review-length sentences, about 25 word pieces each).

No SST-2 text ships here (no downloads): the sentences are random
single-character pieces of the model's own vocab.txt, so each character is
one word piece, with lengths drawn to match SST-2 dev's shape (872
sentences; word pieces with [CLS] and [SEP]: mean about 25, from 4 to about
60). The random BERT-base checkpoint the bench writes has no trained
behaviour to disturb, so what matters is the shape: the number of pairs and
tokens per pair, which set the FLOPs.

  python3 bench/sst2_shape_data.py --vocab models/querytitle-zh-tiny/vocab.txt \
      --out out/bench/sst2-shape.tsv [--examples 872] [--seed 0]
Writes text_a <TAB> (empty text_b) <TAB> label, labels 0/1.
"""
import argparse
import random
import unicodedata


def single_char_pieces(vocab_path):
    """Vocabulary entries that are one letter or ideograph (no ## pieces,
    no [special] tokens, no punctuation, which BERT's basic tokenizer
    splits off on its own anyway)."""
    out = []
    with open(vocab_path, encoding="utf-8") as f:
        for line in f:
            piece = line.rstrip("\n")
            if len(piece) == 1 and unicodedata.category(piece)[0] == "L":
                out.append(piece)
    if not out:
        raise SystemExit("%s: no single-letter pieces" % vocab_path)
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--vocab", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--examples", type=int, default=872)
    p.add_argument("--mean_pieces", type=float, default=25.0)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    rng = random.Random(a.seed)
    pieces = single_char_pieces(a.vocab)
    # Characters between the [CLS] and [SEP]: a gamma with SST-2 dev's
    # spread (mean ~23 words, a long right tail), at least 2.
    inner = a.mean_pieces - 2
    with open(a.out, "w", encoding="utf-8") as f:
        for _ in range(a.examples):
            n = max(2, min(60, round(rng.gammavariate(4.0, inner / 4.0))))
            text = "".join(rng.choice(pieces) for _ in range(n))
            f.write("%s\t\t%d\n" % (text, rng.randrange(2)))


if __name__ == "__main__":
    main()
