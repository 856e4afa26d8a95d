"""The shipped default model: it loads in the real server, its files match
its model card (models/<name>/card.json), its test accuracy measured
through Classify is at least the card's figure minus 0.5 points, and the
card's head findings (scripts/head_findings.py) are re-measured where they
are deterministic: the term-matching heads and their uniform-attention
level, the segmenting heads by MCC beside the trivial baselines, the
word-order probe's grades. Every accuracy change the card reports carries
its 95% interval, and its verdicts on the study's claims are the ones
card_markdown.reproduction draws from its numbers. Its starting point,
models/querytitle-zh-tiny-mlm, is an HF BertForMaskedLM (checked by an
independent float64 reading of its LM head, tests/golden/mlm_reference.py),
the model the classifier was fine-tuned from (same vocabulary), and is
served beside it, so that CompareAttention and `bertology compare` run on
the shipped files as the README shows.

Run by ctest; by hand, from tests/python:
  PYTHONPATH=../../build/python BERTOLOGY_BIN_DIR=../../build/bin \
      /usr/bin/python3 -m unittest -v test_default_model
"""
import csv
import json
import os
import subprocess
import tempfile
import unittest

import grpc
import numpy as np

from testlib import BIN_DIR, SOURCE_DIR
import attribution_findings
import card_markdown
import card_measures
import evaluate_model
import head_findings
import mlm_reference
from bertology_client import Client
from live_server import LiveServer
from make_golden import read_safetensors

# BERTOLOGY_DEFAULT_MODEL_DIR checks a card written elsewhere (e.g. `make
# card CARD_MODEL=out/cardtest/querytitle-zh-tiny`), its starting point
# beside it as DIR-mlm.
MODEL_DIR = os.environ.get("BERTOLOGY_DEFAULT_MODEL_DIR") or os.path.join(
    SOURCE_DIR, "models", "querytitle-zh-tiny")
MLM_DIR = MODEL_DIR.rstrip("/") + "-mlm"
BUDGET = 16 * 1024 * 1024  # bytes per shipped model


def read_json(path):
    with open(path) as f:
        return json.load(f)


class DefaultModelTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        with open(os.path.join(MODEL_DIR, "card.json")) as f:
            cls.card = json.load(f)
        cls.server = LiveServer(BIN_DIR, ["--model=querytitle=" + MODEL_DIR,
                                          "--model=querytitle-mlm=" + MLM_DIR,
                                          "--threads=1"], timeout=120)
        target = f"127.0.0.1:{cls.server.port}"
        cls.channel = grpc.insecure_channel(target)
        cls.server.wait_serving(cls.channel)
        cls.client = Client(target, timeout=120)

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        cls.channel.close()
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

    def test_results_page_is_the_card(self):
        """RESULTS.md is card.json rendered (no figure typed by hand)."""
        with open(os.path.join(MODEL_DIR, "RESULTS.md"), encoding="utf-8") as f:
            self.assertEqual(f.read(), card_markdown.render(self.card))

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

    def test_term_matching_uniform_level(self):
        """The uniform level beside the term-matching heads: present, below
        the top head, recomputed from Tokenize as head_findings does, and
        equal to what AnalyzeHeads measures for a head made to attend
        uniformly (mode "uniform") on the same rows."""
        found = self.card.get("head_findings")
        if found is None:
            self.skipTest("card.json has no head_findings yet (make card)")
        u = found["term_matching_uniform"]
        level = u["cross_segment_match"]
        top = found["term_matching_heads"][0]["cross_segment_match"]
        self.assertGreater(level, 0)
        self.assertLess(level, top, u)
        rows = evaluate_model.read_tsv(os.path.join(MODEL_DIR, "data", "test.tsv"))
        pairs = [(a, b) for a, b, _ in rows[:found["analyze_examples"]]]
        got, with_match = head_findings.uniform_match(
            self.client, pairs, head_findings.unk_id(MODEL_DIR))
        self.assertEqual(with_match, u["examples_with_match"])
        self.assertAlmostEqual(got, level, delta=1e-5)
        uniform = self.client.analyze_heads(
            pairs, mask={"ablate": [(0, 0)], "mode": "uniform"})
        self.assertAlmostEqual(float(uniform["cross_segment_match"][0, 0]), level,
                               delta=1e-4)
        # The low-layer comparison is built on low-layer heads above it, or
        # dropped with the reason.
        tm = found["term_masking"]
        first, last = tm["low_layers"]
        if tm["low_term_heads"] is None:
            self.assertIsNone(tm["layers_0_5_but_term_heads"])
            self.assertTrue(tm["layers_0_5_but_term_heads_dropped"])
        else:
            for x in found["low_layer_term_heads"]["heads"]:
                self.assertTrue(first <= x["head"][0] <= last, x)
                self.assertGreater(x["cross_segment_match"], level, x)
            self.assertEqual([x["head"] for x in found["low_layer_term_heads"]["heads"]],
                             tm["low_term_heads"]["heads"])

    def test_every_change_has_an_interval(self):
        """Each accuracy change in card.json (an entry with a relative
        change) carries the paired 95% interval of the accuracy difference,
        the interval holds the difference, and "distinguishable" says
        whether it excludes 0; each baseline carries its Wilson interval."""
        changes, baselines = [], []

        def walk(x, path):
            if isinstance(x, dict):
                if "change_percent" in x:
                    changes.append((path, x))
                if "accuracy_ci" in x and "accuracy" in x:
                    baselines.append((path, x))
                for k, v in x.items():
                    walk(v, path + "/" + str(k))
            elif isinstance(x, list):
                for i, v in enumerate(x):
                    walk(v, f"{path}[{i}]")
        walk(self.card, "")
        self.assertGreater(len(changes), 100)
        for path, c in changes:
            ci = c.get("delta_ci")
            self.assertIsNotNone(ci, path)
            self.assertEqual(len(ci), 2, path)
            # card.json keeps the server's unrounded numbers
            # (card_measures.change), so these hold exactly.
            self.assertLessEqual(ci[0], c["accuracy_delta"], path)
            self.assertGreaterEqual(ci[1], c["accuracy_delta"], path)
            self.assertEqual(c["distinguishable"], ci[0] > 0 or ci[1] < 0,
                             path)
            self.assertIsInstance(c["rows_delta"], int, path)
        for key in ("findings", "head_findings"):
            self.assertTrue(any(p.startswith("/" + key) for p, _ in changes), key)
        self.assertTrue(baselines)
        for path, b in baselines:
            lo, hi = b["accuracy_ci"]
            self.assertTrue(lo <= b["accuracy"] <= hi, path)
        lo, hi = self.card["test_accuracy_ci"]
        self.assertTrue(lo <= self.card["test_accuracy"] <= hi)
        # The single heads' changes the card names, counted from the rows.
        f = self.card["findings"]
        for c in f["single_heads"]["most_harmful"] + f["single_heads"]["most_helpful"]:
            self.assertEqual(c["rows_delta"], c["correct"] - f["baseline"]["correct"], c)

    def test_segmentation_baselines_reproduce(self):
        """SegmentWords on the card's rows: the heads ranked by MCC, the two
        trivial baselines and their oracle as the card has them, and the
        segmentation claim judged against always-next."""
        found = self.card.get("head_findings")
        if found is None:
            self.skipTest("card.json has no head_findings yet (make card)")
        seg = found["segmenting_heads"]
        for name in ("always_next", "always_sep"):
            for key in ("mcc", "balanced_accuracy", "f1", "accuracy"):
                self.assertIsNotNone(seg["baselines"][name][key], (name, key))
        self.assertIsNotNone(seg["baselines_oracle"])
        words = evaluate_model.read_tsv(os.path.join(MODEL_DIR, "data", "test_words.tsv"))
        got = self.client.segment_words([(a, b) for a, b, _ in words[:seg["examples"]]],
                                        top_k=found["k"])
        self.assertEqual(got["characters"], seg["characters"])
        self.assertEqual([list(h) for h in got["best_heads"]],
                         [x["head"] for x in seg["by_mcc"]])
        for x in seg["by_mcc"]:
            self.assertAlmostEqual(float(got["mcc"][tuple(x["head"])]), x["mcc"], delta=2e-4)
        for name in ("always_next", "always_sep"):
            self.assertAlmostEqual(got["baselines"][name]["mcc"],
                                   seg["baselines"][name]["mcc"], delta=2e-4)
        self.assertAlmostEqual(got["oracle_baselines"], seg["baselines_oracle"], delta=2e-4)
        claims = {c["claim"]: c for c in self.card["reproduction"]}
        segmenting = [c for t, c in claims.items() if t.startswith("Some heads segment words")]
        self.assertEqual(len(segmenting), 1)
        beats = seg["by_mcc"][0]["mcc"] > seg["baselines"]["always_next"]["mcc"]
        self.assertEqual(segmenting[0]["status"],
                         "reproduced" if beats else "not reproduced")

    def test_reproduction_is_the_card(self):
        """The card's verdicts on the study's claims are
        card_markdown.reproduction of its numbers, each with a test."""
        claims = self.card["reproduction"]
        self.assertEqual(claims, card_markdown.reproduction(self.card))
        for c in claims:
            self.assertIn(c["status"], ("reproduced", "not reproduced", "not measured"), c)
            if c["status"] != "not measured":
                self.assertTrue(c["test"] and c["measured"], c)

    def test_order_probe_reproduces(self):
        """The word-order probe's grades (Classify, deterministic)."""
        rows = evaluate_model.read_tsv(os.path.join(MODEL_DIR, "data", "test.tsv"))
        probe = card_measures.order_probe(self.client, rows)
        self.assertEqual(probe, self.card["order_probe"])
        self.assertEqual(sum(probe["grades_shuffled"].values()), probe["pairs"])

    def test_attribution_reproduces(self):
        """The card's token attribution under the order heads' mask, title
        shuffled (one of its four conditions, every method), through the
        Attribute RPC again; and integrated gradients' gap small on all."""
        a = self.card["attribution"]
        rows = evaluate_model.read_tsv(os.path.join(MODEL_DIR, "data", "test.tsv"))
        name = "order_heads/shuffled"
        got = attribution_findings.condition(
            self.server.port, rows, self.card["labels"], name,
            a["order_heads"], a["pairs"])
        self.assertEqual(got, a["conditions"][name])
        for c in a["conditions"].values():
            ig = c["integrated_gradients"]
            self.assertLess(ig["median_gap"], 0.01 * ig["median_output_change"])

    def test_mean_ablation_reproduces(self):
        """The card's mean-ablation sweep: the statistics over the dev rows
        computed again through the Python client (their id is not compared:
        it digests the model's identity, which holds the weights file's
        mtime, new in every checkout), and the two heads the card finds
        most harmful, mean-ablated through Classify (pooled and by role),
        score the sweeps' counts."""
        a = self.card.get("mean_ablation")
        if a is None:
            self.skipTest("card.json has no mean_ablation yet (make card)")
        dev = evaluate_model.read_tsv(os.path.join(MODEL_DIR, "data", "dev.tsv"))
        st = self.client.compute_head_statistics([(x, y) for x, y, _ in dev],
                                                 model="querytitle")
        self.assertEqual(st["examples"], a["statistics"]["examples"])
        self.assertEqual(st["tokens"], a["statistics"]["tokens"])
        rows = evaluate_model.read_tsv(os.path.join(MODEL_DIR, "data", "test.tsv"))
        rows = rows[:a["sweep_examples"]]
        differ = False
        for r in a["most_harmful_either"][:2]:
            layer, h = r["head"][1:].split("H")
            head = [(int(layer), int(h))]
            mean = evaluate_model.evaluate(
                self.client, rows, mask={"ablate": head, "mode": "mean",
                                         "statistics": st["id"]})
            self.assertEqual(mean["correct"], r["mean_correct"], r)
            zero = evaluate_model.evaluate(self.client, rows,
                                           mask={"ablate": head})
            self.assertEqual(zero["correct"], r["zero_correct"], r)
            role = evaluate_model.evaluate(
                self.client, rows, mask={"ablate": head, "mode": "mean_by_role",
                                         "statistics": st["id"]})
            self.assertEqual(role["correct"], r["by_role_correct"], r)
            differ = differ or zero["correct"] != mean["correct"] or (
                zero["correct"] != role["correct"])
        # Mean ablation is another intervention than zero: measured here, a
        # mean mode (pooled or by role) scores these heads differently.
        self.assertTrue(differ, a["most_harmful_either"][:2])

    def test_starting_point_is_what_the_classifier_started_from(self):
        config = read_json(os.path.join(MLM_DIR, "config.json"))
        self.assertEqual(config["architectures"], ["BertForMaskedLM"])
        tuned = read_json(os.path.join(MODEL_DIR, "train_log.json"))
        self.assertTrue(tuned["init_from"].endswith("querytitle-zh-tiny-mlm"),
                        tuned.get("init_from"))
        with open(os.path.join(MLM_DIR, "vocab.txt"), "rb") as a, \
                open(os.path.join(MODEL_DIR, "vocab.txt"), "rb") as b:
            self.assertEqual(a.read(), b.read())
        for d in (MLM_DIR, MODEL_DIR):
            size = sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d)
                       if os.path.isfile(os.path.join(d, f)))
            self.assertLessEqual(size, BUDGET, d)
        models = {m["name"]: m for m in self.client.info()["models"]}
        self.assertEqual(models["querytitle-mlm"]["architecture"], "BertForMaskedLM")
        self.assertEqual(models["querytitle-mlm"]["head"], "encoder")
        self.assertIn("CompareAttention", models["querytitle-mlm"]["served_rpcs"])
        self.assertNotIn("Classify", models["querytitle-mlm"]["served_rpcs"])

    def test_starting_point_lm_head_predicts_masked_characters(self):
        # 400 dev pairs, every 7th character masked: ~1,300 predictions.
        weights = read_safetensors(os.path.join(MLM_DIR, "model.safetensors"))
        rows = evaluate_model.read_tsv(os.path.join(MODEL_DIR, "data", "dev.tsv"))
        got = mlm_reference.masked_token_accuracy(
            MLM_DIR, weights, [(a, b) for a, b, _ in rows[:400]])
        trained = read_json(os.path.join(MLM_DIR, "train_log.json"))[
            "best_dev_masked_token_accuracy"]
        # The trainer's dev figure (80/10/10 corruption, its own draws) and
        # this one (all [MASK], fixed positions) differ in what is masked;
        # a head or key read wrongly falls to the frequency floor.
        self.assertGreater(got["accuracy"], trained - 0.08, (got, trained))
        self.assertGreater(got["accuracy"], 3 * got["most_frequent_accuracy"], got)

    def test_fine_tuning_change_reproduces(self):
        """The card's per-layer similarity of the starting point's and the
        classifier's maps, re-measured by the RPC over the same rows, and
        `bertology compare` on the shipped pair agreeing with the RPC."""
        found = self.card.get("head_findings", {}).get("fine_tuning")
        if found is None:
            self.skipTest("card.json has no fine_tuning findings yet (make card)")
        rows = evaluate_model.read_tsv(os.path.join(MODEL_DIR, "data", "test.tsv"))
        n = found["examples"]
        cmp = self.client.compare_attention([(a, b) for a, b, _ in rows[:n]],
                                            model_a="querytitle-mlm",
                                            model_b="querytitle")
        sim = cmp["similarity"]
        self.assertTrue(np.all(np.isfinite(sim)) and np.all(sim <= 1 + 1e-6), sim)
        np.testing.assert_allclose(np.nanmean(sim, axis=1),
                                   found["cosine_similarity_by_layer"], atol=2e-4)
        few = rows[:30]
        small = self.client.compare_attention([(a, b) for a, b, _ in few],
                                              model_a="querytitle-mlm",
                                              model_b="querytitle")["similarity"]
        with tempfile.TemporaryDirectory() as out:
            data = os.path.join(out, "pairs.tsv")
            with open(data, "w", encoding="utf-8") as f:
                f.writelines(f"{a}\t{b}\n" for a, b, _ in few)
            subprocess.run(
                [os.path.join(BIN_DIR, "bertology"), "compare",
                 f"--target=127.0.0.1:{self.server.port}",
                 "--model-a=querytitle-mlm", "--model-b=querytitle",
                 "--data=" + data, "--header=no", "--text-a=0", "--text-b=1",
                 "--detail=0:0:0", "--quiet", "--out-dir=" + os.path.join(out, "cmp")],
                check=True, stdout=subprocess.DEVNULL)
            with open(os.path.join(out, "cmp", "similarity.csv")) as f:
                cli = list(csv.DictReader(f))
            self.assertGreater(
                os.path.getsize(os.path.join(out, "cmp", "difference.svg")), 0)
        self.assertEqual(len(cli), sim.size)
        for r in cli:
            self.assertAlmostEqual(float(r["cosine_similarity"]),
                                   small[int(r["layer"]), int(r["head"])], places=5)


if __name__ == "__main__":
    unittest.main()
