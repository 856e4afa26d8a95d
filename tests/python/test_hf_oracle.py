"""The goldens, the engine and the tokenizer against Hugging Face's own
libraries (the versions pinned in tests/python/requirements-hf.txt).

The C++ tests compare the engine with goldens written by this project's
float64 references (tests/golden/*.py); here those goldens, and the engine
itself through the real server, are compared with HF's own classes loaded
with from_pretrained from the same checkpoint directories, and with
BertTokenizerFast / BertTokenizer on the same vocabularies:
  - tiny-bert-cls.golden.json: logits and output_attentions of
    BertForSequenceClassification with HF's head_mask (zero, fractional,
    per-row masks), the uniform mode as a hook on HF's attention
    probabilities; in float64 (to the goldens' 9 digits) and in float32 (to
    model_test.cc's tolerances);
  - interventions.golden.json: mean, resample and zero ablation and
    activation patching as hooks on HF's modules (hf_oracle.py);
  - importance_reference.py's head importance: HF's run_bertology.py
    recipe (the gradient of the loss with respect to HF's head_mask);
  - the server (started as the README says) on the golden checkpoint and
    the shipped default model: Tokenize, Classify and GetAttention under
    head masks against HF's tokenizer and model, directly;
  - tokenizer goldens: tokenizer_settings.golden.jsonl (the port's) and
    tokenizer_hf.golden.jsonl (written by HF itself,
    tests/golden/make_hf_tokenizer_golden.py) re-made with HF now.
Run by ctest (python_hf_oracle_test, in the test venv); by hand:
  make test-venv && PYTHONPATH=build/python BERTOLOGY_BIN_DIR=build/bin \\
      build/test-venv/bin/python -m unittest -v tests/python/test_hf_oracle.py
"""

import json
import os
import unicodedata
import unittest

import grpc
import numpy as np
import torch
import transformers

from bertology.v1 import bertology_pb2 as pb
from bertology.v1 import bertology_pb2_grpc as pb_grpc

from testlib import BIN_DIR, GOLDEN_DIR, SOURCE_DIR, TINY_MODEL_DIR as TINY_DIR
import hf_oracle
import make_hf_tokenizer_golden as hf_tok
import tokenizer_reference
from live_server import LiveServer

SHARED_FIXTURES = os.path.join(
    os.environ.get("BERTOLOGY_SHARED_DIR", os.path.join(os.path.dirname(SOURCE_DIR), "shared")),
    "fixtures", "tokenizer")
DEFAULT_MODEL = os.path.join(SOURCE_DIR, "models", "querytitle-zh-tiny")
# server/core/model/model_test.cc's tolerances for the float32 engine.
LOGIT_TOL, ATTENTION_TOL = 1e-4, 1e-5


def load_json(name):
    with open(os.path.join(GOLDEN_DIR, name)) as f:
        return json.load(f)


def assert_golden_close(test, got, want, what, atol):
    """|got - want| <= atol plus the goldens' rounding (9 digits)."""
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    test.assertEqual(got.shape, want.shape, what)
    err = np.abs(got - want) - (atol + 5e-9 * np.abs(want))
    test.assertLessEqual(err.max(), 0.0, "%s: max |HF - golden| = %.3g"
                         % (what, np.abs(got - want).max()))


def run_golden_case(model, golden, case, dtype):
    """HF's logits and attentions for one case of tiny-bert-cls.golden.json:
    HF's head_mask on zero rows, the uniform hook on uniform rows."""
    ids = torch.tensor(golden["input_ids"])
    amask = torch.tensor(golden["attention_mask"])
    # The goldens' masks are float32 (as the engine's): 0.3 is 0.30000001.
    mask = torch.tensor(case["head_mask"], dtype=torch.float32).double()  # [B, L, H]
    uniform = torch.tensor(case["uniform_rows"], dtype=torch.float64)
    hf_mask = torch.where(uniform[:, None, None] > 0, torch.ones_like(mask), mask)
    with hf_oracle.uniform_probs_hooks(model, mask, uniform, amask), torch.no_grad():
        out = model(input_ids=ids, token_type_ids=torch.tensor(golden["token_type_ids"]),
                    attention_mask=amask, head_mask=hf_oracle.head_mask_5d(hf_mask, dtype),
                    output_attentions=True)
    return out.logits.double(), [a.double() for a in out.attentions]


class NumericsGoldenTest(unittest.TestCase):
    """tiny-bert-cls.golden.json against HF's BertForSequenceClassification."""

    @classmethod
    def setUpClass(cls):
        cls.golden = load_json("tiny-bert-cls.golden.json")

    def check(self, dtype, logit_tol, attention_tol):
        model = hf_oracle.load(TINY_DIR, dtype)
        self.assertEqual(type(model).__name__, "BertForSequenceClassification")
        amask = np.array(self.golden["attention_mask"])
        plain = None
        for case in self.golden["cases"]:
            with self.subTest(case=case["name"], dtype=str(dtype)):
                logits, attentions = run_golden_case(model, self.golden, case, dtype)
                assert_golden_close(self, logits, case["logits"], "logits", logit_tol)
                for layer, (got, want) in enumerate(zip(attentions, case["attentions"])):
                    # Padded keys get ~0 in HF (finfo.min added) and in the
                    # goldens; the real block is what both promise.
                    real = amask[:, None, :, None] * amask[:, None, None, :]
                    assert_golden_close(self, got.numpy() * real, np.asarray(want) * real,
                                        "attentions of layer %d" % layer, attention_tol)
                if case["name"] == "none":
                    plain = logits
                else:
                    # Every masked case moves the logits well past the
                    # tolerance, so a mask HF ignored would fail above.
                    self.assertGreater((logits - plain).abs().max().item(), 1e-2)

    def test_float64_hf_reproduces_the_goldens(self):
        self.check(torch.float64, 1e-8, 1e-8)

    def test_float32_hf_is_within_the_engines_tolerances(self):
        self.check(torch.float32, LOGIT_TOL, ATTENTION_TOL)


class InterventionsGoldenTest(unittest.TestCase):
    """interventions.golden.json against hooks on HF's own modules."""

    @classmethod
    def setUpClass(cls):
        cls.golden = load_json("interventions.golden.json")
        cls.model = hf_oracle.load(TINY_DIR, torch.float64)
        inputs = cls.golden["inputs"]
        cls.ids = torch.tensor(inputs["input_ids"])
        cls.types = torch.tensor(inputs["token_type_ids"])
        cls.amask = torch.tensor(inputs["attention_mask"])
        cls.layers = cls.model.config.num_hidden_layers
        cls.heads = cls.model.config.num_attention_heads

    def forward(self, ids, types, amask, head_mask=None, ctx_edit=None, residual_edit=None):
        hm = None if head_mask is None else hf_oracle.head_mask_5d(head_mask, torch.float64)
        with hf_oracle.context_hooks(self.model, ctx_edit or (lambda l, c: None)), \
                hf_oracle.residual_hooks(self.model, residual_edit or (lambda l, x: None)), \
                torch.no_grad():
            return self.model(input_ids=ids, token_type_ids=types, attention_mask=amask,
                              head_mask=hm).logits

    def captured_contexts(self, ids, types, amask):
        """Each layer's ctx [B, T, H, d] on unmasked rows."""
        ctxs = {}

        def keep(l, ctx):
            ctxs[l] = ctx.clone()
        self.forward(ids, types, amask, ctx_edit=keep)
        return [ctxs[l] for l in range(self.layers)]

    @staticmethod
    def segments(types):
        """(len_a, len_b) of [CLS] a [SEP] (b [SEP]) from real token types."""
        in_b = sum(types)
        return len(types) - in_b - 2, max(0, in_b - 1)

    @classmethod
    def role_of(cls, types, t):
        """0 [CLS], 1 first [SEP], 2 second [SEP], 3 text_a, 4 text_b."""
        a, b = cls.segments(types)
        if t == 0:
            return 0
        if t <= a:
            return 3
        if t == a + 1:
            return 1
        return 4 if t <= a + b + 1 else 2

    @classmethod
    def aligned(cls, types, ref_types, t, alignment):
        """The reference position position t takes (matched: t itself)."""
        if alignment != "scaled":
            return t
        (a, b), (ra, rb) = cls.segments(types), cls.segments(ref_types)
        role = cls.role_of(types, t)
        first = {0: 0, 1: ra + 1, 2: ra + rb + 2}
        if role in first:
            return first[role]
        if role == 3:
            return 1 + (t - 1) * ra // a if ra else ra + 1
        return ra + 2 + (t - a - 2) * rb // b if rb else ra + rb + 2

    def reference_outputs(self):
        """Per reference row, its real tokens' ctx [T_r, L, H, d] and types."""
        ref = self.golden["reference"]
        amask = torch.tensor(ref["attention_mask"])
        ctxs = self.captured_contexts(torch.tensor(ref["input_ids"]),
                                      torch.tensor(ref["token_type_ids"]), amask)
        rows = []
        for r in range(amask.shape[0]):
            n = int(amask[r].sum())
            rows.append((torch.stack([c[r, :n] for c in ctxs], 1),
                         ref["token_type_ids"][r][:n]))
        return rows

    def statistics(self, rows):
        """The pooled mean [L, H, d], role means [5, L, H, d], role counts
        and token count of the reference rows' outputs."""
        tokens = sum(out.shape[0] for out, _ in rows)
        mean = sum(out.sum(0) for out, _ in rows) / tokens
        role_sum = torch.zeros_like(torch.stack([mean] * 5))
        role_count = [0] * 5
        for out, types in rows:
            for t in range(out.shape[0]):
                role_sum[self.role_of(types, t)] += out[t]
                role_count[self.role_of(types, t)] += 1
        role_means = role_sum / torch.tensor(role_count, dtype=torch.float64)[:, None, None, None]
        return mean, role_means, role_count, tokens

    def test_reference_statistics(self):
        ref = self.golden["reference"]
        mean, role_means, role_count, tokens = self.statistics(self.reference_outputs())
        self.assertEqual(tokens, ref["tokens"])
        self.assertEqual(role_count, ref["role_tokens"])
        assert_golden_close(self, mean, ref["mean"], "per-head mean", 1e-9)
        assert_golden_close(self, role_means, ref["role_means"], "role means", 1e-9)

    def test_ablation_cases(self):
        rows = self.reference_outputs()
        mean, role_means, _, _ = self.statistics(rows)  # [L, H, d], [5, L, H, d]
        b, t_len = self.ids.shape
        types = [self.golden["inputs"]["token_type_ids"][r][:int(self.amask[r].sum())]
                 for r in range(b)]
        results = {}
        for case in self.golden["ablation_cases"]:
            mask = torch.tensor(case["head_mask"], dtype=torch.float64)          # [B, L, H]

            def filled(fill):
                # HF's head_mask scales the probabilities, hence ctx; the
                # ablated share (1 - m) of the fill ([B, T, L, H, d]) joins
                # after.
                def edit(l, ctx):
                    m = mask[:, l, :, None][:, None]                           # [B, 1, H, 1]
                    return ctx + (1 - m) * fill[:, :, l]
                return self.forward(self.ids, self.types, self.amask, mask, ctx_edit=edit)

            def per_position(value):
                fill = torch.zeros(b, t_len, *mean.shape, dtype=torch.float64)
                for r in range(b):
                    for t in range(len(types[r])):
                        fill[r, t] = value(r, t)
                return fill

            with self.subTest(case=case["name"]):
                if case["mode"] == "zero":
                    draws = [self.forward(self.ids, self.types, self.amask, mask)]
                elif case["mode"] == "mean":
                    draws = [filled(per_position(lambda r, t: mean))]
                elif case["mode"] == "mean_by_role":
                    draws = [filled(per_position(
                        lambda r, t: role_means[self.role_of(types[r], t)]))]
                else:
                    sources = case["draw_sources"]
                    draws = []
                    for k in range(case["draws"]):
                        def drawn(r, t, k=k):
                            out, ref_types = rows[sources[r][k]]
                            return out[self.aligned(types[r], ref_types, t, case["alignment"])]
                        draws.append(filled(per_position(drawn)))
                expected = case.get("draw_logits", [case.get("logits")])
                for k, logits in enumerate(draws):
                    assert_golden_close(self, logits, expected[k], case["name"], 1e-9)
                results[case["name"]] = draws[0]
        # Mean ablation is not zero ablation under another name, nor the
        # role means the pooled one.
        self.assertGreater((results["mean_ablate"] - results["zero_ablate"]).abs().max(), 1e-3)
        self.assertGreater((results["mean_ablate"] - results["role_mean_ablate"]).abs().max(), 1e-3)

    def test_patching_sites(self):
        p = self.golden["patching"]
        runs = {}
        for key in ("clean", "corrupted"):
            ids = torch.tensor([p[key + "_ids"]])
            types = torch.tensor([p[key + "_types"]])
            ctxs, hidden = {}, {}

            def keep_ctx(l, ctx):
                ctxs[l] = ctx.clone()

            def keep_hidden(l, x):
                hidden[l] = x.clone()
            logits = self.forward(ids, types, torch.ones_like(ids),
                                  ctx_edit=keep_ctx, residual_edit=keep_hidden)
            runs[key] = (ids, types, ctxs, hidden)
            assert_golden_close(self, logits[0], p[key + "_logits"], key, 1e-9)

        def patched(src, dst, site):
            _, _, s_ctx, s_hidden = runs[src]
            ids, types, _, _ = runs[dst]
            pos = site.get("position")
            sel = slice(None) if pos is None else slice(pos, pos + 1)
            layer = site["layer"]

            def ctx_edit(l, ctx):
                if site["kind"] != "head" or l != layer:
                    return None
                ctx = ctx.clone()
                ctx[:, sel, site["head"]] = s_ctx[l][:, sel, site["head"]]
                return ctx

            def residual_edit(l, x):
                if site["kind"] != "residual" or l != layer:
                    return None
                x = x.clone()
                x[:, sel] = s_hidden[l][:, sel]
                return x
            return self.forward(ids, types, torch.ones_like(ids), ctx_edit=ctx_edit,
                                residual_edit=residual_edit)[0]

        moved = 0.0
        for site in p["sites"]:
            with self.subTest(site=site):
                c2x = patched("clean", "corrupted", site)
                x2c = patched("corrupted", "clean", site)
                assert_golden_close(self, c2x, site["clean_into_corrupted"], "c->x", 1e-9)
                assert_golden_close(self, x2c, site["corrupted_into_clean"], "x->c", 1e-9)
                moved = max(moved, (c2x - torch.tensor(p["corrupted_logits"])).abs().max().item())
        self.assertGreater(moved, 1e-3)


@unittest.skipUnless(os.path.isdir(SHARED_FIXTURES),
                     "tokenizer fixtures not found at %s (../shared/fixtures)" % SHARED_FIXTURES)
class TokenizerGoldenTest(unittest.TestCase):
    """The tokenizer goldens the C++ tests read, against HF's tokenizers."""

    def read_jsonl(self, name):
        with open(os.path.join(GOLDEN_DIR, name), encoding="utf-8") as f:
            return [json.loads(line) for line in f if line.strip()]

    def test_hf_golden_is_what_hf_says_now(self):
        committed = self.read_jsonl("tokenizer_hf.golden.jsonl")
        now = hf_tok.cases(SHARED_FIXTURES)
        self.assertEqual(len(committed), len(now))
        for old, new in zip(committed, now):
            with self.subTest(text=old["text"], options=old["options"]):
                for key in ("vocab", "options", "text", "tokens", "ids", "slow_tokens",
                            "slow_ids", "engine_follows"):
                    self.assertEqual(old.get(key), new.get(key), key)
        # Chinese, accents, control characters and special tokens written
        # in the text are all there.
        texts = "".join(c["text"] for c in committed)
        for probe in ("北京", "é", "\x01", "\u200b", "[MASK]"):
            self.assertIn(probe, texts)

    def test_port_goldens_agree_with_hf(self):
        """tokenizer_settings.golden.jsonl (tokenizer_reference.py, a port)
        against HF: BertTokenizerFast where the options allow (the slow
        BertTokenizer with never_split, which only it has), and where the two
        HF tokenizers differ, the one make_hf_tokenizer_golden.py's
        engine_follows() names. Tokens outside vocab.txt written as extra
        special tokens: HF gives them new ids past the vocabulary (from
        added tokens), the engine [UNK]'s id."""
        toks = hf_tok.Tokenizers(SHARED_FIXTURES)
        checked = 0
        for c in self.read_jsonl("tokenizer_settings.golden.jsonl"):
            options = dict(c["options"])
            never_split = options.pop("never_split", None)
            specials = options.get("special_tokens")
            if specials is not None and not set(hf_tok.DEFAULT_SPECIAL_TOKENS) <= set(specials):
                continue  # HF always splits on its own special tokens
            fast, slow = toks.get(c["vocab"], options)
            if never_split:
                slow = transformers.BertTokenizer(
                    vocab_file=toks.vocab_file(c["vocab"]), never_split=never_split,
                    **hf_tok.hf_kwargs(options))
            with self.subTest(text=c["text"], options=c["options"]):
                slow_tokens = slow.tokenize(c["text"])
                fast_tokens = fast.tokenize(c["text"])
                if never_split:
                    want = slow
                    if unicodedata.normalize("NFC", c["text"]) != c["text"]:
                        # slow NFC-normalizes first: the port matches it
                        # on the NFC text.
                        slow_tokens = slow.tokenize(unicodedata.normalize("NFC", c["text"]))
                        self.assertEqual(slow_tokens, tokenizer_reference.tokenize(
                            unicodedata.normalize("NFC", c["text"]),
                            dict((t, i) for i, t in enumerate(slow.vocab)),
                            never_split=never_split, **options)[0])
                        continue
                    want_tokens = slow_tokens
                elif fast_tokens == slow_tokens or hf_tok.engine_follows(
                        c["text"], specials or ()) == "fast":
                    want, want_tokens = fast, fast_tokens
                else:
                    want, want_tokens = slow, slow_tokens
                self.assertEqual(c["tokens"], want_tokens)
                vocab = tokenizer_reference.load_vocab(toks.vocab_file(c["vocab"]))
                for token, got_id, hf_id in zip(c["tokens"], c["ids"],
                                                want.convert_tokens_to_ids(want_tokens)):
                    if token in vocab:
                        self.assertEqual(got_id, hf_id, token)
                    else:  # a never_split word or an extra special token
                        self.assertEqual(got_id, vocab["[UNK]"], token)
                        self.assertTrue(hf_id == vocab["[UNK]"] or hf_id >= len(vocab), token)
            checked += 1
        self.assertGreaterEqual(checked, 20)

    def test_squad_fixture_is_bert_tokenizer_fast(self):
        tok = transformers.BertTokenizerFast(
            vocab_file=os.path.join(SHARED_FIXTURES, hf_tok.UNCASED))
        with open(os.path.join(SHARED_FIXTURES, "squad-questions-uncased.jsonl"),
                  encoding="utf-8") as f:
            rows = [json.loads(line) for line in f]
        self.assertEqual(len(rows), 2000)
        bad = [r["text"] for r in rows
               if tok.tokenize(r["text"]) != r["tokens"]
               or tok.convert_tokens_to_ids(r["tokens"]) != r["ids"]]
        self.assertEqual(bad, [])


class ImportanceReferenceTest(unittest.TestCase):
    """importance_reference.py (which test_importance.py holds the server's
    HeadImportance to) against HF's own run_bertology.py recipe: a head_mask
    that requires grad, BertForSequenceClassification's loss with the gold
    label, one example per backward pass, |d loss / d head_mask| summed."""

    def test_autograd_importance_is_hfs(self):
        import importance_reference as ref
        golden = load_json("tiny-bert-cls.golden.json")
        w = ref.make_golden.read_safetensors(os.path.join(TINY_DIR, "model.safetensors"))
        rows = [([i for i, m in zip(ids, am) if m], [t for t, m in zip(types, am) if m])
                for ids, types, am in zip(golden["input_ids"], golden["token_type_ids"],
                                          golden["attention_mask"])]
        labels = [0, 1, 2, 0]
        model = hf_oracle.load(TINY_DIR, torch.float64)
        layers, heads = model.config.num_hidden_layers, model.config.num_attention_heads
        frac = [1.0, 0.5, 1.0, 0.25] * (layers * heads // 4)
        for values in ([1.0] * (layers * heads), frac):
            want = ref.autograd_importance(w, ref.pad(rows), labels, values)
            got = torch.zeros(layers, heads, dtype=torch.float64)
            for (ids, types), y in zip(rows, labels):
                m = torch.tensor(values, dtype=torch.float64).view(layers, heads)
                m.requires_grad_(True)
                out = model(input_ids=torch.tensor([ids]), token_type_ids=torch.tensor([types]),
                            head_mask=m, labels=torch.tensor([y]))
                out.loss.backward()
                got += m.grad.abs()
            with self.subTest(mask="ones" if values[1] == 1.0 else "fractional"):
                self.assertGreater(got.min().item(), 0.0)
                np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-9, atol=1e-12)


def tsv_pairs(path, n):
    with open(path, encoding="utf-8") as f:
        rows = [line.rstrip("\n").split("\t") for line in f]
    return [(r[0], r[1]) for r in rows[:n]]


class EngineTest(unittest.TestCase):
    """The real server against HF's tokenizer and model, loaded with
    from_pretrained from the directories it serves: no golden between."""

    @classmethod
    def setUpClass(cls):
        cls.models = {"tiny": TINY_DIR}
        if os.path.exists(os.path.join(DEFAULT_MODEL, "config.json")):
            cls.models["default"] = DEFAULT_MODEL
        flags = ["--model=%s=%s" % kv for kv in cls.models.items()]
        cls.server = LiveServer(BIN_DIR, flags + ["--warmup_passes=1"])
        cls.channel = grpc.insecure_channel("127.0.0.1:%d" % cls.server.port)
        cls.server.wait_serving(cls.channel)
        cls.stub = pb_grpc.BertologyStub(cls.channel)
        cls.hf = {name: (transformers.AutoTokenizer.from_pretrained(d),
                         hf_oracle.load(d, torch.float64))
                  for name, d in cls.models.items()}
        words = [w for w in hf_oracle_vocab(TINY_DIR) if w.isalpha()][:40]
        pairs = [(" ".join(words[i:i + 6]), " ".join(words[i + 6:i + 9]))
                 for i in range(0, 30, 5)]
        pairs += [("The [MASK] sat, naïve CAFÉ!", ""), ("unknownwordzz x", "y")]
        cls.texts = {"tiny": pairs}
        if "default" in cls.models:
            cls.texts["default"] = tsv_pairs(
                os.path.join(DEFAULT_MODEL, "data", "test.tsv"), 24) + [
                ("ＡＢＣ 北京[MASK]abc", "Café\u200b天安门"), ("?", "")]

    @classmethod
    def tearDownClass(cls):
        cls.channel.close()
        cls.server.stop()

    def masks(self, name):
        config = self.hf[name][1].config
        n = config.num_hidden_layers * config.num_attention_heads
        rng = np.random.default_rng(7)
        zero = (rng.random(n) > 0.3).astype(np.float32)
        frac = rng.choice(np.array([0.0, 0.25, 0.5, 1.0], dtype=np.float32), n)
        return config, {"none": None, "zero": zero, "fractional": frac}

    def test_tokenize_matches_bert_tokenizer_fast(self):
        for name, pairs in self.texts.items():
            tok = self.hf[name][0]
            self.assertTrue(tok.is_fast, type(tok))
            for a, b in pairs:
                with self.subTest(model=name, text=(a, b)):
                    got = self.stub.Tokenize(pb.TokenizeRequest(
                        model=name, text_a=a, text_b=b)).tokens
                    want = tok(a, b or None, return_offsets_mapping=True)
                    self.assertEqual([t.text for t in got],
                                     tok.convert_ids_to_tokens(want["input_ids"]))
                    self.assertEqual([t.id for t in got], want["input_ids"])
                    self.assertEqual([t.segment for t in got], want["token_type_ids"])
                    self.assertEqual([(t.char_start, t.char_end) for t in got],
                                     [tuple(o) for o in want["offset_mapping"]])

    def hf_run(self, name, a, b, mask):
        tok, model = self.hf[name]
        enc = tok(a, b or None, return_tensors="pt")
        config = model.config
        hm = None
        if mask is not None:
            hm = torch.tensor(mask, dtype=torch.float64).view(
                config.num_hidden_layers, config.num_attention_heads)
        with torch.no_grad():
            out = model(**enc, head_mask=hm, output_attentions=True)
        return out.logits[0].numpy(), [a[0].numpy() for a in out.attentions]

    def test_classify_matches_hf_under_head_masks(self):
        worst = 0.0
        for name, pairs in self.texts.items():
            config, masks = self.masks(name)
            plain = None
            for kind, mask in masks.items():
                request = pb.ClassifyRequest(
                    model=name, inputs=[pb.TextInput(text_a=a, text_b=b) for a, b in pairs])
                if mask is not None:
                    request.head_mask.dense.values.extend(mask.tolist())
                got = np.array([list(p.logits) for p in self.stub.Classify(request).predictions])
                want = np.array([self.hf_run(name, a, b, mask)[0] for a, b in pairs])
                with self.subTest(model=name, mask=kind):
                    np.testing.assert_allclose(got, want, atol=LOGIT_TOL, rtol=0)
                    worst = max(worst, np.abs(got - want).max())
                    if plain is None:
                        plain = want
                    else:
                        self.assertGreater(np.abs(want - plain).max(), 10 * LOGIT_TOL)
        print("\nClassify: max |engine - HF float64| logit = %.3g" % worst)

    def test_get_attention_matches_hf_under_head_masks(self):
        worst = 0.0
        for name, pairs in self.texts.items():
            config, masks = self.masks(name)
            for kind, mask in masks.items():
                for a, b in pairs[:3] + pairs[-2:]:
                    request = pb.GetAttentionRequest(
                        model=name, input=pb.TextInput(text_a=a, text_b=b))
                    if mask is not None:
                        request.head_mask.dense.values.extend(mask.tolist())
                    response = self.stub.GetAttention(request)
                    _, want = self.hf_run(name, a, b, mask)
                    with self.subTest(model=name, mask=kind, text=(a, b)):
                        self.assertEqual(len(response.maps),
                                         config.num_hidden_layers * config.num_attention_heads)
                        t = want[0].shape[-1]
                        for m in response.maps:
                            got = np.frombuffer(m.data, dtype="<f4").reshape(t, t)
                            ref = want[m.layer][m.head]
                            np.testing.assert_allclose(got, ref, atol=ATTENTION_TOL, rtol=0)
                            worst = max(worst, np.abs(got - ref).max())
        print("\nGetAttention: max |engine - HF float64| = %.3g" % worst)


def hf_oracle_vocab(directory):
    with open(os.path.join(directory, "vocab.txt"), encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


if __name__ == "__main__":
    unittest.main()
