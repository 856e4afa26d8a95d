#!/usr/bin/env python3
"""Accuracy and confusion matrix of a served model on a labelled TSV,
measured through the server's Classify (what the model card reports).

  PYTHONPATH=build/python:client/python /usr/bin/python3 \
      scripts/evaluate_model.py --target=127.0.0.1:50051 \
      --data=models/querytitle-zh-tiny/data/test.tsv

Rows are `text_a<TAB>text_b<TAB>label`, the label a label name of the model.
Prints JSON: examples, correct, accuracy, labels, confusion[gold][pred].
"""
import argparse
import json
import sys


def read_tsv(path):
    rows = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line:
                continue
            parts = line.split("\t")
            if len(parts) != 3:
                raise ValueError(f"{path}:{n}: expected 3 columns")
            rows.append((parts[0], parts[1], parts[2]))
    return rows


def evaluate(client, rows, batch=64, mask=None):
    """Classifies `rows` in batches under `mask` (any form Client.classify
    takes; None: no mask); returns the summary dict."""
    labels = client.info()["models"][0]["label_names"]
    index = {name: i for i, name in enumerate(labels)}
    confusion = [[0] * len(labels) for _ in labels]
    correct = 0
    for i in range(0, len(rows), batch):
        chunk = rows[i:i + batch]
        result = client.classify([(a, b) for a, b, _ in chunk], mask=mask)
        for (_, _, gold), pred in zip(chunk, result.labels):
            g = index[gold]
            confusion[g][int(pred)] += 1
            correct += int(g == int(pred))
    return {"examples": len(rows), "correct": correct,
            "accuracy": correct / len(rows) if rows else 0.0,
            "labels": labels, "confusion": confusion}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--target", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--limit", type=int, default=0)
    args = ap.parse_args()
    from bertology_client import Client  # needs PYTHONPATH, see above
    rows = read_tsv(args.data)
    if args.limit:
        rows = rows[:args.limit]
    with Client(args.target) as client:
        json.dump(evaluate(client, rows), sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
