"""What every check shares: where deploy/ and the sources are, the fixed
names (namespace, fleets, sweeps, auth flags, Dockerfiles), helpers that
read a rendered object (name_of, flags_of, quantity, pod_templates, env_of)
and the Context, what the manifests are checked against (the binaries'
--help, the server's metric names, the adapter rule, prometheus.yml, the
Dockerfiles): gathered once so that each check module reads the same facts.
"""

import glob
import os
import re
import subprocess

import yaml


# deploy/ (this file is deploy/checks/common.py).
DEPLOY = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCE = os.path.dirname(DEPLOY)
# The server version: the images' tag (deploy/k8s, docker/).
with open(os.path.join(SOURCE, "server", "service", "registry", "version.h")) as _f:
    SERVER_VERSION = re.search(r'kBertologyVersion\[\] = "([^"]+)"',
                               _f.read()).group(1)
K8S = os.path.join(DEPLOY, "k8s")
NAMESPACE = "bertology"

# Server fleets (each checked alone and with the sweep renders) and the
# sweep renders.
FLEETS = {
    "overlays/cpu": "docker/Dockerfile",
    "overlays/gpu": "docker/Dockerfile.cuda",
    "examples/cpu-model-from-image": "docker/Dockerfile",
    "examples/gpu-model-from-url": "docker/Dockerfile.cuda",
    "examples/cpu-auth": "docker/Dockerfile",
}
SWEEPS = ["sweep", "sweep-merge", "examples/sweep-data-from-url",
          "examples/sweep-auth", "examples/sweep-merge-auth"]
# The results claim, applied once, apart from the Jobs (a `kubectl delete
# -k` of a sweep must not delete it): every sweep set is checked with it.
STORAGE = "sweep-storage"
# The sweep and merge renders each fleet is checked with (default: sweep,
# sweep-merge): a fleet with TLS/tokens needs clients that present them.
FLEET_SWEEPS = {
    "examples/cpu-auth": ("examples/sweep-auth", "examples/sweep-merge-auth"),
}
DEFAULT_SWEEPS = ("sweep", "sweep-merge")
# Server flags naming a file of components/auth's Secrets, and the CLI's.
SERVER_AUTH_FILES = ["tls_cert", "tls_key", "tls_client_ca", "token_file"]
CLIENT_AUTH_FILES = ["tls-ca", "tls-cert", "tls-key", "token-file"]
DOCKERFILES = ["docker/Dockerfile", "docker/Dockerfile.cuda"]
ADAPTER_RULES = os.path.join(K8S, "examples", "prometheus-adapter-rules.yaml")
# Test tools the image build stage must not install (scripts/install-deps.sh
# TEST_PKGS and the no-recommends tools).
TEST_TOOLS = ["nginx", "chromium", "prometheus", "python3-torch",
              "python3-numpy", "python3-grpcio", "python3-protobuf"]
# `bertology sweep` flags that define the sweep (its shards): the merge step
# must repeat them exactly.
SCHEDULING_FLAGS = {"part", "progress-file", "metrics-listen", "merge-from",
                    "out-csv", "out-json", "out-dir", "quiet", "max-inflight",
                    "retries", "shard-timeout", "resolve-interval", "timeout",
                    "target", "tls-ca", "tls-cert", "tls-key",
                    "tls-server-name", "token-file"}
DEFAULT_SHARD_TIMEOUT = 600


# ------------------------------------------------------------------ helpers
def name_of(obj):
    return "%s/%s" % (obj.get("kind"), obj.get("metadata", {}).get("name"))


def flags_of(args):
    """[(name, value or None)] of the --flags in a container's args."""
    out = []
    for a in args:
        if a.startswith("--"):
            name, eq, value = a[2:].partition("=")
            out.append((name, value if eq else None))
    return out


def flag(args, name):
    values = [v for n, v in flags_of(args) if n == name]
    return values[-1] if values else None


def port_of(hostport):
    m = re.search(r":(\d+)$", hostport or "")
    return int(m.group(1)) if m else None


def matches(selector, labels):
    return bool(selector) and all(labels.get(k) == v
                                  for k, v in selector.items())


QUANTITY = {"": 1, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
            "P": 1e15, "E": 1e18, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30,
            "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}


def quantity(q):
    m = re.fullmatch(r"([0-9.]+(?:[eE][-+]?\d+)?)([a-zA-Z]*)", str(q).strip())
    if not m or m.group(2) not in QUANTITY:
        raise ValueError("not a quantity: %r" % q)
    return float(m.group(1)) * QUANTITY[m.group(2)]


def pod_templates(docs):
    """(object, pod spec, pod labels) of every workload."""
    for d in docs:
        if d.get("kind") in ("Deployment", "Job", "StatefulSet", "DaemonSet"):
            t = d.get("spec", {}).get("template", {})
            yield d, t.get("spec", {}), t.get("metadata", {}).get("labels", {})


def containers_of(pod):
    return [("initContainers", c) for c in pod.get("initContainers", [])] + \
        [("containers", c) for c in pod.get("containers", [])]


def env_of(container, docs):
    """Environment a container gets: env values and envFrom ConfigMaps."""
    cms = {d["metadata"]["name"]: d.get("data", {}) for d in docs
           if d.get("kind") == "ConfigMap"}
    env, missing = {}, []
    for ref in container.get("envFrom", []):
        name = ref.get("configMapRef", {}).get("name")
        if name is not None:
            if name in cms:
                env.update(cms[name])
            else:
                missing.append(name)
    for e in container.get("env", []):
        env[e["name"]] = e.get("value", "<from %s>" % list(
            e.get("valueFrom", {"?": 0}))[0])
    return env, missing


def expand(text, env):
    return re.sub(r"\$\((\w+)\)", lambda m: str(env.get(m.group(1),
                                                        m.group(0))), text)


def help_flags(binary, args, pattern):
    try:
        out = subprocess.run([binary] + args, capture_output=True, text=True,
                             timeout=30)
    except OSError as e:
        return None, "cannot run %s: %s" % (binary, e)
    text = out.stdout + out.stderr
    flags = set(re.findall(pattern, text, re.M))
    if not flags:
        return None, "%s %s listed no flags:\n%s" % (binary, " ".join(args),
                                                     text[:500])
    return flags, None


def metric_names():
    """bertology_* metric names the server's code registers."""
    return names_in(os.path.join(SOURCE, "server", "service", "*", "*.cc"))


def job_metric_names():
    """bertology_* metric names `bertology sweep --metrics-listen` exports
    (the sweep and merge Jobs' pods)."""
    return names_in(os.path.join(SOURCE, "client", "cli", "sweep_metrics.cc"))


def names_in(pattern):
    names = set()
    for path in glob.glob(pattern):
        if path.endswith("_test.cc"):
            continue
        with open(path) as f:
            names |= set(re.findall(r'"(bertology_[a-z0-9_]+)"', f.read()))
    return names


# ------------------------------------------------------------ the context
class Context:
    """What the manifests are checked against: the binaries' flags, the
    server's metrics, the adapter rule, the Dockerfiles, prometheus.yml."""

    def __init__(self, bin_dir):
        self.errors = []
        self.server_flags, err = help_flags(
            os.path.join(bin_dir, "bertology-server"), ["--helpfull"],
            r"^\s+--([A-Za-z0-9_]+)\b")
        if err:
            self.errors.append(err)
        self.cli_flags, err = help_flags(
            os.path.join(bin_dir, "bertology"), ["sweep", "--help"],
            r"^\s+--([a-z0-9][a-z0-9-]*)\b")
        if err:
            self.errors.append(err)
        # The server's exec probes run `bertology health` (components/auth).
        self.health_flags, err = help_flags(
            os.path.join(bin_dir, "bertology"), ["health", "--help"],
            r"^\s+--([a-z0-9][a-z0-9-]*)\b")
        if err:
            self.errors.append(err)
        self.metrics = metric_names()
        self.job_metrics = job_metric_names()
        with open(ADAPTER_RULES) as f:
            self.adapter = yaml.safe_load(f)
        with open(os.path.join(DEPLOY, "prometheus", "prometheus.yml")) as f:
            self.prometheus = yaml.safe_load(f)
        self.dockerfiles = {}
        for rel in DOCKERFILES:
            with open(os.path.join(SOURCE, rel)) as f:
                self.dockerfiles[rel] = f.read()
