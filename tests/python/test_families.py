"""The non-BERT encoder families through the real bertology-server:
RoBERTa, XLM-RoBERTa, DistilBERT and ELECTRA, sequence and token
classifiers, in safetensors and pytorch_model.bin.

tests/golden/make_family_checkpoints.py writes one tiny checkpoint per
variant with HF's own classes and save_pretrained (tokenizer included); one
server serves them all. Each is checked against
tests/golden/family_reference.py (an independent float64 forward per
family, written from HF 4.46's modeling files, self-checked against HF's
classes to ~1e-15) and against HF's own class (from_pretrained, eager,
float64, HF's head_mask):
  - Tokenize against the checkpoint's own HF tokenizer (ids, truncation),
    segments and special tokens by the family's layout
    (<s> a </s></s> b </s> or [CLS] a [SEP] b [SEP]);
  - GetModelInfo: family, architecture, head, sizes, labels;
  - Classify and GetAttention under no mask and zero, fractional, uniform,
    mean and mean_by_role masks (the mean modes on ComputeHeadStatistics'
    statistics, the reference computing its own over the same texts);
  - SweepAblation over every single head of each sequence classifier;
  - Patch at head sites (exact activation patching);
  - `bertology sweep` and `bertology patch` on each family;
  - start-up errors: a missing encoder weight (named with the weights file
    and the file's own key) and an unsupported model_type.

Run by ctest; by hand:
  make test-venv && cd tests/python && PYTHONPATH=../../build/python \\
      BERTOLOGY_BIN_DIR=../../build/bin OMP_NUM_THREADS=1 \\
      HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 \\
      ../../build/test-venv/bin/python -m unittest -v test_families
"""

import json
import os
import shutil
import subprocess
import tempfile
import unittest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import grpc  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

from bertology.v1 import bertology_pb2 as pb  # noqa: E402
from bertology.v1 import bertology_pb2_grpc as pb_grpc  # noqa: E402

from testlib import BIN_DIR  # noqa: E402
import family_reference as ref  # noqa: E402  (the float64 reference)
import make_family_checkpoints as families  # noqa: E402  (the writer)
from make_golden import write_safetensors  # noqa: E402
from live_server import LiveServer  # noqa: E402

L, H = families.LAYERS, families.HEADS
MAX_TOKENS = families.MAX_TOKENS

# Inputs of Classify (one batch: pairs and single texts of different
# lengths) and GetAttention.
TEXTS = [("the cat sat on the mat", ""), ("a dog", "it was there"),
         ("Hello  world, café!", "naïve  résumé"), ("who is this", "")]
# Tokenize: several scripts, accents, whitespace runs, the family's mask
# token ({mask}) written inside a text, punctuation, digits.
TOKENIZE_TEXTS = [
    ("The quick brown fox.", ""),
    ("Hello   world,\tcafé  naïve", "Ångström  über"),
    ("Привет, мир!", "Καλημέρα κόσμε"),
    ("你好，世界！", "こんにちは"),
    ("the {mask} sat", "a {mask} b"),
    ("  leading and trailing  ", ""),
    ("don't stop: 3.14 e-mail", "x"),
    ("مرحبا بالعالم", ""),
    ("Straße  Zażółć gęślą jaźń", "São Paulo"),
]
# The reference set of the mean modes; pairs included, so every role has
# tokens.
REFERENCE_TEXTS = [("a dog ran", "it is"), ("what was that", ""),
                   ("they have been here", "no"), ("the end", ""),
                   ("Straße café", "über alles")]
# [L x H] row-major, exact in float32. MASK ablates one head of layer 0
# and two of layer 1; FRACTIONAL mixes 0, fractions and 1 (uniform and the
# mean modes run on it, so both the ablated and the interpolated parts
# count).
MASK = [1.0, 0.0, 1.0, 1.0,
        0.0, 1.0, 1.0, 0.0]
FRACTIONAL = [1.0, 0.5, 1.0, 0.25,
              0.75, 1.0, 0.0, 1.0]
MODES = {  # name: (mask values, AblationMode)
    "none": (None, None),
    "zero": (MASK, pb.ABLATION_MODE_ZERO),
    "fractional": (FRACTIONAL, pb.ABLATION_MODE_ZERO),
    "uniform": (FRACTIONAL, pb.ABLATION_MODE_UNIFORM),
    "mean": (FRACTIONAL, pb.ABLATION_MODE_MEAN),
    "mean_by_role": (FRACTIONAL, pb.ABLATION_MODE_MEAN_BY_ROLE),
}
# Same length under every family's tokenizer (checked below), one word
# apart.
PATCH_PAIR = ("the cat was here", "the bat was here")

# float32 server against float64: the tolerances the README gives for BERT.
LOGIT_ATOL = 1e-4
MAP_ATOL = 1e-5


def seq_classifiers(variants):
    return [n for n, v in variants.items() if v["head"] == "sequence_classification"]


def one_per_family(variants, head="sequence_classification"):
    out = {}
    for name, v in variants.items():
        if v["head"] == head:
            out.setdefault(v["family"], name)
    return out


class FamiliesTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        torch.set_grad_enabled(False)
        import transformers
        transformers.logging.set_verbosity_error()  # over-long input warnings
        cls.tmp = tempfile.mkdtemp(prefix="bertology-families-")
        cls.variants = families.main(cls.tmp)
        cls.dirs = {n: os.path.join(cls.tmp, n) for n in cls.variants}
        flags = ["--model=%s=%s" % (n, d) for n, d in cls.dirs.items()]
        cls.server = LiveServer(BIN_DIR, flags + ["--threads=1", "--warmup_passes=1"])
        cls.target = "127.0.0.1:%d" % cls.server.port
        cls.channel = grpc.insecure_channel(cls.target)
        cls.server.wait_serving(cls.channel)
        cls.stub = pb_grpc.BertologyStub(cls.channel)
        cls.models = {n: ref.load(d) for n, d in cls.dirs.items()}
        cls.tokenizers = {n: ref.own_tokenizer(d) for n, d in cls.dirs.items()}
        cls._hf = {}
        # Statistics for the mean modes: the server's, and the reference's
        # own over the same texts (tokenized by the server).
        cls.statistics = {}
        for name in cls.variants:
            r = cls.stub.ComputeHeadStatistics(pb.ComputeHeadStatisticsRequest(
                model=name, inputs=[pb.TextInput(text_a=a, text_b=b)
                                    for a, b in REFERENCE_TEXTS]), timeout=120)
            rows = [cls.row(name, a, b) for a, b in REFERENCE_TEXTS]
            mean, role_means, role_tokens, tokens = ref.head_statistics(
                cls.models[name], rows)
            assert min(role_tokens) > 0, (name, role_tokens)
            cls.statistics[name] = {"id": r.statistics.id, "server_tokens": r.statistics.tokens,
                                    "tokens": tokens, "mean": mean, "role_means": role_means}

    @classmethod
    def tearDownClass(cls):
        cls.channel.close()
        cls.server.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    # ------------------------------------------------------------ helpers

    @classmethod
    def tokens(cls, name, text_a, text_b=""):
        return cls.stub.Tokenize(
            pb.TokenizeRequest(model=name, text_a=text_a, text_b=text_b)).tokens

    @classmethod
    def row(cls, name, text_a, text_b=""):
        """(ids, segments) by the server's tokenizer."""
        tokens = cls.tokens(name, text_a, text_b)
        return [t.id for t in tokens], [t.segment for t in tokens]

    def hf(self, name):
        if name not in self._hf:
            self._hf[name] = ref.hf_load(self.dirs[name])
        return self._hf[name]

    def head_mask(self, name, mode):
        values, ablation = MODES[mode]
        if values is None:
            return None
        mask = pb.HeadMask(dense=pb.DenseMask(values=values), mode=ablation)
        if mode in ("mean", "mean_by_role"):
            mask.statistics = self.statistics[name]["id"]
        return mask

    def reference(self, name, rows, mode="none"):
        """(logits, attentions per layer [B, H, T, T], ctx per layer, padded
        ids, segments, mask) of the server-tokenized rows [(ids, segments)]
        in `mode`."""
        m = self.models[name]
        ids, seg, amask = ref.pad_rows(rows, m.pad_id)
        b_size, t_len = ids.shape
        values, _ = MODES[mode]
        hm = None if values is None else torch.tensor(
            values, dtype=torch.float64).view(1, L, H).expand(b_size, L, H)
        fill, uniform = None, False
        if mode == "uniform":
            uniform = True
        elif mode == "mean":
            fill = self.statistics[name]["mean"]
        elif mode == "mean_by_role":
            fill = ref.role_fill(m, [r[1] for r in rows], t_len,
                                 self.statistics[name]["role_means"])
        logits, attentions, ctxs = ref.forward(m, ids, seg, amask, hm, fill=fill,
                                               uniform=uniform)
        return logits, attentions, ctxs, ids, seg, amask

    def hf_encoded(self, name, text_a, text_b=""):
        return ref.encode(self.tokenizers[name], self.variants[name]["family"],
                          text_a, text_b)

    def assert_prediction(self, name, p, want, t_len):
        """A Prediction against the reference's logits of its row (seq: [C];
        token: [T, C] of which the first t_len are real)."""
        v = self.variants[name]
        want = np.asarray(want)
        if v["head"] == "sequence_classification":
            self.assertEqual(len(p.tokens), 0)
            np.testing.assert_allclose(p.logits, want, atol=LOGIT_ATOL, rtol=0, err_msg=name)
            self.assertEqual(p.label_name, v["label_names"][p.label])
            return
        self.assertEqual(len(p.logits), 0)
        self.assertEqual(len(p.tokens), t_len, name)
        got = np.array([list(tp.logits) for tp in p.tokens])
        np.testing.assert_allclose(got, want[:t_len], atol=LOGIT_ATOL, rtol=0, err_msg=name)
        for tp in p.tokens:
            self.assertEqual(tp.label_name, v["label_names"][tp.label])

    # -------------------------------------------------------------- tests

    def test_tokenize_matches_the_checkpoints_own_tokenizer(self):
        for name, v in self.variants.items():
            family = v["family"]
            tok = self.tokenizers[name]
            for a, b in TOKENIZE_TEXTS:
                a, b = a.replace("{mask}", tok.mask_token), b.replace("{mask}", tok.mask_token)
                with self.subTest(model=name, text_a=a, text_b=b):
                    tokens = self.tokens(name, a, b)
                    ids, segments = ref.encode(tok, family, a, b)
                    self.assertEqual([t.id for t in tokens], ids,
                                     (tok.convert_ids_to_tokens(ids), [t.text for t in tokens]))
                    # RoBERTa-style: 0 for <s> a </s>, 1 for </s> b </s>.
                    self.assertEqual([t.segment for t in tokens], segments)
                    structural = [i for i, r in enumerate(ref.roles(family, segments))
                                  if r in (ref.ROLE_CLS, ref.ROLE_SEP_A, ref.ROLE_SEP_B)]
                    for i, t in enumerate(tokens):
                        if i in structural:
                            self.assertTrue(t.special, (i, t.text))
                            self.assertEqual(t.word_index, -1, (i, t.text))
                        elif t.id not in tok.all_special_ids:
                            self.assertFalse(t.special, (i, t.text))

    def test_words_match_hf_fast_word_ids(self):
        """SegmentWords' and word-granularity attribution's words: the
        server's word_index groups the pieces as HF fast's word_ids() does
        (GPT-2 pre-tokens for RoBERTa, whitespace for XLM-R, BERT's basic
        tokenizer for DistilBERT and ELECTRA). Compared where the fast
        tokenizer gives the server's ids (XLM-R's fast class adds a stray
        "▁" around <mask>; the server follows the slow one)."""
        import transformers
        compared = 0
        for name, v in self.variants.items():
            fast = transformers.AutoTokenizer.from_pretrained(self.dirs[name], use_fast=True)
            self.assertTrue(fast.is_fast, name)
            for a, b in TOKENIZE_TEXTS:
                a, b = a.replace("{mask}", fast.mask_token), b.replace("{mask}", fast.mask_token)
                with self.subTest(model=name, text_a=a, text_b=b):
                    tokens = self.tokens(name, a, b)
                    enc = fast(a, b) if b else fast(a)
                    if enc["input_ids"] != [t.id for t in tokens]:
                        continue
                    words = [None if w is None else (s, w)
                             for s, w in zip(enc.sequence_ids(), enc.word_ids())]
                    # Same word as the previous piece, on both sides.
                    want = [i > 0 and w is not None and w == words[i - 1]
                            for i, w in enumerate(words)]
                    got = [i > 0 and t.word_index >= 0 and
                           t.word_index == tokens[i - 1].word_index
                           for i, t in enumerate(tokens)]
                    self.assertEqual(got, want, [t.text for t in tokens])
                    compared += 1
        # Most cases compare (all but XLM-R's <mask> ones).
        self.assertGreaterEqual(compared, len(self.variants) * (len(TOKENIZE_TEXTS) - 1) - 2)

    def test_roberta_pair_layout(self):
        """<s> a </s></s> b </s>: two separators between the texts, the
        second one already in segment 1."""
        for name in ("roberta-seqcls", "xlmr-tokcls"):
            tokens = self.tokens(name, "a dog", "it was")
            tok = self.tokenizers[name]
            texts = [t.text for t in tokens]
            self.assertEqual(texts[0], tok.bos_token)
            n_a = len(tok("a dog", add_special_tokens=False)["input_ids"])
            self.assertEqual(texts[n_a + 1:n_a + 3], [tok.eos_token] * 2)
            self.assertEqual(texts[-1], tok.eos_token)
            self.assertEqual([t.segment for t in tokens[:n_a + 2]], [0] * (n_a + 2))
            self.assertEqual({t.segment for t in tokens[n_a + 2:]}, {1})

    def test_truncation_matches_hf(self):
        """Inputs longer than max_seq_len (64: RoBERTa's 66 positions less
        its offset of 2) are cut as HF's truncation=True cuts them
        (longest first), and still classify as the reference does (a
        position past the table would fail or differ)."""
        long_a = " ".join(["the cat sat on the mat"] * 12)
        long_b = " ".join(["a dog ran there"] * 20)
        for name, v in self.variants.items():
            tok = self.tokenizers[name]
            for a, b in ((long_a, ""), (long_a, long_b), ("who", long_b)):
                with self.subTest(model=name, pair=bool(b), a=a[:10]):
                    r = self.stub.Tokenize(pb.TokenizeRequest(model=name, text_a=a, text_b=b))
                    want = tok(a, b or None, truncation=True, max_length=MAX_TOKENS)["input_ids"]
                    self.assertTrue(r.truncated)
                    self.assertEqual([t.id for t in r.tokens], want)
                    p = self.stub.Classify(pb.ClassifyRequest(
                        model=name, inputs=[pb.TextInput(text_a=a, text_b=b)])).predictions[0]
                    self.assertTrue(p.truncated)
                    self.assertEqual(p.num_tokens, MAX_TOKENS)
                    rows = [([t.id for t in r.tokens], [t.segment for t in r.tokens])]
                    logits = self.reference(name, rows)[0]
                    self.assert_prediction(name, p, logits[0], MAX_TOKENS)

    def test_model_info_names_the_family(self):
        info = {m.name: m for m in self.stub.GetModelInfo(pb.GetModelInfoRequest()).models}
        self.assertEqual(set(info), set(self.variants))
        for name, v in self.variants.items():
            with self.subTest(model=name):
                m = info[name]
                # ASSUMPTION: a new string field `family` on ModelInfo, HF's
                # model_type.
                self.assertEqual(m.family, v["family"])
                self.assertEqual(m.architecture, v["architecture"])
                self.assertEqual(pb.ModelHead.Name(m.head), "MODEL_HEAD_" + v["head"].upper())
                self.assertTrue(m.has_classifier)
                self.assertEqual((m.num_layers, m.num_heads, m.hidden_size), (L, H, families.HIDDEN))
                self.assertEqual(m.max_seq_len, MAX_TOKENS)
                self.assertEqual(m.vocab_size, v["vocab_size"])
                self.assertEqual(list(m.label_names), v["label_names"])
                for rpc in ("Tokenize", "GetAttention", "ComputeHeadStatistics",
                            "Classify", "SweepAblation"):
                    self.assertIn(rpc, m.served_rpcs)
                if v["head"] == "sequence_classification":
                    self.assertIn("Patch", m.served_rpcs)
                self.assertIn(v["weights_file"], m.identity)
                self.assertIn("dtype=F32", m.identity)

    def test_statistics_cover_the_same_tokens(self):
        for name, s in self.statistics.items():
            self.assertEqual(s["server_tokens"], s["tokens"], name)

    def test_classify_matches_reference_in_every_mode(self):
        for name in self.variants:
            rows = [self.row(name, a, b) for a, b in TEXTS]
            plain = self.reference(name, rows)[0]
            for mode in MODES:
                with self.subTest(model=name, mode=mode):
                    request = pb.ClassifyRequest(
                        model=name, inputs=[pb.TextInput(text_a=a, text_b=b) for a, b in TEXTS])
                    mask = self.head_mask(name, mode)
                    if mask is not None:
                        request.head_mask.CopyFrom(mask)
                    response = self.stub.Classify(request, timeout=60)
                    logits = self.reference(name, rows, mode)[0]
                    if mode != "none":  # the mask matters far beyond the tolerance
                        self.assertGreater((logits - plain).abs().max().item(), 1e-2)
                    self.assertEqual(len(response.predictions), len(TEXTS))
                    for i, p in enumerate(response.predictions):
                        self.assertEqual(p.num_tokens, len(rows[i][0]))
                        self.assert_prediction(name, p, logits[i].numpy(), len(rows[i][0]))

    def test_get_attention_matches_reference_in_every_mode(self):
        for name in self.variants:
            for a, b in (TEXTS[1], TEXTS[3]):
                rows = [self.row(name, a, b)]
                t_len = len(rows[0][0])
                for mode in MODES:
                    with self.subTest(model=name, text=a, mode=mode):
                        request = pb.GetAttentionRequest(
                            model=name, input=pb.TextInput(text_a=a, text_b=b))
                        mask = self.head_mask(name, mode)
                        if mask is not None:
                            request.head_mask.CopyFrom(mask)
                        response = self.stub.GetAttention(request, timeout=60)
                        logits, attentions, _, _, _, _ = self.reference(name, rows, mode)
                        self.assertEqual(len(response.maps), L * H)
                        for m in response.maps:
                            got = np.frombuffer(m.data, dtype="<f4").reshape(t_len, t_len)
                            np.testing.assert_allclose(
                                got, attentions[m.layer][0, m.head].numpy(),
                                atol=MAP_ATOL, rtol=0, err_msg="L%dH%d" % (m.layer, m.head))
                        self.assertEqual([t.id for t in response.tokens], rows[0][0])
                        self.assert_prediction(name, response.prediction,
                                               logits[0].numpy(), t_len)

    def test_hf_own_classes_agree_with_the_server(self):
        """HF's class (from_pretrained, eager, float64) on the HF
        tokenizer's padded batch with HF's own head_mask: Classify's logits
        and GetAttention's maps, unmasked, zero and fractional."""
        for name, v in self.variants.items():
            model = self.hf(name)
            self.assertEqual(type(model).__name__, v["architecture"])
            rows = [self.hf_encoded(name, a, b) for a, b in TEXTS]
            for (a, b), r in zip(TEXTS, rows):
                self.assertEqual(self.row(name, a, b), r, name)
            ids, seg, amask = ref.pad_rows(rows, self.models[name].pad_id)
            for mode in ("none", "zero", "fractional"):
                with self.subTest(model=name, mode=mode):
                    values = MODES[mode][0]
                    hm = None if values is None else torch.tensor(
                        values, dtype=torch.float64).view(1, L, H).expand(len(rows), L, H)
                    hf_logits, hf_attn = ref.hf_forward(model, v["family"], ids, seg, amask, hm)
                    request = pb.ClassifyRequest(
                        model=name, inputs=[pb.TextInput(text_a=a, text_b=b) for a, b in TEXTS])
                    mask = self.head_mask(name, mode)
                    if mask is not None:
                        request.head_mask.CopyFrom(mask)
                    for i, p in enumerate(self.stub.Classify(request).predictions):
                        self.assert_prediction(name, p, hf_logits[i].numpy(), len(rows[i][0]))
                    for i in (1, 3):
                        a, b = TEXTS[i]
                        t_len = len(rows[i][0])
                        request = pb.GetAttentionRequest(
                            model=name, input=pb.TextInput(text_a=a, text_b=b))
                        if mask is not None:
                            request.head_mask.CopyFrom(mask)
                        for m in self.stub.GetAttention(request).maps:
                            got = np.frombuffer(m.data, dtype="<f4").reshape(t_len, t_len)
                            want = hf_attn[m.layer][i, m.head, :t_len, :t_len].numpy()
                            np.testing.assert_allclose(got, want, atol=MAP_ATOL, rtol=0)

    def test_sweep_every_single_head_of_each_sequence_classifier(self):
        texts = TEXTS + [("they have been here", "no"), ("the end", "")]
        for name in seq_classifiers(self.variants):
            with self.subTest(model=name):
                rows = [self.row(name, a, b) for a, b in texts]
                plain = self.reference(name, rows)[0]
                n_labels = plain.shape[1]
                # Half the labels the unmasked prediction, half not: both
                # accuracy and loss move under the masks.
                labels = [int(plain[i].argmax()) if i % 2 == 0
                          else (int(plain[i].argmax()) + 1) % n_labels
                          for i in range(len(texts))]
                request = pb.SweepAblationRequest(model=name, examples=[
                    pb.LabeledExample(input=pb.TextInput(text_a=a, text_b=b), label=y)
                    for (a, b), y in zip(texts, labels)])
                request.masks.add().all_single_heads.SetInParent()
                events = list(self.stub.SweepAblation(request, timeout=120))
                baseline = [e.baseline for e in events if e.HasField("baseline")][0]
                results = [e.result for e in events if e.HasField("result")]
                self.assertEqual(len(results), L * H)
                ids, seg, amask = ref.pad_rows(rows, self.models[name].pad_id)
                losses = []
                for r in [baseline] + results:
                    hm = torch.ones(len(rows), L, H, dtype=torch.float64)
                    for lh in r.ablated:
                        hm[:, lh.layer, lh.head] = 0.0
                    if r is not baseline:
                        self.assertEqual(len(r.ablated), 1)
                    logits = ref.forward(self.models[name], ids, seg, amask, hm)[0]
                    log_p = torch.log_softmax(logits, -1)
                    loss = -sum(log_p[i, y].item() for i, y in enumerate(labels))
                    top2 = logits.topk(2, -1).values
                    sure = (top2[:, 0] - top2[:, 1]) > 1e-3
                    right = logits.argmax(-1) == torch.tensor(labels)
                    lo, hi = int((right & sure).sum()), int((right | ~sure).sum())
                    self.assertEqual(r.examples, len(texts))
                    self.assertEqual(r.scored, len(texts))
                    self.assertTrue(lo <= r.correct <= hi, (r.mask_id, r.correct, lo, hi))
                    self.assertAlmostEqual(r.loss_sum, loss, delta=LOGIT_ATOL * len(texts))
                    losses.append(loss)
                self.assertGreater(max(abs(x - losses[0]) for x in losses[1:]), 1e-2)

    def patch_reference(self, name, clean_row, corrupted_row):
        """Both runs of the reference (batch of two, same length)."""
        rows = [clean_row, corrupted_row]
        logits, _, ctxs, ids, seg, amask = self.reference(name, rows)
        return logits, ctxs, ids, seg, amask

    def patched_logits(self, name, runs, site, direction):
        """The target run with one head's ctx (all positions or one) taken
        from the source run."""
        _, ctxs, ids, seg, amask = runs
        target = 1 if direction == pb.PATCH_DIRECTION_CLEAN_INTO_CORRUPTED else 0
        source = 1 - target
        sel = slice(None) if not site.HasField("position") else slice(
            site.position, site.position + 1)

        def hook(l, ctx):
            if l != site.layer:
                return None
            ctx = ctx.clone()
            ctx[target, site.head, sel] = ctxs[l][source, site.head, sel]
            return ctx
        return ref.forward(self.models[name], ids, seg, amask, ctx_hook=hook)[0][target]

    def test_patch_head_sites_match_reference(self):
        name = "roberta-seqcls"
        clean, corrupted = PATCH_PAIR
        clean_row, corrupted_row = self.row(name, clean), self.row(name, corrupted)
        self.assertEqual(len(clean_row[0]), len(corrupted_row[0]))
        runs = self.patch_reference(name, clean_row, corrupted_row)
        logits = runs[0]
        for direction in (pb.PATCH_DIRECTION_CLEAN_INTO_CORRUPTED,
                          pb.PATCH_DIRECTION_CORRUPTED_INTO_CLEAN):
            with self.subTest(direction=direction):
                request = pb.PatchRequest(
                    model=name, clean=pb.TextInput(text_a=clean),
                    corrupted=pb.TextInput(text_a=corrupted), all_heads=True,
                    direction=direction,
                    sites=[pb.PatchSite(kind=pb.PATCH_SITE_KIND_HEAD, layer=1, head=2, position=2),
                           pb.PatchSite(kind=pb.PATCH_SITE_KIND_HEAD, layer=0, head=1, position=0)])
                events = list(self.stub.Patch(request, timeout=120))
                plan = events[0].plan
                results = [r for e in events if e.HasField("results") for r in e.results.results]
                self.assertEqual(len(results), 2 + L * H)
                np.testing.assert_allclose(plan.clean_logits, logits[0], atol=LOGIT_ATOL)
                np.testing.assert_allclose(plan.corrupted_logits, logits[1], atol=LOGIT_ATOL)
                self.assertEqual(plan.answer, int(logits[0].argmax()))
                answer, foil = plan.answer, plan.foil
                d_clean = (logits[0, answer] - logits[0, foil]).item()
                d_corrupted = (logits[1, answer] - logits[1, foil]).item()
                self.assertAlmostEqual(plan.clean_logit_diff, d_clean, delta=2 * LOGIT_ATOL)
                self.assertAlmostEqual(plan.corrupted_logit_diff, d_corrupted, delta=2 * LOGIT_ATOL)
                target_logits = logits[1 if direction == pb.PATCH_DIRECTION_CLEAN_INTO_CORRUPTED else 0]
                moved = 0.0
                for r in results:
                    want = self.patched_logits(name, runs, r.site, direction)
                    np.testing.assert_allclose(r.logits, want, atol=LOGIT_ATOL, err_msg=str(r.site))
                    self.assertAlmostEqual(r.logit_diff, (want[answer] - want[foil]).item(),
                                           delta=2 * LOGIT_ATOL)
                    moved = max(moved, (want - target_logits).abs().max().item())
                # Some site changes the target run far beyond the tolerance.
                self.assertGreater(moved, 1e-2)

    def cli(self, command, name, *flags):
        args = [os.path.join(BIN_DIR, "bertology"), command, "--target=" + self.target,
                "--model=" + name] + list(flags)
        out = subprocess.run(args, capture_output=True, text=True, timeout=120)
        self.assertEqual(out.returncode, 0, out.stderr)
        return out

    def test_cli_sweep_and_patch_on_each_family(self):
        for family, name in one_per_family(self.variants).items():
            with self.subTest(family=family, model=name):
                label_names = self.variants[name]["label_names"]
                rows = [("the cat sat on the mat", "", 0), ("a dog", "it was there", 1),
                        ("who is this", "", len(label_names) - 1), ("the end", "no", 0)]
                data = os.path.join(self.tmp, "%s.tsv" % name)
                with open(data, "w") as f:
                    f.write("text\tpair\tlabel\n")
                    for a, b, y in rows:
                        f.write("%s\t%s\t%s\n" % (a, b, label_names[y]))
                out_dir = os.path.join(self.tmp, "cli-sweep-" + name)
                self.cli("sweep", name, "--data=" + data, "--text-a=text", "--text-b=pair",
                         "--label=label", "--heads", "--quiet", "--out-dir=" + out_dir)
                with open(os.path.join(out_dir, "sweep_results.json")) as f:
                    swept = json.load(f)
                request = pb.SweepAblationRequest(model=name, examples=[
                    pb.LabeledExample(input=pb.TextInput(text_a=a, text_b=b), label=y)
                    for a, b, y in rows])
                request.masks.add().all_single_heads.SetInParent()
                events = list(self.stub.SweepAblation(request, timeout=120))
                base = [e.baseline for e in events if e.HasField("baseline")][0]
                results = {e.result.mask_id: e.result for e in events if e.HasField("result")}
                self.assertEqual(swept["baseline"]["correct"], base.correct)
                self.assertAlmostEqual(swept["baseline"]["loss_sum"], base.loss_sum, places=5)
                self.assertEqual(len(swept["results"]), L * H)
                for m in swept["results"]:
                    want = results[m["mask_id"]]
                    self.assertEqual((m["correct"], m["scored"]), (want.correct, want.scored))
                    self.assertAlmostEqual(m["loss_sum"], want.loss_sum, places=5)
                    self.assertAlmostEqual(m["accuracy"], want.accuracy, places=12)

                clean, corrupted = PATCH_PAIR
                out_dir = os.path.join(self.tmp, "cli-patch-" + name)
                self.cli("patch", name, "--clean=" + clean, "--corrupted=" + corrupted,
                         "--sites=heads", "--quiet", "--out=" + out_dir)
                for f in ("patch.json", "patch.csv", "patch_heads.svg"):
                    self.assertTrue(os.path.exists(os.path.join(out_dir, f)), f)
                with open(os.path.join(out_dir, "patch.json")) as f:
                    patched = json.load(f)
                events = list(self.stub.Patch(pb.PatchRequest(
                    model=name, clean=pb.TextInput(text_a=clean),
                    corrupted=pb.TextInput(text_a=corrupted), all_heads=True), timeout=120))
                plan = events[0].plan
                results = [r for e in events if e.HasField("results") for r in e.results.results]
                self.assertEqual(patched["plan"]["num_sites"], L * H)
                self.assertEqual((patched["plan"]["answer"], patched["plan"]["foil"]),
                                 (plan.answer, plan.foil))
                self.assertAlmostEqual(patched["plan"]["clean_logit_diff"],
                                       plan.clean_logit_diff, places=5)
                by_site = {(r.site.layer, r.site.head): r for r in results}
                self.assertEqual(len(patched["results"]), L * H)
                for site in patched["results"]:
                    want = by_site[(site["layer"], site["head"])]
                    self.assertAlmostEqual(site["logit_diff"], want.logit_diff, places=5)
                # And the RPC's numbers are the reference's.
                runs = self.patch_reference(name, self.row(name, clean),
                                            self.row(name, corrupted))
                for r in results:
                    want = self.patched_logits(name, runs, r.site,
                                               pb.PATCH_DIRECTION_CLEAN_INTO_CORRUPTED)
                    self.assertAlmostEqual(r.logit_diff,
                                           (want[plan.answer] - want[plan.foil]).item(),
                                           delta=2 * LOGIT_ATOL)

    # ------------------------------------------------- bad checkpoints

    def start_alone(self, directory):
        """bertology-server on `directory` alone: (exit code, stderr); the
        start-up must fail, so a server still running after 60 s fails the
        test."""
        proc = subprocess.run(
            [os.path.join(BIN_DIR, "bertology-server"), "--model=x=" + directory,
             "--listen=127.0.0.1:0", "--metrics_listen="],
            capture_output=True, text=True, timeout=60)
        return proc.returncode, proc.stderr

    def copy_without(self, name, key):
        """A copy of variant `name` with `key` deleted from its weights
        file (same file name and format)."""
        v = self.variants[name]
        d = os.path.join(self.tmp, "bad-%s-%s" % (name, key.replace(".", "_")))
        shutil.copytree(self.dirs[name], d)
        path = os.path.join(d, v["weights_file"])
        if v["format"] == "safetensors":
            _, sd = ref.read_weights(d)
            self.assertIn(key, sd)
            del sd[key]
            write_safetensors(sd, path)
        else:
            sd = torch.load(path, map_location="cpu")
            self.assertIn(key, sd)
            del sd[key]
            torch.save(sd, path)
        return d

    def test_missing_encoder_weight_is_named_with_its_file(self):
        cases = [(name, self.variants[name]["encoder_key"])
                 for name in (one_per_family(self.variants).values())]
        # One per family in the other format too (token classifiers).
        cases += [(name, self.variants[name]["encoder_key"]) for name in
                  one_per_family(self.variants, "token_classification").values()]
        cases.append(("electra-seqcls", "electra.embeddings_project.weight"))
        cases.append(("roberta-tokcls", "roberta.embeddings.position_embeddings.weight"))
        cases.append(("distilbert-seqcls", "pre_classifier.weight"))
        for name, key in cases:
            with self.subTest(model=name, key=key):
                code, err = self.start_alone(self.copy_without(name, key))
                self.assertNotEqual(code, 0, err)
                self.assertIn(self.variants[name]["weights_file"], err)
                self.assertIn(key, err)

    def test_unsupported_model_type_is_refused(self):
        d = os.path.join(self.tmp, "bad-deberta")
        shutil.copytree(self.dirs["electra-tokcls"], d)
        path = os.path.join(d, "config.json")
        with open(path) as f:
            config = json.load(f)
        config["model_type"] = "deberta-v2"
        with open(path, "w") as f:
            json.dump(config, f)
        code, err = self.start_alone(d)
        self.assertNotEqual(code, 0, err)
        self.assertIn("model_type", err)
        self.assertIn("deberta-v2", err)
        self.assertIn("config.json", err)


if __name__ == "__main__":
    unittest.main()
