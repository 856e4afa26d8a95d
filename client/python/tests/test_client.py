"""bertology_client against a live bertology-server (tiny-bert-cls).

Run by ctest (python_client_test); by hand:
  PYTHONPATH=build/python:client/python BERTOLOGY_BIN_DIR=build/bin \\
      /usr/bin/python3 -m unittest -v client/python/tests/test_client.py
"""

import doctest
import os
import re
import subprocess
import sys
import tempfile
import time
import unittest

import grpc
import numpy as np

from bertology.v1 import bertology_pb2 as pb
import bertology_client
from bertology_client import Client, decode_attention_map, head_mask_proto

SOURCE_DIR = os.environ.get(
    "BERTOLOGY_SOURCE_DIR",
    os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..")))
BIN_DIR = os.environ.get("BERTOLOGY_BIN_DIR",
                         os.path.join(SOURCE_DIR, "build", "bin"))
MODEL_DIR = os.path.join(SOURCE_DIR, "tests", "golden", "tiny-bert-cls")
PAIRS = [("the cat sat on the mat", "a dog"), ("it was there", ""),
         ("this was not what they said", "the cat")]


class HeadMaskTest(unittest.TestCase):
    """Mask conversion needs no server."""

    def test_forms(self):
        m = head_mask_proto({"ablate": [(0, 1), (1, 0)], "mode": "uniform"})
        self.assertEqual(m.WhichOneof("mask"), "ablate")
        self.assertEqual([(h.layer, h.head) for h in m.ablate.heads],
                         [(0, 1), (1, 0)])
        self.assertEqual(m.mode, pb.ABLATION_MODE_UNIFORM)
        m = head_mask_proto({"keep": [(1, 1)]})
        self.assertEqual(m.WhichOneof("mask"), "keep")
        m = head_mask_proto(np.array([[1, 0], [0.5, 1]]))
        self.assertEqual(list(m.dense.values), [1, 0, 0.5, 1])
        self.assertIsNone(head_mask_proto(None))
        with self.assertRaises(ValueError):
            head_mask_proto({"ablate": [], "keep": []})
        with self.assertRaises(ValueError):
            head_mask_proto({"ablate": []}, mode="sideways")

    def test_decode(self):
        a = np.arange(9, dtype=np.float32).reshape(3, 3) / 8
        f16 = decode_attention_map(a.astype("<f2").tobytes(),
                                   pb.ATTENTION_ENCODING_FLOAT16, 3)
        f32 = decode_attention_map(a.astype("<f4").tobytes(),
                                   pb.ATTENTION_ENCODING_FLOAT32, 3)
        np.testing.assert_array_equal(f16, a)
        np.testing.assert_array_equal(f32, a)
        self.assertEqual(f16.dtype, np.float32)
        with self.assertRaises(ValueError):
            decode_attention_map(b"\0" * 5, pb.ATTENTION_ENCODING_FLOAT32, 3)

    def test_reference_modes(self):
        m = head_mask_proto({"ablate": [(0, 1)], "mode": "resample",
                             "statistics": "hs-00000000000000ff", "draws": 4,
                             "seed": 9})
        self.assertEqual(m.mode, pb.ABLATION_MODE_RESAMPLE)
        self.assertEqual(m.statistics, "hs-00000000000000ff")
        self.assertEqual((m.resample.draws, m.resample.seed), (4, 9))
        m = head_mask_proto(np.ones((2, 2)), mode="mean", statistics="hs-1")
        self.assertEqual(m.mode, pb.ABLATION_MODE_MEAN)
        self.assertEqual(m.statistics, "hs-1")
        self.assertFalse(m.HasField("resample"))
        # Statistics alone make a mask (the mode may come from elsewhere).
        self.assertEqual(head_mask_proto(None, statistics="hs-2").statistics,
                         "hs-2")
        with self.assertRaises(ValueError):
            head_mask_proto({"ablate": [], "draws": 2, "bogus": 1})

    def test_patch_conversions(self):
        from bertology_client.client import _patch_result_dict, _patch_site
        s = _patch_site((1, 2, 3))
        self.assertEqual((s.kind, s.layer, s.head, s.position),
                         (pb.PATCH_SITE_KIND_HEAD, 1, 2, 3))
        self.assertFalse(_patch_site((1, 2)).HasField("position"))
        r = _patch_site({"kind": "residual", "layer": 2})
        self.assertEqual(r.kind, pb.PATCH_SITE_KIND_RESIDUAL)
        self.assertFalse(r.HasField("position"))
        unset = _patch_result_dict(pb.PatchResult(site_index=4, logit_diff=1))
        self.assertIsNone(unset["normalized_effect"])
        self.assertIsNone(unset["position"])
        zero = _patch_result_dict(pb.PatchResult(normalized_effect=0.0))
        self.assertEqual(zero["normalized_effect"], 0.0)

    def test_attribution_conversions(self):
        from bertology_client.attribution import (attribute_request,
                                                  result_dict)
        req = attribute_request([pb.TextInput(text_a="x")], None, None, None,
                                "logit", "pad", "gauss-legendre", None,
                                "token", "tiny")
        # None: all six, named, in the proto's order.
        self.assertEqual(list(req.methods), list(range(1, 7)))
        for field in ("target", "target_position", "steps"):
            self.assertFalse(req.HasField(field), field)
        req = attribute_request([], "rollout", 2, 0, "probability", "mask",
                                "trapezoid", 8, "word", "")
        self.assertEqual(list(req.methods),
                         [pb.ATTRIBUTION_METHOD_ATTENTION_ROLLOUT])
        self.assertEqual((req.target, req.target_position, req.steps),
                         (2, 0, 8))
        self.assertTrue(req.HasField("target_position"))
        self.assertEqual(req.rule, pb.INTEGRATION_RULE_RIEMANN_TRAPEZOID)
        self.assertEqual(req.baseline, pb.ATTRIBUTION_BASELINE_MASK)
        self.assertEqual(req.granularity, pb.GRANULARITY_WORD)
        for bad in ({"methods": ["lime"]}, {"output": "loss"},
                    {"rule": "simpson"}, {"baseline": "noise"}):
            args = dict(methods=None, target=None, target_position=None,
                        output="logit", baseline="pad",
                        rule="gauss-legendre", steps=None,
                        granularity="token", model="")
            args.update(bad)
            with self.assertRaises(ValueError):
                attribute_request([], **args)
        r = pb.AttributionResult(input_index=1, target=2, output_value=0.5)
        r.units.add(text="[CLS]", special=True)
        r.units.add(text="cat", segment=0)
        r.methods.add(method=pb.ATTRIBUTION_METHOD_SALIENCY, scores=[1, 2])
        r.methods.add(method=pb.ATTRIBUTION_METHOD_INTEGRATED_GRADIENTS,
                      scores=[0, -1], completeness_gap=0.0, steps=50)
        d = result_dict(r)
        self.assertEqual(list(d["methods"]),
                         ["saliency", "integrated-gradients"])
        self.assertIsNone(d["methods"]["saliency"]["completeness_gap"])
        # A gap of exactly 0 is a value, not "unset".
        self.assertEqual(d["methods"]["integrated-gradients"]
                         ["completeness_gap"], 0.0)
        self.assertEqual(d["output"], "logit")
        np.testing.assert_array_equal(
            d["methods"]["integrated-gradients"]["scores"], [0, -1])
        try:
            import pandas  # noqa: F401
        except ImportError:
            return
        f = bertology_client.Result("attribution",
                                    {"results": [d]}).to_frame()
        self.assertEqual(list(f.columns),
                         ["input_index", "unit", "text", "segment", "special",
                          "method", "score", "target", "completeness_gap"])
        self.assertEqual(len(f), 2 * 2)
        self.assertEqual(list(f["method"]), ["saliency",
                                             "integrated-gradients"] * 2)
        self.assertEqual(f["score"].iloc[3], -1)
        self.assertTrue(np.isnan(f["completeness_gap"].iloc[0]))

    def test_relative_change_unset_is_none(self):
        # The server leaves it unset at a zero baseline: None, not 0.
        from bertology_client.client import _mask_result_dict
        unset = _mask_result_dict(pb.MaskResult(mask_id="m", accuracy=0.5))
        self.assertIsNone(unset["relative_change_percent"])
        zero = _mask_result_dict(pb.MaskResult(relative_change_percent=0.0))
        self.assertEqual(zero["relative_change_percent"], 0.0)


class ClientTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        server = os.path.join(BIN_DIR, "bertology-server")
        if not os.path.exists(server):
            # Under ctest the server is built first, so a missing one fails.
            if os.environ.get("BERTOLOGY_REQUIRE_SERVER") == "1":
                raise RuntimeError("no server binary at " + server)
            raise unittest.SkipTest("no server binary at " + server)
        cls.log = tempfile.NamedTemporaryFile(prefix="bertology-client-",
                                              suffix=".log")
        cls.proc = subprocess.Popen(
            [server, "--model=tiny=" + MODEL_DIR, "--listen=127.0.0.1:0",
             "--metrics_listen=", "--threads=1", "--warmup_passes=1"],
            stdout=cls.log, stderr=subprocess.STDOUT)
        port = None
        deadline = time.time() + 60
        while time.time() < deadline and port is None:
            with open(cls.log.name) as f:
                m = re.search(r"listening on port (\d+)", f.read())
            if m:
                port = int(m.group(1))
            elif cls.proc.poll() is not None:
                raise RuntimeError("server exited: " + open(cls.log.name).read())
            time.sleep(0.05)
        if port is None:
            cls.proc.kill()
            raise RuntimeError("no port: " + open(cls.log.name).read())
        cls.address = "127.0.0.1:%d" % port
        cls.client = Client(cls.address, timeout=30)
        while True:
            try:
                if cls.client.health() == "SERVING":
                    break
            except Exception:  # noqa: BLE001 (not up yet)
                pass
            if time.time() > deadline:
                raise RuntimeError("not SERVING: " + open(cls.log.name).read())
            time.sleep(0.05)
        cls.info = cls.client.info()["models"][0]

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        cls.proc.terminate()
        cls.proc.wait(timeout=30)
        cls.log.close()

    def test_info(self):
        info = self.client.info()
        self.assertEqual(self.info["name"], "tiny")
        self.assertTrue(self.info["is_default"])
        self.assertGreater(self.info["num_layers"], 0)
        self.assertGreater(self.info["num_heads"], 0)
        self.assertTrue(self.info["has_classifier"])
        self.assertGreater(info["limits"]["max_inputs_per_call"], 0)

    def test_tokenize(self):
        r = self.client.tokenize("the cat", "a dog")
        texts = [t["text"] for t in r["tokens"]]
        self.assertEqual(texts[0], "[CLS]")
        self.assertEqual(texts.count("[SEP]"), 2)
        self.assertEqual(r["tokens"][-1]["segment"], 1)
        self.assertFalse(r["truncated"])

    def test_classify_shapes_and_masks(self):
        n_cls = len(self.info["label_names"])
        base = self.client.classify(PAIRS)
        self.assertEqual(base.logits.shape, (3, n_cls))
        self.assertEqual(base.probabilities.dtype, np.float32)
        np.testing.assert_allclose(base.probabilities.sum(axis=1), 1, atol=1e-5)
        np.testing.assert_array_equal(base.labels, base.logits.argmax(axis=1))
        L, H = self.info["num_layers"], self.info["num_heads"]
        # Every way of saying "keep everything" gives the baseline.
        for mask in ({"ablate": []}, np.ones((L, H)), {"dense": [1] * (L * H)}):
            np.testing.assert_allclose(self.client.classify(PAIRS, mask).logits,
                                       base.logits, atol=1e-5)
        # Ablating every head equals keeping none; it changes the logits.
        all_heads = [(l, h) for l in range(L) for h in range(H)]
        ablated = self.client.classify(PAIRS, {"ablate": all_heads}).logits
        kept_none = self.client.classify(PAIRS, np.zeros((L, H))).logits
        np.testing.assert_allclose(ablated, kept_none, atol=1e-5)
        self.assertGreater(np.abs(ablated - base.logits).max(), 1e-4)
        kept = self.client.classify(PAIRS, {"keep": all_heads}).logits
        np.testing.assert_allclose(kept, base.logits, atol=1e-5)
        uniform = self.client.classify(PAIRS, {"ablate": [(0, 0)]},
                                       mode="uniform").logits
        self.assertEqual(uniform.shape, base.logits.shape)

    def test_attention_float32_and_float16(self):
        L, H = self.info["num_layers"], self.info["num_heads"]
        r32 = self.client.attention("the cat sat", "a dog")
        T = len(r32["tokens"])
        self.assertEqual(r32["maps"].shape, (L, H, T, T))
        self.assertEqual(r32["maps"].dtype, np.float32)
        np.testing.assert_allclose(r32["maps"].sum(axis=-1), 1, atol=1e-4)
        self.assertIsNotNone(r32["prediction"])
        sel = self.client.attention("the cat sat", "a dog", layers=[L - 1],
                                    heads=[H - 1, 0], encoding="float16")
        self.assertEqual(sel["layers"], [L - 1])
        self.assertEqual(sel["heads"], [H - 1, 0])
        self.assertEqual(sel["maps"].shape, (1, 2, T, T))
        np.testing.assert_allclose(sel["maps"][0, 0], r32["maps"][L - 1, H - 1],
                                   atol=2e-3)
        np.testing.assert_allclose(sel["maps"][0, 1], r32["maps"][L - 1, 0],
                                   atol=2e-3)
        # A zero-ablated head attends nowhere.
        masked = self.client.attention("the cat sat", layers=[0], heads=[1],
                                       mask={"ablate": [(0, 1)]})
        np.testing.assert_array_equal(masked["maps"], 0)
        words = self.client.attention("the cat sat", granularity="word")
        self.assertEqual(words["maps"].shape[-1], len(words["tokens"]))

    def test_sweep(self):
        L, H = self.info["num_layers"], self.info["num_heads"]
        examples = [(a, b, i % 2) for i, (a, b) in enumerate(PAIRS)]
        kinds = [ev.kind for ev in self.client.sweep(
            examples, [{"generator": "layers"}, {"ablate": [(0, 0)],
                                                 "id": "mine"}])]
        self.assertEqual(kinds[0], "plan")
        self.assertEqual(kinds.count("baseline"), 1)
        self.assertEqual(kinds.count("result"), L + 1)
        out = self.client.sweep_results(
            examples, [{"generator": "single_heads"},
                       {"generator": "random", "fraction": 0.5, "repeats": 2,
                        "seed": 7}, np.ones((L, H))])
        self.assertEqual(out["plan"]["num_masks"], L * H + 3)
        self.assertEqual(out["baseline"]["examples"], 3)
        results = out["results"]
        self.assertEqual([r["mask_index"] for r in results],
                         list(range(L * H + 3)))
        self.assertEqual(results[0]["mask_id"], "head-L0H0")
        self.assertEqual(results[0]["ablated"], [(0, 0)])
        # The all-ones explicit mask scores exactly the baseline.
        self.assertEqual(results[-1]["correct"], out["baseline"]["correct"])
        self.assertEqual(results[-1]["relative_change_percent"], 0)
        # Sweep accuracy agrees with Classify under the same mask.
        labels = self.client.classify(PAIRS, {"ablate": [(0, 0)]}).labels
        correct = int((labels == np.array([e[2] for e in examples])).sum())
        self.assertEqual(results[0]["correct"], correct)
        # Labels the model never predicts: a zero baseline, so no relative
        # change exists (None; 0 would read as "no change").
        labels = self.client.classify(PAIRS).labels
        n = len(self.info["label_names"])
        wrong = [(a, b, int(labels[i] + 1) % n)
                 for i, (a, b) in enumerate(PAIRS)]
        zero = self.client.sweep_results(wrong, [{"generator": "layers"}])
        self.assertEqual(zero["baseline"]["accuracy"], 0)
        self.assertEqual(
            [r["relative_change_percent"] for r in zero["results"]], [None] * L)


    def test_head_statistics(self):
        first = self.client.compute_head_statistics(PAIRS)
        self.assertRegex(first["id"], r"^hs-[0-9a-f]{16}$")
        self.assertEqual(first["examples"], len(PAIRS))
        self.assertGreater(first["tokens"], len(PAIRS))
        # The id is a digest of the model and the inputs: the same again.
        again = self.client.compute_head_statistics(PAIRS)
        self.assertEqual(again["id"], first["id"])
        self.assertTrue(again["already_held"])
        other = self.client.compute_head_statistics(PAIRS[:2])
        self.assertNotEqual(other["id"], first["id"])
        held = [s["id"] for s in self.client.info()["models"][0]["statistics"]]
        self.assertIn(first["id"], held)
        self.assertIn(other["id"], held)

    def test_mean_and_resample_ablation(self):
        stats = self.client.compute_head_statistics(PAIRS)["id"]
        base = self.client.classify(PAIRS).logits
        L, H = self.info["num_layers"], self.info["num_heads"]
        # Nothing ablated: the reference is never read.
        kept = self.client.classify(PAIRS, {"ablate": []}, mode="mean",
                                    statistics=stats).logits
        np.testing.assert_allclose(kept, base, atol=1e-5)
        all_heads = [(l, h) for l in range(L) for h in range(H)]
        mean = self.client.classify(PAIRS, {"ablate": all_heads}, mode="mean",
                                    statistics=stats).logits
        zero = self.client.classify(PAIRS, {"ablate": all_heads}).logits
        self.assertGreater(np.abs(mean - base).max(), 1e-4)
        self.assertGreater(np.abs(mean - zero).max(), 1e-4)
        again = self.client.classify(PAIRS, {"ablate": all_heads},
                                     mode="mean", statistics=stats).logits
        np.testing.assert_array_equal(mean, again)
        # Role means: another fill than the pooled mean, deterministic.
        role = self.client.classify(PAIRS, {"ablate": all_heads},
                                    mode="mean_by_role", statistics=stats).logits
        self.assertGreater(np.abs(role - mean).max(), 1e-4)
        np.testing.assert_array_equal(
            role, self.client.classify(PAIRS, {"ablate": all_heads},
                                       mode="mean_by_role",
                                       statistics=stats).logits)
        # Resample averages a metric over draws: Classify refuses it, naming
        # the field; a sweep scores it, the accuracy the mean over draws.
        with self.assertRaises(grpc.RpcError) as err:
            self.client.classify(PAIRS, {"ablate": all_heads},
                                 mode="resample", statistics=stats, draws=3)
        self.assertEqual(err.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("head_mask.mode=resample", err.exception.details())
        examples = [(a, b, i % 2) for i, (a, b) in enumerate(PAIRS)]
        # Every input needs another of its shape to draw from (the single
        # text too; an input is never its own source).
        more = self.client.compute_head_statistics(
            PAIRS + [("it was not", ""), ("a cat", "on the mat")])["id"]
        out = self.client.sweep_results(
            examples, [{"ablate": [(0, 0), (1, 1)], "id": "r"}],
            mode="resample", statistics=more, draws=3, seed=5,
            alignment="scaled")
        r = out["results"][0]
        self.assertEqual(r["draws"], 3)
        self.assertEqual(len(r["draw_correct"]), 3)
        self.assertEqual(r["scored"], 3 * len(PAIRS))
        self.assertEqual(sum(r["draw_correct"]), r["correct"])
        self.assertAlmostEqual(r["accuracy"], r["correct"] / r["scored"])
        low, high = r["accuracy_delta_ci"]
        self.assertLessEqual(low, r["accuracy_delta"])
        self.assertGreaterEqual(high, r["accuracy_delta"])
        self.assertIsNone(out["baseline"]["accuracy_delta_ci"])
        with self.assertRaises(grpc.RpcError):  # an id never computed
            self.client.classify(PAIRS, {"ablate": [(0, 0)]}, mode="mean",
                                 statistics="hs-0000000000000000")

    def test_sweep_with_reference(self):
        examples = [(a, b, i % 2) for i, (a, b) in enumerate(PAIRS)]
        out = self.client.sweep_results(
            examples, [{"ablate": [(0, 0)], "id": "m"}], mode="mean",
            reference=PAIRS)
        stats = self.client.compute_head_statistics(PAIRS)
        self.assertTrue(stats["already_held"])  # the sweep computed them
        labels = self.client.classify(PAIRS, {"ablate": [(0, 0)]},
                                      mode="mean",
                                      statistics=stats["id"]).labels
        correct = int((labels == np.array([e[2] for e in examples])).sum())
        self.assertEqual(out["results"][0]["correct"], correct)
        by_id = self.client.sweep_results(
            examples, [{"ablate": [(0, 0)], "id": "m"}], mode="mean",
            statistics=stats["id"])
        self.assertEqual(by_id["results"][0]["loss_sum"],
                         out["results"][0]["loss_sum"])

    def test_patch_heads(self):
        L, H = self.info["num_layers"], self.info["num_heads"]
        clean, corrupted = "this was not what they said", \
            "this is not what they said"
        out = self.client.patch(clean, corrupted)
        plan = out["plan"]
        self.assertEqual(plan["num_sites"], L * H)
        self.assertEqual(len(plan["tokens"]), plan["num_tokens"])
        self.assertEqual(len(plan["corrupted_tokens"]), plan["num_tokens"])
        self.assertEqual(plan["direction"], "clean-into-corrupted")
        results = out["results"]
        self.assertEqual([r["site_index"] for r in results],
                         list(range(L * H)))
        self.assertEqual([(r["layer"], r["head"]) for r in results],
                         [(l, h) for l in range(L) for h in range(H)])
        self.assertTrue(all(r["position"] is None for r in results))
        for r in results:
            diff = r["logits"][plan["answer"]] - r["logits"][plan["foil"]]
            self.assertAlmostEqual(diff, r["logit_diff"], places=4)
        # The same sites listed one by one score the same.
        listed = self.client.patch(
            clean, corrupted, sites=[(l, h) for l in range(L)
                                     for h in range(H)])
        for a, b in zip(results, listed["results"]):
            self.assertAlmostEqual(a["logit_diff"], b["logit_diff"], places=5)
        # The whole residual stream entering layer 0 (the embeddings)
        # patched from the clean run is the clean run.
        resid = self.client.patch(
            clean, corrupted, sites=[{"kind": "residual", "layer": 0}],
            answer=1, foil=0)
        self.assertEqual((resid["plan"]["answer"], resid["plan"]["foil"]),
                         (1, 0))
        r = resid["results"][0]
        self.assertAlmostEqual(r["logit_diff"],
                               resid["plan"]["clean_logit_diff"], places=4)
        if r["normalized_effect"] is not None:
            self.assertAlmostEqual(r["normalized_effect"], 1.0, places=3)
        # Patching an input into itself changes nothing: no ratio exists.
        same = self.client.patch(clean, clean)
        self.assertTrue(all(x["normalized_effect"] is None
                            for x in same["results"]))

    def test_patch_head_positions(self):
        L, H = self.info["num_layers"], self.info["num_heads"]
        out = self.client.patch("it was there", "it is there",
                                sites="head-positions",
                                direction="corrupted-into-clean")
        plan = out["plan"]
        T = plan["num_tokens"]
        self.assertEqual(plan["direction"], "corrupted-into-clean")
        self.assertEqual(plan["num_sites"], L * H * T)
        self.assertEqual(
            [(r["layer"], r["head"], r["position"]) for r in out["results"]],
            [(l, h, p) for l in range(L) for h in range(H) for p in range(T)])
        # The residual stream entering every layer and the encoder output,
        # per token; "noising" the encoder output's [CLS] gives the
        # corrupted run's score.
        res = self.client.patch("it was there", "it is there",
                                sites="residual-positions",
                                direction="corrupted-into-clean")
        self.assertEqual(
            [(r["kind"], r["layer"], r["position"]) for r in res["results"]],
            [("residual", l, p) for l in range(L + 1) for p in range(T)])
        cls_out = res["results"][L * T]
        self.assertAlmostEqual(cls_out["logit_diff"],
                               res["plan"]["corrupted_logit_diff"], places=4)
        with self.assertRaises(ValueError):
            self.client.patch("a", "b", sites="everything")

    def test_attribute(self):
        """Every method on two inputs: a score per unit, in the order
        asked; rollout's scores sum to 1 (attention rows); options and the
        mask reach the server."""
        out = self.client.attribute([PAIRS[0], "it was there"], steps=8)
        results = out["results"]
        self.assertEqual([r["input_index"] for r in results], [0, 1])
        for r in results:
            self.assertEqual(list(r["methods"]),
                             ["saliency", "gradient-x-input",
                              "integrated-gradients", "rollout", "flow",
                              "attention-x-gradient"])
            n = len(r["units"])
            self.assertEqual(len(r["tokens"]), n)  # token granularity
            self.assertEqual(r["units"][0]["text"], "[CLS]")
            for name, m in r["methods"].items():
                self.assertEqual(m["scores"].shape, (n,), name)
                self.assertTrue(np.all(np.isfinite(m["scores"])), name)
            self.assertTrue(np.all(r["methods"]["saliency"]["scores"] >= 0))
            self.assertAlmostEqual(r["methods"]["rollout"]["scores"].sum(),
                                   1.0, places=4)
            ig = r["methods"]["integrated-gradients"]
            self.assertEqual(ig["steps"], 8)
            self.assertIsNotNone(ig["completeness_gap"])
            self.assertIsNotNone(ig["baseline_output"])
            self.assertIsNone(r["methods"]["flow"]["completeness_gap"])
            self.assertEqual(r["output"], "logit")
            # The target defaults to the predicted class; f(x) is its logit.
            self.assertEqual(r["target"], int(np.argmax(r["logits"])))
            self.assertAlmostEqual(r["output_value"],
                                   float(r["logits"][r["target"]]), places=4)
        classify = self.client.classify([PAIRS[0]])
        np.testing.assert_allclose(results[0]["logits"], classify.logits[0],
                                   atol=1e-4)
        # One class, probabilities, words, two methods in this order, under
        # a mask (the logits then are the masked model's).
        masked = {"ablate": [(0, 1), (self.info["num_layers"] - 1, 0)]}
        word = self.client.attribute(
            ["the cat was here"], methods=["integrated-gradients", "saliency"],
            target=0, output="probability", baseline="zero",
            rule="trapezoid", steps=4, granularity="word", mask=masked)
        r = word["results"][0]
        self.assertEqual(list(r["methods"]),
                         ["integrated-gradients", "saliency"])
        self.assertEqual((r["target"], r["output"]), (0, "probability"))
        self.assertEqual([u["text"] for u in r["units"]],
                         ["[CLS]", "the", "cat", "was", "here", "[SEP]"])
        self.assertEqual(r["methods"]["integrated-gradients"]["steps"], 4)
        self.assertGreater(len(r["tokens"]), len(r["units"]))
        probabilities = self.client.classify(["the cat was here"],
                                             mask=masked).probabilities[0]
        self.assertAlmostEqual(r["output_value"], float(probabilities[0]),
                               places=4)
        with self.assertRaises(ValueError):
            self.client.attribute(["x"], methods=["lime"])
        with self.assertRaises(grpc.RpcError):  # resample: refused
            self.client.attribute(["x"], mask={"ablate": [(0, 0)],
                                               "mode": "resample",
                                               "statistics": "hs-1"})

    def test_patch_attribution(self):
        """Attribution patching: the same sites and plan as the exact run,
        each logit_diff an estimate with no logits."""
        L, H = self.info["num_layers"], self.info["num_heads"]
        clean, corrupted = "this was not what they said", \
            "this is not what they said"
        exact = self.client.patch(clean, corrupted)
        out = self.client.patch(clean, corrupted, method="attribution")
        self.assertEqual(exact["plan"]["method"], "exact")
        self.assertEqual(out["plan"]["method"], "attribution")
        for key in ("clean_logit_diff", "corrupted_logit_diff"):
            self.assertAlmostEqual(out["plan"][key], exact["plan"][key],
                                   places=4)
        self.assertEqual([(r["layer"], r["head"]) for r in out["results"]],
                         [(l, h) for l in range(L) for h in range(H)])
        for r in out["results"]:
            self.assertEqual(r["logits"].size, 0)
            self.assertTrue(np.isfinite(r["logit_diff"]))
        with self.assertRaises(ValueError):
            self.client.patch(clean, corrupted, method="guess")

    def test_module_docstring_runs(self):
        """The package's docstring example, run against this server."""
        result = doctest.testmod(bertology_client,
                                 extraglobs={"target": self.address},
                                 verbose=False)
        self.assertGreater(result.attempted, 5)
        self.assertEqual(result.failed, 0)

    def test_readme_example(self):
        """The README's first Python example, against this server."""
        try:
            import pandas  # noqa: F401
        except ImportError:
            self.skipTest("no pandas (python3-pandas)")
        with open(os.path.join(SOURCE_DIR, "README.md")) as f:
            block = re.search(r"```python\n(.*?)```", f.read(), re.S).group(1)
        self.assertIn('"localhost:50051"', block)
        namespace = {}
        exec(block.replace('"localhost:50051"', repr(self.address)),  # noqa: S102
             namespace)
        self.assertEqual(namespace["r"].probabilities.shape[0], 1)
        self.assertEqual(len(namespace["sweep"].to_frame()),
                         1 + self.info["num_layers"] * self.info["num_heads"])

    def test_to_frame(self):
        """Each result kind as a DataFrame, its rows as the result's."""
        try:
            import pandas  # noqa: F401
        except ImportError:
            self.skipTest("no pandas (python3-pandas)")
        L, H = self.info["num_layers"], self.info["num_heads"]
        examples = [(a, b, i % 2) for i, (a, b) in enumerate(PAIRS)]
        sweep = self.client.sweep_results(examples, [{"generator": "layers"}])
        f = sweep.to_frame()
        self.assertEqual(len(f), L + 1)
        self.assertEqual(list(f["mask_index"]), list(range(-1, L)))
        self.assertEqual(f["accuracy"].iloc[1], sweep["results"][0]["accuracy"])
        self.assertEqual(f["ablated"].iloc[1],
                         ";".join("L0H%d" % h for h in range(H)))
        imp = self.client.head_importance(examples)
        f = imp.to_frame()
        self.assertEqual(len(f), L * H)
        row = f[(f["layer"] == L - 1) & (f["head"] == 1)]
        self.assertEqual(float(row["importance"].iloc[0]),
                         float(imp["importance"][L - 1, 1]))
        seg = self.client.segment_words(["the cat", "sat on the mat"])
        self.assertIn("mcc", seg.to_frame().columns)
        stats = self.client.analyze_heads(PAIRS)
        f = stats.to_frame()
        self.assertEqual(f["pattern"].iloc[H + 2], stats["pattern"][1, 2])
        patch = self.client.patch("it was there", "it is there")
        f = patch.to_frame()
        self.assertEqual(len(f), len(patch["results"]))
        self.assertEqual(list(f["site_index"]), list(range(len(f))))
        prune = self.client.prune_curve(examples, threshold=0.5)
        self.assertEqual(len(prune.to_frame()), len(prune["steps"]))
        attr = self.client.attribute(PAIRS[:2], methods=["saliency", "flow"])
        f = attr.to_frame()
        units = sum(len(r["units"]) for r in attr["results"])
        self.assertEqual(len(f), units * 2)
        row = f[(f["input_index"] == 1) & (f["unit"] == 2) &
                (f["method"] == "flow")]
        self.assertEqual(float(row["score"].iloc[0]),
                         attr["results"][1]["methods"]["flow"]["scores"][2])

    def test_installed_package(self):
        """Under the package test (client/python/tests/install_test.sh): the
        client and its stubs come from the venv, not the source tree, and
        the version is the server's."""
        if os.environ.get("BERTOLOGY_EXPECT_INSTALLED") != "1":
            self.skipTest("run from the source tree")
        from bertology.v1 import bertology_pb2
        for module in (bertology_client, bertology_pb2):
            self.assertTrue(module.__file__.startswith(sys.prefix),
                            module.__file__)
        with open(os.path.join(SOURCE_DIR, "server", "service", "registry",
                               "version.h")) as f:
            version = re.search(r'kBertologyVersion\[\] = "([^"]+)"',
                                f.read()).group(1)
        self.assertEqual(bertology_client.__version__, version)
        self.assertTrue(os.path.exists(os.path.join(
            os.path.dirname(bertology_client.__file__), "py.typed")))


if __name__ == "__main__":
    unittest.main()
