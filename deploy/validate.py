#!/usr/bin/python3
"""Offline checks of deploy/: the rendered Kubernetes manifests against the
Kubernetes schemas, the binaries' flags, the code's ports and metric names,
each other, and the Dockerfiles.

  validate.py [--bin-dir DIR] [--npm-dir DIR] [--self-test]

Renders every kustomization ($BERTOLOGY_KUSTOMIZE, default `kubectl
kustomize`): the server overlays, alone
and together with the sweep Job and its merge step, and the examples (the
auth example fleet together with the auth example sweep and merge).
--npm-dir holds node_modules from deploy/schema/package-lock.json (validate.sh
installs it); the schema check runs deploy/schema/validate-schema.js there.
--bin-dir holds bertology-server and bertology (default $BERTOLOGY_BIN_DIR,
else build/bin); their --help lists the flags the manifests may use.
--self-test breaks copies of the renders and the Dockerfiles on purpose and
checks that each break is reported, naming the object and the field.
Exit status 0 when every check passes; otherwise one line per problem.
"""

import copy
import fnmatch
import glob
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

import yaml

DEPLOY = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(DEPLOY)
# The server version: the images' tag (deploy/k8s, docker/).
with open(os.path.join(SOURCE, "server", "service", "version.h")) as _f:
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
    names = set()
    for path in glob.glob(os.path.join(SOURCE, "server", "service", "*.cc")):
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
        with open(ADAPTER_RULES) as f:
            self.adapter = yaml.safe_load(f)
        with open(os.path.join(DEPLOY, "prometheus", "prometheus.yml")) as f:
            self.prometheus = yaml.safe_load(f)
        self.dockerfiles = {}
        for rel in DOCKERFILES:
            with open(os.path.join(SOURCE, rel)) as f:
                self.dockerfiles[rel] = f.read()


# --------------------------------------------------------- generic checks
def check_generic(docs, out):
    for d in docs:
        if d.get("kind") != "Namespace" and \
                d.get("metadata", {}).get("namespace") != NAMESPACE:
            out.append("%s: metadata.namespace is %r, not %s" % (
                name_of(d), d.get("metadata", {}).get("namespace"),
                NAMESPACE))
    pvcs = {d["metadata"]["name"]: d for d in docs
            if d.get("kind") == "PersistentVolumeClaim"}
    for obj, pod, _ in pod_templates(docs):
        n = name_of(obj)
        sc = pod.get("securityContext", {})
        if sc.get("seccompProfile", {}).get("type") != "RuntimeDefault":
            out.append("%s: spec.template.spec.securityContext.seccompProfile"
                       " is not RuntimeDefault" % n)
        if not sc.get("runAsNonRoot"):
            out.append("%s: spec.template.spec.securityContext.runAsNonRoot "
                       "is not true" % n)
        volumes = {v["name"]: v for v in pod.get("volumes", [])}
        for v in volumes.values():
            claim = v.get("persistentVolumeClaim", {}).get("claimName")
            if claim and claim not in pvcs:
                out.append("%s: volumes.%s: PersistentVolumeClaim %s is not "
                           "in the render" % (n, v["name"], claim))
        for where, c in containers_of(pod):
            cn = "%s: %s[%s]" % (n, where, c.get("name"))
            for m in c.get("volumeMounts", []):
                if m["name"] not in volumes:
                    out.append("%s.volumeMounts: volume %s is not defined" %
                               (cn, m["name"]))
            res = c.get("resources", {})
            req, lim = res.get("requests", {}), res.get("limits", {})
            if where == "containers" and not ("cpu" in req and
                                              "memory" in req):
                out.append("%s.resources.requests: needs cpu and memory" % cn)
            for r in set(req) & set(lim):
                try:
                    if quantity(req[r]) > quantity(lim[r]):
                        out.append("%s.resources.requests.%s %s is above its "
                                   "limit %s" % (cn, r, req[r], lim[r]))
                except ValueError as e:
                    out.append("%s.resources.%s: %s" % (cn, r, e))
            for r in lim:
                if "/" in r and r in req and str(req[r]) != str(lim[r]):
                    out.append("%s.resources: extended resource %s needs "
                               "requests == limits" % (cn, r))
            env, missing = env_of(c, docs)
            for cm in missing:
                out.append("%s.envFrom: ConfigMap %s is not in the render" %
                           (cn, cm))
            for a in c.get("command", []) + c.get("args", []):
                for var in re.findall(r"\$\((\w+)\)", a):
                    if var not in env:
                        out.append("%s.args: %s uses $(%s), which is not in "
                                   "its environment" % (cn, a, var))
            image = c.get("image", "")
            name, _, tag = image.rpartition(":") if ":" in \
                image.split("/")[-1] else (image, "", "")
            if not tag or tag == "latest":
                out.append("%s.image %s is not pinned to a tag (none or "
                           "latest)" % (cn, image))
            elif name.split("/")[-1].startswith("bertology-server") and \
                    tag != SERVER_VERSION:
                out.append("%s.image %s: the tag is not the server version "
                           "%s (server/service/version.h)" % (cn, image,
                                                              SERVER_VERSION))
            cmd = c.get("command", [])
            if cmd[:1] == ["cp"]:
                opts = "".join(a[1:] for a in cmd[1:] if a.startswith("-")
                               and not a.startswith("--"))
                if "p" not in opts and "a" not in opts and \
                        "--preserve" not in cmd and "--archive" not in cmd:
                    out.append("%s.command: %s copies without -p: the copies "
                               "get new mtimes and modes (keep them: cp -Rp)"
                               % (cn, " ".join(cmd)))
            sec = c.get("securityContext", {})
            if sec.get("allowPrivilegeEscalation") is not False:
                out.append("%s.securityContext.allowPrivilegeEscalation is "
                           "not false" % cn)


# ----------------------------------------------------------- server fleet
def find(docs, kind, name, out, label):
    found = [d for d in docs if d.get("kind") == kind and
             d.get("metadata", {}).get("name") == name]
    if len(found) != 1:
        out.append("%s: expected one %s/%s, found %d" % (label, kind, name,
                                                         len(found)))
        return None
    return found[0]


def server_view(docs):
    """The server Deployment, its container, resolved args and ports."""
    dep = [d for d in docs if d.get("kind") == "Deployment" and
           d["metadata"]["name"] == "bertology-server"]
    if not dep:
        return None
    dep = dep[0]
    pod = dep["spec"]["template"]["spec"]
    c = [c for c in pod.get("containers", []) if c.get("name") == "server"]
    c = c[0] if c else pod["containers"][0]
    env, _ = env_of(c, docs)
    args = [expand(a, env) for a in c.get("args", [])]
    ports = {p.get("name"): p["containerPort"] for p in c.get("ports", [])}
    return dict(dep=dep, pod=pod, c=c, env=env, args=args, ports=ports,
                labels=dep["spec"]["template"]["metadata"].get("labels", {}))


def check_fleet(docs, ctx, dockerfile_rel, out):
    label = "render"
    s = server_view(docs)
    if s is None:
        out.append("%s: no Deployment/bertology-server" % label)
        return
    dep, pod, c, args, ports = s["dep"], s["pod"], s["c"], s["args"], \
        s["ports"]
    n = name_of(dep)
    cn = "%s: containers[%s]" % (n, c.get("name"))
    # Flags the binary accepts.
    if ctx.server_flags is not None:
        for f, _ in flags_of(c.get("args", [])):
            if f not in ctx.server_flags:
                out.append("%s.args: --%s is not a bertology-server flag "
                           "(bertology-server --helpfull)" % (cn, f))
    grpc_port = port_of(flag(args, "listen"))
    metrics_port = port_of(flag(args, "metrics_listen"))
    if grpc_port is None or ports.get("grpc") != grpc_port:
        out.append("%s.ports: --listen port %s != containerPort grpc %s" %
                   (cn, grpc_port, ports.get("grpc")))
    if metrics_port is None or ports.get("metrics") != metrics_port:
        out.append("%s.ports: --metrics_listen port %s != containerPort "
                   "metrics %s" % (cn, metrics_port, ports.get("metrics")))
    check_server_auth(cn, args, c, pod, out)
    tls = flag(args, "tls_cert")
    for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
        p = c.get(probe)
        where = "%s.%s" % (cn, probe)
        if tls and p and "grpc" in p:
            out.append("%s: a grpc probe, but the server has --tls_cert: "
                       "kubelet's grpc probes speak plain text only; use an "
                       "exec probe running `bertology health --tls-ca=...`" %
                       where)
        elif tls:
            check_health_exec(where, p, grpc_port, c, pod, ctx, out)
            uses_cli = (p or {}).get("exec", {}).get("command", [])[:1] == \
                ["bertology"]
            if uses_cli and not re.search(r"bin/bertology(?![\w-])",
                                          ctx.dockerfiles.get(dockerfile_rel,
                                                              "")):
                out.append("%s.exec.command runs `bertology`, which %s does "
                           "not install" % (where, dockerfile_rel))
        elif not p or "grpc" not in p:
            out.append("%s: not a grpc probe" % where)
        elif p["grpc"].get("port") != grpc_port:
            out.append("%s.grpc.port %s, but the server listens on %s" %
                       (where, p["grpc"].get("port"), grpc_port))

    # Models: baked into the image, or filled into a volume by an
    # initContainer.
    dockerfile = ctx.dockerfiles.get(dockerfile_rel, "")
    baked = {dest.rstrip("/") for flags, _, dest in copies(dockerfile)
             if dest.startswith("/models/") and "--from" not in flags}
    mounts = {m["mountPath"].rstrip("/"): m["name"]
              for m in c.get("volumeMounts", [])}
    init_filled = {m["name"] for ic in pod.get("initContainers", [])
                   for m in ic.get("volumeMounts", [])
                   if not m.get("readOnly")}
    models = flag(args, "model")
    if not models:
        out.append("%s.args: no --model" % cn)
    for spec in (models or "").split(","):
        d = spec.partition("=")[2]
        if d.rstrip("/") in baked:
            continue
        vol = [v for p, v in mounts.items() if d == p or d.startswith(p + "/")]
        if not vol or vol[0] not in init_filled:
            out.append("%s.args: --model %s is neither baked into %s nor "
                       "filled by an initContainer" % (cn, spec,
                                                       dockerfile_rel))

    # Device, GPU resources, image.
    device = flag(args, "device") or "cpu"
    gpus = c.get("resources", {}).get("limits", {}).get("nvidia.com/gpu")
    if device.startswith("cuda"):
        if not gpus:
            out.append("%s.resources.limits: --device=%s without "
                       "nvidia.com/gpu" % (cn, device))
        if "cuda" not in c.get("image", ""):
            out.append("%s.image %s is not the CUDA image" % (cn,
                                                              c.get("image")))
        if not any(t.get("key") == "nvidia.com/gpu"
                   for t in pod.get("tolerations", [])):
            out.append("%s: spec.template.spec.tolerations lack "
                       "nvidia.com/gpu" % n)
        gfd = sorted(k for k in pod.get("nodeSelector", {}) if k.startswith(
            ("nvidia.com/gpu.", "feature.node.kubernetes.io/")))
        if gfd:
            out.append("%s: spec.template.spec.nodeSelector %s is set only "
                       "where GPU feature discovery runs: the pods stay "
                       "Pending elsewhere (the nvidia.com/gpu request "
                       "places them)" % (n, ", ".join(gfd)))
        ru = dep["spec"].get("strategy", {}).get("rollingUpdate", {})
        if str(ru.get("maxSurge", "25%")) not in ("0", "0%"):
            out.append("%s: spec.strategy.rollingUpdate.maxSurge %s on GPU "
                       "pods: a surge pod needs a spare GPU (use 0, and "
                       "maxUnavailable 1)" % (n, ru.get("maxSurge", "25%")))
        elif str(ru.get("maxUnavailable", "25%")) in ("0", "0%"):
            out.append("%s: spec.strategy.rollingUpdate maxSurge and "
                       "maxUnavailable are both 0: the rollout cannot "
                       "start" % n)
    elif gpus:
        out.append("%s.resources.limits: nvidia.com/gpu with --device=%s" %
                   (cn, device))

    # Shutdown timing.
    grace = flag(args, "grace_period_s") or "30"
    if not grace.isdigit():
        out.append("%s.args: --grace_period_s=%s is not a number" % (cn,
                                                                     grace))
        grace = "0"
    age = flag(args, "max_connection_age_s") or ""
    if not age.isdigit() or int(age) <= 0:
        out.append("%s.args: --max_connection_age_s=%s must be > 0 so DNS "
                   "clients see new replicas" % (cn, age))
    age_grace = flag(args, "max_connection_age_grace_s")
    if age_grace is None or not age_grace.isdigit():
        out.append("%s.args: --max_connection_age_grace_s=%s is not set to "
                   "a number" % (cn, age_grace))
    cmd = c.get("lifecycle", {}).get("preStop", {}).get("exec", {}).get(
        "command", [])
    sleep_s = int(cmd[1]) if cmd[:1] == ["sleep"] and len(cmd) == 2 else 0
    if not sleep_s:
        out.append("%s.lifecycle.preStop: no sleep" % cn)
    tgp = pod.get("terminationGracePeriodSeconds", 30)
    if tgp < sleep_s + int(grace) + 5:
        out.append("%s: spec.template.spec.terminationGracePeriodSeconds %s "
                   "< preStop %s + grace_period_s %s + 5" % (n, tgp, sleep_s,
                                                             grace))
    ann = dep["spec"]["template"]["metadata"].get("annotations", {})
    if ann.get("prometheus.io/port") != str(metrics_port):
        out.append("%s: annotations prometheus.io/port %s != metrics port %s"
                   % (n, ann.get("prometheus.io/port"), metrics_port))

    # Services, PDB.
    headless = find(docs, "Service", "bertology-headless", out, label)
    svc = find(docs, "Service", "bertology", out, label)
    for sv in (headless, svc):
        if sv is None:
            continue
        if not matches(sv["spec"].get("selector"), s["labels"]):
            out.append("%s: spec.selector selects no server pod" %
                       name_of(sv))
        for p in sv["spec"].get("ports", []):
            t = p.get("targetPort", p["port"])
            if t not in ports and t not in ports.values():
                out.append("%s: spec.ports[%s].targetPort %s is no server "
                           "port" % (name_of(sv), p.get("name"), t))
    if headless is not None and headless["spec"].get("clusterIP") != "None":
        out.append("Service/bertology-headless: spec.clusterIP is not None")
    hpa = find(docs, "HorizontalPodAutoscaler", "bertology-server", out,
               label)
    pdb = find(docs, "PodDisruptionBudget", "bertology-server", out, label)
    min_replicas = dep["spec"].get("replicas", 1)
    if hpa is not None:
        check_hpa(hpa, dep, ctx, out)
        if "replicas" in dep["spec"]:
            out.append("%s: spec.replicas %s beside %s, which owns the count:"
                       " every kubectl apply scales the fleet back to it" %
                       (n, dep["spec"]["replicas"], name_of(hpa)))
        min_replicas = hpa["spec"].get("minReplicas", 1)
    if pdb is not None:
        if not matches(pdb["spec"].get("selector", {}).get("matchLabels"),
                       s["labels"]):
            out.append("%s: spec.selector selects no server pod" %
                       name_of(pdb))
        if pdb["spec"].get("minAvailable", 0) >= min_replicas:
            out.append("%s: spec.minAvailable %s >= minReplicas %s blocks "
                       "every node drain" % (name_of(pdb),
                                             pdb["spec"]["minAvailable"],
                                             min_replicas))

    # Monitoring and network policy.
    pr = find(docs, "PrometheusRule", "bertology", out, label)
    if pr is not None:
        with open(os.path.join(DEPLOY, "prometheus",
                               "bertology-rules.yml")) as f:
            want = yaml.safe_load(f)["groups"]
        if pr.get("spec", {}).get("groups") != want:
            out.append("%s: spec.groups differ from deploy/prometheus/"
                       "bertology-rules.yml (run deploy/prometheus/"
                       "make_prometheusrule.py)" % name_of(pr))
    pm = find(docs, "PodMonitor", "bertology-server", out, label)
    if pm is not None:
        check_podmonitor(pm, s["labels"], c, out)
    np = find(docs, "NetworkPolicy", "bertology-server", out, label)
    if np is not None:
        check_networkpolicy(np, s["labels"], c, out)

    # Prometheus (no Operator) scrapes the headless service's metrics port.
    jobs = [j for j in ctx.prometheus.get("scrape_configs", [])
            if j.get("job_name") == "bertology-server"]
    sd = jobs[0].get("dns_sd_configs", [{}])[0] if jobs else {}
    if sd.get("port") != metrics_port:
        out.append("deploy/prometheus/prometheus.yml: bertology-server "
                   "dns_sd_configs port %s != metrics port %s" %
                   (sd.get("port"), metrics_port))

    # The image this fleet runs: ports and user.
    exposed = {int(p) for line in dockerfile.splitlines()
               if line.startswith("EXPOSE") for p in line.split()[1:]}
    if {grpc_port, metrics_port} - exposed:
        out.append("%s: EXPOSE %s lacks %s" % (
            dockerfile_rel, sorted(exposed),
            sorted({grpc_port, metrics_port} - exposed, key=str)))
    users = re.findall(r"^USER\s+(\S+)", dockerfile, re.M)
    run_as = pod.get("securityContext", {}).get("runAsUser")
    if not users or users[-1].split(":")[0] != str(run_as):
        out.append("%s: USER %s != %s runAsUser %s" % (
            dockerfile_rel, users[-1:] or None, n, run_as))


def secret_file(where, what, path, container, pod, out):
    """`path` (a flag's file) must be on a read-only Secret volume mount
    without subPath (a subPath mount never sees the Secret change)."""
    mounts = [m for m in container.get("volumeMounts", [])
              if path.startswith(m["mountPath"].rstrip("/") + "/")]
    if not mounts:
        out.append("%s: %s=%s is not on a mounted volume" % (where, what,
                                                             path))
        return
    m = max(mounts, key=lambda m: len(m["mountPath"]))
    vol = {v["name"]: v for v in pod.get("volumes", [])}.get(m["name"], {})
    if "secret" not in vol and "projected" not in vol:
        out.append("%s: %s=%s is on volume %s, not a Secret" % (
            where, what, path, m["name"]))
    if not m.get("readOnly"):
        out.append("%s: %s=%s: volumeMounts %s is not readOnly" % (
            where, what, path, m["name"]))
    if m.get("subPath"):
        out.append("%s: %s=%s: volumeMounts %s has a subPath, which never "
                   "sees a Secret update" % (where, what, path, m["name"]))


def check_server_auth(cn, args, c, pod, out):
    """components/auth: TLS and token files on Secret mounts, and flags the
    server accepts together."""
    tls_cert, tls_key = flag(args, "tls_cert"), flag(args, "tls_key")
    if bool(tls_cert) != bool(tls_key):
        out.append("%s.args: --tls_cert and --tls_key must be given together"
                   % cn)
    for f in ("tls_client_ca", "token_file"):
        if flag(args, f) and not tls_cert:
            out.append("%s.args: --%s without --tls_cert (%s)" % (
                cn, f, "the server refuses to start" if f == "tls_client_ca"
                else "tokens travel in plain text"))
    for f in SERVER_AUTH_FILES:
        if flag(args, f):
            secret_file(cn + ".args", "--" + f, flag(args, f), c, pod, out)


def check_health_exec(where, p, grpc_port, c, pod, ctx, out):
    """An exec probe running `bertology health` over TLS."""
    cmd = (p or {}).get("exec", {}).get("command")
    if not cmd:
        out.append("%s: not an exec probe (the server has --tls_cert)" %
                   where)
        return
    if cmd[:2] != ["bertology", "health"]:
        out.append("%s.exec.command does not run `bertology health`: %s" % (
            where, cmd[:2]))
    if ctx.health_flags is not None:
        for f, _ in flags_of(cmd):
            if f not in ctx.health_flags:
                out.append("%s.exec.command: --%s is not a `bertology health` "
                           "flag (bertology health --help)" % (where, f))
    target = flag(cmd, "target") or "localhost:50051"
    if port_of(target) != grpc_port:
        out.append("%s.exec.command: --target=%s, but the server listens on "
                   "%s" % (where, target, grpc_port))
    ca = flag(cmd, "tls-ca")
    if not ca:
        out.append("%s.exec.command: no --tls-ca: plain text to a TLS server"
                   % where)
    else:
        secret_file(where + ".exec.command", "--tls-ca", ca, c, pod, out)
    timeout = flag(cmd, "timeout") or "60"
    limit = p.get("timeoutSeconds", 1)
    if not re.fullmatch(r"[0-9.]+", timeout) or float(timeout) >= limit:
        out.append("%s.exec.command: --timeout=%s is not below timeoutSeconds"
                   " %s" % (where, timeout, limit))


def check_hpa(hpa, dep, ctx, out):
    n = name_of(hpa)
    ref = hpa["spec"].get("scaleTargetRef", {})
    if (ref.get("kind"), ref.get("name")) != ("Deployment",
                                              dep["metadata"]["name"]):
        out.append("%s: spec.scaleTargetRef is %s/%s, not %s" % (
            n, ref.get("kind"), ref.get("name"), name_of(dep)))
    if hpa["spec"].get("minReplicas", 1) > hpa["spec"].get("maxReplicas", 0):
        out.append("%s: spec.minReplicas > maxReplicas" % n)
    served = {r.get("name", {}).get("as")
              for r in ctx.adapter.get("rules", {}).get("custom", [])}
    series = " ".join(r.get("seriesQuery", "")
                      for r in ctx.adapter.get("rules", {}).get("custom", []))
    for i, m in enumerate(hpa["spec"].get("metrics", [])):
        if m.get("type") != "Pods":
            continue
        metric = m["pods"]["metric"]["name"]
        where = "%s: spec.metrics[%d].pods.metric.name %s" % (n, i, metric)
        if metric not in ctx.metrics:
            out.append("%s is not a metric the server exports "
                       "(server/service/*.cc)" % where)
        if metric not in served or metric not in series:
            out.append("%s is not served by the prometheus-adapter rule in "
                       "%s" % (where, os.path.relpath(ADAPTER_RULES, SOURCE)))


def check_podmonitor(pm, labels, container, out):
    n = name_of(pm)
    if not matches(pm["spec"].get("selector", {}).get("matchLabels"), labels):
        out.append("%s: spec.selector selects no pod of its workload" % n)
    names = {p.get("name") for p in container.get("ports", [])}
    for i, e in enumerate(pm["spec"].get("podMetricsEndpoints", [])):
        if e.get("port") not in names:
            out.append("%s: spec.podMetricsEndpoints[%d].port %s is no "
                       "container port %s" % (n, i, e.get("port"),
                                              sorted(names)))
        if e.get("path", "/metrics") != "/metrics":
            out.append("%s: spec.podMetricsEndpoints[%d].path %s is not "
                       "/metrics" % (n, i, e.get("path")))


def policy_rules(np, port_names):
    """The ingress rules of `np` that admit any of port_names."""
    return [r for r in np["spec"].get("ingress", [])
            if not r.get("ports") or
            any(p.get("port") in port_names for p in r.get("ports", []))]


def check_networkpolicy(np, labels, container, out):
    n = name_of(np)
    if not matches(np["spec"].get("podSelector", {}).get("matchLabels"),
                   labels):
        out.append("%s: spec.podSelector selects no pod of its workload" % n)
    if "Ingress" not in np["spec"].get("policyTypes", []):
        out.append("%s: spec.policyTypes lacks Ingress" % n)
    for i, r in enumerate(np["spec"].get("ingress", [])):
        if not r.get("from"):
            out.append("%s: spec.ingress[%d] has no `from`: open to all" %
                       (n, i))
        if not r.get("ports"):
            out.append("%s: spec.ingress[%d] has no `ports`: every port" %
                       (n, i))
        for j, peer in enumerate(r.get("from", [])):
            ns = peer.get("namespaceSelector")
            if ns is not None and not ns.get("matchLabels") and \
                    not ns.get("matchExpressions"):
                out.append("%s: spec.ingress[%d].from[%d].namespaceSelector "
                           "is empty: it admits labelled pods of every "
                           "namespace" % (n, i, j))
            if not peer.get("podSelector", {}).get("matchLabels") and \
                    "ipBlock" not in peer:
                out.append("%s: spec.ingress[%d].from[%d] admits every pod "
                           "of its namespaces" % (n, i, j))
    for p in container.get("ports", []):
        if not policy_rules(np, {p.get("name"), p["containerPort"]}):
            out.append("%s: no ingress rule admits port %s (%s): nothing can "
                       "reach it" % (n, p.get("name"), p["containerPort"]))
    metrics = policy_rules(np, {"metrics"})
    for r in metrics:
        for peer in r.get("from", []):
            if not peer.get("namespaceSelector", {}).get("matchLabels"):
                out.append("%s: the metrics port is open to pods of any "
                           "namespace, not only Prometheus's" % n)


def admits(np, port_names, pod_labels):
    for r in policy_rules(np, port_names):
        for peer in r.get("from", []):
            if matches(peer.get("podSelector", {}).get("matchLabels"),
                       pod_labels) and \
                    "matchLabels" not in peer.get("namespaceSelector", {}):
                return True
    return False


# -------------------------------------------------------------- sweep Jobs
def sweep_view(job, docs):
    pod = job["spec"]["template"]["spec"]
    c = [c for c in pod.get("containers", []) if c.get("name") == "sweep"]
    c = c[0] if c else pod["containers"][0]
    argv = c.get("command", []) + c.get("args", [])
    env, _ = env_of(c, docs)
    return dict(job=job, pod=pod, c=c, argv=argv, env=env,
                labels=job["spec"]["template"]["metadata"].get("labels", {}))


def sweep_jobs(docs):
    return [sweep_view(d, docs) for d in docs if d.get("kind") == "Job"]


def on_mount(path, container):
    return any(path.startswith(m["mountPath"].rstrip("/") + "/")
               for m in container.get("volumeMounts", []))


def check_sweeps(docs, ctx, out):
    jobs = sweep_jobs(docs)
    if not jobs:
        out.append("render: no sweep Job")
    pvcs = {d["metadata"]["name"]: d for d in docs
            if d.get("kind") == "PersistentVolumeClaim"}
    parts = [j for j in jobs if j["job"]["spec"].get("completionMode") ==
             "Indexed"]
    for j in jobs:
        job, pod, c, argv = j["job"], j["pod"], j["c"], j["argv"]
        n = name_of(job)
        cn = "%s: containers[%s]" % (n, c.get("name"))
        if argv[:2] != ["bertology", "sweep"]:
            out.append("%s: command/args do not run `bertology sweep`: %s" %
                       (cn, argv[:2]))
        if ctx.cli_flags is not None:
            for f, _ in flags_of(argv):
                if f not in ctx.cli_flags:
                    out.append("%s.args: --%s is not a `bertology sweep` flag"
                               " (bertology sweep --help)" % (cn, f))
        for f in CLIENT_AUTH_FILES:
            if flag(argv, f):
                secret_file(cn + ".args", "--" + f, flag(argv, f), c, pod,
                            out)
        if bool(flag(argv, "tls-cert")) != bool(flag(argv, "tls-key")):
            out.append("%s.args: --tls-cert and --tls-key must be given "
                       "together" % cn)
        if flag(argv, "token-file") and not (flag(argv, "tls-ca") or
                                             flag(argv, "tls-cert")):
            out.append("%s.args: --token-file without TLS (--tls-ca): the "
                       "token travels in plain text" % cn)
        if pod.get("restartPolicy") not in ("Never", "OnFailure"):
            out.append("%s: spec.template.spec.restartPolicy must be Never "
                       "or OnFailure" % n)
        data = flag(argv, "data") or ""
        filled = {m["name"] for ic in pod.get("initContainers", [])
                  for m in ic.get("volumeMounts", [])}
        data_vol = [m["name"] for m in c.get("volumeMounts", [])
                    if data.startswith(m["mountPath"].rstrip("/") + "/")]
        if not data_vol or data_vol[0] not in filled:
            out.append("%s.args: --data=%s is not on a volume an "
                       "initContainer fills" % (cn, data))
        listen = flag(argv, "metrics-listen")
        ports = {p.get("name"): p["containerPort"] for p in c.get("ports", [])}
        if listen is not None and port_of(listen) != ports.get("metrics"):
            out.append("%s.ports: --metrics-listen port %s != containerPort "
                       "metrics %s" % (cn, port_of(listen),
                                       ports.get("metrics")))
        for f in ("progress-file", "out-dir", "out-csv", "out-json",
                  "merge-from"):
            v = flag(argv, f)
            if v is not None and not on_mount(v, c):
                out.append("%s.args: --%s=%s is not on a mounted volume" %
                           (cn, f, v))
        for v in pod.get("volumes", []):
            claim = v.get("persistentVolumeClaim", {}).get("claimName")
            pvc = pvcs.get(claim)
            if pvc is None:
                continue
            if "ReadWriteMany" not in pvc["spec"].get("accessModes", []):
                out.append("%s: spec.accessModes lacks ReadWriteMany, but "
                           "the pods of %s write it from any node" % (
                               name_of(pvc), n))
            if not pvc["spec"].get("storageClassName"):
                out.append("%s: spec.storageClassName is not set (an RWX "
                           "class is needed)" % name_of(pvc))
        if flag(argv, "masks-per-shard") is None and (
                flag(argv, "part") or flag(argv, "merge-from")):
            out.append("%s.args: --part/--merge-from need --masks-per-shard"
                       % cn)
        if j in parts:
            check_indexed(j, out)
        elif flag(argv, "merge-from"):
            check_merge(j, parts, out)
        pm = [d for d in docs if d.get("kind") == "PodMonitor" and matches(
            d["spec"].get("selector", {}).get("matchLabels"), j["labels"])]
        if listen is not None:
            if not pm:
                out.append("%s: no PodMonitor selects its pods" % n)
            for p in pm:
                check_podmonitor(p, j["labels"], c, out)
    for np in (d for d in docs if d.get("kind") == "NetworkPolicy" and
               d["metadata"]["name"] == "bertology-sweep"):
        for j in jobs:
            check_networkpolicy(np, j["labels"], j["c"], out)


def check_indexed(j, out):
    job, argv, c = j["job"], j["argv"], j["c"]
    n = name_of(job)
    spec = job["spec"]
    part = flag(argv, "part") or ""
    m = re.fullmatch(r"\$\(JOB_COMPLETION_INDEX\)/(\d+)", part)
    if not m:
        out.append("%s.args: --part=%s is not $(JOB_COMPLETION_INDEX)/N" %
                   (n, part))
    else:
        count = int(m.group(1))
        for f in ("completions", "parallelism"):
            if spec.get(f) != count:
                out.append("%s: spec.%s %s != the %d parts of --part" % (
                    n, f, spec.get(f), count))
    if spec.get("backoffLimitPerIndex") is None:
        out.append("%s: spec.backoffLimitPerIndex is not set" % n)
    if j["pod"].get("restartPolicy") != "Never":
        out.append("%s: spec.template.spec.restartPolicy must be Never with "
                   "backoffLimitPerIndex" % n)
    if not any(r.get("action") == "Ignore" and
               any(c.get("type") == "DisruptionTarget"
                   for c in r.get("onPodConditions", []))
               for r in spec.get("podFailurePolicy", {}).get("rules", [])):
        out.append("%s: spec.podFailurePolicy does not ignore "
                   "DisruptionTarget: evictions and preemptions eat the "
                   "index's retries" % n)
    if spec.get("podReplacementPolicy") != "Failed":
        out.append("%s: spec.podReplacementPolicy is %s, not Failed: a "
                   "replacement can append to the part file of the pod it "
                   "replaces while that one still runs" %
                   (n, spec.get("podReplacementPolicy")))
    env = {e["name"]: e for e in c.get("env", [])}
    field = env.get("JOB_COMPLETION_INDEX", {}).get("valueFrom", {}).get(
        "fieldRef", {}).get("fieldPath")
    if field != "metadata.annotations['batch.kubernetes.io/" \
                 "job-completion-index']":
        out.append("%s: env JOB_COMPLETION_INDEX does not come from the "
                   "job-completion-index annotation" % n)
    progress = flag(argv, "progress-file") or ""
    if "$(JOB_COMPLETION_INDEX)" not in progress:
        out.append("%s.args: --progress-file=%s is the same file for every "
                   "index" % (n, progress))
    for f in ("out-dir", "out-csv", "out-json"):
        if flag(argv, f) is not None:
            out.append("%s.args: --%s belongs to the merge step, not a part" %
                       (n, f))


def sweep_defining(argv):
    return sorted((f, v) for f, v in flags_of(argv)
                  if f not in SCHEDULING_FLAGS)


def check_merge(j, parts, out):
    n = name_of(j["job"])
    argv = j["argv"]
    if not parts:
        return  # the render of the merge step alone holds no part Job
    for p in parts:
        mine, theirs = sweep_defining(argv), sweep_defining(p["argv"])
        if mine != theirs:
            diff = sorted(set(mine) ^ set(theirs))
            out.append("%s.args: sweep flags differ from %s: %s" % (
                n, name_of(p["job"]), ", ".join(
                    "--%s%s" % (f, "" if v is None else "=" + v)
                    for f, v in diff)))
        pattern = flag(argv, "merge-from") or ""
        progress = flag(p["argv"], "progress-file") or ""
        m = re.fullmatch(r"\$\(JOB_COMPLETION_INDEX\)/(\d+)",
                         flag(p["argv"], "part") or "")
        count = int(m.group(1)) if m else 1
        for i in range(count):
            f = progress.replace("$(JOB_COMPLETION_INDEX)", str(i))
            if not fnmatch.fnmatch(f, pattern):
                out.append("%s.args: --merge-from=%s misses part %d (%s)" %
                           (n, pattern, i, f))
                break


# ------------------------------------------------ fleet + sweep together
def check_together(docs, out):
    s = server_view(docs)
    headless = [d for d in docs if d.get("kind") == "Service" and
                d["metadata"]["name"] == "bertology-headless"]
    np = [d for d in docs if d.get("kind") == "NetworkPolicy" and
          d["metadata"]["name"] == "bertology-server"]
    if s is None or not headless:
        return
    h = headless[0]
    want = "dns:///%s.%s.svc.cluster.local:%d" % (
        h["metadata"]["name"], h["metadata"]["namespace"],
        h["spec"]["ports"][0]["port"])
    age_grace = flag(s["args"], "max_connection_age_grace_s") or ""
    cm_key = re.search(r"\$\((\w+)\)", flag(s["c"].get("args", []),
                                            "max_connection_age_grace_s")
                       or "")
    grace_name = cm_key.group(1) if cm_key else "--max_connection_age_grace_s"
    for j in sweep_jobs(docs):
        n = name_of(j["job"])
        target = flag(j["argv"], "target")
        if target != want:
            out.append("%s.args: --target=%s, want %s" % (n, target, want))
        timeout = flag(j["argv"], "shard-timeout") or str(
            DEFAULT_SHARD_TIMEOUT)
        if age_grace.isdigit() and timeout.isdigit() and \
                0 < int(age_grace) < int(timeout):
            out.append("%s %s=%s < %s --shard-timeout=%s: a shard longer "
                       "than the connection age is cut" % (
                           name_of(s["dep"]), grace_name, age_grace, n,
                           timeout))
        check_client_auth(s, j, out)
        if np and not admits(np[0], {"grpc", 50051}, j["labels"]):
            out.append("%s: spec.ingress does not admit the pods of %s "
                       "(labels %s) to the grpc port" % (name_of(np[0]), n,
                                                         j["labels"]))


def check_client_auth(s, j, out):
    """A sweep Job presents what the server asks for (components/auth and
    components/sweep-auth)."""
    n, server, argv = name_of(j["job"]), name_of(s["dep"]), j["argv"]
    tls = flag(s["args"], "tls_cert")
    if tls and not flag(argv, "tls-ca"):
        out.append("%s.args: no --tls-ca, but %s serves TLS (--tls_cert)" % (
            n, server))
    if not tls and any(flag(argv, f) for f in ("tls-ca", "tls-cert")):
        out.append("%s.args: --tls-ca/--tls-cert, but %s serves plain text "
                   "(no --tls_cert)" % (n, server))
    if tls and (flag(argv, "target") or "").startswith("dns:///") and \
            not flag(argv, "tls-server-name"):
        out.append("%s.args: no --tls-server-name: a dns:/// target reaches "
                   "each replica by its pod IP, which the certificate of %s "
                   "does not carry" % (n, server))
    if flag(s["args"], "tls_client_ca") and not (flag(argv, "tls-cert") and
                                                 flag(argv, "tls-key")):
        out.append("%s.args: no --tls-cert/--tls-key, but %s requires a "
                   "client certificate (--tls_client_ca)" % (n, server))
    if flag(s["args"], "token_file") and not flag(argv, "token-file"):
        out.append("%s.args: no --token-file, but %s requires a bearer token "
                   "(--token_file)" % (n, server))


# ------------------------------------------------------------ Dockerfiles
def stages(text):
    """[(stage name, FROM image, body text)]."""
    text = re.sub(r"\\\n", " ", text)
    out = []
    for line in text.splitlines():
        m = re.match(r"FROM\s+(?:--\S+\s+)*(\S+)(?:\s+AS\s+(\S+))?", line,
                     re.I)
        if m:
            out.append([m.group(2) or str(len(out)), m.group(1), ""])
        elif out:
            out[-1][2] += line + "\n"
    return out


def copies(text):
    """[(flags, sources, dest)] of the COPY instructions."""
    out = []
    for m in re.finditer(r"^COPY\s+((?:--\S+\s+)*)(.+)$",
                         re.sub(r"\\\n", " ", text), re.M):
        parts = m.group(2).split()
        if parts and parts[0].startswith("["):
            parts = json.loads(m.group(2))
        out.append((m.group(1), parts[:-1], parts[-1] if parts else ""))
    return out


def pinned(image, args):
    image = re.sub(r"\$\{?(\w+)\}?", lambda m: args.get(m.group(1), m.group(0)),
                   image)
    if "@sha256:" in image:
        return True
    tag = image.rpartition(":")[2] if ":" in image.split("/")[-1] else ""
    # An exact version: major.minor[.patch] (Debian's point releases are
    # major.minor), or a dated tag; not "12", "latest" or "bookworm".
    return bool(re.search(r"^\d+\.\d+|\d{8}", tag))


def dockerignore_patterns(rel):
    path = os.path.join(SOURCE, rel + ".dockerignore")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [l.strip() for l in f if l.strip() and not l.startswith("#")]


def check_dockerfile(rel, text, install_lists, out):
    args = dict(re.findall(r"^ARG\s+(\w+)=(\S+)", text, re.M))
    st = stages(text)
    names = {s[0] for s in st}
    if not st:
        out.append("%s: no FROM" % rel)
        return
    for name, image, body in st:
        if image not in names and not pinned(image, args):
            out.append("%s: FROM %s (stage %s) is not pinned to a digest or "
                       "an exact version" % (rel, image, name))
    logical = re.sub(r"\\\n", " ", text)
    for line in logical.splitlines():
        for cmd in re.split(r"&&|;", line):
            if re.search(r"apt-get\s+(-\S+\s+)*install", cmd) and \
                    "--no-install-recommends" not in cmd:
                out.append("%s: `%s` lacks --no-install-recommends" %
                           (rel, " ".join(cmd.split())[:80]))
    users = re.findall(r"^USER\s+(\S+)", text, re.M)
    if not users or users[-1].split(":")[0] in ("root", "0"):
        out.append("%s: the final image runs as root (USER %s)" % (
            rel, users[-1] if users else "unset"))
    # Build stages (all but the last) install build packages only.
    ignored = dockerignore_patterns(rel)
    for name, image, body in st[:-1]:
        for tool in TEST_TOOLS:
            if re.search(r"(install|\s)%s(\s|$)" % re.escape(tool), body) and \
                    "apt-get" in body:
                out.append("%s: build stage %s installs test tool %s" %
                           (rel, name, tool))
        runs = [l for l in body.splitlines() if l.startswith("RUN")]
        for m in re.finditer(r"install-deps\.sh((?:[ \t]+--[\w-]+)*)",
                             "\n".join(runs)):
            flags = m.group(1).split()
            listed = install_lists.get(" ".join(flags))
            if "--build-only" not in flags:
                out.append("%s: build stage %s runs install-deps.sh without "
                           "--build-only (installs the test tools)" % (rel,
                                                                     name))
            elif listed is None:
                out.append("%s: install-deps.sh %s: no package list" %
                           (rel, " ".join(flags)))
            else:
                for tool in TEST_TOOLS:
                    if tool in listed:
                        out.append("%s: install-deps.sh --build-only installs"
                                   " test tool %s" % (rel, tool))
    # COPY sources exist in the context and are not excluded by the
    # Dockerfile's .dockerignore.
    for flags, sources, dest in copies(text):
        if "--from" in flags:
            continue
        for src in sources:
            if not glob.glob(os.path.join(SOURCE, src)):
                out.append("%s: COPY %s: no such path in the repository" %
                           (rel, src))
            for pat in ignored:
                if not pat.startswith("!") and (
                        fnmatch.fnmatch(src.rstrip("/"), pat) or
                        src.startswith(pat.rstrip("/") + "/")):
                    out.append("%s: COPY %s is excluded by %s.dockerignore "
                               "(%s)" % (rel, src, rel, pat))
    if "/models/default" not in text:
        out.append("%s: the default model is not baked in at /models/default"
                   % rel)
    model_files = set()
    for flags, sources, dest in copies(text):
        if dest.rstrip("/") == "/models/default" and "--from" not in flags:
            for src in sources:
                path = os.path.join(SOURCE, src)
                model_files |= set(os.listdir(path)) if os.path.isdir(path) \
                    else {os.path.basename(src)}
    need = {"config.json", "vocab.txt"}
    if model_files and (need - model_files or not model_files & {
            "model.safetensors", "pytorch_model.bin"}):
        out.append("%s: COPY to /models/default lacks %s" % (
            rel, sorted(need - model_files) or "the weights"))
    if rel.endswith(".cuda"):
        check_cuda(rel, st, args, text, out)


def check_cuda(rel, st, args, text, out):
    def sub(s):
        return re.sub(r"\$\{?(\w+)\}?", lambda m: args.get(m.group(1),
                                                          m.group(0)), s)
    images = [sub(i) for _, i, _ in st]
    cuda = [re.match(r"nvidia/cuda:(\d+\.\d+\.\d+)-(\S*?)(devel|runtime|base)"
                     r"-(ubuntu[\d.]+)", i) for i in images]
    if not cuda[0] or cuda[0].group(3) != "devel":
        out.append("%s: the build stage is not an nvidia/cuda devel image: "
                   "%s" % (rel, images[0]))
    if not cuda[-1] or cuda[-1].group(3) == "devel" or \
            "cudnn" in cuda[-1].group(2):
        out.append("%s: the runtime stage is not the smallest nvidia/cuda "
                   "image that serves (base or runtime, no devel, no cudnn: "
                   "the zip carries its CUDA libraries): %s" % (rel,
                                                               images[-1]))
    sha = args.get("LIBTORCH_SHA256", "")
    if not re.fullmatch(r"[0-9a-f]{64}", sha) or \
            not re.search(r"\$\{?LIBTORCH_SHA256\}?\s+/tmp/libtorch\.zip\"?"
                          r"\s*\|\s*sha256sum -c", text):
        out.append("%s: the libtorch zip is not checked against a pinned "
                   "SHA-256 (ARG LIBTORCH_SHA256 and sha256sum -c)" % rel)
    unzip = text.find("unzip -q /tmp/libtorch.zip")
    prep = text.find("scripts/prepare-libtorch.sh /opt/libtorch")
    if unzip < 0 or prep < unzip:
        out.append("%s: scripts/prepare-libtorch.sh /opt/libtorch does not "
                   "run after unpacking: the bundled protobuf headers in "
                   "include/google shadow the system's" % rel)
    for m in re.finditer(r"^ENV LD_LIBRARY_PATH=(\S+)", text, re.M):
        if "LD_LIBRARY_PATH" not in m.group(1):
            out.append("%s: ENV LD_LIBRARY_PATH=%s replaces the base image's "
                       "(/usr/local/nvidia/lib64, where the device plugin "
                       "mounts the driver) instead of appending" %
                       (rel, m.group(1)))
    if cuda[0] and cuda[-1] and (cuda[0].group(1), cuda[0].group(4)) != (
            cuda[-1].group(1), cuda[-1].group(4)):
        out.append("%s: build (%s) and runtime (%s) CUDA versions differ" %
                   (rel, images[0], images[-1]))
    url = re.search(r"https://download\.pytorch\.org/libtorch/(cu\d+)/"
                    r"(libtorch-cxx11-abi-shared-with-deps-[^\s\"']+\.zip)",
                    sub(text))
    if not url:
        out.append("%s: no official cxx11-ABI CUDA libtorch zip from "
                   "download.pytorch.org" % rel)
    elif cuda[0] and url.group(1) != "cu" + "".join(
            cuda[0].group(1).split(".")[:2]):
        out.append("%s: libtorch %s does not match CUDA %s" % (
            rel, url.group(1), cuda[0].group(1)))
    if "-DCMAKE_PREFIX_PATH=/opt/libtorch" not in text:
        out.append("%s: cmake is not given -DCMAKE_PREFIX_PATH=/opt/libtorch"
                   % rel)


def install_lists():
    """Packages scripts/install-deps.sh would install, per option set."""
    out = {}
    script = os.path.join(SOURCE, "scripts", "install-deps.sh")
    for opts in ("", "--build-only", "--build-only --no-torch"):
        r = subprocess.run([script, "--list"] + opts.split(),
                           capture_output=True, text=True)
        out[opts] = r.stdout.split() if r.returncode == 0 else None
    return out


# ------------------------------------------------------------- rendering
def render(kdir):
    cmd = os.environ.get("BERTOLOGY_KUSTOMIZE", "kubectl kustomize").split()
    r = subprocess.run(cmd + [os.path.join(K8S, kdir)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("kubectl kustomize %s: %s" % (kdir, r.stderr))
    return [d for d in yaml.safe_load_all(r.stdout) if d]


def sets_of(renders):
    """Named object sets to check: each fleet alone and with its sweep and
    merge (FLEET_SWEEPS), each sweep render, each sweep with its merge."""
    def sweep_docs(sweep, merge):
        return renders[sweep] + [d for d in renders[merge]
                                 if d.get("kind") == "Job"] + renders[STORAGE]
    out = {}
    for f in FLEETS:
        sweep, merge = FLEET_SWEEPS.get(f, DEFAULT_SWEEPS)
        out[f] = ("fleet", f, renders[f])
        out["%s + %s + %s" % (f, sweep, merge)] = (
            "both", f, renders[f] + sweep_docs(sweep, merge))
    for sw in SWEEPS:
        out[sw] = ("sweep", None, renders[sw] + renders[STORAGE])
    for sweep, merge in dict.fromkeys([DEFAULT_SWEEPS] +
                                      list(FLEET_SWEEPS.values())):
        out["%s + %s" % (sweep, merge)] = ("sweep", None,
                                           sweep_docs(sweep, merge))
    return out


def schema_errors(cases, npm_dir):
    """Runs deploy/schema/validate-schema.js over {case: [objects]}."""
    with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
        json.dump(cases, f)
        f.flush()
        r = subprocess.run(["node", os.path.join(DEPLOY, "schema",
                                                 "validate-schema.js"),
                            npm_dir, f.name], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("validate-schema.js failed: %s" % r.stderr)
    return json.loads(r.stdout)


def check_set(kind, fleet, docs, ctx):
    out = []
    check_generic(docs, out)
    if kind in ("fleet", "both"):
        check_fleet(docs, ctx, FLEETS[fleet], out)
    if kind in ("sweep", "both"):
        check_sweeps(docs, ctx, out)
    if kind == "both":
        check_together(docs, out)
    return out


def check_all(renders, ctx, npm_dir, lists):
    sets = sets_of(renders)
    errors = {name: check_set(k, f, d, ctx) for name, (k, f, d)
              in sets.items()}
    schema = schema_errors({n: renders[n] for n in renders}, npm_dir)
    for n, errs in schema.items():
        errors.setdefault(n, []).extend(errs)
    docker = []
    for rel, text in ctx.dockerfiles.items():
        check_dockerfile(rel, text, lists, docker)
    errors["docker"] = docker
    errors["claims"] = check_claims(renders)
    errors["readme"] = check_wait_commands(
        "README.md", open(os.path.join(SOURCE, "README.md")).read())
    return errors


def check_claims(renders):
    """No sweep kustomization holds a PersistentVolumeClaim: deleting the
    sweep to rerun it would delete its parts and results."""
    out = []
    for sw in SWEEPS:
        for d in renders[sw]:
            if d.get("kind") == "PersistentVolumeClaim":
                out.append("kustomization %s holds %s: `kubectl delete -k` of "
                           "the sweep deletes its results (keep it in %s)" %
                           (sw, name_of(d), STORAGE))
    return out


def check_wait_commands(rel, text):
    """A `kubectl wait --for=condition=complete` on a Job waits out its
    timeout when the Job fails (an index out of retries)."""
    return ["%s:%d: kubectl wait --for=condition=complete only ends when the "
            "Job completes; it waits out its timeout when an index fails" %
            (rel, i + 1) for i, line in enumerate(text.splitlines())
            if "wait" in line and "--for=condition=complete" in line]


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
    "HPA metric not exported": (
        "overlays/cpu", lambda d: obj(d, "HorizontalPodAutoscaler")["spec"][
            "metrics"][0]["pods"]["metric"].update(
                name="bertology_inflight_rowz"),
        ["HorizontalPodAutoscaler/bertology-server",
         "bertology_inflight_rowz"]),
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


def main(argv):
    bin_dir = os.environ.get("BERTOLOGY_BIN_DIR",
                             os.path.join(SOURCE, "build", "bin"))
    npm_dir = os.path.join(SOURCE, "build", "deploy-npm")
    self_testing = False
    it = iter(argv[1:])
    for a in it:
        if a == "--self-test":
            self_testing = True
        elif a == "--bin-dir":
            bin_dir = next(it)
        elif a == "--npm-dir":
            npm_dir = next(it)
        else:
            sys.stderr.write(__doc__)
            return 2
    ctx = Context(bin_dir)
    if ctx.errors:
        for e in ctx.errors:
            print("FAIL:", e)
        return 1
    renders = {k: render(k) for k in list(FLEETS) + SWEEPS + [STORAGE]}
    lists = install_lists()
    if lists.get("--build-only") is None:
        print("FAIL: scripts/install-deps.sh --list --build-only failed")
        return 1
    if self_testing:
        failures = self_test(renders, ctx, npm_dir, lists)
        for f in failures:
            print("FAIL:", f)
        print("%s: %d breaks, %d unnoticed" % (
            "OK" if not failures else "FAIL",
            len(CASES) + len(DOCKER_CASES), len(failures)))
        return 1 if failures else 0
    errors = check_all(renders, ctx, npm_dir, lists)
    total = 0
    for name, errs in errors.items():
        for e in errs:
            print("FAIL: [%s] %s" % (name, e))
        total += len(errs)
        print("%s %-45s %s" % ("ok  " if not errs else "FAIL", name,
                               "%d problems" % len(errs) if errs else
                               "%d Dockerfiles" % len(DOCKERFILES)
                               if name == "docker" else "checked"))
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
