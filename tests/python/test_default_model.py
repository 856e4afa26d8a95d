"""The shipped default model: it loads in the real server, its files match
its model card (models/<name>/card.json), and its test accuracy measured
through Classify is at least the card's figure minus 0.5 points.

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


if __name__ == "__main__":
    unittest.main()
