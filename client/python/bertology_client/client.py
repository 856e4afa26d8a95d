"""Client for the bertology.v1.Bertology gRPC service (see
proto/bertology/v1/bertology.proto for the contract).

Masks are given as:
  None                          all heads kept
  {"ablate": [(l, h), ...]}     these heads masked, all others kept
  {"keep": [(l, h), ...]}       only these heads kept
  {"dense": array}              [layers, heads] (or flat) values in [0, 1]
  a numpy array / nested list   same as {"dense": ...}
  a HeadMask proto              passed through
and a dict may carry "mode": "zero" | "uniform" | "mean" | "mean_by_role" |
"resample". "mean" and "mean_by_role" replace an ablated head's output with
its mean over reference inputs (pooled, or per token role: [CLS], each
[SEP], each segment's tokens); "resample" (sweeps only) with its output on
other reference inputs, position by position, drawn per input, the metric
averaged over draws. They need reference statistics, an id from
compute_head_statistics() given as statistics= (or "statistics" in the
dict); "resample" also takes draws=, seed= and alignment= ("matched" or
"scaled"; "draws"/"seed" in the dict).
"""

import collections
from typing import Any, Callable, Dict, Iterator, Optional, Sequence

import grpc
import numpy as np

from bertology_client import attribution as _attribution
from bertology_client.frames import Result

from bertology.v1 import bertology_pb2 as pb
from bertology.v1 import bertology_pb2_grpc as pb_grpc
from grpc_health.v1 import health_pb2 as health_pb
from grpc_health.v1 import health_pb2_grpc as health_grpc

_MODES = {
    None: pb.ABLATION_MODE_UNSPECIFIED,
    "zero": pb.ABLATION_MODE_ZERO,
    "uniform": pb.ABLATION_MODE_UNIFORM,
    "mean": pb.ABLATION_MODE_MEAN,
    "resample": pb.ABLATION_MODE_RESAMPLE,
    "mean_by_role": pb.ABLATION_MODE_MEAN_BY_ROLE,
}
_ALIGNMENTS = {
    None: pb.RESAMPLE_ALIGNMENT_UNSPECIFIED,
    "matched": pb.RESAMPLE_ALIGNMENT_MATCHED_LENGTHS,
    "scaled": pb.RESAMPLE_ALIGNMENT_SCALED,
}
_SITE_KINDS = {
    "head": pb.PATCH_SITE_KIND_HEAD,
    "residual": pb.PATCH_SITE_KIND_RESIDUAL,
}
_DIRECTIONS = {
    "clean-into-corrupted": pb.PATCH_DIRECTION_CLEAN_INTO_CORRUPTED,
    "corrupted-into-clean": pb.PATCH_DIRECTION_CORRUPTED_INTO_CLEAN,
}
_GRANULARITY = {
    "token": pb.GRANULARITY_TOKEN,
    "word": pb.GRANULARITY_WORD,
}
_ENCODING = {
    "float32": pb.ATTENTION_ENCODING_FLOAT32,
    "float16": pb.ATTENTION_ENCODING_FLOAT16,
}

# Scores of a Classify call, one row per input. A token classifier fills
# `tokens` instead of the per-input scores: per input, a dict of "logits"
# and "probabilities" ([T, C] float32), "labels" ([T] int), "label_names",
# "word_index" ([T] int, -1 for special tokens), "first_piece" ([T] bool)
# and "text" (the word pieces); the per-input arrays are then [N, 0].
ClassifyResult = collections.namedtuple(
    "ClassifyResult",
    ["logits", "probabilities", "labels", "label_names", "truncated",
     "num_tokens", "tokens"])

# AnalyzeHeads' per-head statistics (HeadStatistics' float fields) and the
# names of its pattern classes.
_HEAD_STATISTICS = ("to_cls", "to_sep", "to_punctuation", "to_self",
                    "to_previous", "to_next", "entropy",
                    "cross_segment_match", "mean_distance", "to_own_segment",
                    "vertical", "diagonal")
_PATTERN_NAMES = {
    pb.ATTENTION_PATTERN_VERTICAL: "vertical",
    pb.ATTENTION_PATTERN_DIAGONAL: "diagonal",
    pb.ATTENTION_PATTERN_VERTICAL_DIAGONAL: "vertical+diagonal",
    pb.ATTENTION_PATTERN_BLOCK: "block",
    pb.ATTENTION_PATTERN_HETEROGENEOUS: "heterogeneous",
}

# One streamed sweep event: kind is "plan", "progress", "baseline" or
# "result"; data is a dict (see _mask_result_dict for results).
SweepEvent = collections.namedtuple("SweepEvent", ["kind", "data"])


def _mode(mode):
    if isinstance(mode, int):
        return mode
    try:
        return _MODES[mode if mode is None else str(mode).lower()]
    except KeyError:
        raise ValueError("mode must be 'zero', 'uniform', 'mean', "
                         "'mean_by_role' or 'resample', not %r" % (mode,))


def _resample(draws, seed, alignment=None):
    """ResampleOptions, or None when none is given (the server's 1 draw,
    seed 0, matched lengths)."""
    if draws is None and seed is None and alignment is None:
        return None
    if alignment not in _ALIGNMENTS:
        raise ValueError("alignment must be 'matched' or 'scaled', not %r"
                         % (alignment,))
    return pb.ResampleOptions(draws=int(draws or 0), seed=int(seed or 0),
                              alignment=_ALIGNMENTS[alignment])


def _heads(pairs):
    return pb.HeadList(heads=[pb.LayerHead(layer=int(l), head=int(h))
                              for l, h in pairs])


def _with_reference(m, statistics, draws, seed):
    """Sets MEAN/RESAMPLE's statistics id and draws on HeadMask `m`."""
    if statistics:
        m.statistics = statistics
    resample = _resample(draws, seed)
    if resample is not None:
        m.resample.CopyFrom(resample)
    return m


def head_mask_proto(mask, mode=None, statistics=None, draws=None, seed=None):
    """A bertology.v1.HeadMask from any of the accepted mask forms (see the
    module docstring); None when mask, mode and the reference arguments are
    all None. `statistics` (a compute_head_statistics id), `draws` and
    `seed` are for the "mean" and "resample" modes; a dict's own
    "statistics"/"draws"/"seed" win."""
    if isinstance(mask, pb.HeadMask):
        return mask
    if mask is None:
        if mode is None and statistics is None and draws is None and \
                seed is None:
            return None
        return _with_reference(pb.HeadMask(mode=_mode(mode)), statistics,
                               draws, seed)
    if isinstance(mask, dict):
        unknown = set(mask) - {"ablate", "keep", "dense", "mode",
                               "statistics", "draws", "seed"}
        if unknown or len(set(mask) & {"ablate", "keep", "dense"}) != 1:
            raise ValueError("mask dict needs exactly one of ablate/keep/dense "
                             "(and optionally mode, statistics, draws, seed), "
                             "got %s" % sorted(mask))
        m = _with_reference(pb.HeadMask(mode=_mode(mask.get("mode", mode))),
                            mask.get("statistics", statistics),
                            mask.get("draws", draws), mask.get("seed", seed))
        if "ablate" in mask:
            m.ablate.CopyFrom(_heads(mask["ablate"]))
        elif "keep" in mask:
            m.keep.CopyFrom(_heads(mask["keep"]))
        else:
            m.dense.values.extend(
                np.asarray(mask["dense"], dtype=np.float32).ravel().tolist())
        return m
    values = np.asarray(mask, dtype=np.float32)
    m = _with_reference(pb.HeadMask(mode=_mode(mode)), statistics, draws, seed)
    m.dense.values.extend(values.ravel().tolist())
    return m


def decode_attention_map(data, encoding, size):
    """[size, size] float32 array from AttentionMap.data bytes."""
    if encoding == pb.ATTENTION_ENCODING_FLOAT16:
        dtype = np.dtype("<f2")
    elif encoding in (pb.ATTENTION_ENCODING_FLOAT32,
                      pb.ATTENTION_ENCODING_UNSPECIFIED):
        dtype = np.dtype("<f4")
    else:
        raise ValueError("unknown attention encoding %r" % encoding)
    if len(data) != size * size * dtype.itemsize:
        raise ValueError("map has %d bytes, expected %d" %
                         (len(data), size * size * dtype.itemsize))
    return np.frombuffer(data, dtype=dtype).astype(np.float32).reshape(size,
                                                                       size)


def _pair(item):
    if isinstance(item, str):
        return pb.TextInput(text_a=item)
    if isinstance(item, pb.TextInput):
        return item
    if isinstance(item, dict):
        return pb.TextInput(text_a=item.get("text_a", ""),
                            text_b=item.get("text_b", ""))
    a, b = item
    return pb.TextInput(text_a=a, text_b=b or "")


def _token_dict(t):
    return {"text": t.text, "id": t.id, "segment": t.segment,
            "char_start": t.char_start, "char_end": t.char_end,
            "byte_start": t.byte_start, "byte_end": t.byte_end,
            "word_index": t.word_index, "special": t.special}


def _mask_result_dict(r):
    return {"mask_index": r.mask_index, "mask_id": r.mask_id, "spec": r.spec,
            "ablated": [(h.layer, h.head) for h in r.ablated],
            "examples": r.examples, "scored": r.scored, "correct": r.correct,
            "loss_sum": r.loss_sum, "accuracy": r.accuracy,
            "accuracy_delta": r.accuracy_delta,
            # None when the baseline accuracy is 0 (no ratio exists).
            "relative_change_percent": (
                r.relative_change_percent
                if r.HasField("relative_change_percent") else None),
            "mean_loss_delta": r.mean_loss_delta,
            # 95 % intervals: Wilson's of accuracy; the paired one of the
            # change (None for the baseline); distinguishable: it excludes 0.
            "accuracy_ci": (r.accuracy_ci.low, r.accuracy_ci.high),
            "accuracy_delta_ci": (
                (r.accuracy_delta_ci.low, r.accuracy_delta_ci.high)
                if r.HasField("accuracy_delta_ci") else None),
            "distinguishable": r.delta_distinguishable,
            # Resample: draws per example and units right per draw.
            "draws": r.draws, "draw_correct": list(r.draw_correct)}


def _token_predictions(p):
    """A token classifier's Prediction as arrays (see ClassifyResult)."""
    t = p.tokens
    c = len(t[0].logits) if t else 0
    return {"logits": np.array([list(x.logits) for x in t],
                               dtype=np.float32).reshape(len(t), c),
            "probabilities": np.array([list(x.probabilities) for x in t],
                                      dtype=np.float32).reshape(len(t), c),
            "labels": np.array([x.label for x in t], dtype=np.int64),
            "label_names": [x.label_name for x in t],
            "word_index": np.array([x.word_index for x in t], dtype=np.int64),
            "first_piece": np.array([x.first_piece for x in t], dtype=bool),
            "text": [x.text for x in t]}


def _labeled_example(ex):
    """A LabeledExample from (text_a, text_b, label), (text, label) or a
    LabeledExample; label is a class index or a list of word labels."""
    if isinstance(ex, pb.LabeledExample):
        return ex
    *texts, label = ex
    a, b = (texts + [""])[:2]
    example = pb.LabeledExample(input=pb.TextInput(text_a=a, text_b=b or ""))
    if isinstance(label, (list, tuple, np.ndarray)):
        example.word_labels.extend(int(x) for x in label)
    else:
        example.label = int(label)
    return example


def _importance_dict(r):
    shape = (r.num_layers, r.num_heads)
    return {"importance": np.array(r.importance, dtype=np.float64).reshape(shape),
            "raw_importance": np.array(r.raw_importance,
                                       dtype=np.float64).reshape(shape),
            "examples": r.examples, "scored": r.scored, "correct": r.correct,
            "accuracy": r.accuracy, "loss_sum": r.loss_sum}


def _prune_step_dict(s):
    return {"step": s.step, "heads_left": s.heads_left,
            "accuracy": s.accuracy, "loss_sum": s.loss_sum,
            "masked": [(h.layer, h.head) for h in s.masked],
            "masked_this_step": [(h.layer, h.head) for h in s.masked_this_step]}


def _statistics_dict(s):
    """A ReferenceStatistics as a dict."""
    return {"id": s.id, "examples": s.examples, "tokens": s.tokens,
            "truncated_examples": s.truncated_examples}


def _patch_site(site):
    """PatchSite from a proto, (layer, head), (layer, head, position) or a
    dict with kind ("head" or "residual"), layer, head, position."""
    if isinstance(site, pb.PatchSite):
        return site
    if isinstance(site, dict):
        out = pb.PatchSite(kind=_SITE_KINDS[site.get("kind", "head")],
                           layer=int(site.get("layer", 0)),
                           head=int(site.get("head", 0)))
        position = site.get("position")
    else:
        layer, head, *rest = site
        out = pb.PatchSite(kind=pb.PATCH_SITE_KIND_HEAD, layer=int(layer),
                           head=int(head))
        position = rest[0] if rest else None
    if position is not None:
        out.position = int(position)
    return out


def _patch_plan_dict(p):
    direction = ("corrupted-into-clean"
                 if p.direction == pb.PATCH_DIRECTION_CORRUPTED_INTO_CLEAN
                 else "clean-into-corrupted")
    return {"num_sites": p.num_sites, "num_tokens": p.num_tokens,
            "tokens": list(p.tokens),
            "corrupted_tokens": list(p.corrupted_tokens),
            "answer": p.answer, "foil": p.foil,
            "clean_logits": np.array(p.clean_logits, dtype=np.float32),
            "corrupted_logits": np.array(p.corrupted_logits,
                                         dtype=np.float32),
            "clean_logit_diff": p.clean_logit_diff,
            "corrupted_logit_diff": p.corrupted_logit_diff,
            "direction": direction,
            "method": ("attribution"
                       if p.method == pb.PATCH_METHOD_ATTRIBUTION
                       else "exact")}


def _patch_result_dict(r):
    s = r.site
    return {"site_index": r.site_index,
            "kind": ("residual" if s.kind == pb.PATCH_SITE_KIND_RESIDUAL
                     else "head"),
            "layer": s.layer, "head": s.head,
            # None: the site spans every position.
            "position": s.position if s.HasField("position") else None,
            "logits": np.array(r.logits, dtype=np.float32),
            "logit_diff": r.logit_diff,
            # Empty for method="attribution" (it estimates logit_diff
            # alone). normalized_effect: None when the clean and corrupted
            # logit differences are equal (no ratio exists).
            "normalized_effect": (r.normalized_effect
                                  if r.HasField("normalized_effect")
                                  else None)}


def _mask_spec(spec, index):
    """MaskSpec from a proto, a generator dict or a mask."""
    if isinstance(spec, pb.MaskSpec):
        return spec
    if isinstance(spec, dict) and "generator" in spec:
        kind = spec["generator"]
        if kind == "single_heads":
            return pb.MaskSpec(all_single_heads=pb.MaskSpec.AllSingleHeads())
        if kind == "layers":
            return pb.MaskSpec(all_layers=pb.MaskSpec.AllLayers())
        if kind == "random":
            return pb.MaskSpec(random=pb.MaskSpec.RandomFraction(
                fraction=spec["fraction"], repeats=spec.get("repeats", 1),
                seed=spec.get("seed", 0),
                layer_begin=spec.get("layer_begin", 0),
                layer_end=spec.get("layer_end", 0)))
        if kind == "keep_only":
            return pb.MaskSpec(keep_only=pb.MaskSpec.KeepOnly(
                id=spec.get("id", ""), layer_begin=spec.get("layer_begin", 0),
                layer_end=spec.get("layer_end", 0),
                keep=_heads(spec.get("keep", [])).heads))
        raise ValueError("unknown generator %r" % kind)
    mask_id = ""
    if isinstance(spec, dict) and "id" in spec:
        spec = dict(spec)
        mask_id = spec.pop("id")
    return pb.MaskSpec(explicit_mask=pb.MaskSpec.Explicit(
        id=mask_id, mask=head_mask_proto(spec)))


def _read(path):
    with open(path, "rb") as f:
        return f.read()


def _token(token_file):
    """The first word of the file (blank lines and # comments skipped)."""
    with open(token_file, encoding="utf-8") as f:
        for line in f:
            words = line.split()
            if words and not words[0].startswith("#"):
                return words[0]
    raise ValueError("token_file=%s: no token in it" % token_file)


class _TokenInterceptor(grpc.UnaryUnaryClientInterceptor,
                        grpc.UnaryStreamClientInterceptor):
    """Adds `authorization: Bearer TOKEN` to every call, reading the file
    each time so a rotated token is used from the next call on."""

    def __init__(self, token_file):
        self._token_file = token_file

    def _details(self, details):
        metadata = list(details.metadata or [])
        metadata.append(("authorization", "Bearer " + _token(self._token_file)))
        return _CallDetails(details.method, details.timeout, metadata,
                            details.credentials,
                            getattr(details, "wait_for_ready", None),
                            getattr(details, "compression", None))

    def intercept_unary_unary(self, continuation, details, request):
        return continuation(self._details(details), request)

    def intercept_unary_stream(self, continuation, details, request):
        return continuation(self._details(details), request)


class _CallDetails(
        collections.namedtuple("_CallDetails", (
            "method", "timeout", "metadata", "credentials", "wait_for_ready",
            "compression")), grpc.ClientCallDetails):
    pass


class Client:
    """A channel to one bertology-server target (any gRPC target string:
    "host:port", "dns:///name:port", "ipv4:a:p,b:p"). Thread-safe as gRPC
    channels are. Use as a context manager or call close().

    Security, as the CLI's flags: `tls_ca` (PEM file; TLS on), `tls_cert`
    and `tls_key` (client certificate for mutual TLS; TLS on, trusting the
    system's roots unless `tls_ca`), `tls_server_name` (the name the
    server's certificate carries, when not the target's host) and
    `token_file` (bearer token, the file's first word, sent with every
    call)."""

    def __init__(self, target, model="", timeout=60.0, options=None,
                 channel=None, tls_ca=None, tls_cert=None, tls_key=None,
                 tls_server_name=None, token_file=None):
        self.model = model
        self.timeout = timeout
        opts = [("grpc.max_receive_message_length", 64 << 20)]
        opts += list(options or [])
        if channel is None:
            if tls_ca or tls_cert or tls_key:
                if bool(tls_cert) != bool(tls_key):
                    raise ValueError("tls_cert and tls_key go together")
                creds = grpc.ssl_channel_credentials(
                    root_certificates=_read(tls_ca) if tls_ca else None,
                    private_key=_read(tls_key) if tls_key else None,
                    certificate_chain=_read(tls_cert) if tls_cert else None)
                if tls_server_name:
                    opts.append(("grpc.ssl_target_name_override",
                                 tls_server_name))
                channel = grpc.secure_channel(target, creds, options=opts)
            else:
                channel = grpc.insecure_channel(target, options=opts)
        self._raw_channel = channel
        if token_file:
            _token(token_file)  # fail now on a missing or empty file
            channel = grpc.intercept_channel(channel,
                                             _TokenInterceptor(token_file))
        self._channel = channel
        self._stub = pb_grpc.BertologyStub(self._channel)
        self._health = health_grpc.HealthStub(self._channel)

    def close(self) -> None:
        self._raw_channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def health(self, service="") -> str:
        """grpc.health.v1 status: "SERVING", "NOT_SERVING", "UNKNOWN" (or
        "SERVICE_UNKNOWN")."""
        reply = self._health.Check(health_pb.HealthCheckRequest(service=service),
                                   timeout=self.timeout)
        return {0: "UNKNOWN", 1: "SERVING", 2: "NOT_SERVING",
                3: "SERVICE_UNKNOWN"}.get(reply.status, "UNKNOWN")

    def info(self, model=None) -> Dict[str, Any]:
        """{"models": [dict per ModelInfo], "limits": dict}."""
        r = self._stub.GetModelInfo(
            pb.GetModelInfoRequest(model=self._model(model)),
            timeout=self.timeout)
        models = [{"name": m.name, "is_default": m.is_default,
                   "num_layers": m.num_layers, "num_heads": m.num_heads,
                   "hidden_size": m.hidden_size, "max_seq_len": m.max_seq_len,
                   "label_names": list(m.label_names),
                   "vocab_size": m.vocab_size, "dtype": m.dtype,
                   "device": m.device, "has_classifier": m.has_classifier,
                   "architecture": m.architecture,
                   "head": pb.ModelHead.Name(m.head)[len("MODEL_HEAD_"):].lower(),
                   "served_rpcs": list(m.served_rpcs),
                   "identity": m.identity,
                   # compute_head_statistics ids held, oldest first.
                   "statistics": [_statistics_dict(x) for x in m.statistics]}
                  for m in r.models]
        limits = {f.name: getattr(r.limits, f.name)
                  for f in r.limits.DESCRIPTOR.fields}
        return {"models": models, "limits": limits}

    def tokenize(self, text_a, text_b="", model=None) -> Dict[str, Any]:
        """{"tokens": [dict per Token], "truncated", "num_words"}."""
        r = self._stub.Tokenize(
            pb.TokenizeRequest(model=self._model(model), text_a=text_a,
                               text_b=text_b or ""), timeout=self.timeout)
        return {"tokens": [_token_dict(t) for t in r.tokens],
                "truncated": r.truncated, "num_words": r.num_words}

    def classify(self, inputs, mask=None, mode=None, model=None,
                 statistics=None, draws=None, seed=None) -> "ClassifyResult":
        """Scores `inputs` (strings, (text_a, text_b) pairs or dicts) under
        one mask. Returns ClassifyResult with logits/probabilities as
        float32 arrays [N, C] and labels as an int array [N]."""
        req = pb.ClassifyRequest(model=self._model(model),
                                 inputs=[_pair(x) for x in inputs])
        hm = head_mask_proto(mask, mode, statistics, draws, seed)
        if hm is not None:
            req.head_mask.CopyFrom(hm)
        r = self._stub.Classify(req, timeout=self.timeout)
        p = r.predictions
        n_cls = len(p[0].logits) if p else 0
        return ClassifyResult(
            logits=np.array([list(x.logits) for x in p],
                            dtype=np.float32).reshape(len(p), n_cls),
            probabilities=np.array([list(x.probabilities) for x in p],
                                   dtype=np.float32).reshape(len(p), n_cls),
            labels=np.array([x.label for x in p], dtype=np.int64),
            label_names=[x.label_name for x in p],
            truncated=np.array([x.truncated for x in p], dtype=bool),
            num_tokens=np.array([x.num_tokens for x in p], dtype=np.int64),
            tokens=[_token_predictions(x) for x in p] if any(
                x.tokens for x in p) else None)

    def attention(self, text_a, text_b="", layers=None, heads=None, mask=None,
                  mode=None, granularity="token", encoding="float32",
                  model=None, statistics=None, draws=None, seed=None) -> Dict[str, Any]:
        """Attention maps of one input. Returns a dict: "tokens" (unit
        texts: word pieces, or words at granularity="word"), "units" and
        "word_pieces" (dicts), "layers"/"heads" (the selected indices, in
        order), "maps" float32 [n_layers_sel, n_heads_sel, T, T] (row
        attends to column), "prediction" (dict or None), "truncated"."""
        req = pb.GetAttentionRequest(
            model=self._model(model),
            input=pb.TextInput(text_a=text_a, text_b=text_b or ""),
            layers=list(layers or []), heads=list(heads or []),
            granularity=_GRANULARITY[granularity],
            encoding=_ENCODING[encoding])
        hm = head_mask_proto(mask, mode, statistics, draws, seed)
        if hm is not None:
            req.head_mask.CopyFrom(hm)
        r = self._stub.GetAttention(req, timeout=self.timeout)
        sel_layers, sel_heads = [], []
        for m in r.maps:
            if m.layer not in sel_layers:
                sel_layers.append(m.layer)
            if m.head not in sel_heads:
                sel_heads.append(m.head)
        maps = np.full((len(sel_layers), len(sel_heads), r.size, r.size),
                       np.nan, dtype=np.float32)
        for m in r.maps:
            maps[sel_layers.index(m.layer), sel_heads.index(m.head)] = \
                decode_attention_map(m.data, r.encoding, r.size)
        prediction = None
        if r.HasField("prediction"):
            prediction = {
                "logits": np.array(r.prediction.logits, dtype=np.float32),
                "probabilities": np.array(r.prediction.probabilities,
                                          dtype=np.float32),
                "label": r.prediction.label,
                "label_name": r.prediction.label_name}
        return {"tokens": [u.text for u in r.units],
                "units": [{"text": u.text, "segment": u.segment,
                           "first_token": u.first_token,
                           "num_tokens": u.num_tokens, "special": u.special}
                          for u in r.units],
                "word_pieces": [_token_dict(t) for t in r.tokens],
                "layers": sel_layers, "heads": sel_heads, "maps": maps,
                "prediction": prediction, "truncated": r.truncated}

    def sweep(self, examples, masks, mode=None, max_batch_rows=0, model=None,
              timeout=None, statistics=None, reference=None, draws=None,
              seed=None, alignment=None) -> Iterator["SweepEvent"]:
        """Streams a sweep. `examples`: (text_a, text_b, label) triples or
        (text, label) pairs, where label is a class index, or for a token
        classifier a list of word labels (-1: not scored); `masks`: a list of masks (any accepted form,
        dicts may carry "id") or generator dicts ({"generator":
        "single_heads"}, {"generator": "layers"}, {"generator": "random",
        "fraction": .1, "repeats": 5, "seed": 1, "layer_begin": 0,
        "layer_end": 6}, {"generator": "keep_only", ...}) or MaskSpec
        protos. Yields SweepEvent(kind, dict) in server order.
        mode="mean"/"resample" read reference statistics: `statistics` (an
        id from compute_head_statistics) or `reference` (inputs as
        classify() takes them, computed on the server at first use);
        `draws`/`seed`/`alignment` set resample's draws for masks without
        their own."""
        req = pb.SweepAblationRequest(model=self._model(model),
                                      mode=_mode(mode),
                                      statistics=statistics or "")
        req.reference.extend(_pair(x) for x in reference or [])
        resample = _resample(draws, seed, alignment)
        if resample is not None:
            req.resample.CopyFrom(resample)
        req.examples.extend(_labeled_example(ex) for ex in examples)
        req.masks.extend(_mask_spec(m, i) for i, m in enumerate(masks))
        req.options.max_batch_rows = max_batch_rows
        stream = self._stub.SweepAblation(req, timeout=timeout or
                                          self.timeout * 10)
        for event in stream:
            kind = event.WhichOneof("event")
            if kind == "plan":
                p = event.plan
                data = {"num_masks": p.num_masks,
                        "num_examples": p.num_examples,
                        "total_pairs": p.total_pairs,
                        "truncated_examples": p.truncated_examples}
            elif kind == "progress":
                data = {"done": event.progress.done,
                        "total": event.progress.total}
            elif kind in ("baseline", "result"):
                data = _mask_result_dict(getattr(event, kind))
            else:
                continue
            yield SweepEvent(kind, data)

    def sweep_results(self, examples, masks, **kwargs) -> Result:
        """Runs a sweep to the end: {"plan", "baseline", "results" (sorted
        by mask_index)}."""
        out = {"plan": None, "baseline": None, "results": []}
        for ev in self.sweep(examples, masks, **kwargs):
            if ev.kind == "result":
                out["results"].append(ev.data)
            elif ev.kind in ("plan", "baseline"):
                out[ev.kind] = ev.data
        out["results"].sort(key=lambda r: r["mask_index"])
        return Result("sweep", out)

    def head_importance(self, examples, mask=None, mode=None,
                        no_layer_norm=False, no_global_norm=False, model=None,
                        timeout=None, on_progress=None, statistics=None,
                        draws=None, seed=None) -> Result:
        """Head importance (Michel et al. 2019; HF run_bertology.py) over
        labelled `examples` (as sweep()) at `mask` (any accepted form;
        default none). Returns {"importance", "raw_importance"} as float64
        [layers, heads] arrays (sum over examples of |d loss / d mask|,
        then HF's normalisation unless turned off) and the scores under the
        mask ("examples", "scored", "correct", "accuracy", "loss_sum")."""
        req = pb.HeadImportanceRequest(
            model=self._model(model),
            examples=[_labeled_example(ex) for ex in examples])
        hm = head_mask_proto(mask, mode, statistics, draws, seed)
        if hm is not None:
            req.head_mask.CopyFrom(hm)
        req.options.no_layer_norm = no_layer_norm
        req.options.no_global_norm = no_global_norm
        result = self._result_stream("HeadImportance", req, timeout, on_progress)
        return Result("heads", _importance_dict(result))

    def prune_curve(self, examples, threshold=0.0, step_fraction=0.0,
                    mode=None, no_layer_norm=False, no_global_norm=False,
                    model=None, timeout=None, on_progress=None,
                    statistics=None) -> Result:
        """HF run_bertology.py's mask_heads over labelled `examples` (as
        sweep()): mask the least important heads step by step until
        accuracy falls below threshold * the unmasked accuracy (0: the
        defaults 0.9 and 0.1). Returns {"steps": [step dicts in order:
        "step", "heads_left", "accuracy", "loss_sum", "masked",
        "masked_this_step" ((layer, head) lists)], "kept": the last step at
        or above the threshold}. mode="mean" masks pruned heads toward
        the means of `statistics` (a compute_head_statistics id)."""
        req = pb.PruneCurveRequest(
            model=self._model(model),
            examples=[_labeled_example(ex) for ex in examples],
            threshold=threshold, step_fraction=step_fraction, mode=_mode(mode),
            statistics=statistics or "")
        req.options.no_layer_norm = no_layer_norm
        req.options.no_global_norm = no_global_norm
        out = {"steps": [], "kept": None}
        for event in self._stub.PruneCurve(
                req, timeout=timeout or self.timeout * 10):
            kind = event.WhichOneof("event")
            if kind == "progress" and on_progress is not None:
                on_progress(event.progress.done, event.progress.total)
            elif kind == "step":
                out["steps"].append(_prune_step_dict(event.step))
            elif kind == "kept":
                out["kept"] = _prune_step_dict(event.kept)
        if out["kept"] is None:
            raise RuntimeError("PruneCurve sent no kept step")
        return Result("prune", out)

    # The classes of AnalyzeHeadsResult.map_pattern_share's last axis.
    MAP_PATTERNS = ("vertical", "diagonal", "vertical+diagonal", "block",
                    "heterogeneous")

    def analyze_heads(self, inputs, mask=None, mode=None, model=None,
                      timeout=None, on_progress=None, statistics=None,
                      draws=None, seed=None, per_map_classes=False) -> Result:
        """Per-head attention statistics over `inputs` (strings, (text_a,
        text_b) pairs or dicts) under one mask (AnalyzeHeads). Returns a
        dict: one float32 array [layers, heads] per statistic ("to_cls",
        "to_sep", "to_punctuation", "to_self", "to_previous", "to_next",
        "entropy", "cross_segment_match", "mean_distance",
        "to_own_segment", and the pattern rules' "vertical" and "diagonal";
        NaN where undefined), "pattern" (an array of names: "vertical",
        "diagonal", "vertical+diagonal", "block", "heterogeneous", from
        each head's means), and the counts "examples",
        "truncated_examples", "pair_examples", "examples_with_match",
        "own_segment_share". With per_map_classes, "map_pattern_share":
        float32 [layers, heads, 5], the share of each head's maps (one per
        input) in each class, in MAP_PATTERNS' order (else None).
        `on_progress(done, total)` is called for each progress event."""
        req = pb.AnalyzeHeadsRequest(model=self._model(model),
                                     inputs=[_pair(x) for x in inputs],
                                     per_map_classes=per_map_classes)
        hm = head_mask_proto(mask, mode, statistics, draws, seed)
        if hm is not None:
            req.head_mask.CopyFrom(hm)
        result = self._result_stream("AnalyzeHeads", req, timeout, on_progress)
        shape = (result.num_layers, result.num_heads)
        out = {name: np.array(getattr(result.stats, name),
                              dtype=np.float32).reshape(shape)
               for name in _HEAD_STATISTICS}
        out["pattern"] = np.array(
            [_PATTERN_NAMES.get(p, "unspecified") for p in result.stats.pattern],
            dtype=object).reshape(shape)
        for name in ("examples", "truncated_examples", "pair_examples",
                     "examples_with_match", "own_segment_share"):
            out[name] = getattr(result, name)
        out["map_pattern_share"] = (
            np.array(result.map_pattern_share, dtype=np.float32).reshape(
                shape + (len(self.MAP_PATTERNS),))
            if per_map_classes else None)
        return Result("heads", out)

    def segment_words(self, examples, mask=None, mode=None, top_k=0,
                      view_example=0, model=None, timeout=None,
                      on_progress=None, statistics=None, draws=None,
                      seed=None) -> Result:
        """Attention as a word segmenter (SegmentWords). Each example is a
        list of words (or a space-separated string of them), a (words_a,
        words_b) pair of those, or a dict with words_a/words_b; the texts
        are the words concatenated. Returns a dict: float32 arrays [layers,
        heads] "precision", "recall", "f1", "accuracy", "mcc" (Matthews
        correlation of word ends), "balanced_accuracy" (NaN where
        undefined) and int64 "true_ends", "predicted_ends", "correct";
        "oracle_all_heads" and "oracle_top_heads" (the share of characters
        some head, of all or of the best top_k, gets right) beside
        "oracle_baselines" (the same for the two trivial heads);
        "baselines": {"always_next": {...}, "always_sep": {...}}, each the
        same scores as plain numbers; "best_heads" as (layer, head) tuples
        by MCC, then balanced accuracy, then (layer, head); the counts
        "examples", "truncated_examples", "characters", "gold_ends",
        "skipped_pieces";
        and "view" (the view_example's characters, gold ends and the best
        head's predictions: "end", "internal" or "none")."""
        def words(x):
            if x is None:
                return []
            return x.split() if isinstance(x, str) else list(x)

        req = pb.SegmentWordsRequest(model=self._model(model), top_k=top_k,
                                     view_example=view_example)
        for x in examples:
            if isinstance(x, dict):
                wa, wb = words(x.get("words_a")), words(x.get("words_b"))
            elif isinstance(x, tuple):
                wa, wb = words(x[0]), words(x[1])
            else:
                wa, wb = words(x), []
            req.examples.add(input=pb.TextInput(text_a="".join(wa),
                                                text_b="".join(wb)),
                             words_a=wa, words_b=wb)
        hm = head_mask_proto(mask, mode, statistics, draws, seed)
        if hm is not None:
            req.head_mask.CopyFrom(hm)
        result = self._result_stream("SegmentWords", req, timeout, on_progress)
        shape = (result.num_layers, result.num_heads)
        sc = result.scores
        out = {name: np.array(getattr(sc, name), dtype=np.float32).reshape(shape)
               for name in ("precision", "recall", "f1", "accuracy", "mcc",
                            "balanced_accuracy")}
        for name in ("true_ends", "predicted_ends", "correct"):
            out[name] = np.array(getattr(sc, name), dtype=np.int64).reshape(shape)
        for name in ("oracle_all_heads", "oracle_top_heads",
                     "oracle_baselines", "examples", "truncated_examples",
                     "characters", "gold_ends", "skipped_pieces"):
            out[name] = getattr(result, name)
        out["baselines"] = {
            name: {f: getattr(getattr(result, name), f)
                   for f in ("precision", "recall", "f1", "accuracy", "mcc",
                             "balanced_accuracy", "true_ends",
                             "predicted_ends", "correct")}
            for name in ("always_next", "always_sep")}
        out["best_heads"] = [(h.layer, h.head) for h in result.best_heads]
        names = {pb.CHARACTER_PREDICTION_WORD_END: "end",
                 pb.CHARACTER_PREDICTION_WORD_INTERNAL: "internal"}
        v = result.view
        out["view"] = {"example": v.example, "characters": list(v.characters),
                       "segment": list(v.segment), "gold_end": list(v.gold_end),
                       "head": (v.head.layer, v.head.head),
                       "predicted": [names.get(p, "none") for p in v.predicted]}
        return Result("heads", out)

    def compare_attention(self, inputs, model_a=None, model_b=None, mask=None,
                          mode=None, detail=None, timeout=None,
                          on_progress=None, statistics=None, draws=None,
                          seed=None) -> Dict[str, Any]:
        """Per-head mean cosine similarity of two models' attention maps
        over `inputs` (strings, (text_a, text_b) pairs or dicts) under one
        mask applied to both (CompareAttention; None: the client's model).
        `detail` = (example, layer, head) also fetches that head's maps on
        that input. Returns a dict: "similarity" (float64 [layers, heads],
        NaN for a zero-masked head), "model_a", "model_b", "examples",
        "truncated_examples", and "detail": None or a dict with "example",
        "layer", "head", "tokens" (piece texts) and float32 [T, T] arrays
        "map_a", "map_b", "difference" (map_b - map_a)."""
        req = pb.CompareAttentionRequest(
            model_a=self._model(model_a), model_b=self._model(model_b),
            inputs=[_pair(x) for x in inputs])
        hm = head_mask_proto(mask, mode, statistics, draws, seed)
        if hm is not None:
            req.head_mask.CopyFrom(hm)
        if detail is not None:
            example, layer, head = detail
            req.with_detail = True
            req.detail_example = example
            req.detail_head.layer = layer
            req.detail_head.head = head
        result = self._result_stream("CompareAttention", req, timeout, on_progress)
        out = {"similarity": np.array(result.cosine_similarity,
                                      dtype=np.float64).reshape(
                                          result.num_layers, result.num_heads),
               "detail": None}
        for name in ("model_a", "model_b", "examples", "truncated_examples"):
            out[name] = getattr(result, name)
        if result.HasField("detail"):
            d = result.detail
            out["detail"] = {
                "example": d.example, "layer": d.layer, "head": d.head,
                "tokens": [t.text for t in d.tokens],
                "map_a": decode_attention_map(
                    d.map_a, pb.ATTENTION_ENCODING_FLOAT32, d.size),
                "map_b": decode_attention_map(
                    d.map_b, pb.ATTENTION_ENCODING_FLOAT32, d.size),
                "difference": decode_attention_map(
                    d.difference, pb.ATTENTION_ENCODING_FLOAT32, d.size)}
        return out

    def compute_head_statistics(self, inputs, model=None, timeout=None) -> Dict[str, Any]:
        """Every head's mean output over reference `inputs` (strings,
        (text_a, text_b) pairs or dicts) on the unmasked model
        (ComputeHeadStatistics), kept by the server for the "mean" and
        "resample" modes. Returns {"id" (pass it as statistics=),
        "examples", "tokens", "truncated_examples", "already_held" (the
        server had them: nothing computed), "model"}."""
        req = pb.ComputeHeadStatisticsRequest(
            model=self._model(model), inputs=[_pair(x) for x in inputs])
        r = self._stub.ComputeHeadStatistics(
            req, timeout=timeout or self.timeout * 10)
        out = _statistics_dict(r.statistics)
        out["already_held"] = r.already_held
        out["model"] = r.model
        return out

    def patch(self, clean, corrupted, sites="heads",
              direction="clean-into-corrupted", answer=None, foil=None,
              max_batch_rows=0, model=None, timeout=None, on_progress=None,
              method: str = "exact") -> Result:
        """Activation patching (Patch) of `clean` and `corrupted` (a string,
        a (text_a, text_b) pair or a dict; they must tokenize to the same
        length). `sites`: "heads" (every (layer, head), all positions),
        "head-positions" (every (layer, head, position)),
        "residual-positions" (the residual stream entering every layer,
        0 to num_layers, at every position: causal tracing), or a list of
        sites ((layer, head), (layer, head, position), dicts with "kind":
        "head" | "residual", "layer", "head", "position", or PatchSite
        protos). `direction`: "clean-into-corrupted" (which sites restore
        the clean behaviour) or "corrupted-into-clean". The score is
        logit[answer] - logit[foil] (None: the server's choice, see the
        proto). `method`: "exact" (a patched forward pass per site) or
        "attribution" (attribution patching: every site's logit_diff is
        the first-order estimate from one forward and one backward pass,
        with no logits). Returns {"plan": dict (with "method"), "results":
        [dict per site, in site order: "site_index", "kind", "layer",
        "head", "position" (None: every position), "logits" (empty for
        "attribution"), "logit_diff", "normalized_effect" (1: behaves as
        the clean run, 0: as the corrupted one; None when the two runs
        score the same)]}. `on_progress(done, total)` after each batch."""
        if direction not in _DIRECTIONS:
            raise ValueError("direction must be one of %s, not %r" %
                             (sorted(_DIRECTIONS), direction))
        req = pb.PatchRequest(model=self._model(model), clean=_pair(clean),
                              corrupted=_pair(corrupted),
                              direction=_DIRECTIONS[direction],
                              max_batch_rows=max_batch_rows,
                              method=_attribution.choice(
                                  _attribution.PATCH_METHODS, method,
                                  "method"))
        if sites == "heads":
            req.all_heads = True
        elif sites == "head-positions":
            req.all_head_positions = True
        elif sites == "residual-positions":
            req.all_residual_positions = True
        elif isinstance(sites, str):
            raise ValueError("sites must be 'heads', 'head-positions', "
                             "'residual-positions' or a list of sites, not %r"
                             % sites)
        else:
            req.sites.extend(_patch_site(x) for x in sites)
        if answer is not None:
            req.answer = int(answer)
        if foil is not None:
            req.foil = int(foil)
        out = {"plan": None, "results": []}
        for event in self._stub.Patch(req,
                                      timeout=timeout or self.timeout * 10):
            kind = event.WhichOneof("event")
            if kind == "plan":
                out["plan"] = _patch_plan_dict(event.plan)
            elif kind == "results":
                out["results"].extend(
                    _patch_result_dict(r) for r in event.results.results)
                if on_progress is not None and out["plan"] is not None:
                    on_progress(len(out["results"]), out["plan"]["num_sites"])
        if out["plan"] is None:
            raise RuntimeError("Patch sent no plan")
        return Result("patch", out)

    def attribute(self, inputs, methods: Optional[Sequence[str]] = None,
                  target: Optional[int] = None,
                  target_position: Optional[int] = None,
                  output: str = "logit", baseline: str = "pad",
                  rule: str = "gauss-legendre", steps: Optional[int] = None,
                  granularity: str = "token", mask=None, mode=None,
                  model=None, timeout=None,
                  on_progress: Optional[Callable[[int, int], None]] = None,
                  statistics=None) -> Result:
        """Token attribution (Attribute) of `inputs` (strings, (text_a,
        text_b) pairs or dicts) under one mask (any accepted form; mode
        "resample" is refused). `methods`: names from "saliency",
        "gradient-x-input", "integrated-gradients", "rollout", "flow",
        "attention-x-gradient" (None: all six, in that order). `target`:
        the class explained (None: each input's predicted class);
        `target_position`: token classifiers' token. `output`: "logit" or
        "probability"; integrated gradients' `baseline` ("pad", "zero",
        "mask"), `rule` ("gauss-legendre", "trapezoid") and `steps` (None:
        50); `granularity` "token" or "word" (a word's pieces summed).
        Returns {"results": [dict per input, in input order:
        "input_index", "tokens" and "units" (dicts; a score per unit),
        "target", "target_position", "output", "output_value" (f(x)),
        "logits", "methods": {name: {"scores" (float64 [units]),
        "completeness_gap" and "baseline_output" (integrated gradients,
        else None), "steps"}} in the order asked]}; to_frame() has a row
        per input x unit x method. `on_progress(done, total)` for each
        progress event."""
        req = _attribution.attribute_request(
            [_pair(x) for x in inputs], methods, target, target_position,
            output, baseline, rule, steps, granularity, self._model(model))
        hm = head_mask_proto(mask, mode, statistics)
        if hm is not None:
            req.head_mask.CopyFrom(hm)
        results = []
        stream = self._stub.Attribute(req,
                                      timeout=timeout or self.timeout * 10)
        for event in stream:
            kind = event.WhichOneof("event")
            if kind == "progress" and on_progress is not None:
                on_progress(event.progress.done, event.progress.total)
            elif kind == "result":
                results.append(_attribution.result_dict(event.result))
        if len(results) != len(req.inputs):
            raise RuntimeError("Attribute sent %d results for %d inputs" %
                               (len(results), len(req.inputs)))
        return Result("attribution", {"results": results})

    def _result_stream(self, method, req, timeout, on_progress):
        """The one result of a progress/result stream (AnalyzeHeads,
        HeadImportance, CompareAttention, SegmentWords), calling
        on_progress(done, total) for each progress event."""
        result = None
        stream = getattr(self._stub, method)
        for event in stream(req, timeout=timeout or self.timeout * 10):
            kind = event.WhichOneof("event")
            if kind == "progress" and on_progress is not None:
                on_progress(event.progress.done, event.progress.total)
            elif kind == "result":
                result = event.result
        if result is None:
            raise RuntimeError("%s sent no result" % method)
        return result

    def _model(self, model):
        return self.model if model is None else model
