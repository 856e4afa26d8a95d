"""bertology-train as the README and `make model` run it: the binary
pretrains a masked LM (--objective=mlm), fine-tunes a classifier from it
(--init_from), and the real server serves both; bad flags exit non-zero
naming the flag.

Run by ctest; by hand:
  PYTHONPATH=build/python:client/python BERTOLOGY_BIN_DIR=build/bin \\
      /usr/bin/python3 -m unittest -v tests/python/test_train_cli.py
"""
import json
import os
import random
import shutil
import subprocess
import tempfile
import unittest

import grpc

from testlib import BIN_DIR
from bertology_client import Client
from live_server import LiveServer

TINY = ["--layers=2", "--heads=2", "--hidden=16", "--intermediate=32",
        "--max_len=16", "--batch_size=16", "--lr=3e-3", "--dropout=0",
        "--threads=1"]


def write_pairs(path, rows, seed):
    """One letter repeated in both texts, labelled by whether it is in the
    first half of the alphabet used."""
    rng = random.Random(seed)
    with open(path, "w") as f:
        for _ in range(rows):
            c = rng.choice("abcdefghij")
            f.write(f"{' '.join(c * 4)}\t{' '.join(c * 5)}\t{'pos' if c < 'f' else 'neg'}\n")


class TrainCliTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="bertology-train-cli-")
        cls.train_tsv = os.path.join(cls.tmp, "train.tsv")
        cls.dev = os.path.join(cls.tmp, "dev.tsv")
        write_pairs(cls.train_tsv, 1500, 1)
        write_pairs(cls.dev, 200, 2)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def run_train(self, *flags):
        return subprocess.run(
            [os.path.join(BIN_DIR, "bertology-train"), "--train=" + self.train_tsv,
             "--dev=" + self.dev] + TINY + list(flags),
            capture_output=True, text=True, timeout=300,
            env=dict(os.environ, OPENBLAS_NUM_THREADS="1"))

    def test_pretrain_fine_tune_and_serve(self):
        mlm = os.path.join(self.tmp, "mlm")
        tuned = os.path.join(self.tmp, "tuned")
        r = self.run_train("--objective=mlm", "--epochs=4", "--mlm_probability=0.2",
                       "--out=" + mlm)
        self.assertEqual(r.returncode, 0, r.stderr)
        r = self.run_train("--init_from=" + mlm, "--epochs=4", "--out=" + tuned)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(os.path.join(tuned, "train_log.json")) as f:
            log = json.load(f)
        self.assertEqual(log["init_from"], mlm)
        self.assertGreaterEqual(log["best_dev_accuracy"], 0.9, log)
        server = LiveServer(BIN_DIR, ["--model=tuned=" + tuned,
                                      "--model=mlm=" + mlm, "--threads=1"])
        channel = grpc.insecure_channel(f"127.0.0.1:{server.port}")
        try:
            server.wait_serving(channel)
            with Client(f"127.0.0.1:{server.port}", timeout=60) as c:
                models = {m["name"]: m for m in c.info()["models"]}
                self.assertEqual(models["mlm"]["architecture"], "BertForMaskedLM")
                self.assertEqual(models["tuned"]["architecture"],
                                 "BertForSequenceClassification")
                got = c.classify([("a a a a", "a a a a a"), ("j j j j", "j j j j j")])
                names = models["tuned"]["label_names"]
                self.assertEqual([names[int(i)] for i in got.labels], ["pos", "neg"])
                cmp = c.compare_attention([("a a a a", "a a a a a")],
                                          model_a="mlm", model_b="tuned")
                self.assertEqual(cmp["similarity"].shape, (2, 2))
        finally:
            channel.close()
            server.stop()

    def test_bad_flags_name_the_flag(self):
        r = self.run_train("--objective=nsp", "--out=" + os.path.join(self.tmp, "x"))
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("--objective=nsp", r.stderr)
        r = self.run_train("--init_from=" + os.path.join(self.tmp, "nowhere"),
                       "--out=" + os.path.join(self.tmp, "y"))
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("nowhere", r.stderr)


if __name__ == "__main__":
    unittest.main()
