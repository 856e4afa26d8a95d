"""The self-test (--self-test): breaks copies of the renders (CASES) and
the Dockerfiles (DOCKER_CASES) on purpose, one fault each, and checks that
each break is reported on a line naming the object and the field. A check
that never fires looks the same as one that passes: this shows each fires.
"""

import copy
import re

from .common import STORAGE
from .dockerfiles import check_dockerfile
from .render import (check_claims, check_set, check_wait_commands,
                     schema_errors, sets_of)


# --------------------------------------------------------------- self-test
def obj(docs, kind, name=None):
    for d in docs:
        if d.get("kind") == kind and (name is None or
                                      d["metadata"]["name"] == name):
            return d
    raise KeyError("%s/%s" % (kind, name))


def server_c(docs):
    return obj(docs, "Deployment", "bertology-server")["spec"]["template"][
        "spec"]["containers"][0]


def job_c(docs, name="bertology-sweep"):
    return obj(docs, "Job", name)["spec"]["template"]["spec"]["containers"][0]


def replace_arg(c, prefix, new, key="args"):
    c[key] = [new if a.startswith(prefix) else a for a in c[key]]


def drop_args(c, *prefixes):
    c["args"] = [a for a in c["args"] if not a.startswith(prefixes)]


def hpa_metric(docs, kind):
    """The HPA's metric of `kind` (Pods or External), its spec."""
    for m in obj(docs, "HorizontalPodAutoscaler")["spec"]["metrics"]:
        if m["type"] == kind:
            return m[kind.lower()]
    raise KeyError(kind)


def hpa_renamed(set_name, kind, name, reported):
    """A case: the HPA's `kind` metric renamed to `name`; the report names
    the HPA, the name and `reported`."""
    return (set_name,
            lambda d: hpa_metric(d, kind)["metric"].update(name=name),
            ["HorizontalPodAutoscaler/bertology-server", name, reported])


def server_cm(docs):
    ref = server_c(docs)["envFrom"][0]["configMapRef"]["name"]
    return obj(docs, "ConfigMap", ref)["data"]


# name: (render set, mutation, substrings the report must contain)
CASES = {
    "unknown server flag": (
        "overlays/cpu", lambda d: server_c(d)["args"].append(
            "--max_batch_sise=8"),
        ["Deployment/bertology-server", "--max_batch_sise"]),
    "misspelled CLI flag": (
        "sweep", lambda d: replace_arg(job_c(d), "--shard-timeout",
                                       "--shard-timout=600"),
        ["Job/bertology-sweep", "--shard-timout"]),
    "memory request above limit": (
        "overlays/cpu", lambda d: server_c(d)["resources"]["requests"].update(
            memory="16Gi"),
        ["Deployment/bertology-server", "resources.requests.memory"]),
    "unknown field": (
        "overlays/gpu", lambda d: server_c(d).update(imagePullPolcy="Always"),
        ["Deployment/bertology-server", "imagePullPolcy", "unknown field"]),
    "schema type": (
        "sweep", lambda d: job_c(d)["ports"][0].update(containerPort="9091"),
        ["Job/bertology-sweep", "containerPort", "must be integer"]),
    "grace below shard timeout": (
        "overlays/cpu + sweep + sweep-merge",
        lambda d: server_cm(d).update(MAX_CONNECTION_AGE_GRACE_S="60"),
        ["Deployment/bertology-server", "MAX_CONNECTION_AGE_GRACE_S",
         "--shard-timeout"]),
    "HPA metric not served": hpa_renamed(
        "overlays/cpu", "Pods", "bertology_queue_wait_seconds_meen",
        "custom rule"),
    "HPA on a load one sweep fills": hpa_renamed(
        "overlays/gpu", "Pods", "bertology_inflight_rows", "maxReplicas"),
    "HPA work left not served": hpa_renamed(
        "overlays/cpu", "External", "bertology_sweep_pairs_left",
        "external rule"),
    "HPA work left as a Value": (
        "overlays/cpu", lambda d: hpa_metric(d, "External").update(
            target={"type": "Value", "value": "1500k"}),
        ["HorizontalPodAutoscaler/bertology-server", "AverageValue"]),
    "probe port": (
        "overlays/cpu", lambda d: server_c(d)["readinessProbe"]["grpc"].update(
            port=1),
        ["Deployment/bertology-server", "readinessProbe"]),
    "no seccomp profile": (
        "sweep", lambda d: obj(d, "Job")["spec"]["template"]["spec"][
            "securityContext"].pop("seccompProfile"),
        ["Job/bertology-sweep", "seccompProfile"]),
    "gpu without nvidia.com/gpu": (
        "overlays/gpu", lambda d: server_c(d)["resources"]["limits"].pop(
            "nvidia.com/gpu"),
        ["Deployment/bertology-server", "nvidia.com/gpu"]),
    "gpu with blas threads": (
        "overlays/gpu", lambda d: server_c(d)["args"].append(
            "--blas_threads=2"),
        ["Deployment/bertology-server", "--blas_threads"]),
    "gpu without dtype": (
        "overlays/gpu", lambda d: drop_args(server_c(d), "--dtype"),
        ["Deployment/bertology-server", "--dtype"]),
    "cpu without blas threads": (
        "overlays/cpu", lambda d: drop_args(server_c(d), "--blas_threads"),
        ["Deployment/bertology-server", "--blas_threads"]),
    "merge flags differ": (
        "sweep + sweep-merge", lambda d: replace_arg(
            job_c(d, "bertology-sweep-merge"), "--limit", "--limit=500"),
        ["Job/bertology-sweep-merge", "--limit"]),
    "parts != completions": (
        "sweep", lambda d: obj(d, "Job")["spec"].update(completions=3),
        ["Job/bertology-sweep", "spec.completions"]),
    "sweep pods not let in": (
        "overlays/gpu + sweep + sweep-merge", lambda d: obj(
            d, "Job", "bertology-sweep")["spec"]["template"]["metadata"][
                "labels"].pop("bertology.io/client"),
        ["NetworkPolicy/bertology-server", "Job/bertology-sweep"]),
    "metrics open to all": (
        "overlays/cpu", lambda d: obj(d, "NetworkPolicy", "bertology-server")[
            "spec"]["ingress"][1].pop("from"),
        ["NetworkPolicy/bertology-server", "ingress[1]"]),
    "wrong namespace": (
        "overlays/cpu", lambda d: obj(d, "Service", "bertology")[
            "metadata"].update(namespace="default"),
        ["Service/bertology", "metadata.namespace"]),
    "RWO sweeps claim": (
        "sweep", lambda d: obj(d, "PersistentVolumeClaim")["spec"].update(
            accessModes=["ReadWriteOnce"]),
        ["PersistentVolumeClaim/bertology-sweeps", "ReadWriteMany"]),
    "model on an empty volume": (
        "overlays/cpu", lambda d: server_cm(d).update(
            MODELS="user=/models/user"),
        ["Deployment/bertology-server", "--model user=/models/user"]),
    "grpc probe with TLS": (
        "examples/cpu-auth", lambda d: server_c(d).update(
            readinessProbe={"grpc": {"port": 50051}, "periodSeconds": 5}),
        ["Deployment/bertology-server", "readinessProbe", "grpc probe",
         "--tls_cert"]),
    "unknown health flag": (
        "examples/cpu-auth", lambda d: replace_arg(
            server_c(d)["livenessProbe"]["exec"], "--tls-ca",
            "--tls-ca-file=/etc/bertology/tls/ca.crt", key="command"),
        ["Deployment/bertology-server", "livenessProbe.exec.command",
         "--tls-ca-file"]),
    "token Secret not mounted": (
        "examples/cpu-auth", lambda d: server_c(d).update(volumeMounts=[
            m for m in server_c(d)["volumeMounts"]
            if m["mountPath"] != "/etc/bertology/tokens"]),
        ["Deployment/bertology-server", "--token_file", "not on a mounted"]),
    "replicas beside the HPA": (
        "overlays/cpu", lambda d: obj(d, "Deployment")["spec"].update(
            replicas=2),
        ["Deployment/bertology-server", "spec.replicas",
         "HorizontalPodAutoscaler/bertology-server"]),
    "GPU surge rollout": (
        "overlays/gpu", lambda d: obj(d, "Deployment")["spec"]["strategy"][
            "rollingUpdate"].update(maxSurge=1),
        ["Deployment/bertology-server", "maxSurge", "spare GPU"]),
    "GFD-only node selector": (
        "overlays/gpu", lambda d: obj(d, "Deployment")["spec"]["template"][
            "spec"].update(nodeSelector={"nvidia.com/gpu.present": "true"}),
        ["Deployment/bertology-server", "nvidia.com/gpu.present",
         "feature discovery"]),
    "clients from any namespace": (
        "overlays/cpu", lambda d: obj(d, "NetworkPolicy", "bertology-server")[
            "spec"]["ingress"][0]["from"][1].update(namespaceSelector={}),
        ["NetworkPolicy/bertology-server", "ingress[0].from[1]",
         "every namespace"]),
    "evictions eat retries": (
        "sweep", lambda d: obj(d, "Job")["spec"].pop("podFailurePolicy"),
        ["Job/bertology-sweep", "podFailurePolicy", "DisruptionTarget"]),
    "replacement beside its pod": (
        "sweep", lambda d: obj(d, "Job")["spec"].pop("podReplacementPolicy"),
        ["Job/bertology-sweep", "podReplacementPolicy"]),
    "latest image": (
        "sweep", lambda d: job_c(d).update(image="bertology-server:latest"),
        ["Job/bertology-sweep", "bertology-server:latest", "not pinned"]),
    "image not the server version": (
        "overlays/cpu", lambda d: server_c(d).update(
            image="bertology-server:0.2.9"),
        ["Deployment/bertology-server", "bertology-server:0.2.9",
         "server version"]),
    "PrometheusRule drifted": (
        "overlays/cpu", lambda d: obj(d, "PrometheusRule")["spec"]["groups"][
            0]["rules"][0].update(expr="vector(1)"),
        ["PrometheusRule/bertology", "bertology-rules.yml"]),
    "copy without -p": (
        "sweep", lambda d: obj(d, "Job")["spec"]["template"]["spec"][
            "initContainers"][0].update(
                command=["cp", "-R", "/data/.", "/input/"]),
        ["Job/bertology-sweep", "initContainers[fetch-data].command",
         "without -p"]),
    "merge without client certificate": (
        "examples/cpu-auth + examples/sweep-auth + examples/sweep-merge-auth",
        lambda d: drop_args(job_c(d, "bertology-sweep-merge"), "--tls-cert",
                            "--tls-key"),
        ["Job/bertology-sweep-merge", "--tls-cert", "--tls_client_ca"]),
}

# Dockerfile breaks: (file, old, new, substrings).
DOCKER_CASES = {
    "unpinned base": ("docker/Dockerfile", re.compile(r"^FROM (\S+)", re.M),
                      "FROM debian:12", ["docker/Dockerfile", "FROM debian:12",
                                         "pinned"]),
    "unpinned base argument": ("docker/Dockerfile",
                               re.compile(r"^ARG BASE_IMAGE=\S+", re.M),
                               "ARG BASE_IMAGE=debian:bookworm-slim",
                               ["docker/Dockerfile", "bookworm-slim",
                                "pinned"]),
    "root user": ("docker/Dockerfile.cuda", re.compile(r"^USER .*$", re.M),
                  "USER root", ["docker/Dockerfile.cuda", "root"]),
    "recommends": ("docker/Dockerfile.cuda",
                   re.compile(r"--no-install-recommends"), "",
                   ["docker/Dockerfile.cuda", "--no-install-recommends"]),
    "test tools in build": ("docker/Dockerfile",
                            re.compile(r"install-deps\.sh --build-only"),
                            "install-deps.sh",
                            ["docker/Dockerfile", "--build-only"]),
    "libtorch unchecked": ("docker/Dockerfile.cuda",
                           re.compile(r'echo "\$\{LIBTORCH_SHA256\}.*\n'),
                           "", ["docker/Dockerfile.cuda", "SHA-256"]),
    "bundled protobuf kept": ("docker/Dockerfile.cuda",
                              re.compile(r" && \\\n\s*scripts/prepare-"
                                         r"libtorch\.sh /opt/libtorch"), "",
                              ["docker/Dockerfile.cuda", "include/google"]),
    "LD_LIBRARY_PATH replaced": ("docker/Dockerfile.cuda",
                                 re.compile(r":\$\{LD_LIBRARY_PATH\}"), "",
                                 ["docker/Dockerfile.cuda", "LD_LIBRARY_PATH",
                                  "nvidia/lib64"]),
    "cudnn-devel runtime": ("docker/Dockerfile.cuda",
                            re.compile(r"-base-\$\{UBUNTU\} AS runtime"),
                            "-cudnn-devel-${UBUNTU} AS runtime",
                            ["docker/Dockerfile.cuda", "runtime stage"]),
    "missing COPY source": ("docker/Dockerfile",
                            re.compile(r"(?<=^COPY )models/querytitle-zh-tiny",
                                       re.M),
                            "models/querytitle-zh-huge",
                            ["docker/Dockerfile", "querytitle-zh-huge"]),
}


def self_test(renders, ctx, npm_dir, lists):
    sets = sets_of(renders)
    failures, mutated = [], {}
    for case, (set_name, fn, _) in CASES.items():
        kind, fleet, docs = sets[set_name]
        d = copy.deepcopy(docs)
        fn(d)
        mutated[case] = (kind, fleet, d)
    schema = schema_errors({c: m[2] for c, m in mutated.items()}, npm_dir)
    for case, (kind, fleet, d) in mutated.items():
        report = check_set(kind, fleet, d, ctx) + schema.get(case, [])
        want = CASES[case][2]
        hit = [e for e in report if all(w in e for w in want)]
        if not hit:
            failures.append("self-test: %s went unnoticed (want a line with "
                            "%s; got %s)" % (case, want, report[:4]))
        else:
            print("self-test ok: %s -> %s" % (case, hit[0]))
    for case, (rel, old, new, want) in DOCKER_CASES.items():
        out = []
        text = old.sub(new, ctx.dockerfiles[rel], count=1)
        if text == ctx.dockerfiles[rel]:
            failures.append("self-test: %s: nothing to break in %s" % (case,
                                                                      rel))
            continue
        check_dockerfile(rel, text, lists, out)
        hit = [e for e in out if all(w in e for w in want)]
        if not hit:
            failures.append("self-test: %s went unnoticed (want %s; got %s)" %
                            (case, want, out[:4]))
        else:
            print("self-test ok: %s -> %s" % (case, hit[0]))
    # The claim inside a sweep's kustomization, and a README that waits for
    # completion only.
    claims = check_claims(dict(renders, sweep=renders["sweep"] +
                               renders[STORAGE]))
    waits = check_wait_commands("README.md", "run `kubectl -n bertology wait "
                                "--for=condition=complete job/bertology-sweep`")
    for case, report, want in (
            ("claim in the sweep", claims, ["sweep", "PersistentVolumeClaim",
                                            "deletes its results"]),
            ("wait for complete only", waits, ["README.md:1",
                                               "waits out its timeout"])):
        hit = [e for e in report if all(w in e for w in want)]
        if not hit:
            failures.append("self-test: %s went unnoticed (want %s; got %s)"
                            % (case, want, report[:4]))
        else:
            print("self-test ok: %s -> %s" % (case, hit[0]))
    return failures
