"""The shipped default model: it loads in the real server, its files match
its model card (models/<name>/card.json), its test accuracy measured
through Classify is at least the card's figure minus 0.5 points, and the
card's head findings (scripts/head_findings.py) are re-measured where they
are deterministic.

Run by ctest; by hand:
  PYTHONPATH=build/python:client/python BERTOLOGY_BIN_DIR=build/bin \
      /usr/bin/python3 -m unittest -v tests/python/test_default_model.py
"""
import json
import os
import sys
import time
import unittest

SOURCE_DIR = os.environ.get(
    "BERTOLOGY_SOURCE_DIR",
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
BIN_DIR = os.environ.get("BERTOLOGY_BIN_DIR", os.path.join(SOURCE_DIR, "build", "bin"))
MODEL_DIR = os.path.join(SOURCE_DIR, "models", "querytitle-zh-tiny")
sys.path.insert(0, os.path.join(SOURCE_DIR, "scripts"))
sys.path.insert(0, os.path.join(SOURCE_DIR, "client", "python"))
import evaluate_model  # noqa: E402
import head_findings  # noqa: E402
from bertology_client import Client  # noqa: E402
from live_server import LiveServer  # noqa: E402


class DefaultModelTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        with open(os.path.join(MODEL_DIR, "card.json")) as f:
            cls.card = json.load(f)
        cls.server = LiveServer(BIN_DIR, ["--model=querytitle=" + MODEL_DIR,
                                          "--threads=1"], timeout=120)
        port = cls.server.port
        deadline = time.time() + 120
        cls.client = Client(f"127.0.0.1:{port}", timeout=120)
        while time.time() < deadline and cls.client.health() != "SERVING":
            time.sleep(0.2)

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        cls.server.stop()

    def test_files_match_card(self):
        for name, size in self.card["files"].items():
            path = os.path.join(MODEL_DIR, name)
            self.assertEqual(os.path.getsize(path), size, name)
        info = self.client.info()["models"][0]
        self.assertEqual(info["label_names"], self.card["labels"])
        self.assertEqual(info["num_layers"], self.card["layers"])
        self.assertEqual(info["num_heads"], self.card["heads"])
        self.assertEqual(info["hidden_size"], self.card["hidden_size"])

    def test_accuracy_at_least_card(self):
        rows = evaluate_model.read_tsv(os.path.join(MODEL_DIR, "data", "test.tsv"))
        result = evaluate_model.evaluate(self.client, rows)
        self.assertEqual(result["examples"], self.card["test_examples"])
        self.assertGreaterEqual(result["accuracy"],
                                self.card["test_accuracy"] - 0.005, result)
        # Far above both baselines, as the card claims.
        self.assertGreater(result["accuracy"],
                           self.card["baselines"]["bag_of_characters_accuracy"])

    def test_head_findings_reproduce(self):
        """The card's term-matching heads, re-measured by AnalyzeHeads over
        the same rows through the Python client (the card's came through
        `bertology analyze`), the pattern counts, and the accuracy with
        those heads masked through Classify (the card's came from
        SweepAblation)."""
        found = self.card.get("head_findings")
        if found is None:
            self.skipTest("card.json has no head_findings yet (make card)")
        rows = evaluate_model.read_tsv(os.path.join(MODEL_DIR, "data", "test.tsv"))
        n = found["analyze_examples"]
        got = self.client.analyze_heads([(a, b) for a, b, _ in rows[:n]])
        self.assertEqual(got["examples"], n)
        match = got["cross_segment_match"]
        term = head_findings.top_heads(match, found["k"])
        self.assertEqual([list(lh) for lh in term],
                         [h["head"] for h in found["term_matching_heads"]])
        for lh, h in zip(term, found["term_matching_heads"]):
            self.assertAlmostEqual(float(match[lh]), h["cross_segment_match"],
                                   delta=2e-4)
            self.assertEqual(got["pattern"][lh], h["pattern"])
        self.assertEqual({p: int((got["pattern"] == p).sum())
                          for p in head_findings.PATTERNS},
                         found["pattern_counts"])
        masking = found["term_masking"]
        m = masking["examples"]
        base = evaluate_model.evaluate(self.client, rows[:m])
        self.assertEqual(base["correct"], masking["baseline_correct"])
        masked = evaluate_model.evaluate(self.client, rows[:m],
                                         mask={"ablate": term})
        self.assertEqual(masked["correct"], masking["term_heads"]["correct"])


if __name__ == "__main__":
    unittest.main()
