"""A Python client for bertology-server: BERT classifiers whose attention
heads each request may mask, from a notebook or a job.

Install it with `pip install client/python` (beside Debian's grpcio,
protobuf and numpy: `pip install --no-build-isolation client/python` in a
`python3 -m venv --system-site-packages` venv); the gRPC stubs are built
into the package. With a server at `target` (e.g. "localhost:50051"):

>>> from bertology_client import Client
>>> c = Client(target)
>>> c.health()
'SERVING'
>>> r = c.classify([("the cat sat on the mat", "a dog")],
...                mask={"ablate": [(0, 1)]})
>>> r.probabilities.shape[0], float(r.probabilities.sum()) > 0.999
(1, True)
>>> stats = c.analyze_heads(["the cat sat on the mat", ("it", "was")])
>>> stats["entropy"].shape == (c.info()["models"][0]["num_layers"],
...                            c.info()["models"][0]["num_heads"])
True
>>> frame = stats.to_frame()              # pandas: one row per head
>>> list(frame.columns[:3])
['layer', 'head', 'to_cls']

Sweeps, head statistics, importance, pruning, segmentation, patching and
token attribution (Client.attribute) results are dicts with to_frame()
(bertology_client.frames).
"""

from bertology_client.client import (Client, ClassifyResult, SweepEvent,
                                     decode_attention_map, head_mask_proto)
from bertology_client.frames import Result


def _version() -> str:
    try:
        from importlib.metadata import PackageNotFoundError, version
        return version("bertology-client")
    except PackageNotFoundError:  # run from the source tree, not installed
        return "0+source"


__version__ = _version()

__all__ = ["Client", "ClassifyResult", "Result", "SweepEvent",
           "decode_attention_map", "head_mask_proto", "__version__"]
