"""Hugging Face's own BERT as the oracle: models loaded with from_pretrained
from the checkpoint directories the server loads, run as HF runs them, and
the interventions HF has no argument for added as hooks on HF's modules.

HF transformers 4.x eager BertSelfAttention (modeling_bert.py):
    probs = softmax(q k^T / sqrt(d) + extended_mask)
    probs = self.dropout(probs)          # identity in eval mode
    probs = probs * head_mask            # when head_mask is given
    ctx   = probs @ v                    # returned as [B, T, H * d]
    outputs = (ctx, probs)               # probs: output_attentions
so a forward hook on `attention.self.dropout` sees (and may replace) the
probabilities before the head mask, and one on `attention.self` the heads'
context vectors [B, T, H * d] before attention.output.dense. Nothing here
comes from the project's C++ or its float64 reference.

Needs the test venv (scripts/make-test-venv.sh): transformers 4.x, which
still takes `head_mask` (v5 removed it).
"""

import contextlib

import torch
import transformers


def load(directory, dtype=torch.float64, architecture=None):
    """HF's class for the checkpoint (config.json's architectures unless
    given), eager attention, eval mode, in `dtype`."""
    if architecture is None:
        config = transformers.AutoConfig.from_pretrained(directory)
        architecture = (config.architectures or ["BertModel"])[0]
    cls = getattr(transformers, architecture)
    model = cls.from_pretrained(directory, attn_implementation="eager")
    return model.to(dtype).eval()


def bert_of(model):
    """The BertModel inside a BertFor* model (or the model itself)."""
    return getattr(model, "bert", model)


def layers_of(model):
    return bert_of(model).encoder.layer


def head_mask_5d(mask, dtype):
    """[B, L, H] per-row masks as HF's 5-D head_mask [L, B, H, 1, 1]
    (get_head_mask passes a 5-D mask through unchanged)."""
    m = torch.as_tensor(mask, dtype=dtype)
    return m.permute(1, 0, 2)[..., None, None].contiguous()


@contextlib.contextmanager
def hooks(handles):
    try:
        yield
    finally:
        for h in handles:
            h.remove()


def uniform_probs_hooks(model, head_mask, uniform_rows, attention_mask):
    """The project's uniform mode on HF's own probabilities: rows with
    uniform_rows[b] = 1 get p' = m p + (1 - m) u, u the uniform distribution
    over the row's real tokens; a hook on each layer's attention dropout
    (before HF multiplies the head mask in). Call the model with head_mask
    only on the other rows: the hook applies m itself on uniform rows, so
    the caller passes a head_mask of ones there."""
    m_all = torch.as_tensor(head_mask, dtype=torch.float64)      # [B, L, H]
    sel = torch.as_tensor(uniform_rows, dtype=torch.float64)     # [B]
    real = torch.as_tensor(attention_mask, dtype=torch.float64)  # [B, T]
    handles = []
    for i, layer in enumerate(layers_of(model)):
        def hook(module, inputs, probs, i=i):
            m = m_all[:, i, :, None, None].to(probs.dtype)
            u = (real / real.sum(-1, keepdim=True))[:, None, None, :].to(probs.dtype)
            s = sel[:, None, None, None].to(probs.dtype)
            return s * (m * probs + (1 - m) * u.expand_as(probs)) + (1 - s) * probs
        handles.append(layer.attention.self.dropout.register_forward_hook(hook))
    return hooks(handles)


def context_hooks(model, edit):
    """edit(layer, ctx [B, T, H, d]) -> replacement, on each layer's heads'
    context vectors before attention.output.dense."""
    handles = []
    for i, layer in enumerate(layers_of(model)):
        attn = layer.attention.self
        heads, size = attn.num_attention_heads, attn.attention_head_size

        def hook(module, inputs, outputs, i=i, heads=heads, size=size):
            ctx = outputs[0]
            b, t, _ = ctx.shape
            new = edit(i, ctx.view(b, t, heads, size))
            if new is None:
                return outputs
            return (new.reshape(b, t, heads * size),) + tuple(outputs[1:])
        handles.append(attn.register_forward_hook(hook))
    return hooks(handles)


def residual_hooks(model, edit):
    """edit(l, x [B, T, D]) -> replacement, on the residual stream entering
    layer l (l = L: the encoder's output, entering the pooler/head)."""
    layers = layers_of(model)
    handles = []
    for i, layer in enumerate(layers):
        def pre(module, args, i=i):
            new = edit(i, args[0])
            return None if new is None else (new,) + tuple(args[1:])
        handles.append(layer.register_forward_pre_hook(pre))

    def post(module, inputs, outputs, l=len(layers)):
        new = edit(l, outputs[0])
        return outputs if new is None else (new,) + tuple(outputs[1:])
    handles.append(layers[-1].register_forward_hook(post))
    return hooks(handles)
