"""Attribute through the real bertology-server, against the float64
reference of tests/golden/attribution_reference.py (its own BERT forward and
autograd, written from attribution.proto's definitions) and, unmasked,
against captum 0.8 on HF's own BertForSequenceClassification.

Every method under no mask and under zero, uniform, mean and mean_by_role
masks (the mean modes with statistics from ComputeHeadStatistics, the
reference computing its own means over the same texts), logit and
probability outputs, each baseline and rule of integrated gradients, its
completeness gap falling with the steps, word granularity, the default
target, and bad requests.

Run by ctest (python_attribution_test); by hand, from this folder (as
ctest does: testlib is imported from here):
  make test-venv && cd tests/python && PYTHONPATH=../../build/python \\
      BERTOLOGY_BIN_DIR=../../build/bin OMP_NUM_THREADS=1 \\
      ../../build/test-venv/bin/python -m unittest -v test_attribution
"""

import unittest

import grpc
import numpy as np

from bertology.v1 import bertology_pb2 as pb
from bertology.v1 import bertology_pb2_grpc as pb_grpc

from testlib import BIN_DIR, TINY_MODEL_DIR as MODEL_DIR
from bertology_client import Client
import attribution_reference as ref
from live_server import LiveServer

L, H = ref.L, ref.H

# Single texts and pairs; "zebra", "quick", "dogs", "hello" are several
# pieces in the tiny vocabulary (letters and ##letters), "!" a word of its
# own.
TEXTS = [("the zebra sat on it", ""), ("quick dogs", "was there!"),
         ("hello", "what is this"), ("a cat ran", "")]
# The reference set of the mean modes: other texts, pairs included, so every
# token role (for mean_by_role) has tokens.
REFERENCE_TEXTS = [("a dog ran", "it is"), ("what was that", ""),
                   ("they have been here", "no"), ("cold morning", "and so on"),
                   ("the end", "")]
# [L x H] row-major, values exact in float32; masks a head in every layer
# and halves one, which moves every method's scores well past the
# tolerances (the reference's self-check asserts > 1e-2 relative).
MASK = [1.0, 0.0, 1.0, 1.0,
        0.0, 1.0, 0.5, 0.0,
        1.0, 1.0, 0.0, 1.0]

METHODS = {"saliency": pb.ATTRIBUTION_METHOD_SALIENCY,
           "gradient_x_input": pb.ATTRIBUTION_METHOD_GRADIENT_X_INPUT,
           "integrated_gradients": pb.ATTRIBUTION_METHOD_INTEGRATED_GRADIENTS,
           "attention_rollout": pb.ATTRIBUTION_METHOD_ATTENTION_ROLLOUT,
           "attention_flow": pb.ATTRIBUTION_METHOD_ATTENTION_FLOW,
           "attention_x_gradient": pb.ATTRIBUTION_METHOD_ATTENTION_X_GRADIENT}
OUTPUTS = {"logit": pb.ATTRIBUTION_OUTPUT_LOGIT,
           "probability": pb.ATTRIBUTION_OUTPUT_PROBABILITY}
BASELINES = {"pad": pb.ATTRIBUTION_BASELINE_PAD, "zero": pb.ATTRIBUTION_BASELINE_ZERO,
             "mask": pb.ATTRIBUTION_BASELINE_MASK}
RULES = {"gauss_legendre": pb.INTEGRATION_RULE_GAUSS_LEGENDRE,
         "riemann_trapezoid": pb.INTEGRATION_RULE_RIEMANN_TRAPEZOID}
CAPTUM_RULES = {"gauss_legendre": "gausslegendre",
                "riemann_trapezoid": "riemann_trapezoid"}
MODES = {"zero": pb.ABLATION_MODE_ZERO, "uniform": pb.ABLATION_MODE_UNIFORM,
         "mean": pb.ABLATION_MODE_MEAN, "mean_by_role": pb.ABLATION_MODE_MEAN_BY_ROLE}

# Tolerances: a float32 server against a float64 reference. Measured with
# HF's own model in float32 against the reference (captum's saliency, input
# x gradient and IG at 50 points on two inputs; rollout and flow from HF's
# float32 attention maps): logits 2.4e-6, gradient methods up to 2.9e-6 of
# the largest |score|, rollout 5e-8, flow 2.4e-7; and with the first
# server build that had Attribute, over this whole file: IG 1.8e-5 of the
# largest |score| (one case; the others under 8e-6), attention x gradient
# 4e-6, rollout 7.7e-8, flow 4.1e-7, f(baseline) 3.4e-6, the gap 0.15 of
# its tolerance. Each tolerance leaves >= 5x, while a wrong definition (a
# missing mask, another baseline, the other rule, an off-by-one in the
# quadrature) moves scores by > 1e-2 (the reference's self-check).
# Logits, f and f(baseline): the README's 1e-4 against HF.
LOGIT_ATOL = 1e-4
# Gradient methods: of the largest |score| (attention x gradient: of the
# largest |score - identity|, the part the gradients make), plus a floor for
# exact zeros (IG's special tokens).
GRAD_RTOL = 1e-4
GRAD_FLOOR = 1e-7
# Every score also keeps float32's own rounding, relative to itself (eps
# 1.2e-7, a few roundings): attention x gradient's ~1.02 at q, whose
# gradient part alone may be ~1e-2.
ELEMENT_RTOL = 1e-6
# Rollout and flow: absolute (probabilities and flows are in [0, 1]).
ATTN_ATOL = 5e-6
# IG's completeness gap |sum attr - (f(x) - f(b))|: float32's error on its
# three terms, relative to their sizes.
GAP_RTOL = 2e-5


class AttributionTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.server = LiveServer(BIN_DIR, ["--model=tiny=" + MODEL_DIR,
                                          "--warmup_passes=1"])
        cls.channel = grpc.insecure_channel("127.0.0.1:%d" % cls.server.port)
        grpc.channel_ready_future(cls.channel).result(timeout=30)
        cls.server.wait_serving(cls.channel)
        cls.stub = pb_grpc.BertologyStub(cls.channel)
        cls.client = Client("127.0.0.1:%d" % cls.server.port)
        cls.w = ref.load_weights(MODEL_DIR)
        cls.encoded = [cls.encode(a, b) for a, b in TEXTS]
        cls.statistics = cls.client.compute_head_statistics(REFERENCE_TEXTS)
        rows = [cls.encode(a, b)[:2] for a, b in REFERENCE_TEXTS]
        mean, role_means, role_tokens, tokens = ref.head_statistics(cls.w, rows)
        assert min(role_tokens) > 0, role_tokens
        cls.reference_tokens = tokens
        cls.ablations = {"none": None}
        for mode in MODES:
            cls.ablations[mode] = ref.Ablation(mode, MASK, mean=mean, role_means=role_means)

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        cls.channel.close()
        cls.server.stop()

    @classmethod
    def encode(cls, text_a, text_b):
        """(ids, types, special, word_index, tokens) by the server's
        tokenizer."""
        tokens = cls.stub.Tokenize(pb.TokenizeRequest(text_a=text_a, text_b=text_b)).tokens
        return ([t.id for t in tokens], [t.segment for t in tokens],
                [t.special for t in tokens], [t.word_index for t in tokens], tokens)

    # ------------------------------------------------------------ helpers

    def head_mask(self, mode):
        if mode == "none":
            return None
        return pb.HeadMask(dense=pb.DenseMask(values=MASK), mode=MODES[mode],
                           statistics=self.statistics["id"])

    def attribute(self, texts=TEXTS, mode="none", methods=(), **fields):
        """The results of one Attribute call, checked to come one per
        input in input order (progress events may come between them), the
        last event a result."""
        request = pb.AttributeRequest(
            model="tiny", inputs=[pb.TextInput(text_a=a, text_b=b) for a, b in texts],
            methods=[METHODS[m] for m in methods], **fields)
        mask = self.head_mask(mode)
        if mask is not None:
            request.head_mask.CopyFrom(mask)
        events = list(self.stub.Attribute(request, timeout=300))
        kinds = [e.WhichOneof("event") for e in events]
        self.assertEqual(kinds.count("result"), len(texts))
        self.assertEqual(kinds[-1], "result")
        results = [e.result for e in events if e.WhichOneof("event") == "result"]
        self.assertEqual([r.input_index for r in results], list(range(len(texts))))
        return results

    def reference(self, i, mode="none", **kwargs):
        ids, types, special, _, _ = self.encoded[i]
        return ref.attribute(self.w, ids, types, special, self.ablations[mode], **kwargs)

    def assert_scores(self, got, want, method, q_row):
        """got [U] against want [U] at the method's tolerance (see the
        constants). Attention x gradient's scores hold the identity's 1 at
        q; its tolerance scales with the rest, what the gradients make."""
        got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
        self.assertEqual(got.shape, want.shape, method)
        if method in ("attention_rollout", "attention_flow"):
            atol = ATTN_ATOL
        else:
            scale = np.abs(want - (q_row if method == "attention_x_gradient" else 0)).max()
            atol = GRAD_RTOL * scale + GRAD_FLOOR
        np.testing.assert_allclose(got, want, rtol=ELEMENT_RTOL, atol=atol, err_msg=method)

    def assert_units(self, result, i, words):
        """Tokens are the pieces; units one per token, or the words as
        GetAttention's GRANULARITY_WORD builds them."""
        ids, _, _, word_index, tokens = self.encoded[i]
        self.assertEqual([t.id for t in result.tokens], ids)
        spans = ref.word_units(word_index) if words else [(t, 1) for t in range(len(ids))]
        self.assertEqual([(u.first_token, u.num_tokens) for u in result.units], spans)
        for u in result.units:
            first = tokens[u.first_token]
            self.assertEqual((u.segment, u.special), (first.segment, first.special))
            if u.num_tokens == 1:
                self.assertEqual(u.text, first.text)
            else:  # the word as written in its text
                text = TEXTS[i][first.segment].encode()
                end = tokens[u.first_token + u.num_tokens - 1].byte_end
                self.assertEqual(u.text, text[first.byte_start:end].decode())
        return spans

    def check_result(self, result, want, i, methods, output="logit", words=False):
        """One AttributionResult against the reference's attribute()."""
        self.assertEqual(result.target, want["target"])
        self.assertEqual(result.target_position, 0)
        np.testing.assert_allclose(result.logits, want["logits"], rtol=0, atol=LOGIT_ATOL)
        self.assertAlmostEqual(result.output_value, want["output_value"], delta=LOGIT_ATOL)
        # An unset output may be echoed as set or as LOGIT.
        self.assertIn(result.output, [OUTPUTS[output]] + (
            [pb.ATTRIBUTION_OUTPUT_UNSPECIFIED] if output == "logit" else []))
        spans = self.assert_units(result, i, words)
        q_row = ref.to_words(np.eye(len(self.encoded[i][0]))[0], spans)
        self.assertEqual([m.method for m in result.methods], [METHODS[m] for m in methods])
        for got in result.methods:
            name = [k for k, v in METHODS.items() if v == got.method][0]
            scores = want["scores"][name]
            self.assert_scores(got.scores, ref.to_words(scores, spans), name, q_row)
            if name == "integrated_gradients":
                self.check_ig_extras(got, want, scores)
            else:
                self.assertFalse(got.HasField("completeness_gap"), name)

    def check_ig_extras(self, got, want, token_scores):
        """completeness_gap, baseline_output and steps of an IG result."""
        self.assertEqual(got.steps, want["steps"])
        self.assertAlmostEqual(got.baseline_output, want["baseline_output"], delta=LOGIT_ATOL)
        self.assertAlmostEqual(got.completeness_gap, want["completeness_gap"],
                               delta=self.gap_tolerance(want, token_scores))

    @staticmethod
    def gap_tolerance(want, token_scores):
        """GAP_RTOL of the sizes of the gap's three terms."""
        size = (abs(want["output_value"]) + abs(want["baseline_output"])
                + np.abs(token_scores).sum())
        return GAP_RTOL * size + GRAD_FLOOR

    # -------------------------------------------------------------- tests

    def test_every_method_under_each_mask(self):
        """All six methods (an empty list) for every input, with the
        default target, under no mask and each mode, both outputs."""
        for mode in self.ablations:
            for output in OUTPUTS:
                with self.subTest(mode=mode, output=output):
                    results = self.attribute(mode=mode, output=OUTPUTS[output])
                    for i, result in enumerate(results):
                        want = self.reference(i, mode, output=output)
                        self.check_result(result, want, i, ref.METHODS, output)

    def test_default_target_is_the_masked_prediction(self):
        """Unset target: argmax of the logits under the mask (the result's
        own logits and the reference's)."""
        for mode in ("none", "zero", "mean"):
            with self.subTest(mode=mode):
                results = self.attribute(mode=mode, methods=("saliency",))
                for i, result in enumerate(results):
                    self.assertEqual(result.target, int(np.argmax(result.logits)))
                    self.assertEqual(result.target, self.reference(
                        i, mode, methods=("saliency",))["target"])

    def test_explicit_targets(self):
        for target in range(3):
            for mode in ("none", "uniform"):
                with self.subTest(target=target, mode=mode):
                    results = self.attribute(mode=mode, target=target,
                                             output=pb.ATTRIBUTION_OUTPUT_PROBABILITY)
                    for i, result in enumerate(results):
                        want = self.reference(i, mode, target=target, output="probability")
                        self.check_result(result, want, i, ref.METHODS, "probability")

    def test_requested_order_and_subset(self):
        order = ("attention_flow", "saliency", "integrated_gradients")
        results = self.attribute(mode="zero", methods=order, output=OUTPUTS["logit"])
        for i, result in enumerate(results):
            self.check_result(result, self.reference(i, "zero", methods=order), i, order)

    def test_baselines_and_rules(self):
        """Every baseline under both rules, unmasked and under zero and
        mean masks; 20 points (not the default)."""
        for mode in ("none", "zero", "mean"):
            for baseline in BASELINES:
                for rule in RULES:
                    with self.subTest(mode=mode, baseline=baseline, rule=rule):
                        results = self.attribute(
                            mode=mode, methods=("integrated_gradients",),
                            output=OUTPUTS["logit"], baseline=BASELINES[baseline],
                            rule=RULES[rule], steps=20)
                        for i, result in enumerate(results):
                            want = self.reference(i, mode, methods=("integrated_gradients",),
                                                  baseline=baseline, rule=rule, steps=20)
                            self.check_result(result, want, i, ("integrated_gradients",))
                            # The special tokens keep their embedding: 0.
                            special = self.encoded[i][2]
                            scores = np.asarray(result.methods[0].scores)
                            self.assertTrue((scores[np.array(special)] == 0).all())

    def test_ig_defaults(self):
        """Unset baseline, rule, steps, output: PAD, Gauss-Legendre, 50,
        the logit."""
        results = self.attribute(methods=("integrated_gradients",))
        for i, result in enumerate(results):
            want = self.reference(i, methods=("integrated_gradients",))
            self.assertEqual(result.methods[0].steps, 50)
            self.check_result(result, want, i, ("integrated_gradients",))

    def test_completeness_gap_falls_with_steps(self):
        """The gap equals the reference's at 16, 64 and 256 points and falls
        as they grow wherever the reference's fall exceeds the tolerance
        (16 up: the reference's self-check shows smaller counts erratic on
        this model)."""
        for mode in ("none", "zero", "mean_by_role"):
            for rule in RULES:
                for output in OUTPUTS:
                    with self.subTest(mode=mode, rule=rule, output=output):
                        got, want, tol = self.gaps_by_steps(mode, rule, output)
                        self.assertTrue((want[:-1] > want[1:]).all(), want)
                        self.assertTrue((got[0] > got[-1]).all(), got)
                        clear = want[:-1] - want[1:] > 2 * (tol[:-1] + tol[1:])
                        self.assertTrue(clear[0].any(), (want, tol))
                        self.assertTrue((got[:-1] > got[1:])[clear].all(), (got, want))

    def gaps_by_steps(self, mode, rule, output):
        """(server gaps, reference gaps, tolerances), each [steps, inputs],
        at ref.COMPLETENESS_STEPS, after checking every result."""
        got, want, tol = [], [], []
        for n in ref.COMPLETENESS_STEPS:
            results = self.attribute(mode=mode, methods=("integrated_gradients",),
                                     output=OUTPUTS[output], rule=RULES[rule], steps=n)
            for i, result in enumerate(results):
                w = self.reference(i, mode, methods=("integrated_gradients",),
                                   output=output, rule=rule, steps=n)
                self.check_result(result, w, i, ("integrated_gradients",), output)
                got.append(result.methods[0].completeness_gap)
                want.append(w["completeness_gap"])
                tol.append(self.gap_tolerance(w, w["scores"]["integrated_gradients"]))
        shape = (len(ref.COMPLETENESS_STEPS), len(TEXTS))
        return (np.reshape(got, shape), np.reshape(want, shape), np.reshape(tol, shape))

    def test_word_granularity(self):
        """Each word's score is the sum of its pieces' (special tokens
        their own words), for every method and mask mode."""
        for mode in ("none", "zero", "mean"):
            with self.subTest(mode=mode):
                results = self.attribute(mode=mode, granularity=pb.GRANULARITY_WORD)
                for i, result in enumerate(results):
                    self.assertLess(len(result.units), len(result.tokens))
                    self.check_result(result, self.reference(i, mode), i, ref.METHODS,
                                      words=True)

    def test_captum_agrees_unmasked(self):
        """captum 0.8 on HF's own model (float64, unmasked): saliency,
        input x gradient, and IG for every baseline and both rules. captum's
        trapezoid steps are 1 / n, not 1 / (n - 1) (its weights sum to
        (n - 1) / n), so its IG is scaled by n / (n - 1) there; its float32
        step sizes are ~6e-8 relative, far under the tolerances."""
        model = ref.hf_model(MODEL_DIR)
        n = 16
        for i in (0, 1):
            ids, types, special, _, _ = self.encoded[i]
            for output in OUTPUTS:
                target = self.reference(i, methods=("saliency",))["target"]
                cap = ref.captum_attributions(model, ids, types, special, target, output, n)
                q_row = np.eye(len(ids))[0]
                for name in ("saliency", "gradient_x_input"):
                    with self.subTest(i=i, output=output, method=name):
                        got = self.attribute(TEXTS[i:i + 1], methods=(name,),
                                             output=OUTPUTS[output], target=target)[0]
                        self.assert_scores(got.methods[0].scores, cap[name], name, q_row)
                for baseline in BASELINES:
                    for rule in RULES:
                        with self.subTest(i=i, output=output, baseline=baseline, rule=rule):
                            got = self.attribute(
                                TEXTS[i:i + 1], methods=("integrated_gradients",),
                                output=OUTPUTS[output], baseline=BASELINES[baseline],
                                rule=RULES[rule], steps=n, target=target)[0]
                            attr, _ = cap[("integrated_gradients", baseline, CAPTUM_RULES[rule])]
                            scale = n / (n - 1) if rule == "riemann_trapezoid" else 1.0
                            self.assert_scores(got.methods[0].scores, attr * scale,
                                               "integrated_gradients", q_row)

    def test_mean_statistics_match_reference(self):
        """The reference's means are over the same tokens as the server's."""
        self.assertEqual(self.statistics["tokens"], self.reference_tokens)

    def test_bad_input(self):
        one = [pb.TextInput(text_a="the cat")]
        ig = [METHODS["integrated_gradients"]]
        stats = self.statistics["id"]
        cases = [
            (dict(inputs=one, target=3), "target"),
            (dict(inputs=one, target=-1), "target"),
            (dict(inputs=one, steps=0), "steps"),
            (dict(inputs=one, steps=1025), "steps"),
            (dict(inputs=one, methods=ig, steps=1,
                  rule=RULES["riemann_trapezoid"]), "steps"),
            (dict(inputs=one, baseline=7), "baseline"),
            (dict(inputs=one, rule=9), "rule"),
            (dict(inputs=one, output=5), "output"),
            (dict(inputs=one, granularity=7), "granularity"),
            (dict(inputs=one, methods=[42]), "methods"),
            (dict(inputs=one, target_position=0), "target_position"),
            (dict(inputs=[]), "inputs"),
            (dict(inputs=one, head_mask=pb.HeadMask(
                dense=pb.DenseMask(values=MASK), mode=pb.ABLATION_MODE_RESAMPLE,
                statistics=stats)), "resample"),
            (dict(inputs=one, head_mask=pb.HeadMask(
                dense=pb.DenseMask(values=MASK), mode=pb.ABLATION_MODE_MEAN)),
             "head_mask.statistics"),
        ]
        for fields, field in cases:
            with self.subTest(field=field, request=str(fields)):
                with self.assertRaises(grpc.RpcError) as err:
                    list(self.stub.Attribute(pb.AttributeRequest(model="tiny", **fields),
                                             timeout=60))
                self.assertEqual(err.exception.code(), grpc.StatusCode.INVALID_ARGUMENT,
                                 err.exception.details())
                self.assertIn(field, err.exception.details().lower()
                              if field == "resample" else err.exception.details())


if __name__ == "__main__":
    unittest.main()
