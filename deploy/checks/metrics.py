"""The metrics path: the HPA scales on a metric the server exports and the
prometheus-adapter rule serves, and PodMonitors scrape a port the
container has at /metrics. A metric name off by a letter leaves the HPA
without data and the fleet at its minimum, silently.
"""

import os

from .common import ADAPTER_RULES, SOURCE, matches, name_of


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
