"""The server fleet: the bertology-server Deployment against the binary's
flags and its Dockerfile (ports, probes, models, GPU placement and
rollout, shutdown timing), its Services, PDB, HPA, PrometheusRule,
PodMonitor and NetworkPolicy, and prometheus.yml's scrape port. A fleet
that renders and applies can still refuse to start, drop requests on a
rollout or never scale: these catch it before a cluster does.
"""

import os
import re

import yaml

from .auth import check_health_exec, check_server_auth
from .common import (DEPLOY, env_of, expand, flag, flags_of, matches,
                     name_of, port_of)
from .dockerfiles import copies
from .metrics import check_hpa, check_podmonitor
from .network import check_networkpolicy


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
        if flag(args, "dtype") is None:
            out.append("%s.args: --device=%s without --dtype (auto: BF16 "
                       "from compute capability 8.0)" % (cn, device))
        if flag(args, "blas_threads") is not None:
            out.append("%s.args: --blas_threads on a GPU replica (a CPU-only "
                       "flag: OpenBLAS runs no matrix product there)" % cn)
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
    if not device.startswith("cuda") and flag(args, "blas_threads") is None:
        out.append("%s.args: --device=%s without --blas_threads: OpenBLAS "
                   "would size its pool to the node's cores, not the pod's"
                   % (cn, device))

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
