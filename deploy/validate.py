#!/usr/bin/python3
"""Offline structural checks of the rendered Kubernetes manifests against
the server's flags, the Prometheus config and the Dockerfile.

  validate.py RENDERED.yaml     (kubectl kustomize deploy/k8s > RENDERED.yaml)
  validate.py --self-test RENDERED.yaml   breaks copies on purpose and
                                          checks each break is caught
Exit status 0 when every check passes; otherwise one line per problem.
"""

import copy
import os
import re
import sys

import yaml

DEPLOY_DIR = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.path.dirname(DEPLOY_DIR)


def by_kind(docs, kind):
    return [d for d in docs if d and d.get("kind") == kind]


def one(docs, kind, name, errors):
    found = [d for d in by_kind(docs, kind) if d["metadata"]["name"] == name]
    if len(found) != 1:
        errors.append("expected one %s %s, found %d" % (kind, name, len(found)))
        return None
    return found[0]


def flag(args, name):
    """Value of --name=VALUE in a container's args, or None."""
    for a in args:
        if a.startswith("--%s=" % name):
            return a.split("=", 1)[1]
    return None


def port_of(hostport):
    m = re.search(r":(\d+)$", hostport or "")
    return int(m.group(1)) if m else None


def matches(selector, labels):
    return bool(selector) and all(labels.get(k) == v
                                  for k, v in selector.items())


def check(docs, prometheus, dockerfile):
    errors = []
    ns = [d["metadata"]["name"] for d in by_kind(docs, "Namespace")]
    if ns != ["bertology"]:
        errors.append("expected the bertology Namespace, got %s" % ns)
    for d in docs:
        if d and d["kind"] != "Namespace" and \
                d["metadata"].get("namespace") != "bertology":
            errors.append("%s %s is not in namespace bertology" %
                          (d["kind"], d["metadata"]["name"]))

    cm = one(docs, "ConfigMap", "bertology-server-config", errors)
    dep = one(docs, "Deployment", "bertology-server", errors)
    headless = one(docs, "Service", "bertology-headless", errors)
    svc = one(docs, "Service", "bertology", errors)
    pdb = one(docs, "PodDisruptionBudget", "bertology-server", errors)
    job = one(docs, "Job", "bertology-sweep", errors)
    pvcs = {d["metadata"]["name"] for d in
            by_kind(docs, "PersistentVolumeClaim")}
    if None in (cm, dep, headless, svc, pdb, job):
        return errors
    config = cm.get("data", {})

    # ---- Deployment
    spec = dep["spec"]
    pod = spec["template"]
    labels = pod["metadata"].get("labels", {})
    if not matches(spec["selector"].get("matchLabels"), labels):
        errors.append("Deployment selector does not match its pod labels")
    if spec.get("replicas", 1) < 2:
        errors.append("Deployment needs >= 2 replicas for a sweep to survive "
                      "a lost replica")
    containers = pod["spec"]["containers"]
    server = containers[0]
    args = server.get("args", [])
    ports = {p["name"]: p["containerPort"] for p in server.get("ports", [])}
    grpc_port = port_of(flag(args, "listen"))
    metrics_port = port_of(flag(args, "metrics_listen"))
    if grpc_port is None or ports.get("grpc") != grpc_port:
        errors.append("--listen port %s != containerPort grpc %s" %
                      (grpc_port, ports.get("grpc")))
    if metrics_port is None or ports.get("metrics") != metrics_port:
        errors.append("--metrics_listen port %s != containerPort metrics %s" %
                      (metrics_port, ports.get("metrics")))
    if not flag(args, "model"):
        errors.append("server has no --model")
    # Every $(VAR) in args must come from the ConfigMap (else kubelet passes
    # the literal text "$(VAR)").
    env_names = {e["name"] for e in server.get("env", [])}
    for ref in server.get("envFrom", []):
        if ref.get("configMapRef", {}).get("name") == cm["metadata"]["name"]:
            env_names |= set(config)
    for a in args:
        for var in re.findall(r"\$\((\w+)\)", a):
            if var not in env_names:
                errors.append("arg %s uses undefined $(%s)" % (a, var))

    def resolved(name):
        value = flag(args, name)
        m = re.fullmatch(r"\$\((\w+)\)", value or "")
        return config.get(m.group(1)) if m else value

    for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
        p = server.get(probe)
        if not p or "grpc" not in p:
            errors.append("%s is not a grpc probe" % probe)
        elif p["grpc"].get("port") != grpc_port:
            errors.append("%s probes port %s, server listens on %s" %
                          (probe, p["grpc"].get("port"), grpc_port))
    requests = server.get("resources", {}).get("requests", {})
    if "cpu" not in requests or "memory" not in requests:
        errors.append("server container needs cpu and memory requests")
    grace = resolved("grace_period_s")
    if grace is None or not str(grace).isdigit():
        errors.append("--grace_period_s is not set to a number: %s" % grace)
        grace = 0
    if not str(resolved("max_connection_age_s") or "").isdigit() or \
            int(resolved("max_connection_age_s")) <= 0:
        errors.append("--max_connection_age_s must be > 0 so DNS clients see "
                      "new replicas")
    pre_stop = server.get("lifecycle", {}).get("preStop", {})
    sleep_s = 0
    cmd = pre_stop.get("exec", {}).get("command", [])
    if cmd[:1] == ["sleep"] and len(cmd) == 2:
        sleep_s = int(cmd[1])
    elif "sleep" in pre_stop:
        sleep_s = int(pre_stop["sleep"]["seconds"])
    else:
        errors.append("server has no preStop sleep")
    tgp = pod["spec"].get("terminationGracePeriodSeconds", 30)
    if tgp < sleep_s + int(grace) + 5:
        errors.append("terminationGracePeriodSeconds %s < preStop %s + "
                      "grace_period_s %s + 5" % (tgp, sleep_s, grace))
    ann = pod["metadata"].get("annotations", {})
    if ann.get("prometheus.io/scrape") != "true" or \
            ann.get("prometheus.io/port") != str(metrics_port):
        errors.append("prometheus.io annotations do not point at port %s" %
                      metrics_port)
    run_as = pod["spec"].get("securityContext", {}).get("runAsUser")
    if not pod["spec"].get("securityContext", {}).get("runAsNonRoot"):
        errors.append("server pod is not runAsNonRoot")
    for v in pod["spec"].get("volumes", []):
        claim = v.get("persistentVolumeClaim", {}).get("claimName")
        if claim and claim not in pvcs:
            errors.append("volume %s uses missing PVC %s" % (v["name"], claim))

    # ---- Services and PDB
    for s in (headless, svc):
        if not matches(s["spec"].get("selector"), labels):
            errors.append("Service %s selects no server pod" %
                          s["metadata"]["name"])
        for p in s["spec"]["ports"]:
            target = p.get("targetPort", p["port"])
            if (target not in ports) and (target not in ports.values()):
                errors.append("Service %s targets unknown port %s" %
                              (s["metadata"]["name"], target))
    if headless["spec"].get("clusterIP") != "None":
        errors.append("bertology-headless is not headless")
    headless_port = headless["spec"]["ports"][0]["port"]
    if headless["spec"]["ports"][0].get("targetPort") not in ("grpc",
                                                              grpc_port):
        errors.append("headless service does not target the grpc port")
    if not matches(pdb["spec"].get("selector", {}).get("matchLabels"), labels):
        errors.append("PodDisruptionBudget selects no server pod")

    # ---- sweep Job
    jpod = job["spec"]["template"]["spec"]
    jc = jpod["containers"][0]
    jargs = jc.get("command", []) + jc.get("args", [])
    want = "dns:///%s.%s.svc.cluster.local:%d" % (
        headless["metadata"]["name"], headless["metadata"]["namespace"],
        headless_port)
    if jargs[:2] != ["bertology", "sweep"]:
        errors.append("Job does not run `bertology sweep`: %s" % jargs[:2])
    if flag(jargs, "target") != want:
        errors.append("Job --target=%s, want %s" % (flag(jargs, "target"),
                                                    want))
    progress = flag(jargs, "progress-file") or ""
    mounts = [m["mountPath"] for m in jc.get("volumeMounts", [])]
    if not any(progress.startswith(m.rstrip("/") + "/") for m in mounts):
        errors.append("Job --progress-file %r is not on a mounted volume" %
                      progress)
    if jpod.get("restartPolicy") not in ("OnFailure", "Never"):
        errors.append("Job restartPolicy must be OnFailure or Never")
    for v in jpod.get("volumes", []):
        claim = v.get("persistentVolumeClaim", {}).get("claimName")
        if claim and claim not in pvcs:
            errors.append("Job volume %s uses missing PVC %s" % (v["name"],
                                                                 claim))

    # ---- Prometheus: scrapes the headless service on the metrics port
    job_cfg = [j for j in prometheus.get("scrape_configs", [])
               if j.get("job_name") == "bertology-server"]
    if not job_cfg:
        errors.append("prometheus.yml has no bertology-server job")
    else:
        sd = job_cfg[0].get("dns_sd_configs", [{}])[0]
        if sd.get("port") != metrics_port or \
                want.split("///")[1].rsplit(":", 1)[0] not in sd.get("names",
                                                                     []):
            errors.append("prometheus.yml does not scrape %s:%s" %
                          (headless["metadata"]["name"], metrics_port))

    # ---- Dockerfile: ports and user agree with the pod
    exposed = {int(p) for line in dockerfile.splitlines()
               if line.startswith("EXPOSE") for p in line.split()[1:]}
    if {grpc_port, metrics_port} - exposed:
        errors.append("Dockerfile EXPOSE %s lacks %s" %
                      (sorted(exposed), {grpc_port, metrics_port} - exposed))
    users = re.findall(r"^USER\s+(\S+)", dockerfile, re.M)
    if not users or users[-1].split(":")[0] != str(run_as):
        errors.append("Dockerfile USER %s != pod runAsUser %s" %
                      (users[-1:] or None, run_as))
    return errors


def self_test(docs, prometheus, dockerfile):
    """Each mutation must produce at least one error."""
    def server_of(d):
        return [x for x in d if x and x["kind"] == "Deployment"][0][
            "spec"]["template"]["spec"]

    def mutate(fn):
        d = copy.deepcopy(docs)
        fn(d)
        return d

    cases = {
        "probe port": lambda d: server_of(d)["containers"][0][
            "readinessProbe"]["grpc"].update(port=1),
        "grace period": lambda d: server_of(d).update(
            terminationGracePeriodSeconds=10),
        "selector": lambda d: [x for x in d if x and x["metadata"]["name"] ==
                               "bertology-headless"][0]["spec"].update(
                                   selector={"app": "nope"}),
        "job target": lambda d: [x for x in d if x and x["kind"] == "Job"][0][
            "spec"]["template"]["spec"]["containers"][0]["args"].__setitem__(
                1, "--target=localhost:1"),
        "listen port": lambda d: server_of(d)["containers"][0]["args"]
        .__setitem__(1, "--listen=0.0.0.0:6000"),
    }
    failures = []
    for name, fn in cases.items():
        if not check(mutate(fn), prometheus, dockerfile):
            failures.append("self-test: breaking %s went unnoticed" % name)
    if not check(docs, prometheus, dockerfile.replace("EXPOSE", "# EXPOSE")):
        failures.append("self-test: missing EXPOSE went unnoticed")
    return failures


def main(argv):
    self_testing = "--self-test" in argv
    paths = [a for a in argv[1:] if a != "--self-test"]
    if len(paths) != 1:
        sys.stderr.write(__doc__)
        return 2
    with open(paths[0]) as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    with open(os.path.join(DEPLOY_DIR, "prometheus", "prometheus.yml")) as f:
        prometheus = yaml.safe_load(f)
    with open(os.path.join(SOURCE_DIR, "docker", "Dockerfile")) as f:
        dockerfile = f.read()
    errors = (self_test if self_testing else check)(docs, prometheus,
                                                    dockerfile)
    for e in errors:
        print("FAIL:", e)
    if not errors:
        print("OK: %d objects%s" % (len(docs),
                                    ", self-test" if self_testing else ""))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
