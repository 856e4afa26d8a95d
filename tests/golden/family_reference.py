#!/usr/bin/env python3
"""An independent float64 reference for the non-BERT encoder families
(RoBERTa, XLM-RoBERTa, DistilBERT, ELECTRA; sequence and token
classifiers) under per-row head interventions.

Written from HF transformers 4.46's definitions (modeling_roberta.py,
modeling_xlm_roberta.py (a copy of RoBERTa), modeling_distilbert.py,
modeling_electra.py), eager attention, eval mode (dropout the identity),
NOT by calling HF's modules: the weights are read from the checkpoint's own
file in its own key names (model.safetensors by make_golden.read_safetensors,
pytorch_model.bin by torch.load), and every step is written out below.

  RoBERTa / XLM-R  (keys roberta.*, no pooler)
    positions  p = cumsum(ids != pad) * (ids != pad) + pad
               (create_position_ids_from_input_ids: real tokens count from
               pad + 1 = 2, padding keeps pad)
    embeddings LN(word[ids] + token_type[0] + position[p]), eps from config
               (the one token-type row: type ids are 0 whatever the segment)
    layers     BERT's (query/key/value, scores / sqrt(d) + (1 - mask) *
               finfo.min, softmax, probs * head_mask, attention.output.dense
               + residual -> LN, intermediate.dense -> gelu (erf) ->
               output.dense + residual -> LN)
    sequence   RobertaClassificationHead on token 0: classifier.dense ->
               tanh -> classifier.out_proj
    token      classifier on every position
  DistilBERT  (keys distilbert.*)
    embeddings LN(word[ids] + position[0..T-1]), eps 1e-12 (hard-coded in
               HF, not in the config); no token types
    layers     q_lin(x) / sqrt(d) @ k_lin(x)^T, masked_fill(mask == 0,
               finfo.min) (a fill, not an added term), softmax, * head_mask,
               @ v_lin(x), out_lin, sa_layer_norm(sa + x); ffn.lin1 ->
               gelu -> ffn.lin2, output_layer_norm(ffn + sa); eps 1e-12
    sequence   hidden[:, 0] -> pre_classifier -> ReLU -> classifier
    token      classifier on every position
  ELECTRA     (keys electra.*)
    embeddings BERT's at embedding_size (word + token_type[segments] +
               position[0..T-1], LN), then electra.embeddings_project (a
               Linear to hidden_size) when the file has it
    layers     BERT's
    sequence   ElectraClassificationHead on token 0: classifier.dense ->
               gelu (exact erf: get_activation("gelu")) ->
               classifier.out_proj (no pooler, no tanh)
    token      classifier on every position

Head interventions (common/head_mask.h, as tests/golden/
intervention_reference.py applies them), per row, m = head_mask[b, l, h]
(fractional values allowed):
  zero          p' = m p                              (HF's head_mask)
  uniform       p' = m p + (1 - m) u, u[b, :, :, j] = mask[b, j] / sum_j
                mask[b, j] (uniform over the row's real tokens)
  mean          ctx' = p' @ V + (1 - m) mean[l, h]
  mean_by_role  ctx' = p' @ V + (1 - m) role_mean[role(b, t), l, h]
ctx is a head's context vector [B, H, T, d] before the output projection
(attention.output.dense / out_lin). mean and role_mean come from
head_statistics(): the unmasked model's ctx averaged over every real token
of a reference set (per role for role_mean), as ComputeHeadStatistics
defines them (server/core/model/head_reference.h).

Roles (masks.proto's order: 0 [CLS], 1 "[SEP] a", 2 "[SEP] b", 3 text_a,
4 text_b):
  BERT-style  [CLS] a [SEP] (b [SEP])            (DistilBERT, ELECTRA)
  RoBERTa     <s> a </s> (</s> b </s>)           (RoBERTa, XLM-R)
    0 = position 0; 3 = text_a's tokens; 1 = every separator after text_a
    and before text_b (both </s></s> of a pair; the one final </s> of a
    single text); 4 = text_b's tokens; 2 = a pair's final </s>.
Segments are the server's (Token.segment): BERT-style 0 for [CLS] a [SEP],
1 for b [SEP]; RoBERTa-style 0 for <s> a </s>, 1 for </s> b </s> (the
model's token type ids stay 0: they only place the roles).

Run (the self-check; needs the test venv's transformers):
  build/test-venv/bin/python tests/golden/family_reference.py
writes the checkpoints (make_family_checkpoints.py) to a temporary folder and
compares this reference with HF's own classes (from_pretrained, eager,
float64) on inputs from each checkpoint's own tokenizer: logits and every
layer's attentions with HF's head_mask (ones, zero, fractional), and uniform
/ mean / mean_by_role through hooks on HF's modules; then that the check can
fail (BERT's positions on RoBERTa, a tanh head on ELECTRA, BERT's roles on
RoBERTa disagree).
"""

import functools
import json
import math
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)
from make_golden import gelu, layer_norm, linear, read_safetensors  # noqa: E402

FAMILIES = ("roberta", "xlm-roberta", "distilbert", "electra")
ROBERTA_STYLE = ("roberta", "xlm-roberta")
ROLE_CLS, ROLE_SEP_A, ROLE_SEP_B, ROLE_A, ROLE_B = range(5)
NUM_ROLES = 5
MIN64 = torch.finfo(torch.float64).min


# ------------------------------------------------------------- the weights

class Model:
    """A checkpoint directory read for the reference: config, family,
    head, float64 weights in the file's own key names."""

    def __init__(self, directory):
        self.directory = directory
        with open(os.path.join(directory, "config.json")) as f:
            self.config = c = json.load(f)
        self.family = c["model_type"]
        assert self.family in FAMILIES, self.family
        self.architecture = c["architectures"][0]
        self.head = ("token_classification"
                     if self.architecture.endswith("ForTokenClassification")
                     else "sequence_classification")
        if self.family == "distilbert":
            self.layers, self.heads = c["n_layers"], c["n_heads"]
            self.hidden = c["dim"]
            self.eps = 1e-12  # hard-coded in modeling_distilbert.py
        else:
            self.layers = c["num_hidden_layers"]
            self.heads = c["num_attention_heads"]
            self.hidden = c["hidden_size"]
            self.eps = c["layer_norm_eps"]
        self.head_size = self.hidden // self.heads
        self.pad_id = c.get("pad_token_id", 0 if self.family in ("distilbert", "electra") else 1)
        self.prefix = {"roberta": "roberta.", "xlm-roberta": "roberta.",
                       "distilbert": "distilbert.", "electra": "electra."}[self.family]
        self.weights_file, raw = read_weights(directory)
        self.w = {k: v.double() for k, v in raw.items() if v.is_floating_point()}


def read_weights(directory):
    """(file name, {key: tensor}) from model.safetensors or
    pytorch_model.bin, keys as the file has them."""
    st = os.path.join(directory, "model.safetensors")
    if os.path.exists(st):
        return "model.safetensors", read_safetensors(st)
    path = os.path.join(directory, "pytorch_model.bin")
    return "pytorch_model.bin", torch.load(path, map_location="cpu")


@functools.lru_cache(maxsize=None)
def _cached(directory):
    return Model(directory)


def load(model):
    """A Model from a directory (cached) or the Model itself."""
    return model if isinstance(model, Model) else _cached(os.path.abspath(model))


# ---------------------------------------------------------------- forward

def position_ids(m, ids, rule=None):
    """The family's position ids [B, T]. rule "absolute" forces 0..T-1
    (BERT's; the self-check's wrong rule for RoBERTa)."""
    b_size, t_len = ids.shape
    if rule is None:
        rule = "padding_offset" if m.family in ROBERTA_STYLE else "absolute"
    if rule == "absolute":
        return torch.arange(t_len)[None].expand(b_size, t_len)
    real = (ids != m.pad_id).long()
    return torch.cumsum(real, 1) * real + m.pad_id


def embeddings(m, ids, segments, positions=None):
    """The residual stream entering layer 0 [B, T, hidden]."""
    w, p = m.w, m.prefix + "embeddings."
    pos = position_ids(m, ids, positions)
    x = w[p + "word_embeddings.weight"][ids] + w[p + "position_embeddings.weight"][pos]
    if m.family in ROBERTA_STYLE:
        x = x + w[p + "token_type_embeddings.weight"][torch.zeros_like(ids)]
    elif m.family == "electra":
        x = x + w[p + "token_type_embeddings.weight"][segments]
    x = layer_norm(x, w[p + "LayerNorm.weight"], w[p + "LayerNorm.bias"], m.eps)
    if m.family == "electra" and "electra.embeddings_project.weight" in w:
        x = linear(x, w, "electra.embeddings_project")
    return x


def _intervene(probs, v, mask_l, amask, uniform, fill_l):
    """(post-mask probs, ctx) of one layer: probs [B, H, T, T], v [B, H, T,
    d], mask_l [B, H]; uniform a bool or [B] flags; fill_l None, [H, d] or
    [B, H, T, d]."""
    m = mask_l[:, :, None, None]
    out = m * probs
    if uniform is not False and uniform is not None:
        sel = torch.as_tensor(uniform, dtype=torch.float64).reshape(-1)[:, None, None, None]
        real = amask.double()
        u = (real / real.sum(-1, keepdim=True))[:, None, None, :].expand_as(probs)
        out = out + sel * (1.0 - m) * u
    ctx = out @ v
    if fill_l is not None:
        if fill_l.dim() == 2:  # [H, d]
            fill_l = fill_l[None, :, None, :]
        ctx = ctx + (1.0 - m) * fill_l
    return out, ctx


def forward(model, ids, segments, attention_mask, head_mask=None, fill=None,
            uniform=False, ctx_hook=None, hidden_hook=None, positions=None,
            seq_activation=None):
    """The family's classifier in float64.

    ids, segments, attention_mask [B, T] (segments as the server reports
    them; only ELECTRA feeds them to the model); head_mask [B, L, H] (None:
    ones); fill None, [L, H, d] (mean) or [B, T, L, H, d] (per position:
    mean_by_role, role_fill()); uniform: True / [B] flags for uniform mode.
    ctx_hook(l, ctx [B, H, T, d]) and hidden_hook(l, x [B, T, hidden]) (l =
    0..L, L the encoder output) may return a replacement. positions /
    seq_activation override the family's rule (the self-check's wrong
    variants only).
    Returns (logits [B, C] or [B, T, C], post-mask attentions per layer
    [B, H, T, T], ctx per layer [B, H, T, d])."""
    m = load(model)
    ids = torch.as_tensor(ids)
    segments = torch.as_tensor(segments)
    amask = torch.as_tensor(attention_mask)
    b_size, t_len = ids.shape
    n_h, d = m.heads, m.head_size
    hm = (torch.ones(b_size, m.layers, n_h, dtype=torch.float64) if head_mask is None
          else torch.as_tensor(head_mask, dtype=torch.float64))
    if fill is not None:
        fill = torch.as_tensor(fill, dtype=torch.float64)
    w = m.w

    def heads(t):
        return t.view(b_size, t_len, n_h, d).permute(0, 2, 1, 3)

    x = embeddings(m, ids, segments, positions)
    attentions, ctxs = [], []
    for l in range(m.layers + 1):
        if hidden_hook is not None:
            new = hidden_hook(l, x)
            x = x if new is None else new
        if l == m.layers:
            break
        if fill is None:
            fill_l = None
        elif fill.dim() == 3:
            fill_l = fill[l]
        else:  # [B, T, L, H, d] -> [B, H, T, d]
            fill_l = fill[:, :, l].permute(0, 2, 1, 3)
        if m.family == "distilbert":
            p = "distilbert.transformer.layer.%d." % l
            q = heads(linear(x, w, p + "attention.q_lin")) / math.sqrt(d)
            k = heads(linear(x, w, p + "attention.k_lin"))
            v = heads(linear(x, w, p + "attention.v_lin"))
            scores = q @ k.transpose(-1, -2)
            scores = scores.masked_fill((amask == 0)[:, None, None, :].expand_as(scores), MIN64)
        else:
            p = m.prefix + "encoder.layer.%d." % l
            q = heads(linear(x, w, p + "attention.self.query"))
            k = heads(linear(x, w, p + "attention.self.key"))
            v = heads(linear(x, w, p + "attention.self.value"))
            scores = q @ k.transpose(-1, -2) / math.sqrt(d)
            scores = scores + (1.0 - amask.double())[:, None, None, :] * MIN64
        probs = torch.softmax(scores, -1)
        probs, ctx = _intervene(probs, v, hm[:, l], amask, uniform, fill_l)
        if ctx_hook is not None:
            new = ctx_hook(l, ctx)
            ctx = ctx if new is None else new
        attentions.append(probs)
        ctxs.append(ctx)
        flat = ctx.permute(0, 2, 1, 3).reshape(b_size, t_len, n_h * d)
        if m.family == "distilbert":
            sa = linear(flat, w, p + "attention.out_lin")
            sa = layer_norm(sa + x, w[p + "sa_layer_norm.weight"],
                            w[p + "sa_layer_norm.bias"], m.eps)
            f = linear(gelu(linear(sa, w, p + "ffn.lin1")), w, p + "ffn.lin2")
            x = layer_norm(f + sa, w[p + "output_layer_norm.weight"],
                           w[p + "output_layer_norm.bias"], m.eps)
        else:
            a = layer_norm(linear(flat, w, p + "attention.output.dense") + x,
                           w[p + "attention.output.LayerNorm.weight"],
                           w[p + "attention.output.LayerNorm.bias"], m.eps)
            f = linear(gelu(linear(a, w, p + "intermediate.dense")), w, p + "output.dense")
            x = layer_norm(f + a, w[p + "output.LayerNorm.weight"],
                           w[p + "output.LayerNorm.bias"], m.eps)
    return classifier(m, x, seq_activation), attentions, ctxs


def classifier(model, x, seq_activation=None):
    """The head's logits on the encoder output x [B, T, hidden]."""
    m = load(model)
    w = m.w
    if m.head == "token_classification":
        return linear(x, w, "classifier")
    first = x[:, 0]
    if m.family == "distilbert":
        return linear(torch.relu(linear(first, w, "pre_classifier")), w, "classifier")
    act = seq_activation or ("gelu" if m.family == "electra" else "tanh")
    h = linear(first, w, "classifier.dense")
    h = gelu(h) if act == "gelu" else torch.tanh(h)
    return linear(h, w, "classifier.out_proj")


# ------------------------------------------------------ layouts and roles

def layout_style(family):
    return "roberta" if family in ROBERTA_STYLE else "bert"


def segments_for(family, len_a, len_b, pair):
    """The server's segment per position of the family's encoding."""
    if layout_style(family) == "roberta":
        # <s> a </s> | </s> b </s>
        return [0] * (len_a + 2) + ([1] * (len_b + 2) if pair else [])
    # [CLS] a [SEP] | b [SEP]
    return [0] * (len_a + 2) + ([1] * (len_b + 1) if pair else [])


def layout_of(family, segments):
    """(len_a, len_b, pair) from the server's segments of one encoding."""
    n0 = sum(1 for s in segments if s == 0)
    n1 = len(segments) - n0
    extra = 2 if layout_style(family) == "roberta" else 1
    return n0 - 2, max(0, n1 - extra), n1 > 0


def roles(family, segments):
    """Role per position (module docstring) from the server's segments."""
    len_a, len_b, pair = layout_of(family, segments)
    roberta = layout_style(family) == "roberta"
    out = []
    for t in range(len(segments)):
        if t == 0:
            out.append(ROLE_CLS)
        elif t <= len_a:
            out.append(ROLE_A)
        elif t == len_a + 1 or not pair or (roberta and t == len_a + 2):
            out.append(ROLE_SEP_A)
        elif t < len(segments) - 1:
            out.append(ROLE_B)
        else:
            out.append(ROLE_SEP_B)
    return out


def encode(tokenizer, family, text_a, text_b=""):
    """(ids, segments) of text_a (and text_b) by the checkpoint's own HF
    tokenizer, segments placed by the family's layout (text_a and text_b
    tokenized alone give the segment lengths; asserted to add up)."""
    pair = bool(text_b)
    ids = tokenizer(text_a, text_b if pair else None)["input_ids"]
    len_a = len(tokenizer(text_a, add_special_tokens=False)["input_ids"])
    len_b = len(tokenizer(text_b, add_special_tokens=False)["input_ids"]) if pair else 0
    segments = segments_for(family, len_a, len_b, pair)
    assert len(segments) == len(ids), (text_a, text_b, ids, len_a, len_b)
    return list(ids), segments


def own_tokenizer(directory):
    """The tokenizer the checkpoint saved: the fast class where
    save_pretrained wrote a tokenizer.json (RoBERTa here), else the slow
    class of tokenizer_config.json (XLM-R's XLMRobertaTokenizer, which runs
    sentencepiece itself; DistilBERT's and ELECTRA's WordPiece).
    AutoTokenizer's default would convert XLM-R's to the fast class, which
    disagrees with sentencepiece around added tokens ("a  <mask>  b":
    tests/golden/sentencepiece-bpe/golden.jsonl, "agree": false)."""
    import transformers
    fast = os.path.exists(os.path.join(directory, "tokenizer.json"))
    return transformers.AutoTokenizer.from_pretrained(directory, use_fast=fast)


def pad_rows(rows, pad_id):
    """[(ids, segments)] -> (ids, segments, attention_mask) [B, T] tensors,
    right-padded with pad_id (segment 0)."""
    t_len = max(len(r[0]) for r in rows)
    ids = torch.tensor([r[0] + [pad_id] * (t_len - len(r[0])) for r in rows])
    seg = torch.tensor([list(r[1]) + [0] * (t_len - len(r[1])) for r in rows])
    amask = torch.tensor([[1] * len(r[0]) + [0] * (t_len - len(r[0])) for r in rows])
    return ids, seg, amask


# ------------------------------------------------------------- statistics

def head_statistics(model, rows, role_fn=None):
    """ComputeHeadStatistics on the reference rows [(ids, segments)]: every
    head's unmasked ctx averaged over every real token (mean [L, H, d]) and
    per role (role_means [5, L, H, d], 0 where a role has no token); with
    the tokens per role and in all. role_fn(segments) -> roles overrides the
    family's (the self-check's wrong roles)."""
    m = load(model)
    role_fn = role_fn or (lambda s: roles(m.family, s))
    ids, seg, amask = pad_rows(rows, m.pad_id)
    with torch.no_grad():
        _, _, ctxs = forward(m, ids, seg, amask)
    shape = (m.layers, m.heads, m.head_size)
    total = torch.zeros(shape, dtype=torch.float64)
    role_sum = torch.zeros((NUM_ROLES,) + shape, dtype=torch.float64)
    role_tokens, tokens = [0] * NUM_ROLES, 0
    for r, (row_ids, row_seg) in enumerate(rows):
        out = torch.stack([c[r, :, :len(row_ids)] for c in ctxs])  # [L, H, T, d]
        out = out.permute(2, 0, 1, 3)                               # [T, L, H, d]
        total += out.sum(0)
        tokens += len(row_ids)
        for t, role in enumerate(role_fn(list(row_seg))):
            role_sum[role] += out[t]
            role_tokens[role] += 1
    counts = torch.tensor([max(1, c) for c in role_tokens], dtype=torch.float64)
    return total / tokens, role_sum / counts[:, None, None, None], role_tokens, tokens


def role_fill(model, segments_rows, t_len, role_means, role_fn=None):
    """The per-position fill [B, T, L, H, d] of mean_by_role for rows whose
    server segments are segments_rows (padding positions take role 0's
    mean: never read)."""
    m = load(model)
    role_fn = role_fn or (lambda s: roles(m.family, s))
    fill = torch.zeros((len(segments_rows), t_len) + tuple(role_means.shape[1:]),
                       dtype=torch.float64)
    for b, seg in enumerate(segments_rows):
        for t, role in enumerate(role_fn(list(seg))):
            fill[b, t] = role_means[role]
        fill[b, len(seg):] = role_means[ROLE_CLS]
    return fill


# ------------------------------------------- HF's own classes (the oracle)

def hf_load(directory):
    """HF's class of the checkpoint (config's architectures[0]),
    from_pretrained, eager attention, float64, eval."""
    import transformers
    with open(os.path.join(directory, "config.json")) as f:
        architecture = json.load(f)["architectures"][0]
    model = getattr(transformers, architecture).from_pretrained(
        directory, attn_implementation="eager")
    return model.to(torch.float64).eval()


def hf_head_mask(mask):
    """[B, L, H] per-row masks as HF's 5-D head_mask [L, B, H, 1, 1]."""
    m = torch.as_tensor(mask, dtype=torch.float64)
    return m.permute(1, 0, 2)[..., None, None].contiguous()


def _hf_attention_modules(model, family):
    """Per layer (probability module whose output is the probabilities
    before the head mask, module whose input or output is ctx, "pre" or
    "post")."""
    base = getattr(model, {"roberta": "roberta", "xlm-roberta": "roberta",
                           "distilbert": "distilbert", "electra": "electra"}[family])
    out = []
    if family == "distilbert":
        for layer in base.transformer.layer:
            out.append((layer.attention.dropout, layer.attention.out_lin, "pre"))
    else:
        for layer in base.encoder.layer:
            out.append((layer.attention.self.dropout, layer.attention.self, "post"))
    return out


def hf_forward(model, family, ids, segments, attention_mask, head_mask=None,
               uniform=False, fill=None):
    """HF's forward (output_attentions=True) with HF's own head_mask for
    zero mode; uniform and the fills through hooks on HF's modules:
    uniform replaces the attention dropout's output (the probabilities
    before HF multiplies the head mask) by m p + (1 - m) u and passes no
    head_mask; a fill adds (1 - m) fill to the heads' context (the output
    of attention.self, or the input of DistilBERT's out_lin).
    Returns (logits, attentions)."""
    ids = torch.as_tensor(ids)
    amask = torch.as_tensor(attention_mask)
    b_size, t_len = ids.shape
    n_l = len(_hf_attention_modules(model, family))
    hm = None if head_mask is None else torch.as_tensor(head_mask, dtype=torch.float64)
    handles = []
    for l, (drop, ctx_mod, kind) in enumerate(_hf_attention_modules(model, family)):
        if uniform:
            def probs_hook(module, inputs, probs, l=l):
                mm = hm[:, l, :, None, None]
                real = amask.double()
                u = (real / real.sum(-1, keepdim=True))[:, None, None, :]
                return mm * probs + (1 - mm) * u.expand_as(probs)
            handles.append(drop.register_forward_hook(probs_hook))
        if fill is not None:
            f = torch.as_tensor(fill, dtype=torch.float64)
            n_h = hm.shape[2]

            def add_fill(ctx, l=l, f=f, n_h=n_h):
                d = ctx.shape[-1] // n_h
                fl = f[l][None, None] if f.dim() == 3 else f[:, :, l]  # [., ., H, d]
                mm = hm[:, l][:, None, :, None]                         # [B, 1, H, 1]
                c = ctx.view(b_size, t_len, n_h, d) + (1 - mm) * fl
                return c.reshape(b_size, t_len, n_h * d)
            if kind == "pre":
                handles.append(ctx_mod.register_forward_pre_hook(
                    lambda module, args, add_fill=add_fill: (add_fill(args[0]),)))
            else:
                handles.append(ctx_mod.register_forward_hook(
                    lambda module, inputs, outputs, add_fill=add_fill:
                    (add_fill(outputs[0]),) + tuple(outputs[1:])))
    kwargs = dict(input_ids=ids, attention_mask=amask, output_attentions=True)
    if family == "electra":
        kwargs["token_type_ids"] = torch.as_tensor(segments)
    if hm is not None and not uniform:
        kwargs["head_mask"] = hf_head_mask(hm)
    assert hm is None or hm.shape[1] == n_l
    try:
        with torch.no_grad():
            out = model(**kwargs)
    finally:
        for h in handles:
            h.remove()
    return out.logits, list(out.attentions)


# -------------------------------------------------------------- self-check

# Single texts and pairs, several scripts, accents, whitespace runs, the
# family's mask token inside a text: batched together (different lengths).
CHECK_TEXTS = [
    ("the cat sat on the mat", ""),
    ("a dog", "it was there"),
    ("Hello  world, café!", "naïve  résumé"),
    ("who is this", ""),
    ("Привет мир", "你好 世界"),
    ("they {mask} here", "and so on"),
]
REFERENCE_TEXTS = [("a dog ran", "it is"), ("what was that", ""),
                   ("they have been here", "no"), ("the end", ""),
                   ("Straße café", "über alles")]


def check_texts(family, tokenizer):
    mask = tokenizer.mask_token
    return [(a.replace("{mask}", mask), b) for a, b in CHECK_TEXTS]


def check_masks(b_size, layers, heads, kind, gen):
    """[B, L, H] per-row masks: ones, zeros in some heads (a different set
    per row), or fractional values."""
    if kind == "ones":
        return torch.ones(b_size, layers, heads, dtype=torch.float64)
    out = torch.ones(b_size, layers, heads, dtype=torch.float64)
    for b in range(b_size):
        for l in range(layers):
            h = (b + l) % heads
            if kind == "zero":
                out[b, l, h] = 0.0
                if b % 2:
                    out[b, l, (h + 2) % heads] = 0.0
            else:
                out[b, l] = torch.tensor([0.25, 0.5, 0.75, 1.0])[
                    torch.randperm(heads, generator=gen)][:heads]
                out[b, l, h] = 0.0
    return out


def max_diff(a, b):
    if isinstance(a, (list, tuple)):
        return max(max_diff(x, y) for x, y in zip(a, b))
    return (torch.as_tensor(a) - torch.as_tensor(b)).abs().max().item()


def check_variant(name, directory, meta):
    family = meta["family"]
    m = load(directory)
    assert m.family == family and m.architecture == meta["architecture"], name
    assert m.weights_file == meta["weights_file"], name
    tok = own_tokenizer(directory)
    rows = [encode(tok, family, a, b) for a, b in check_texts(family, tok)]
    ids, seg, amask = pad_rows(rows, m.pad_id)
    assert tok.pad_token_id == m.pad_id, (name, tok.pad_token_id)
    # The HF tokenizer's own padded batch of the pairs equals ours.
    pairs = [(a, b) for a, b in check_texts(family, tok) if b]
    enc = tok([a for a, _ in pairs], [b for _, b in pairs], padding=True)
    mine = pad_rows([encode(tok, family, a, b) for a, b in pairs], m.pad_id)
    assert enc["input_ids"] == mine[0].tolist(), name
    assert enc["attention_mask"] == mine[2].tolist(), name

    hf = hf_load(directory)
    assert type(hf).__name__ == meta["architecture"]
    gen = torch.Generator().manual_seed(7)
    b_size = ids.shape[0]
    result = {}
    plain = None
    for kind in ("ones", "zero", "fractional"):
        hm = check_masks(b_size, m.layers, m.heads, kind, gen)
        with torch.no_grad():
            logits, attn, _ = forward(m, ids, seg, amask, hm)
        hf_logits, hf_attn = hf_forward(hf, family, ids, seg, amask,
                                        None if kind == "ones" else hm)
        result[kind] = (max_diff(logits, hf_logits), max_diff(attn, hf_attn))
        if kind == "ones":
            plain = logits
        else:
            moved = max_diff(logits, plain)
            assert moved > 1e-2, (name, kind, moved)

    # uniform / mean / mean_by_role on fractional masks with zeros.
    hm = check_masks(b_size, m.layers, m.heads, "fractional", gen)
    ref_rows = [encode(tok, family, a, b) for a, b in REFERENCE_TEXTS]
    mean, role_means, role_tokens, tokens = head_statistics(m, ref_rows)
    assert min(role_tokens) > 0, (name, role_tokens)
    fills = {"uniform": None, "mean": mean,
             "mean_by_role": role_fill(m, [r[1] for r in rows], ids.shape[1], role_means)}
    outs = {}
    for mode, fill in fills.items():
        uniform = mode == "uniform"
        with torch.no_grad():
            logits, attn, _ = forward(m, ids, seg, amask, hm, fill=fill, uniform=uniform)
        hf_logits, hf_attn = hf_forward(hf, family, ids, seg, amask, hm,
                                        uniform=uniform, fill=fill)
        result[mode] = (max_diff(logits, hf_logits), max_diff(attn, hf_attn))
        outs[mode] = logits
    with torch.no_grad():
        zero_logits = forward(m, ids, seg, amask, hm)[0]
    for mode in fills:
        moved = max_diff(outs[mode], zero_logits)
        assert moved > 1e-3, (name, mode, moved)
    assert max_diff(outs["mean_by_role"], outs["mean"]) > 1e-3, name

    # The statistics are over the real tokens of the reference rows.
    assert tokens == sum(len(r[0]) for r in ref_rows), name
    assert sum(role_tokens) == tokens, name

    # The check can fail: a wrong variant of the family disagrees with HF.
    wrong = {}
    hm = check_masks(b_size, m.layers, m.heads, "zero", gen)
    hf_logits, _ = hf_forward(hf, family, ids, seg, amask, hm)
    if family in ROBERTA_STYLE:
        with torch.no_grad():
            bad = forward(m, ids, seg, amask, hm, positions="absolute")[0]
        wrong["absolute positions"] = max_diff(bad, hf_logits)
        # BERT's roles on a RoBERTa-style pair: another fill.
        bert_roles = lambda s: roles("bert-style", s)  # noqa: E731
        _, rm_bert, _, _ = head_statistics(m, ref_rows, role_fn=bert_roles)
        fill_bert = role_fill(m, [r[1] for r in rows], ids.shape[1], rm_bert, bert_roles)
        hm_f = check_masks(b_size, m.layers, m.heads, "fractional", gen)
        with torch.no_grad():
            good = forward(m, ids, seg, amask, hm_f, fill=fills["mean_by_role"])[0]
            bad = forward(m, ids, seg, amask, hm_f, fill=fill_bert)[0]
        wrong["BERT roles (vs the family's)"] = max_diff(bad, good)
    if family == "electra" and m.head == "sequence_classification":
        with torch.no_grad():
            bad = forward(m, ids, seg, amask, hm, seq_activation="tanh")[0]
        wrong["tanh head"] = max_diff(bad, hf_logits)
    if family == "electra":
        with torch.no_grad():
            bad = forward(m, ids, torch.zeros_like(seg), amask, hm)[0]
        wrong["token types all 0"] = max_diff(bad, hf_logits)
    if family == "distilbert":
        with torch.no_grad():
            bad = forward(m, ids.clone(), seg, torch.ones_like(amask), hm)[0]
        wrong["padding attended"] = max_diff(bad, hf_logits)
    for what, diff in wrong.items():
        assert diff > 1e-3, (name, what, diff)
    return result, wrong


def main():
    import tempfile
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import make_family_checkpoints
    torch.set_grad_enabled(False)
    tolerance = 1e-10
    with tempfile.TemporaryDirectory(prefix="bertology-families-") as tmp:
        meta = make_family_checkpoints.main(tmp)
        worst = 0.0
        print("max |reference - HF| (logits, attentions) per mask mode; "
              "HF: from_pretrained, eager, float64")
        for name, v in meta.items():
            result, wrong = check_variant(name, os.path.join(tmp, name), v)
            cells = "  ".join("%s %.1e/%.1e" % (k, a, b) for k, (a, b) in result.items())
            print("%-18s %s" % (name, cells))
            print("%-18s wrong variants disagree: %s" % (
                "", ", ".join("%s %.3g" % kv for kv in wrong.items())))
            worst = max([worst] + [max(a, b) for a, b in result.values()])
        print("worst %.3g (tolerance %g)" % (worst, tolerance))
        assert worst <= tolerance, worst
    print("OK")


if __name__ == "__main__":
    main()
