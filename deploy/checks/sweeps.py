"""Sweep Jobs: `bertology sweep` with flags the CLI accepts, data and
outputs on mounted volumes, RWX claims, the indexed parts (completions,
per-index retries, failure and replacement policies, one progress file an
index), the merge step repeating the sweep's flags and matching every
part; and a fleet with its sweeps together (the target, the connection
age against the shard timeout, client auth, the NetworkPolicy letting the
sweep in). A sweep that renders can still merge the wrong parts or be cut
mid-shard.
"""

import fnmatch
import re

from .auth import check_client_auth, secret_file
from .common import (CLIENT_AUTH_FILES, DEFAULT_SHARD_TIMEOUT,
                     SCHEDULING_FLAGS, env_of, flag, flags_of, matches,
                     name_of, port_of)
from .fleet import server_view
from .metrics import check_podmonitor
from .network import admits, check_networkpolicy


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
