"""SegmentWords end to end: the real bertology-server, its Python client and
the `bertology segment` CLI.

On tests/golden/tiny-bert-cls (letters are single pieces there: "q", "##x",
...), "words" made of letters are scored by the server and by an
independent implementation of the rule below on make_golden's float64
reference maps, with and without a head mask; every per-head count must be
equal. The shipped character model (models/querytitle-zh-tiny) runs on its
test_words.tsv rows. Plus the refusals naming their field and the CLI's
segment_heads.csv equal to the RPC's numbers.

The rule (server/core/segment/word_segmentation.h), written again here from
the proto's comment: for each non-special one-character piece i, j = argmax
of its map row over the real tokens (lowest j on ties); "end" iff j is a
[SEP], "internal" iff j == i + 1 is a one-character piece of the same
segment, else "none". Gold: a word's last character ends it.

Scored against chance (also from the proto's comments): per head the
Matthews correlation of "end" against "not end" (0 where a factor under
the root is 0) and the balanced accuracy (the mean over the gold classes
present of the share of that class predicted right); heads ranked by MCC,
then balanced accuracy, then index; and two trivial heads scored alike:
always-next (the rule with j = i + 1) and always-[SEP] ("end" everywhere),
with the oracle of the two.

Run by ctest; by hand:
  PYTHONPATH=build/python BERTOLOGY_BIN_DIR=build/bin \\
      /usr/bin/python3 -m unittest -v tests/python/test_segment.py
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

from testlib import BIN_DIR, SOURCE_DIR, TINY_MODEL_DIR as MODEL_DIR, load_weights
from bertology_client import Client
import make_golden  # (the reference BERT)
from live_server import LiveServer

SHIPPED_DIR = os.path.join(SOURCE_DIR, "models", "querytitle-zh-tiny")

LAYERS = make_golden.CONFIG["num_hidden_layers"]
HEADS = make_golden.CONFIG["num_attention_heads"]
# Letter words; no text starts with a whole-word piece of the vocabulary
# longer than one letter, so each letter is one piece (checked below).
EXAMPLES = [
    (["qx", "zjv", "k"], None),
    (["bq", "x"], ["zz", "kjq", "vx"]),
    (["xkqz", "j", "vv"], ["q", "xj"]),
    (["zq", "jx", "kv", "b"], None),
    (["kk", "q"], ["xzv"]),
]
MASK = [1.0] * HEADS + [0.0, 1.0, 0.0, 1.0] + [1.0, 0.5, 1.0, 1.0]


def request_of(examples):
    req = pb.SegmentWordsRequest()
    for wa, wb in examples:
        req.examples.add(input=pb.TextInput(text_a="".join(wa),
                                            text_b="".join(wb or [])),
                         words_a=wa, words_b=wb or [])
    return req


def reference_counts(examples_maps):
    """(true_ends, predicted_ends, correct, characters, gold_ends, right)
    per head from (tokens, gold_end per token or None, maps [L, H, T, T]),
    and a dict of the two trivial heads' (true_ends, predicted_ends,
    correct) with "right" (characters either gets right)."""
    tp = np.zeros((LAYERS, HEADS), dtype=np.int64)
    pe = np.zeros_like(tp)
    ok = np.zeros_like(tp)
    right_rows = []
    chars = gold_ends = 0
    base = {"always_next": [0, 0, 0], "always_sep": [0, 0, 0], "right": 0}
    for tokens, gold, maps in examples_maps:
        def is_char(i):
            return gold[i] is not None

        def predict(i, j):
            end = tokens[j].special and tokens[j].text == "[SEP]"
            internal = (j == i + 1 and is_char(j)
                        and tokens[j].segment == tokens[i].segment)
            return end, internal

        for i in range(len(tokens)):
            if not is_char(i):
                continue
            chars += 1
            gold_ends += gold[i]
            right = np.zeros((LAYERS, HEADS), dtype=bool)
            for l in range(LAYERS):
                for h in range(HEADS):
                    j = int(np.argmax(maps[l, h, i]))  # first maximum
                    end, internal = predict(i, j)
                    tp[l, h] += end and gold[i]
                    pe[l, h] += end
                    r = end if gold[i] else internal
                    ok[l, h] += r
                    right[l, h] = r
            right_rows.append(right)
            either = False
            for name, (end, internal) in (("always_next", predict(i, i + 1)),
                                          ("always_sep", (True, False))):
                r = end if gold[i] else internal
                counts = base[name]
                counts[0] += end and gold[i]
                counts[1] += end
                counts[2] += r
                either = either or r
            base["right"] += either
    return tp, pe, ok, chars, gold_ends, np.array(right_rows), base


def chance_scores(tp, pe, ok, chars, gold_ends):
    """(mcc, balanced_accuracy), float64 arrays, from the counts."""
    tp, pe, ok = (np.asarray(x, dtype=np.float64) for x in (tp, pe, ok))
    fp = pe - tp
    fn = gold_ends - tp
    tn = chars - tp - fp - fn
    den = (tp + fp) * (tp + fn) * (tn + fp) * (tn + fn)
    with np.errstate(invalid="ignore", divide="ignore"):
        mcc = np.where(den > 0, (tp * tn - fp * fn) / np.sqrt(den), 0.0)
    internal = chars - gold_ends
    parts = []
    if gold_ends:
        parts.append(tp / gold_ends)
    if internal:
        parts.append((ok - tp) / internal)
    return mcc, sum(parts) / len(parts)


class SegmentTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="bertology-segment-")
        flags = ["--model=tiny=" + MODEL_DIR,
                 "--model=shipped=" + SHIPPED_DIR,
                 "--threads=1", "--warmup_passes=1",
                 "--max_examples_per_sweep=400", "--max_batch_size=4"]
        cls.server = LiveServer(BIN_DIR, flags)
        cls.target = "127.0.0.1:%d" % cls.server.port
        cls.channel = grpc.insecure_channel(cls.target)
        cls.server.wait_serving(cls.channel)
        cls.stub = pb_grpc.BertologyStub(cls.channel)
        cls.client = Client(cls.target)
        cls.weights = load_weights(MODEL_DIR)

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        cls.channel.close()
        cls.server.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def reference(self, examples, mask=None):
        values = mask if mask is not None else [1.0] * (LAYERS * HEADS)
        head_mask = torch.tensor(values, dtype=torch.float64).view(1, LAYERS, HEADS)
        rows = []
        for wa, wb in examples:
            tokens = list(self.stub.Tokenize(pb.TokenizeRequest(
                model="tiny", text_a="".join(wa), text_b="".join(wb or []))).tokens)
            gold = []
            ends = {0: [], 1: []}
            for seg, words in ((0, wa), (1, wb or [])):
                for w in words:
                    ends[seg].extend([False] * (len(w) - 1) + [True])
            for t in tokens:
                if t.special:
                    gold.append(None)
                    continue
                # The texts are letters only: one piece per letter.
                self.assertEqual(t.char_end - t.char_start, 1, t.text)
                gold.append(ends[t.segment][t.char_start])
            ids = torch.tensor([[t.id for t in tokens]])
            types = torch.tensor([[t.segment for t in tokens]])
            _, attentions = make_golden.reference_encoder(
                self.weights, ids, types, torch.ones_like(ids), head_mask,
                torch.tensor([0]))
            maps = np.stack([a[0].numpy() for a in attentions])
            rows.append((tokens, gold, maps))
        return reference_counts(rows)

    def test_matches_reference(self):
        for label, mask in (("unmasked", None), ("masked", MASK)):
            with self.subTest(case=label):
                progress = []
                got = self.client.segment_words(
                    EXAMPLES, mask=None if mask is None else {"dense": mask},
                    model="tiny", top_k=3,
                    on_progress=lambda d, t: progress.append((d, t)))
                tp, pe, ok, chars, gold_ends, right, base = self.reference(
                    EXAMPLES, mask)
                self.assertEqual(progress[-1], (len(EXAMPLES), len(EXAMPLES)))
                self.assertEqual(got["characters"], chars)
                self.assertEqual(got["gold_ends"], gold_ends)
                self.assertEqual(got["skipped_pieces"], 0)
                np.testing.assert_array_equal(got["true_ends"], tp)
                np.testing.assert_array_equal(got["predicted_ends"], pe)
                np.testing.assert_array_equal(got["correct"], ok)
                with np.errstate(invalid="ignore", divide="ignore"):
                    f1 = 2 * tp / (pe + gold_ends)
                    precision = tp / pe
                np.testing.assert_allclose(got["f1"], f1, atol=1e-6)
                np.testing.assert_allclose(got["precision"], precision, atol=1e-6)
                np.testing.assert_allclose(got["recall"], tp / gold_ends, atol=1e-6)
                np.testing.assert_allclose(got["accuracy"], ok / chars, atol=1e-6)
                self.assertAlmostEqual(got["oracle_all_heads"],
                                       right.reshape(chars, -1).any(1).mean())
                mcc, balanced = chance_scores(tp, pe, ok, chars, gold_ends)
                np.testing.assert_allclose(got["mcc"], mcc, atol=1e-6)
                np.testing.assert_allclose(got["balanced_accuracy"], balanced,
                                           atol=1e-6)
                # The trivial heads, scored alike on the same characters.
                for name in ("always_next", "always_sep"):
                    b, (btp, bpe, bok) = got["baselines"][name], base[name]
                    self.assertEqual((b["true_ends"], b["predicted_ends"],
                                      b["correct"]), (btp, bpe, bok), name)
                    bmcc, bbal = chance_scores(btp, bpe, bok, chars, gold_ends)
                    self.assertAlmostEqual(b["mcc"], float(bmcc), places=12)
                    self.assertAlmostEqual(b["balanced_accuracy"], bbal,
                                           places=12)
                    self.assertAlmostEqual(b["accuracy"], bok / chars, places=12)
                    self.assertAlmostEqual(b["f1"], 2 * btp / (bpe + gold_ends),
                                           places=12)
                self.assertEqual(got["baselines"]["always_sep"]["mcc"], 0.0)
                self.assertEqual(got["baselines"]["always_sep"]["balanced_accuracy"],
                                 0.5)
                self.assertAlmostEqual(got["oracle_baselines"], base["right"] / chars)
                self.assertEqual(got["oracle_baselines"], 1.0)  # letters: one piece each
                # best_heads: by MCC, then balanced accuracy, then index
                # (float64 scores from the counts, as the server ranks).
                order = sorted(range(LAYERS * HEADS), key=lambda k: (
                    -mcc.flat[k], -balanced.flat[k], k))
                self.assertEqual([l * HEADS + h for l, h in got["best_heads"]],
                                 order[:3])
                top = right.reshape(chars, -1)[:, order[:3]].any(1).mean()
                self.assertAlmostEqual(got["oracle_top_heads"], top)
                view = got["view"]
                self.assertEqual("".join(view["characters"]), "qxzjvk")
                self.assertEqual(view["gold_end"],
                                 [False, True, False, False, True, True])
                self.assertEqual(view["head"], got["best_heads"][0])
        # The mask moves the numbers (not vacuous).
        a = self.client.segment_words(EXAMPLES, model="tiny")
        b = self.client.segment_words(EXAMPLES, mask={"dense": MASK}, model="tiny")
        self.assertFalse(np.array_equal(a["correct"], b["correct"]))

    def test_shipped_model_on_its_words(self):
        path = os.path.join(SHIPPED_DIR, "data", "test_words.tsv")
        with open(path, encoding="utf-8") as f:
            rows = [line.rstrip("\n").split("\t") for line in f][:200]
        got = self.client.segment_words([(q, t) for q, t, _ in rows],
                                        model="shipped")
        self.assertEqual(got["examples"], 200)
        self.assertEqual(got["skipped_pieces"], 0)  # one piece per character
        self.assertEqual(got["characters"],
                         sum(len(q.replace(" ", "")) + len(t.replace(" ", ""))
                             for q, t, _ in rows))
        best = got["best_heads"][0]
        self.assertEqual(got["mcc"][best], np.nanmax(got["mcc"]))
        self.assertEqual(got["view"]["head"], best)
        self.assertGreaterEqual(got["oracle_all_heads"], got["oracle_top_heads"])
        self.assertGreaterEqual(got["oracle_top_heads"], np.nanmax(got["accuracy"]))
        # The trivial heads, from the words alone: always-next ends a word
        # exactly at the last character of each text (its next token is a
        # [SEP]) and calls every other character internal; always-[SEP]
        # ends every word.
        texts = [x for q, t, _ in rows for x in (q, t) if x.replace(" ", "")]
        ends = sum(len(x.split()) for x in texts)
        chars = got["characters"]
        self.assertEqual(got["gold_ends"], ends)
        nxt, sep = got["baselines"]["always_next"], got["baselines"]["always_sep"]
        self.assertEqual((nxt["true_ends"], nxt["predicted_ends"]),
                         (len(texts), len(texts)))
        self.assertEqual(nxt["correct"], chars - ends + len(texts))
        self.assertEqual(nxt["precision"], 1.0)
        self.assertEqual((sep["true_ends"], sep["predicted_ends"], sep["correct"]),
                         (ends, chars, ends))
        self.assertEqual((sep["mcc"], sep["balanced_accuracy"]), (0.0, 0.5))
        # Together they are right on every character: the yardstick of the
        # oracle over all heads.
        self.assertEqual(got["oracle_baselines"], 1.0)
        self.assertGreaterEqual(got["oracle_baselines"], got["oracle_all_heads"])

    def test_cli_writes_csv_json_and_svgs(self):
        """`bertology segment` on the shipped words file, as the README
        shows it, against the RPC's own answer."""
        path = os.path.join(SHIPPED_DIR, "data", "test_words.tsv")
        out = os.path.join(self.tmp, "cli")
        r = subprocess.run(
            [os.path.join(BIN_DIR, "bertology"), "segment", "--target=" + self.target,
             "--model=shipped", "--data=" + path, "--header=no", "--text-a=0",
             "--text-b=1", "--limit=60", "--view=2", "--quiet", "--out-dir=" + out],
            capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(path, encoding="utf-8") as f:
            rows = [line.rstrip("\n").split("\t") for line in f][:60]
        want = self.client.segment_words([(q, t) for q, t, _ in rows],
                                         model="shipped", view_example=2)
        with open(os.path.join(out, "segment_heads.csv")) as f:
            table = list(csv.DictReader(f))
        self.assertEqual(len(table), want["f1"].size)
        for row in table:
            l, h = int(row["layer"]), int(row["head"])
            f1 = want["f1"][l, h]
            if np.isnan(f1):
                self.assertEqual(row["f1"], "")
            else:
                self.assertAlmostEqual(float(row["f1"]), float(f1), places=6)
            self.assertEqual(int(row["correct"]), int(want["correct"][l, h]))
            mcc = want["mcc"][l, h]
            self.assertAlmostEqual(float(row["mcc"]), float(mcc), places=6)
            self.assertAlmostEqual(float(row["balanced_accuracy"]),
                                   float(want["balanced_accuracy"][l, h]), places=6)
        with open(os.path.join(out, "segment_heads.json")) as f:
            j = json.load(f)
        self.assertAlmostEqual(j["oracle_all_heads"], want["oracle_all_heads"], places=12)
        self.assertEqual(j["oracle_baselines"], want["oracle_baselines"])
        self.assertEqual([tuple(x) for x in j["best_heads"]],
                         [tuple(x) for x in want["best_heads"]])
        for name in ("always_next", "always_sep"):
            for k, v in want["baselines"][name].items():
                self.assertAlmostEqual(j["baselines"][name][k], v, places=12,
                                       msg=(name, k))
        # The table on stdout: the best heads by MCC, then the two trivial
        # heads with the same columns, then the oracles side by side.
        lines = r.stdout.splitlines()
        self.assertTrue(any("ranked by MCC" in x for x in lines), r.stdout)
        rows_ = [x.split() for x in lines if len(x.split()) == 8
                 and (x.split()[0].isdigit() or x.split()[0] == "base")]
        self.assertEqual([x[1] for x in rows_],
                         ["L%dH%d" % lh for lh in want["best_heads"]]
                         + ["always-next", "always-[SEP]"])
        self.assertAlmostEqual(float(rows_[0][2]),
                               float(want["mcc"][want["best_heads"][0]]), places=4)
        self.assertAlmostEqual(float(rows_[-2][2]),
                               want["baselines"]["always_next"]["mcc"], places=4)
        self.assertEqual(rows_[-1][2], "0.0000")
        self.assertIn("always-next or always-[SEP] right on %.4f"
                      % want["oracle_baselines"], r.stdout)
        with open(os.path.join(out, "segment_f1.svg")) as f:
            self.assertEqual(f.read().count('class="cell"'), want["f1"].size)
        with open(os.path.join(out, "segmentation.svg")) as f:
            view = f.read()
        self.assertEqual(view.count('class="char"'), len(want["view"]["characters"]))

    def test_bad_input_names_the_field(self):
        def code_and_message(request):
            with self.assertRaises(grpc.RpcError) as e:
                list(self.stub.SegmentWords(request, timeout=30))
            return e.exception.code(), e.exception.details()

        req = pb.SegmentWordsRequest(model="tiny")
        code, msg = code_and_message(req)
        self.assertEqual(code, grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("examples is empty", msg)
        req = request_of([(["qx"], None)])
        req.examples[0].words_a[:] = ["qz"]
        code, msg = code_and_message(req)
        self.assertEqual(code, grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("examples[0].words_a", msg)
        req = request_of([(["qx"], None), (["q"], ["x"])])
        req.examples[1].words_b[:] = []
        code, msg = code_and_message(req)
        self.assertEqual(code, grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("examples[1].words_b is empty", msg)
        req = request_of([(["q", "x"], None)])
        req.examples[0].words_a[:] = ["qx", ""]
        code, msg = code_and_message(req)
        self.assertIn("examples[0].words_a[1]", msg)
        req = request_of([(["qx"], None)])
        req.examples[0].input.text_a = ""
        req.examples[0].words_a[:] = []
        code, msg = code_and_message(req)
        self.assertEqual(code, grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("examples[0]", msg)
        code, msg = code_and_message(request_of([(["q"], None)] * 401))
        self.assertEqual(code, grpc.StatusCode.RESOURCE_EXHAUSTED)
        self.assertIn("max_examples_per_sweep", msg)
        req = request_of([(["q"], None)])
        req.view_example = 1
        code, msg = code_and_message(req)
        self.assertIn("view_example", msg)
        req = request_of([(["q"], None)])
        req.head_mask.dense.values.extend([1.0] * 5)
        code, msg = code_and_message(req)
        self.assertIn("head_mask", msg)
