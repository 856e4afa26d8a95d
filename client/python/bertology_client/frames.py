"""Results as pandas DataFrames (optional: needs pandas, e.g. Debian's
python3-pandas or `pip install bertology-client[pandas]`).

Every result that to_frame() takes is a dict the Client returns; the
conversion is by the result's kind:

  "sweep"        one row per mask, the baseline first (mask_index -1):
                 the scalar fields, "ablated" as "L0H1;L3H2"
  "heads"        one row per (layer, head): every [layers, heads] array of
                 the result as a column (analyze_heads' statistics and
                 "pattern", head_importance's "importance" and
                 "raw_importance", segment_words' scores)
  "patch"        one row per patched site, in site order
  "prune"        one row per step, "masked_this_step" as "L0H1;L3H2"
  "attribution"  one row per input x unit x method (input, then unit, then
                 method in the order asked): input_index, unit, text,
                 segment, special, method, score, target, completeness_gap
                 (integrated gradients' rows only, else NaN): the columns
                 of `bertology attribute`'s attribution.csv
"""

from typing import Any, Dict, List

import numpy as np


def _pandas():
    try:
        import pandas  # noqa: PLC0415 (optional dependency)
    except ImportError as e:  # pragma: no cover (depends on the machine)
        raise ImportError(
            "to_frame() needs pandas: apt install python3-pandas, or pip "
            "install 'bertology-client[pandas]'") from e
    return pandas


def _heads(pairs) -> str:
    return ";".join("L%dH%d" % (int(l), int(h)) for l, h in pairs or [])


def _scalars(row: Dict[str, Any]) -> Dict[str, Any]:
    out = {}
    for k, v in row.items():
        if k in ("ablated", "masked", "masked_this_step", "scaled"):
            out[k] = _heads(v)
        elif np.isscalar(v) or v is None:
            out[k] = v
    return out


def sweep_frame(result):
    rows = [dict(_scalars(result["baseline"]), mask_index=-1)]
    rows += [_scalars(r) for r in result["results"]]
    return _pandas().DataFrame(rows)


def heads_frame(result):
    grids = {k: np.asarray(v) for k, v in result.items()
             if isinstance(v, np.ndarray) and v.ndim == 2}
    if not grids:
        raise ValueError("no [layers, heads] arrays in this result")
    layers, heads = next(iter(grids.values())).shape
    columns = {"layer": np.repeat(np.arange(layers), heads),
               "head": np.tile(np.arange(heads), layers)}
    for name, grid in grids.items():
        if grid.shape == (layers, heads):
            columns[name] = grid.reshape(-1)
    return _pandas().DataFrame(columns)


def patch_frame(result):
    rows: List[Dict[str, Any]] = []
    for r in result["results"]:
        row = _scalars(r)
        logits = r.get("logits")
        if logits is not None:
            for c, v in enumerate(np.asarray(logits).reshape(-1)):
                row["logit_%d" % c] = float(v)
        rows.append(row)
    return _pandas().DataFrame(rows)


def prune_frame(result):
    return _pandas().DataFrame([_scalars(s) for s in result["steps"]])


def attribution_frame(result):
    rows: List[Dict[str, Any]] = []
    for r in result["results"]:
        for u, unit in enumerate(r["units"]):
            for name, m in r["methods"].items():
                gap = m["completeness_gap"]
                rows.append({"input_index": r["input_index"], "unit": u,
                             "text": unit["text"], "segment": unit["segment"],
                             "special": unit["special"], "method": name,
                             "score": float(m["scores"][u]),
                             "target": r["target"],
                             "completeness_gap": np.nan if gap is None
                             else gap})
    return _pandas().DataFrame(rows, columns=[
        "input_index", "unit", "text", "segment", "special", "method",
        "score", "target", "completeness_gap"])


_FRAMES = {"sweep": sweep_frame, "heads": heads_frame, "patch": patch_frame,
           "prune": prune_frame, "attribution": attribution_frame}


class Result(dict):
    """A result dict (the keys its Client method documents) that also
    converts itself: result.to_frame() is a pandas DataFrame (see the
    module's docstring for the rows of each kind)."""

    def __init__(self, kind: str, data: Dict[str, Any]):
        super().__init__(data)
        self.kind = kind

    def to_frame(self):
        return _FRAMES[self.kind](self)
