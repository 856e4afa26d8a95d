"""A small Python client for bertology-server, usable from a notebook.

    from bertology_client import Client
    c = Client("localhost:50051")
    c.info()
    c.classify([("a query", "a title")], mask={"ablate": [(2, 3)]})
    att = c.attention("a query", "a title", layers=[0, 1])
    att["maps"].shape   # (n_layers_sel, n_heads_sel, T, T), numpy float32

Needs the generated stubs (`bertology.v1.bertology_pb2` and
`grpc_health.v1.health_pb2`, built into <build>/python by the
`bertology_proto_python` target) on sys.path.
"""

from bertology_client.client import (Client, ClassifyResult, SweepEvent,
                                     decode_attention_map, head_mask_proto)

__all__ = ["Client", "ClassifyResult", "SweepEvent", "decode_attention_map",
           "head_mask_proto"]
