#!/usr/bin/python3
"""Checks that the alerting/recording rules and the Grafana dashboard name
only metrics the code exports, and only recording rules the rules define;
with promtool installed, also that the dashboard's expressions parse.

Exported names are the whole string literals `"bertology_..."` and
`"process_..."` of server/service/metrics/metrics.cc (the server, process_* included)
and client/cli/sweep_metrics.cc (`bertology sweep --metrics-listen`);
histograms add _bucket, _sum and _count. Metrics of other exporters the rules
may use are listed in EXTERNAL. Exit status 1 with one line per unknown name.

  /usr/bin/python3 deploy/prometheus/check_metric_names.py [SOURCE_DIR]
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

# Metrics not exported by this project that the rules rely on.
EXTERNAL = {
    "up",  # Prometheus itself
    "kube_pod_container_resource_limits",  # kube-state-metrics
}
SOURCES = ["server/service/metrics/metrics.cc", "client/cli/sweep_metrics.cc"]
HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")
# A metric or recording-rule name of ours (or an EXTERNAL one) in PromQL.
TOKEN = re.compile(r"\b(?:bertology[_:]|process_|kube_|up\b)[A-Za-z0-9_:]*")


def exported(src):
    names = set()
    for rel in SOURCES:
        with open(os.path.join(src, rel)) as f:
            names.update(re.findall(r'"((?:bertology|process)_[a-z0-9_]+)"',
                                    f.read()))
    return names


def names_in(expr):
    """Metric-like names in `expr`, with quoted label values removed."""
    return set(TOKEN.findall(re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)))


def rules_file(src):
    import yaml  # python3-yaml
    with open(os.path.join(src, "deploy/prometheus/bertology-rules.yml")) as f:
        return yaml.safe_load(f)


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    metrics = exported(src)
    known = set(EXTERNAL) | metrics | {
        m + s for m in metrics for s in HISTOGRAM_SUFFIXES}
    rules = rules_file(src)
    recorded = {r["record"] for g in rules["groups"] for r in g["rules"]
                if "record" in r}
    exprs = []  # (where, expr)
    for g in rules["groups"]:
        for r in g["rules"]:
            exprs.append(("rules %s" % (r.get("record") or r.get("alert")),
                          r["expr"]))
    with open(os.path.join(src, "deploy/grafana/bertology-dashboard.json")) as f:
        dashboard = json.load(f)
    for p in dashboard["panels"]:
        for t in p.get("targets", []):
            exprs.append(("dashboard panel %r %s" % (p["title"], t["refId"]),
                          t["expr"]))
    errors = []
    for where, expr in exprs:
        for name in sorted(names_in(expr)):
            if name not in known and name not in recorded:
                errors.append("%s: %s is neither exported by %s nor recorded"
                              % (where, name, " or ".join(SOURCES)))
    # The dashboard's expressions must parse: promtool checks them as
    # recording rules (where promtool is installed).
    if shutil.which("promtool"):
        import yaml
        rules = [{"record": "dashboard:expr%d" % i, "expr": e}
                 for i, (w, e) in enumerate(exprs) if w.startswith("dash")]
        with tempfile.NamedTemporaryFile("w", suffix=".yml") as f:
            yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]},
                           f)
            f.flush()
            check = subprocess.run(["promtool", "check", "rules", f.name],
                                   capture_output=True, text=True)
        if check.returncode != 0:
            errors.append("dashboard expressions do not parse: " +
                          check.stdout + check.stderr)
    for e in errors:
        print(e)
    if not errors:
        print("OK: %d expressions name only exported or recorded metrics "
              "(%d exported)" % (len(exprs), len(metrics)))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
