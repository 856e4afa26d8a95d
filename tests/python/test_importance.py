"""HeadImportance and PruneCurve through the real bertology-server, against
the float64 reference of tests/golden/importance_reference.py (autograd and
finite differences, which must agree first).

Labels are the reference model's own unmasked predictions with every third
flipped, so accuracy is neither 0 nor 1 and masking moves it.

Run by ctest; by hand:
  PYTHONPATH=build/python BERTOLOGY_BIN_DIR=build/bin \\
      /usr/bin/python3 -m unittest -v tests/python/test_importance.py
"""

import os
import json
import random
import re
import shutil
import subprocess
import tempfile
import unittest

import grpc
import numpy as np

from bertology.v1 import bertology_pb2 as pb
from bertology.v1 import bertology_pb2_grpc as pb_grpc

from testlib import BIN_DIR, TINY_MODEL_DIR as MODEL_DIR
from bertology_client import Client
import importance_reference as ref
import make_golden
from make_golden import read_safetensors
from live_server import LiveServer

L, H = ref.LAYERS, ref.HEADS


def make_texts(n, seed=5):
    words = [t for t in make_golden.vocab_tokens()
             if not t.startswith("[") and not t.startswith("##") and len(t) > 1]
    rng = random.Random(seed)
    out = []
    for i in range(n):
        a = " ".join(rng.choice(words) for _ in range(rng.randint(2, 9)))
        b = (" ".join(rng.choice(words) for _ in range(rng.randint(1, 5)))
             if i % 3 == 0 else "")
        out.append((a, b))
    return out


class ImportanceTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.server = LiveServer(BIN_DIR, ["--model=tiny=" + MODEL_DIR,
                                          "--max_batch_size=5"])
        cls.target = "127.0.0.1:%d" % cls.server.port
        cls.channel = grpc.insecure_channel(cls.target)
        grpc.channel_ready_future(cls.channel).result(timeout=30)
        cls.server.wait_serving(cls.channel)
        cls.stub = pb_grpc.BertologyStub(cls.channel)
        cls.client = Client(cls.target)
        cls.w = read_safetensors(os.path.join(MODEL_DIR, "model.safetensors"))
        cls.texts = make_texts(16)
        rows = []
        for a, b in cls.texts:
            tokens = cls.stub.Tokenize(pb.TokenizeRequest(text_a=a, text_b=b)).tokens
            rows.append(([t.id for t in tokens], [t.segment for t in tokens]))
        cls.batch = ref.pad(rows)
        _, _, preds = ref.scores(cls.w, cls.batch, [0] * len(rows), [1.0] * (L * H))
        cls.labels = [(p + 1) % 3 if i % 3 == 2 else p for i, p in enumerate(preds)]
        cls.examples = [(a, b, y) for (a, b), y in zip(cls.texts, cls.labels)]

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        cls.channel.close()
        cls.server.stop()

    def reference(self, mask, uniform=False):
        """(autograd importance [L, H] float64, correct, loss_sum), after
        checking autograd against finite differences."""
        a, _ = ref.check_agreement(self.w, self.batch, self.labels, mask, uniform)
        correct, loss, _ = ref.scores(self.w, self.batch, self.labels, mask, uniform)
        return a, correct, loss

    def check_importance(self, got, want_raw, layer_norm, global_norm):
        raw = got["raw_importance"]
        want = want_raw.numpy()
        # float32 server vs float64 reference.
        np.testing.assert_allclose(raw, want, rtol=1e-4, atol=1e-6 * want.max())
        np.testing.assert_allclose(
            got["importance"], ref.normalize(want_raw, layer_norm, global_norm).numpy(),
            rtol=1e-4, atol=1e-5)

    def test_importance_matches_reference(self):
        want, correct, loss = self.reference([1.0] * (L * H))
        for layer_norm in (True, False):
            for global_norm in (True, False):
                with self.subTest(layer_norm=layer_norm, global_norm=global_norm):
                    got = self.client.head_importance(
                        self.examples, no_layer_norm=not layer_norm,
                        no_global_norm=not global_norm)
                    self.check_importance(got, want, layer_norm, global_norm)
                    self.assertEqual(got["correct"], correct)
                    self.assertEqual(got["examples"], len(self.examples))
                    self.assertEqual(got["scored"], len(self.examples))
                    self.assertAlmostEqual(got["loss_sum"], loss, delta=1e-3)
        self.assertGreater(correct, 0)
        self.assertLess(correct, len(self.examples))

    def test_importance_under_mask(self):
        values = [1.0] * (L * H)
        values[1] = 0.0
        values[6] = 0.5
        for mode, uniform in (("zero", False), ("uniform", True)):
            with self.subTest(mode=mode):
                want, correct, loss = self.reference(values, uniform)
                progress = []
                got = self.client.head_importance(
                    self.examples, mask={"dense": values, "mode": mode},
                    on_progress=lambda d, t: progress.append((d, t)))
                self.check_importance(got, want, True, True)
                self.assertEqual(got["correct"], correct)
                self.assertAlmostEqual(got["loss_sum"], loss, delta=1e-3)
                self.assertEqual(progress[-1], (16, 16))

    def mean_reference(self):
        """(statistics id, losses(m)) for mean mode: the statistics from
        ComputeHeadStatistics over other texts, and per-example losses
        [B] under m [B, L, H] by tests/golden/intervention_reference.py's
        float64 forward (its own hooks, not the server's code), with the
        means it computes itself over the same texts."""
        import torch
        import intervention_reference as iref
        if getattr(self, "_mean_reference", None) is not None:
            return self._mean_reference
        w = {k: v.double() for k, v in self.w.items()}
        ref_texts = make_texts(10, seed=11)
        st = self.client.compute_head_statistics(ref_texts)
        rows = []
        for a, b in ref_texts:
            tokens = self.stub.Tokenize(pb.TokenizeRequest(text_a=a, text_b=b)).tokens
            rows.append(([t.id for t in tokens], [t.segment for t in tokens]))
        r_ids, r_types, r_mask = ref.pad(rows)
        n = r_ids.shape[0]
        _, ctxs, _ = iref.forward(w, r_ids, r_types, r_mask,
                                  torch.ones(n, L, H, dtype=torch.float64))
        real = r_mask.double()[:, None, :, None]
        mean = torch.stack([(c * real).sum((0, 2)) / r_mask.sum() for c in ctxs])
        self.assertEqual(st["tokens"], int(r_mask.sum()))
        ids, types, amask = self.batch
        labels = torch.tensor(self.labels)

        def losses(m):
            logits = iref.forward(w, ids, types, amask, m, fill=mean)[0]
            return (-torch.log_softmax(logits, -1).gather(1, labels[:, None])[:, 0],
                    logits)
        type(self)._mean_reference = (st["id"], losses)
        return self._mean_reference

    def mean_importance(self, point):
        """Reference importance [L, H] in mean mode at mask `point` [L * H],
        by autograd, after checking it against central differences."""
        import torch
        _, losses = self.mean_reference()
        b = self.batch[0].shape[0]
        base = torch.tensor(point, dtype=torch.float64).view(1, L, H).repeat(b, 1, 1)
        m = base.clone().requires_grad_(True)
        (g,) = torch.autograd.grad(losses(m)[0].sum(), m)
        want = g.abs().sum(0)
        with torch.no_grad():  # central differences, per example
            fd = torch.zeros(L, H, dtype=torch.float64)
            for l in range(L):
                for h in range(H):
                    plus, minus = base.clone(), base.clone()
                    plus[:, l, h] += 1e-6
                    minus[:, l, h] -= 1e-6
                    fd[l, h] = ((losses(plus)[0] - losses(minus)[0]) / 2e-6).abs().sum()
        np.testing.assert_allclose(fd.numpy(), want.numpy(), rtol=1e-5)
        return want

    def test_importance_in_mean_mode(self):
        """Mean mode: d loss / d m of o' = m o + (1 - m) mean, against the
        float64 reference (mean_reference, mean_importance)."""
        statistics, _ = self.mean_reference()
        values = [1.0] * (L * H)
        values[1] = 0.0
        values[6] = 0.5
        for point in (values, [1.0] * (L * H)):
            with self.subTest(mask=point):
                want = self.mean_importance(point)
                mask = ({"dense": point, "mode": "mean", "statistics": statistics}
                        if point is values else None)
                got = self.client.head_importance(
                    self.examples, mask=mask, mode="mean", statistics=statistics,
                    no_layer_norm=True, no_global_norm=True)
                np.testing.assert_allclose(got["raw_importance"], want.numpy(),
                                           rtol=1e-4, atol=1e-6 * want.max().item())
                zero, _, _ = self.reference(point)
                self.assertGreater((want - zero).abs().max().item(), 1e-2)
        # Resample has no gradient form; mean needs statistics held here.
        for kwargs, field in (({"mode": "resample", "statistics": statistics}, "resample"),
                              ({"mode": "mean"}, "head_mask.statistics"),
                              ({"mode": "mean", "statistics": "hs-00"}, "hs-00")):
            with self.subTest(**kwargs):
                with self.assertRaises(grpc.RpcError) as err:
                    self.client.head_importance(self.examples, **kwargs)
                self.assertEqual(err.exception.code(), grpc.StatusCode.INVALID_ARGUMENT
                                 if field != "hs-00" else
                                 grpc.StatusCode.FAILED_PRECONDITION)
                self.assertIn(field, err.exception.details())

    def test_prune_curve_in_mean_mode(self):
        """Pruned heads moved to their means: each step's accuracy and the
        heads it masks follow the float64 reference in mean mode."""
        import torch
        statistics, losses = self.mean_reference()
        curve = self.client.prune_curve(self.examples, threshold=0.5,
                                        step_fraction=0.25, mode="mean",
                                        statistics=statistics)
        steps = curve["steps"]
        self.assertGreaterEqual(len(steps), 2)
        b = self.batch[0].shape[0]
        masked = set()
        for s in steps:
            values = [1.0] * (L * H)
            for lh in s["masked"]:
                values[lh[0] * H + lh[1]] = 0.0
            with torch.no_grad():
                m = torch.tensor(values, dtype=torch.float64).view(1, L, H).repeat(b, 1, 1)
                preds = losses(m)[1].argmax(-1).tolist()
            correct = sum(int(p == y) for p, y in zip(preds, self.labels))
            with self.subTest(step=s["step"]):
                self.assertAlmostEqual(s["accuracy"], correct / len(self.examples),
                                       places=12)
                if s["step"] > 0:
                    prev = [1.0] * (L * H)
                    for h in masked:
                        prev[h] = 0.0
                    imp = ref.normalize(self.mean_importance(prev)).view(-1).numpy()
                    new = {lh[0] * H + lh[1] for lh in s["masked_this_step"]}
                    rest = [imp[i] for i in range(L * H)
                            if i not in masked and i not in new]
                    if rest:
                        self.assertLessEqual(max(imp[i] for i in new), min(rest) + 1e-6)
                    masked |= new
        with self.assertRaises(grpc.RpcError) as err:
            self.client.prune_curve(self.examples, mode="mean")
        self.assertIn("statistics", err.exception.details())
        with self.assertRaises(grpc.RpcError) as err:
            self.client.prune_curve(self.examples, mode="resample")
        self.assertIn("resample", err.exception.details())

    def test_prune_curve_follows_reference(self):
        curve = self.client.prune_curve(self.examples, threshold=0.5,
                                        step_fraction=0.25)
        steps = curve["steps"]
        self.assertGreaterEqual(len(steps), 2)
        masked = set()
        base_acc = None
        for s in steps:
            values = [1.0] * (L * H)
            for lh in s["masked"]:
                values[lh[0] * H + lh[1]] = 0.0
            correct, _, _ = ref.scores(self.w, self.batch, self.labels, values)
            with self.subTest(step=s["step"]):
                self.assertAlmostEqual(s["accuracy"], correct / len(self.examples),
                                       places=12)
                self.assertEqual(s["heads_left"], L * H - len(s["masked"]))
                if s["step"] == 0:
                    base_acc = s["accuracy"]
                    self.assertEqual(s["masked"], [])
                else:
                    # The least important unmasked heads by the reference's
                    # importance under the previous step's mask.
                    prev = [1.0] * (L * H)
                    for h in masked:
                        prev[h] = 0.0
                    imp = ref.normalize(self.reference(prev)[0]).view(-1).numpy()
                    new = {lh[0] * H + lh[1] for lh in s["masked_this_step"]}
                    self.assertEqual(len(new), min(3, L * H - len(masked)))
                    self.assertFalse(new & masked)
                    rest = [imp[i] for i in range(L * H)
                            if i not in masked and i not in new]
                    if rest:
                        self.assertLessEqual(max(imp[i] for i in new), min(rest) + 1e-6)
                    masked |= new
                self.assertEqual({lh[0] * H + lh[1] for lh in s["masked"]}, masked)
        last = steps[-1]
        self.assertTrue(last["accuracy"] < 0.5 * base_acc or last["heads_left"] == 0)
        for s in steps[:-1]:
            self.assertGreaterEqual(s["accuracy"], 0.5 * base_acc)
        above = [s for s in steps if s["accuracy"] >= 0.5 * base_acc]
        self.assertEqual(curve["kept"], above[-1])

    def test_cli_importance_and_prune(self):
        """`bertology importance` and `bertology prune` with --out-dir, as
        the README shows them, against the RPCs' own answers."""
        tmp = tempfile.mkdtemp(prefix="bertology-importance-")
        self.addCleanup(shutil.rmtree, tmp, True)
        data = os.path.join(tmp, "data.tsv")
        with open(data, "w") as f:
            for a, b, y in self.examples:
                f.write("%s\t%s\t%d\n" % (a, b, y))
        cli = [os.path.join(BIN_DIR, "bertology")]
        common = ["--target=" + self.target, "--data=" + data, "--header=no",
                  "--text-a=0", "--text-b=1", "--label=2", "--quiet"]
        out = os.path.join(tmp, "importance")
        r = subprocess.run(cli + ["importance"] + common + ["--out-dir=" + out],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        want = self.client.head_importance(self.examples)
        with open(os.path.join(out, "importance.csv")) as f:
            rows = [line.split(",") for line in f.read().splitlines()[1:]]
        self.assertEqual(len(rows), L * H)
        got = np.array([float(row[2]) for row in rows]).reshape(L, H)
        np.testing.assert_allclose(got, want["importance"], rtol=1e-12)
        with open(os.path.join(out, "importance.svg")) as f:
            self.assertEqual(f.read().count('class="cell"'), L * H)

        out = os.path.join(tmp, "prune")
        r = subprocess.run(cli + ["prune"] + common + [
            "--threshold=0.5", "--step=0.25", "--out-dir=" + out],
            capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        curve = self.client.prune_curve(self.examples, threshold=0.5,
                                        step_fraction=0.25)
        with open(os.path.join(out, "prune_curve.json")) as f:
            printed = json.load(f)
        self.assertEqual([(s["step"], s["heads_left"], s["accuracy"])
                          for s in printed["steps"]],
                         [(s["step"], s["heads_left"], s["accuracy"])
                          for s in curve["steps"]])
        self.assertEqual(printed["kept"]["step"], curve["kept"]["step"])
        with open(os.path.join(out, "prune_curve.svg")) as f:
            svg = f.read()
        self.assertEqual(len(re.findall(r'<circle class="point', svg)),
                         len(curve["steps"]))
        self.assertEqual(svg.count('class="point kept"'), 1)
        self.assertIn('class="threshold"', svg)
        # A bad threshold is the server's INVALID_ARGUMENT, exit 1.
        r = subprocess.run(cli + ["prune"] + common + ["--threshold=1.5"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("threshold", r.stderr)

    def test_prune_curve_defaults_and_progress(self):
        events = list(self.stub.PruneCurve(pb.PruneCurveRequest(examples=[
            pb.LabeledExample(input=pb.TextInput(text_a=a, text_b=b), label=y)
            for a, b, y in self.examples])))
        kinds = [e.WhichOneof("event") for e in events]
        self.assertIn("progress", kinds)
        self.assertEqual(kinds[-1], "kept")
        steps = [e.step for e in events if e.WhichOneof("event") == "step"]
        # max(1, floor(0.1 * 12)) = 1 head a step.
        for s in steps[1:]:
            self.assertEqual(len(s.masked_this_step), 1)

    def test_bad_input(self):
        ex = [pb.LabeledExample(input=pb.TextInput(text_a="the"), label=0)]
        bad_label = [pb.LabeledExample(input=pb.TextInput(text_a="the"), label=3)]
        cases = [
            (self.stub.HeadImportance, pb.HeadImportanceRequest(), "examples"),
            (self.stub.HeadImportance,
             pb.HeadImportanceRequest(examples=bad_label), "examples[0].label"),
            (self.stub.PruneCurve, pb.PruneCurveRequest(), "examples"),
            (self.stub.PruneCurve,
             pb.PruneCurveRequest(examples=bad_label), "examples[0].label"),
        ]
        for t in (-0.5, 1.5, float("nan")):
            cases.append((self.stub.PruneCurve,
                          pb.PruneCurveRequest(examples=ex, threshold=t), "threshold"))
            cases.append((self.stub.PruneCurve,
                          pb.PruneCurveRequest(examples=ex, step_fraction=t),
                          "step_fraction"))
        for rpc, request, field in cases:
            with self.subTest(field=field, request=str(request)):
                with self.assertRaises(grpc.RpcError) as err:
                    list(rpc(request))
                self.assertEqual(err.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
                self.assertIn(field, err.exception.details())


if __name__ == "__main__":
    unittest.main()
