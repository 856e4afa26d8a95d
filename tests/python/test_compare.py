"""CompareAttention end to end: the real bertology-server, its Python
client and the `bertology compare` CLI, against the float64 reference.

The server serves tests/golden/tiny-bert-cls as "a" and, written here, "b":
the same checkpoint with layer 2's query and key weights perturbed (so its
layer-2 maps change and layers 0-1 do not), plus checkpoints that must be
refused: one layer fewer ("short"), a vocabulary one token smaller
("smallvocab") and two vocabulary entries swapped ("swapped", same size,
different encodings). Every cosine is compared at 1e-5 with one computed
here from make_golden.reference_encoder's float64 maps of both weight sets
on the server's own tokenization; so is the detail's difference map.

Run by ctest; by hand:
  PYTHONPATH=build/python BERTOLOGY_BIN_DIR=build/bin \\
      /usr/bin/python3 -m unittest -v tests/python/test_compare.py
"""

import csv
import json
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
import make_golden  # (the reference BERT and writer)
from make_golden import read_safetensors
from live_server import LiveServer

LAYERS = make_golden.CONFIG["num_hidden_layers"]
HEADS = make_golden.CONFIG["num_attention_heads"]
PERTURBED_LAYER = 2
INPUTS = [
    ("the cat sat on the mat.", ""),
    ("a dog, it was there!", "it was the dog."),
    ("they said this was not what she had", "what she said was not this"),
    ("no match here", "x y z"),
]
MASK = [1.0] * HEADS + [0.0, 1.0, 1.0, 1.0] + [1.0, 0.5, 1.0, 1.0]
TOL = 1e-5


def copy_checkpoint(dst, tensors, config=None, vocab=None):
    """A checkpoint directory: tiny-bert-cls's files with `tensors` as its
    weights and optionally another config/vocabulary."""
    os.makedirs(dst)
    for name in ("config.json", "vocab.txt", "tokenizer_config.json"):
        shutil.copy(os.path.join(MODEL_DIR, name), dst)
    if config is not None:
        with open(os.path.join(dst, "config.json"), "w") as f:
            json.dump(config, f)
    if vocab is not None:
        with open(os.path.join(dst, "vocab.txt"), "w") as f:
            f.write("\n".join(vocab) + "\n")
    make_golden.write_safetensors(tensors, os.path.join(dst, "model.safetensors"))


class CompareTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="bertology-compare-")
        raw = read_safetensors(os.path.join(MODEL_DIR, "model.safetensors"))
        with open(os.path.join(MODEL_DIR, "config.json")) as f:
            config = json.load(f)
        with open(os.path.join(MODEL_DIR, "vocab.txt")) as f:
            vocab = f.read().split("\n")[:config["vocab_size"]]
        gen = torch.Generator().manual_seed(13)
        perturbed = dict(raw)
        for part in ("query", "key"):
            k = next(k for k in raw if k.endswith(
                "layer.%d.attention.self.%s.weight" % (PERTURBED_LAYER, part)))
            perturbed[k] = raw[k] + 0.5 * torch.randn(raw[k].shape, generator=gen)
        cls.dir_b = os.path.join(cls.tmp, "b")
        copy_checkpoint(cls.dir_b, perturbed)
        short = {k: v for k, v in raw.items()
                 if "layer.%d." % (LAYERS - 1) not in k}
        copy_checkpoint(os.path.join(cls.tmp, "short"), short,
                        config=dict(config, num_hidden_layers=LAYERS - 1))
        small = dict(raw)
        emb = next(k for k in raw if k.endswith("word_embeddings.weight"))
        small[emb] = raw[emb][:-1].clone()
        copy_checkpoint(os.path.join(cls.tmp, "smallvocab"), small,
                        config=dict(config, vocab_size=config["vocab_size"] - 1),
                        vocab=vocab[:-1])
        swapped = list(vocab)
        # "the" and "a": frequent words, so most inputs encode differently.
        i, j = swapped.index("the"), swapped.index("a")
        swapped[i], swapped[j] = swapped[j], swapped[i]
        copy_checkpoint(os.path.join(cls.tmp, "swapped"), raw, vocab=swapped)
        flags = ["--model=a=" + MODEL_DIR, "--model=b=" + cls.dir_b]
        flags += ["--model=%s=%s" % (n, os.path.join(cls.tmp, n))
                  for n in ("short", "smallvocab", "swapped")]
        flags += ["--threads=1", "--warmup_passes=1",
                  "--max_examples_per_sweep=8", "--max_batch_size=2"]
        cls.server = LiveServer(BIN_DIR, flags)
        cls.target = "127.0.0.1:%d" % cls.server.port
        cls.channel = grpc.insecure_channel(cls.target)
        cls.server.wait_serving(cls.channel)
        cls.stub = pb_grpc.BertologyStub(cls.channel)
        cls.client = Client(cls.target)
        cls.weights = {"a": load_weights(MODEL_DIR), "b": load_weights(cls.dir_b)}

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        cls.channel.close()
        cls.server.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def maps(self, model, text_a, text_b, mask=None):
        """float64 [L, H, T, T] reference maps and the tokens."""
        tokens = self.stub.Tokenize(
            pb.TokenizeRequest(model="a", text_a=text_a, text_b=text_b)).tokens
        ids = torch.tensor([[t.id for t in tokens]])
        types = torch.tensor([[t.segment for t in tokens]])
        values = mask if mask is not None else [1.0] * (LAYERS * HEADS)
        head_mask = torch.tensor(values, dtype=torch.float64).view(1, LAYERS, HEADS)
        _, attentions = make_golden.reference_encoder(
            self.weights[model], ids, types, torch.ones_like(ids), head_mask,
            torch.tensor([0]))
        return np.stack([x[0].numpy() for x in attentions]), [t.text for t in tokens]

    def reference(self, inputs, mask=None, a="a", b="b"):
        total = np.zeros((LAYERS, HEADS))
        for text_a, text_b in inputs:
            ma, _ = self.maps(a, text_a, text_b, mask)
            mb, _ = self.maps(b, text_a, text_b, mask)
            fa = ma.reshape(LAYERS, HEADS, -1)
            fb = mb.reshape(LAYERS, HEADS, -1)
            with np.errstate(invalid="ignore", divide="ignore"):
                total += (fa * fb).sum(-1) / (np.linalg.norm(fa, axis=-1) *
                                              np.linalg.norm(fb, axis=-1))
        return total / len(inputs)

    def test_similarity_matches_reference(self):
        progress = []
        got = self.client.compare_attention(
            INPUTS, model_a="a", model_b="b",
            on_progress=lambda d, t: progress.append((d, t)))
        want = self.reference(INPUTS)
        self.assertEqual(got["similarity"].shape, (LAYERS, HEADS))
        np.testing.assert_allclose(got["similarity"], want, rtol=0, atol=TOL)
        self.assertEqual(progress[-1], (len(INPUTS), len(INPUTS)))
        self.assertEqual((got["model_a"], got["model_b"], got["examples"]),
                         ("a", "b", len(INPUTS)))
        # Unchanged layers are identical; the perturbed one clearly is not.
        np.testing.assert_allclose(got["similarity"][:PERTURBED_LAYER], 1.0,
                                   atol=1e-6)
        self.assertLess(got["similarity"][PERTURBED_LAYER].max(), 0.99)
        self.assertIsNone(got["detail"])

    def test_mask_applies_to_both(self):
        got = self.client.compare_attention(INPUTS, model_a="a", model_b="b",
                                            mask={"dense": MASK})
        want = self.reference(INPUTS, MASK)
        # The zero-masked head (1, 0) has no map: NaN, as the reference.
        self.assertTrue(np.isnan(got["similarity"][1, 0]))
        ok = ~np.isnan(want)
        np.testing.assert_array_equal(np.isnan(got["similarity"]), ~ok)
        np.testing.assert_allclose(got["similarity"][ok], want[ok], rtol=0, atol=TOL)

    def test_detail_difference_map(self):
        example, layer, head = 2, PERTURBED_LAYER, 1
        got = self.client.compare_attention(INPUTS, model_a="a", model_b="b",
                                            detail=(example, layer, head))
        d = got["detail"]
        ma, tokens = self.maps("a", *INPUTS[example])
        mb, _ = self.maps("b", *INPUTS[example])
        self.assertEqual(d["tokens"], tokens)
        self.assertEqual((d["example"], d["layer"], d["head"]), (example, layer, head))
        np.testing.assert_allclose(d["map_a"], ma[layer, head], rtol=0, atol=TOL)
        np.testing.assert_allclose(d["map_b"], mb[layer, head], rtol=0, atol=TOL)
        np.testing.assert_allclose(d["difference"], mb[layer, head] - ma[layer, head],
                                   rtol=0, atol=TOL)
        self.assertGreater(np.abs(d["difference"]).max(), 0.01)

    def test_model_with_itself_is_all_ones(self):
        got = self.client.compare_attention(INPUTS, model_a="b", model_b="b")
        np.testing.assert_allclose(got["similarity"], 1.0, atol=1e-6)
        # Empty names: the default model ("a") with itself.
        got = self.client.compare_attention(INPUTS[:1], model_a="", model_b="")
        self.assertEqual((got["model_a"], got["model_b"]), ("a", "a"))
        np.testing.assert_allclose(got["similarity"], 1.0, atol=1e-6)

    def test_bad_input_names_the_field(self):
        def code_and_message(**kwargs):
            kwargs.setdefault("model_a", "a")
            kwargs.setdefault("model_b", "b")
            with self.assertRaises(grpc.RpcError) as e:
                list(self.stub.CompareAttention(
                    pb.CompareAttentionRequest(**kwargs), timeout=30))
            return e.exception.code(), e.exception.details()

        one = [pb.TextInput(text_a="the cat")]
        code, msg = code_and_message()
        self.assertEqual(code, grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("inputs", msg)
        code, msg = code_and_message(inputs=one * 9)
        self.assertEqual(code, grpc.StatusCode.RESOURCE_EXHAUSTED)
        self.assertIn("max_examples_per_sweep", msg)
        code, msg = code_and_message(inputs=one + [pb.TextInput(text_a="")])
        self.assertEqual(code, grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("inputs[1]", msg)
        code, msg = code_and_message(inputs=one, with_detail=True, detail_example=1)
        self.assertEqual(code, grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("detail_example", msg)
        code, msg = code_and_message(inputs=one, with_detail=True,
                                     detail_head=pb.LayerHead(layer=LAYERS))
        self.assertEqual(code, grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("detail_head.layer", msg)
        code, msg = code_and_message(inputs=one, with_detail=True,
                                     detail_head=pb.LayerHead(head=-1))
        self.assertEqual(code, grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("detail_head.head", msg)
        request = pb.CompareAttentionRequest(model_a="a", model_b="b", inputs=one)
        request.head_mask.dense.values.extend([1.0] * 5)
        with self.assertRaises(grpc.RpcError) as e:
            list(self.stub.CompareAttention(request, timeout=30))
        self.assertEqual(e.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("head_mask", e.exception.details())
        code, msg = code_and_message(model_b="nope", inputs=one)
        self.assertEqual(code, grpc.StatusCode.NOT_FOUND)
        code, msg = code_and_message(model_b="short", inputs=one)
        self.assertEqual(code, grpc.StatusCode.FAILED_PRECONDITION)
        self.assertIn("layers", msg)
        code, msg = code_and_message(model_b="smallvocab", inputs=one)
        self.assertEqual(code, grpc.StatusCode.FAILED_PRECONDITION)
        self.assertIn("vocabulary", msg)
        # "x y" encodes the same in both; "the cat" does not.
        code, msg = code_and_message(
            model_b="swapped", inputs=[pb.TextInput(text_a="x y")] + one)
        self.assertEqual(code, grpc.StatusCode.FAILED_PRECONDITION)
        self.assertIn("inputs[1]", msg)
        self.assertIn("tokenized differently", msg)
        got = self.client.compare_attention(["x y"], model_a="a", model_b="swapped")
        np.testing.assert_allclose(got["similarity"], 1.0, atol=1e-6)

    def test_cli_writes_csv_json_and_svgs(self):
        out = os.path.join(self.tmp, "cli-out")
        data = os.path.join(self.tmp, "pairs.tsv")
        with open(data, "w") as f:
            for a, b in INPUTS:
                f.write("%s\t%s\n" % (a, b))
        r = subprocess.run(
            [os.path.join(BIN_DIR, "bertology"), "compare", "--target=" + self.target,
             "--model-a=a", "--model-b=b", "--data=" + data, "--header=no",
             "--detail=1:2:3", "--quiet", "--out-dir=" + out],
            capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        rpc = self.client.compare_attention(INPUTS, model_a="a", model_b="b",
                                            detail=(1, 2, 3))
        with open(os.path.join(out, "similarity.csv")) as f:
            rows = list(csv.DictReader(f))
        self.assertEqual(len(rows), LAYERS * HEADS)
        for row in rows:
            l, h = int(row["layer"]), int(row["head"])
            self.assertEqual(float(row["cosine_similarity"]), rpc["similarity"][l, h])
        with open(os.path.join(out, "similarity.json")) as f:
            j = json.load(f)
        np.testing.assert_array_equal(np.array(j["cosine_similarity"]), rpc["similarity"])
        np.testing.assert_array_equal(np.array(j["detail"]["difference"], dtype=np.float32),
                                      rpc["detail"]["difference"])
        for name in ("similarity.svg", "difference.svg"):
            self.assertTrue(os.path.exists(os.path.join(out, name)), name)
        # A bad --detail is a usage error, not a call.
        r = subprocess.run(
            [os.path.join(BIN_DIR, "bertology"), "compare", "--target=" + self.target,
             "--model-a=a", "--model-b=b", "--text-a=the cat", "--detail=1:2"],
            capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.render_check(out, len(rpc["detail"]["tokens"]))

    def render_check(self, out, size):
        """Headless Chromium lays out the similarity heatmap (one cell per
        head with a non-empty box) and the difference map (T x T cells)."""
        chromium = "/usr/bin/chromium"
        if not os.path.exists(chromium):
            self.skipTest("chromium not installed")
        svgs = []
        for name in ("similarity.svg", "difference.svg"):
            with open(os.path.join(out, name)) as f:
                svgs.append('<div id="%s">%s</div>' % (
                    name.split(".")[0], f.read().split("?>", 1)[1]))
        page = os.path.join(out, "render.html")
        with open(page, "w") as f:
            f.write("<!DOCTYPE html><html><body>" + "".join(svgs) + """
<script>
function laidOut(id) {
  return [...document.querySelectorAll('#' + id + ' rect.cell')].filter(r => {
    const b = r.getBBox(); return b.width > 0 && b.height > 0; });
}
const cells = laidOut('similarity');
document.body.setAttribute('data-cells', cells.length);
document.body.setAttribute('data-heads', cells.map(
  r => 'L' + r.dataset.layer + 'H' + r.dataset.head).join(' '));
document.body.setAttribute('data-diff-cells', laidOut('difference').length);
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
        self.assertIn('data-diff-cells="%d"' % (size * size), dom)


if __name__ == "__main__":
    unittest.main()
