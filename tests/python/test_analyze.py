"""AnalyzeHeads end to end: the real bertology-server, its Python client and
the `bertology analyze` CLI, against the float64 reference.

The server serves tests/golden/tiny-bert-cls (a sequence classifier) and,
written by make_head_checkpoints, a bare BertModel and a token classifier.
For a few texts and pairs, with and without a head mask (zero and uniform
mode), every statistic the server reduces is compared with the same
statistic computed by tests/golden/head_stats_reference.py (written from
the definitions) on make_golden.reference_encoder's float64 maps, on the
server's own tokenization, and so are the pattern classes (per head on
the means, and per map: each head's share of maps in each class). Plus:
the refusals naming their field, the CLI's head_stats.csv equal to the
RPC's numbers, and one of its SVGs rendered by headless Chromium with every
cell laid out.

Run by ctest; by hand:
  PYTHONPATH=build/python BERTOLOGY_BIN_DIR=build/bin \\
      /usr/bin/python3 -m unittest -v tests/python/test_analyze.py
"""

import csv
import math
import os
import shutil
import subprocess
import tempfile
import unittest

import grpc
import numpy as np
import torch

from bertology.v1 import bertology_pb2 as pb
from bertology.v1 import bertology_pb2_grpc as pb_grpc

from testlib import BIN_DIR, TINY_MODEL_DIR as MODEL_DIR, load_weights
from bertology_client import Client
import head_stats_reference as ref
import make_golden  # (the reference BERT)
import make_head_checkpoints as heads
from live_server import LiveServer

LAYERS = make_golden.CONFIG["num_hidden_layers"]
HEADS = make_golden.CONFIG["num_attention_heads"]
UNK_ID = 1  # [UNK] in make_golden's vocabulary
# Texts with punctuation, repeated words within and across segments, and
# an unknown character on both sides of a pair (which must not match).
INPUTS = [
    ("the cat sat on the mat.", ""),
    ("a dog, it was there!", "it was the dog."),
    ("they said this was not what she had", "what she said was not this"),
    ("the cat is in the box", "the dog is out"),
    ("no match here", "x y z"),
    ("the \u4e2d box", "\u4e2d in a box"),  # U+4E2D: [UNK] on both sides
]
MASK = [1.0] * HEADS + [0.0, 1.0, 0.0, 1.0] + [1.0, 0.5, 1.0, 1.0]
# Measured worst differences from the float64 reference over these inputs,
# three heads kinds and three masks: 1e-7 (the attention shares), 4e-7
# (entropy), 6e-7 (mean distance); the tolerances leave ~20-100x of that.
TOL = {"mean_distance": 2e-5, "entropy": 2e-5}
DEFAULT_TOL = 5e-6


class AnalyzeTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="bertology-analyze-")
        for name in ("base-st", "tokcls-st"):
            heads.write_variant(cls.tmp, name)
        flags = ["--model=tiny=" + MODEL_DIR,
                 "--model=base=" + os.path.join(cls.tmp, "base-st"),
                 "--model=tokcls=" + os.path.join(cls.tmp, "tokcls-st"),
                 "--threads=1", "--warmup_passes=1", "--max_examples_per_sweep=8",
                 "--max_batch_size=2"]
        cls.server = LiveServer(BIN_DIR, flags)
        cls.target = "127.0.0.1:%d" % cls.server.port
        cls.channel = grpc.insecure_channel(cls.target)
        cls.server.wait_serving(cls.channel)
        cls.stub = pb_grpc.BertologyStub(cls.channel)
        cls.client = Client(cls.target)
        cls.weights = {"tiny": load_weights(MODEL_DIR),
                       "base": load_weights(os.path.join(cls.tmp, "base-st")),
                       "tokcls": load_weights(os.path.join(cls.tmp, "tokcls-st"))}

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        cls.channel.close()
        cls.server.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def reference(self, model, inputs, mask=None, uniform=False):
        """head_stats_reference's dataset statistics on float64 maps."""
        examples = []
        values = mask if mask is not None else [1.0] * (LAYERS * HEADS)
        head_mask = torch.tensor(values, dtype=torch.float64).view(1, LAYERS, HEADS)
        for a, b in inputs:
            tokens = self.stub.Tokenize(
                pb.TokenizeRequest(model=model, text_a=a, text_b=b)).tokens
            ids = torch.tensor([[t.id for t in tokens]])
            types = torch.tensor([[t.segment for t in tokens]])
            _, attentions = make_golden.reference_encoder(
                self.weights[model], ids, types, torch.ones_like(ids), head_mask,
                torch.tensor([1 if uniform else 0]))
            maps = np.stack([a[0].numpy() for a in attentions])  # [L, H, T, T]
            examples.append((list(tokens), maps))
        return ref.dataset_stats(examples, UNK_ID)

    def assertMatches(self, got, want, context, per_map=False):
        for name in ref.STATISTICS:
            g, w = np.asarray(got[name], dtype=np.float64), want[name]
            self.assertEqual(g.shape, (LAYERS, HEADS), name)
            np.testing.assert_array_equal(np.isnan(g), np.isnan(w),
                                          err_msg="%s %s" % (context, name))
            ok = ~np.isnan(w)
            np.testing.assert_allclose(g[ok], w[ok], rtol=0,
                                       atol=TOL.get(name, DEFAULT_TOL),
                                       err_msg="%s %s" % (context, name))
        self.assertEqual(got["pattern"].tolist(), want["pattern"].tolist(), context)
        if per_map:
            self.assertEqual(got["map_pattern_share"].shape, (LAYERS, HEADS, 5))
            np.testing.assert_allclose(got["map_pattern_share"],
                                       want["map_pattern_share"], rtol=0,
                                       atol=1e-6, err_msg=context)
        else:
            self.assertIsNone(got["map_pattern_share"])
        for k in ("examples", "pair_examples", "examples_with_match"):
            self.assertEqual(got[k], want[k], "%s %s" % (context, k))
        if math.isnan(want["own_segment_share"]):
            self.assertTrue(math.isnan(got["own_segment_share"]))
        else:
            self.assertAlmostEqual(got["own_segment_share"],
                                   want["own_segment_share"], places=6)

    def test_statistics_match_reference(self):
        cases = [("texts", INPUTS[:1] + INPUTS[4:], None, None),
                 ("pairs", INPUTS, None, None),
                 ("zero-masked", INPUTS, MASK, "zero"),
                 ("uniform-masked", INPUTS, MASK, "uniform")]
        for label, inputs, mask, mode in cases:
            with self.subTest(case=label):
                progress = []
                got = self.client.analyze_heads(
                    inputs, mask=None if mask is None else {"dense": mask, "mode": mode},
                    model="tiny", on_progress=lambda d, t: progress.append((d, t)),
                    per_map_classes=True)
                want = self.reference("tiny", inputs, mask, mode == "uniform")
                self.assertMatches(got, want, label, per_map=True)
                # The last progress event says all examples were done.
                self.assertEqual(progress[-1], (len(inputs), len(inputs)))
        # The statistics are not vacuous: the pairs have matches, some
        # punctuation, and the mask moves the numbers.
        unmasked = self.client.analyze_heads(INPUTS, model="tiny")
        masked = self.client.analyze_heads(INPUTS, mask={"dense": MASK}, model="tiny")
        self.assertEqual(unmasked["examples_with_match"], 4)
        self.assertGreater(np.nanmax(unmasked["to_punctuation"]), 0.01)
        self.assertGreater(np.abs(unmasked["to_cls"] - masked["to_cls"]).max(), 0.01)
        # A zero-masked head's rows are all zero.
        self.assertEqual(masked["to_self"][1, 0], 0.0)
        self.assertEqual(masked["entropy"][1, 0], 0.0)
        # Without per_map_classes the shares stay off; the per-head classes
        # are the same either way.
        self.assertIsNone(unmasked["map_pattern_share"])
        per_map = self.client.analyze_heads(INPUTS, model="tiny",
                                            per_map_classes=True)
        self.assertEqual(per_map["pattern"].tolist(), unmasked["pattern"].tolist())
        # Special keys are V's alone: D never exceeds Clark's three
        # neighbour statistics, and falls short of them here.
        clark = unmasked["to_previous"] + unmasked["to_self"] + unmasked["to_next"]
        self.assertTrue((unmasked["diagonal"] <= clark + 1e-6).all())
        self.assertGreater((clark - unmasked["diagonal"]).max(), 0.01)

    def test_reference_planted_sep_map_is_vertical_only(self):
        """The reference's rules on a planted map: every row on its
        segment's [SEP] in a 7-token pair is vertical, per head and per
        map (adding Clark's previous/self/next would give D = 4/7 and
        vertical+diagonal)."""
        tokens = [{"text": x, "id": i, "segment": int(i > 3),
                   "special": x in ("[CLS]", "[SEP]")}
                  for i, x in enumerate(["[CLS]", "a", "b", "[SEP]", "c", "d",
                                         "[SEP]"])]
        m = np.zeros((1, 1, 7, 7))
        for i in range(7):
            m[0, 0, i, 3 if i <= 3 else 6] = 1.0
        want = ref.dataset_stats([(tokens, m)], UNK_ID)
        self.assertEqual(want["pattern"][0, 0], "vertical")
        self.assertEqual(want["diagonal"][0, 0], 0.0)
        self.assertAlmostEqual(want["to_next"][0, 0] + want["to_self"][0, 0], 4 / 7)
        np.testing.assert_array_equal(want["map_pattern_share"][0, 0], [1, 0, 0, 0, 0])

    def test_every_head_kind(self):
        for model in ("base", "tokcls"):
            with self.subTest(model=model):
                got = self.client.analyze_heads(INPUTS[1:3], model=model)
                self.assertMatches(got, self.reference(model, INPUTS[1:3]), model)

    def test_bad_input_names_the_field(self):
        def code_and_message(request):
            with self.assertRaises(grpc.RpcError) as e:
                list(self.stub.AnalyzeHeads(request, timeout=30))
            return e.exception.code(), e.exception.details()

        code, msg = code_and_message(pb.AnalyzeHeadsRequest())
        self.assertEqual(code, grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("inputs", msg)
        code, msg = code_and_message(pb.AnalyzeHeadsRequest(
            inputs=[pb.TextInput(text_a="a")] * 9))
        self.assertEqual(code, grpc.StatusCode.RESOURCE_EXHAUSTED)
        self.assertIn("max_examples_per_sweep", msg)
        code, msg = code_and_message(pb.AnalyzeHeadsRequest(
            inputs=[pb.TextInput(text_a="a"), pb.TextInput(text_a="")]))
        self.assertEqual(code, grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("inputs[1]", msg)
        request = pb.AnalyzeHeadsRequest(inputs=[pb.TextInput(text_a="a")])
        request.head_mask.dense.values.extend([1.0] * 5)
        code, msg = code_and_message(request)
        self.assertEqual(code, grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("head_mask", msg)
        request = pb.AnalyzeHeadsRequest(inputs=[pb.TextInput(text_a="a")])
        request.head_mask.ablate.heads.add(layer=LAYERS, head=0)
        code, msg = code_and_message(request)
        self.assertEqual(code, grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("head_mask", msg)
        code, msg = code_and_message(pb.AnalyzeHeadsRequest(
            model="nope", inputs=[pb.TextInput(text_a="a")]))
        self.assertEqual(code, grpc.StatusCode.NOT_FOUND)

    def test_cli_writes_csv_json_and_svgs(self):
        out = os.path.join(self.tmp, "cli-out")
        data = os.path.join(self.tmp, "pairs.tsv")
        # A labelled file on the bare encoder (no label set): analyze reads
        # no labels unless told to.
        with open(data, "w") as f:
            for a, b in INPUTS:
                f.write("%s\t%s\tpositive\n" % (a, b))
        r = subprocess.run(
            [os.path.join(BIN_DIR, "bertology"), "analyze", "--target=" + self.target,
             "--model=base", "--data=" + data, "--header=no",
             "--ablate=1:0,1:2", "--per-map", "--quiet", "--out-dir=" + out],
            capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        rpc = self.client.analyze_heads(
            INPUTS, mask={"ablate": [(1, 0), (1, 2)]}, model="base",
            per_map_classes=True)
        with open(os.path.join(out, "head_stats.csv")) as f:
            rows = list(csv.DictReader(f))
        self.assertEqual(len(rows), LAYERS * HEADS)
        for row in rows:
            l, h = int(row["layer"]), int(row["head"])
            for name in ref.STATISTICS:
                want = float(rpc[name][l, h])
                got = float(row[name])
                if math.isnan(want):
                    self.assertTrue(math.isnan(got), (name, l, h))
                else:
                    self.assertEqual(np.float32(got), np.float32(want), (name, l, h))
            self.assertEqual(row["pattern"], rpc["pattern"][l, h])
            for c, name in enumerate(("vertical", "diagonal", "vertical_diagonal",
                                      "block", "heterogeneous")):
                self.assertEqual(np.float32(row["map_" + name]),
                                 rpc["map_pattern_share"][l, h, c], (name, l, h))
        for name in list(ref.STATISTICS) + ["patterns"]:
            self.assertTrue(os.path.exists(os.path.join(out, name + ".svg")), name)
        self.assertTrue(os.path.exists(os.path.join(out, "head_stats.json")))
        # Empty data: a usage error, not a call.
        empty = os.path.join(self.tmp, "empty.tsv")
        open(empty, "w").close()
        r = subprocess.run(
            [os.path.join(BIN_DIR, "bertology"), "analyze", "--target=" + self.target,
             "--data=" + empty, "--label="], capture_output=True, text=True, timeout=60)
        self.assertNotEqual(r.returncode, 0)
        self.render_check(out)

    def render_check(self, out):
        """Headless Chromium lays out the pattern grid: one cell per head
        with a non-empty box, and the five legend swatches."""
        chromium = "/usr/bin/chromium"
        if not os.path.exists(chromium):
            self.skipTest("chromium not installed")
        with open(os.path.join(out, "patterns.svg")) as f:
            svg = f.read().split("?>", 1)[1]
        page = os.path.join(out, "render.html")
        with open(page, "w") as f:
            f.write("<!DOCTYPE html><html><body>" + svg + """
<script>
const cells = [...document.querySelectorAll('rect.cell')].filter(r => {
  const b = r.getBBox(); return b.width > 0 && b.height > 0; });
document.body.setAttribute('data-cells', cells.length);
document.body.setAttribute('data-heads', cells.map(
  r => 'L' + r.dataset.layer + 'H' + r.dataset.head).join(' '));
document.body.setAttribute('data-swatches',
  document.querySelectorAll('rect.legend-swatch').length);
</script></body></html>""")
        r = subprocess.run(
            ["timeout", "90", chromium, "--headless", "--no-sandbox", "--disable-gpu",
             "--no-first-run", "--disable-background-networking",
             "--user-data-dir=" + os.path.join(self.tmp, "chromium-profile"),
             "--dump-dom", "file://" + page],
            capture_output=True, text=True, timeout=120)
        dom = r.stdout
        self.assertIn('data-cells="%d"' % (LAYERS * HEADS), dom, r.stderr[-2000:])
        want = " ".join("L%dH%d" % (l, h) for l in range(LAYERS) for h in range(HEADS))
        self.assertIn('data-heads="%s"' % want, dom)
        self.assertIn('data-swatches="5"', dom)


if __name__ == "__main__":
    unittest.main()
