#!/usr/bin/env python3
"""The model card's baselines for the query-title task, on the test split:

  majority           the most frequent grade of the training split
  bag-of-characters  multinomial logistic regression on two bags of
                     characters (the query's and the title's counts), trained
                     on the training split: it sees which characters occur
                     but not their order or the word boundaries

  /usr/bin/python3 scripts/querytitle_baselines.py DATA_DIR   # train/test.tsv
Prints JSON. Deterministic (seeded), CPU, about a minute.
"""
import json
import sys
from collections import Counter

import torch


def read(path):
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n").split("\t") for line in f if line.strip()]


def main():
    data_dir = sys.argv[1]
    train = read(f"{data_dir}/train.tsv")
    test = read(f"{data_dir}/test.tsv")
    majority = Counter(r[2] for r in train).most_common(1)[0][0]
    maj_acc = sum(r[2] == majority for r in test) / len(test)

    chars = sorted({c for r in train for c in r[0] + r[1]})
    index = {c: i for i, c in enumerate(chars)}
    dim = 2 * len(chars)

    def featurize(rows):
        x = torch.zeros(len(rows), dim)
        for i, (q, t, _) in enumerate(rows):
            for c in q:
                if c in index:
                    x[i, index[c]] += 1
            for c in t:
                if c in index:
                    x[i, len(chars) + index[c]] += 1
        y = torch.tensor([int(r[2]) for r in rows])
        return x, y

    torch.manual_seed(0)
    xtr, ytr = featurize(train)
    xte, yte = featurize(test)
    model = torch.nn.Linear(dim, 5)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for epoch in range(30):
        perm = torch.randperm(len(xtr))
        for i in range(0, len(xtr), 512):
            idx = perm[i:i + 512]
            loss = torch.nn.functional.cross_entropy(model(xtr[idx]), ytr[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
    with torch.no_grad():
        boc_acc = (model(xte).argmax(-1) == yte).float().mean().item()
    print(json.dumps({"test_examples": len(test), "majority_label": majority,
                      "majority_accuracy": round(maj_acc, 4),
                      "bag_of_characters_accuracy": round(boc_acc, 4)},
                     indent=1))


if __name__ == "__main__":
    main()
