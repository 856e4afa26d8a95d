"""Builds the bertology-client package: the client module plus the gRPC
stubs generated here from the project's proto/ (see pyproject.toml).

The stubs are made with the system `protoc` and `grpc_python_plugin`
(Debian: protobuf-compiler, protobuf-compiler-grpc), not grpcio-tools:
Debian's python3-grpc-tools (1.14) is older than its grpcio runtime, and
code from a newer protoc than the protobuf runtime does not load. The
version is the server's (server/service/registry/version.h), so a client
and a server from one checkout say the same version.
"""

import os
import re
import shutil
import subprocess

from setuptools import setup

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.environ.get("BERTOLOGY_SOURCE_DIR",
                      os.path.normpath(os.path.join(HERE, "..", "..")))
PROTO = os.path.join(ROOT, "proto")
GEN = os.path.join(HERE, "build", "generated")


def version():
    path = os.path.join(ROOT, "server", "service", "registry", "version.h")
    with open(path) as f:
        m = re.search(r'kBertologyVersion\[\] = "([^"]+)"', f.read())
    if not m:
        raise SystemExit("no kBertologyVersion in " + path)
    return m.group(1)


def tool(name, package):
    path = shutil.which(name)
    if path is None:
        raise SystemExit("%s not found: install %s (scripts/install-deps.sh)"
                         % (name, package))
    return path


def generate():
    """bertology/v1/*_pb2(_grpc).py and grpc_health/v1/health_pb2(_grpc).py
    into GEN."""
    protoc = tool("protoc", "protobuf-compiler")
    plugin = tool("grpc_python_plugin", "protobuf-compiler-grpc")
    v1 = os.path.join(PROTO, "bertology", "v1")
    if not os.path.isdir(v1):
        raise SystemExit("no protos at %s (set BERTOLOGY_SOURCE_DIR to the "
                         "bertology checkout)" % v1)
    shutil.rmtree(GEN, ignore_errors=True)
    os.makedirs(GEN)
    common = ["--python_out=" + GEN, "--grpc_python_out=" + GEN,
              "--plugin=protoc-gen-grpc_python=" + plugin]
    protos = sorted(os.path.join("bertology", "v1", f)
                    for f in os.listdir(v1) if f.endswith(".proto"))
    subprocess.check_call([protoc, "-I", PROTO] + common + protos)
    # grpc.health.v1 under the module names of PyPI's grpcio-health-checking
    # (a grpc/ folder would shadow grpcio's own package).
    subprocess.check_call(
        [protoc, "-Igrpc_health/v1=" + os.path.join(PROTO, "grpc", "health",
                                                    "v1")]
        + common + ["grpc_health/v1/health.proto"])
    for pkg in ("bertology", os.path.join("bertology", "v1")):
        open(os.path.join(GEN, pkg, "__init__.py"), "a").close()


generate()
setup(
    version=version(),
    packages=["bertology_client", "bertology", "bertology.v1",
              "grpc_health.v1"],
    package_dir={
        "bertology_client": "bertology_client",
        "bertology": os.path.join("build", "generated", "bertology"),
        "bertology.v1": os.path.join("build", "generated", "bertology", "v1"),
        "grpc_health.v1": os.path.join("build", "generated", "grpc_health",
                                       "v1"),
    },
    package_data={"bertology_client": ["py.typed"]},
)
