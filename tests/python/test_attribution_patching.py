"""Patch with method=ATTRIBUTION through the real bertology-server, against
an independent float64 estimate: tests/golden/intervention_reference.py's
forward (its own BERT, hooks on each head's context vector and each layer's
input hidden state), differentiated by autograd:

  estimate(site) = ld(target) + sum over the site's entries of
                   (a_source - a_target) * d ld(target) / d a

and where the estimate is known without it: a site whose clean and
corrupted activations are equal estimates no change.

Run by ctest; by hand:
  PYTHONPATH=build/python BERTOLOGY_BIN_DIR=build/bin \\
      /usr/bin/python3 -m unittest -v tests/python/test_attribution_patching.py
"""

import os
import unittest

import grpc
import torch

from bertology.v1 import bertology_pb2 as pb
from bertology.v1 import bertology_pb2_grpc as pb_grpc

from testlib import BIN_DIR, TINY_MODEL_DIR as MODEL_DIR
import intervention_reference as ref
from make_golden import read_safetensors
from live_server import LiveServer

L, H, D = ref.L, ref.H, ref.D

# Pairs of equal length in the tiny model's character-level vocabulary.
PAIRS = [("the quick brown fox", "the quick brown dog"),
         ("a cat sat on the mat", "a dog sat on the rug")]


def reference_estimates(w, clean, corrupted, direction, answer, foil, sites):
    """The float64 estimate of every site's patched logit difference."""
    ids = torch.tensor([clean[0], corrupted[0]])
    types = torch.tensor([clean[1], corrupted[1]])
    amask = torch.ones_like(ids)
    keep = []

    def hold(_, t):
        if t.grad_fn is not None:
            t.retain_grad()
        keep.append(t)
        return t

    ctxs_kept, hiddens_kept = [], []

    def ctx_hook(l, ctx):
        ctxs_kept.append(hold(l, ctx))
        return ctx

    def hidden_hook(l, x):
        # The embeddings have no graph (the weights need no grad): a leaf.
        x = x.clone() if x.requires_grad else x.detach().requires_grad_(True)
        hiddens_kept.append(hold(l, x))
        return x

    logits, _, _ = ref.forward(w, ids, types, amask,
                               torch.ones(2, L, H, dtype=torch.float64),
                               ctx_hook=ctx_hook, hidden_hook=hidden_hook)
    target = 1 if direction == pb.PATCH_DIRECTION_CLEAN_INTO_CORRUPTED else 0
    source = 1 - target
    ld = logits[:, answer] - logits[:, foil]
    ld[target].backward()
    out = []
    for s in sites:
        if s.kind == pb.PATCH_SITE_KIND_RESIDUAL:
            a = hiddens_kept[s.layer]           # [B, T, hidden]
            c = (a[source] - a[target]) * a.grad[target]
            c = c.sum(-1)                       # [T]
        else:
            a = ctxs_kept[s.layer]              # [B, H, T, D]
            c = ((a[source] - a[target]) * a.grad[target])[s.head].sum(-1)
        part = c[s.position] if s.HasField("position") else c.sum()
        out.append(float(ld[target] + part))
    return out


class AttributionPatchingTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.server = LiveServer(BIN_DIR, ["--model=tiny=" + MODEL_DIR])
        cls.channel = grpc.insecure_channel("127.0.0.1:%d" % cls.server.port)
        grpc.channel_ready_future(cls.channel).result(timeout=30)
        cls.server.wait_serving(cls.channel)
        cls.stub = pb_grpc.BertologyStub(cls.channel)
        cls.w = {k: v.double() for k, v in read_safetensors(
            os.path.join(MODEL_DIR, "model.safetensors")).items()}

    @classmethod
    def tearDownClass(cls):
        cls.channel.close()
        cls.server.stop()

    def encode(self, text):
        tokens = self.stub.Tokenize(pb.TokenizeRequest(text_a=text)).tokens
        return [t.id for t in tokens], [t.segment for t in tokens]

    def patch(self, clean, corrupted, **kw):
        events = list(self.stub.Patch(pb.PatchRequest(
            clean=pb.TextInput(text_a=clean),
            corrupted=pb.TextInput(text_a=corrupted), **kw)))
        results = [r for e in events if e.HasField("results")
                   for r in e.results.results]
        return events[0].plan, results

    def test_estimates_match_the_float64_reference(self):
        for clean, corrupted in PAIRS:
            for direction in (pb.PATCH_DIRECTION_CLEAN_INTO_CORRUPTED,
                              pb.PATCH_DIRECTION_CORRUPTED_INTO_CLEAN):
                plan, results = self.patch(
                    clean, corrupted, all_heads=True, all_head_positions=True,
                    all_residual_positions=True, direction=direction,
                    method=pb.PATCH_METHOD_ATTRIBUTION)
                self.assertEqual(plan.method, pb.PATCH_METHOD_ATTRIBUTION)
                want = reference_estimates(
                    self.w, self.encode(clean), self.encode(corrupted),
                    direction, plan.answer, plan.foil,
                    [r.site for r in results])
                got = [r.logit_diff for r in results]
                self.assertEqual(len(got), (L * H) * (1 + len(plan.tokens))
                                 + (L + 1) * len(plan.tokens))
                # float32 forward and backward against float64: logit
                # differences of a few units, products of small gradients.
                worst = max(abs(a - b) for a, b in zip(got, want))
                self.assertLess(worst, 2e-4, (clean, direction))
                # The estimates differ from the target's own ld: the test
                # would catch a server that returned it for every site.
                target_ld = (plan.corrupted_logit_diff
                             if direction == pb.PATCH_DIRECTION_CLEAN_INTO_CORRUPTED
                             else plan.clean_logit_diff)
                self.assertGreater(max(abs(g - target_ld) for g in got), 1e-2)
                for r in results:
                    self.assertEqual(len(r.logits), 0)

    def test_identical_positions_estimate_no_change(self):
        # Position 1 is the same token in both inputs, and the embeddings
        # (residual layer 0) at a position depend on its token, position and
        # segment only: a_source - a_target is zero there, and the estimate
        # is the target's own ld.
        clean, corrupted = PAIRS[0]
        plan, results = self.patch(
            clean, corrupted, sites=[pb.PatchSite(
                kind=pb.PATCH_SITE_KIND_RESIDUAL, layer=0, position=1)],
            method=pb.PATCH_METHOD_ATTRIBUTION)
        self.assertAlmostEqual(results[0].logit_diff,
                               plan.corrupted_logit_diff, places=5)

    def test_bad_method_and_lengths_are_refused(self):
        with self.assertRaises(grpc.RpcError) as e:
            self.patch(PAIRS[0][0], PAIRS[0][1], all_heads=True, method=7)
        self.assertEqual(e.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("method=7", e.exception.details())
        with self.assertRaises(grpc.RpcError) as e:
            self.patch("the quick brown fox", "the fox", all_heads=True,
                       method=pb.PATCH_METHOD_ATTRIBUTION)
        self.assertEqual(e.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("corrupted", e.exception.details())


if __name__ == "__main__":
    unittest.main()
