"""Attribute's request and results (attribution.proto defines each method),
kept out of client.py so the names the client takes and returns live in
one place, the same as the CLI's (`bertology attribute --method=...`)."""

from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from bertology.v1 import bertology_pb2 as pb

# The names Client.attribute takes and its results carry, in the proto's
# order (the order of "all").
METHODS = {
    "saliency": pb.ATTRIBUTION_METHOD_SALIENCY,
    "gradient-x-input": pb.ATTRIBUTION_METHOD_GRADIENT_X_INPUT,
    "integrated-gradients": pb.ATTRIBUTION_METHOD_INTEGRATED_GRADIENTS,
    "rollout": pb.ATTRIBUTION_METHOD_ATTENTION_ROLLOUT,
    "flow": pb.ATTRIBUTION_METHOD_ATTENTION_FLOW,
    "attention-x-gradient": pb.ATTRIBUTION_METHOD_ATTENTION_X_GRADIENT,
}
_METHOD_NAMES = {v: k for k, v in METHODS.items()}
OUTPUTS = {"logit": pb.ATTRIBUTION_OUTPUT_LOGIT,
           "probability": pb.ATTRIBUTION_OUTPUT_PROBABILITY}
BASELINES = {"pad": pb.ATTRIBUTION_BASELINE_PAD,
             "zero": pb.ATTRIBUTION_BASELINE_ZERO,
             "mask": pb.ATTRIBUTION_BASELINE_MASK}
RULES = {"gauss-legendre": pb.INTEGRATION_RULE_GAUSS_LEGENDRE,
         "trapezoid": pb.INTEGRATION_RULE_RIEMANN_TRAPEZOID}
GRANULARITIES = {"token": pb.GRANULARITY_TOKEN, "word": pb.GRANULARITY_WORD}
PATCH_METHODS = {"exact": pb.PATCH_METHOD_EXACT,
                 "attribution": pb.PATCH_METHOD_ATTRIBUTION}


def choice(table: Dict[str, int], value: str, name: str) -> int:
    """table[value], or ValueError naming the argument and the choices."""
    try:
        return table[value]
    except (KeyError, TypeError):
        raise ValueError("%s must be one of %s, not %r" %
                         (name, ", ".join(table), value)) from None


def attribute_request(inputs: List[Any], methods: Optional[Sequence[str]],
                      target: Optional[int], target_position: Optional[int],
                      output: str, baseline: str, rule: str,
                      steps: Optional[int], granularity: str,
                      model: str) -> Any:
    """An AttributeRequest without its head mask; `inputs` are TextInputs.
    methods None (or empty): all six, named so the results' order is
    METHODS'; a single name is one method."""
    if isinstance(methods, str):
        methods = [methods]
    req = pb.AttributeRequest(
        model=model, inputs=inputs,
        methods=[choice(METHODS, m, "method") for m in methods or METHODS],
        output=choice(OUTPUTS, output, "output"),
        baseline=choice(BASELINES, baseline, "baseline"),
        rule=choice(RULES, rule, "rule"),
        granularity=choice(GRANULARITIES, granularity, "granularity"))
    if target is not None:
        req.target = int(target)
    if target_position is not None:
        req.target_position = int(target_position)
    if steps is not None:
        req.steps = int(steps)
    return req


def method_name(method: int) -> str:
    return _METHOD_NAMES.get(method, "unspecified")


def result_dict(r: Any) -> Dict[str, Any]:
    """An AttributionResult as Client.attribute documents it."""
    methods = {}
    for m in r.methods:
        methods[method_name(m.method)] = {
            "scores": np.array(m.scores, dtype=np.float64),
            # Integrated gradients only (else None).
            "completeness_gap": (m.completeness_gap
                                 if m.HasField("completeness_gap") else None),
            "baseline_output": (m.baseline_output
                                if m.HasField("baseline_output") else None),
            "steps": m.steps}
    return {"input_index": r.input_index,
            "tokens": [{"text": t.text, "id": t.id, "segment": t.segment,
                        "word_index": t.word_index, "special": t.special}
                       for t in r.tokens],
            "units": [{"text": u.text, "segment": u.segment,
                       "first_token": u.first_token,
                       "num_tokens": u.num_tokens, "special": u.special}
                      for u in r.units],
            "target": r.target, "target_position": r.target_position,
            "output": ("probability"
                       if r.output == pb.ATTRIBUTION_OUTPUT_PROBABILITY
                       else "logit"),
            "output_value": r.output_value,
            "logits": np.array(r.logits, dtype=np.float32),
            "methods": methods}
