"""The metrics path: each HPA metric is one a prometheus-adapter rule
serves from series the server (Pods) or the sweep Jobs (External) export,
and none is a per-replica load that one sweep fills on every replica; the
PodMonitors scrape a port the container has at /metrics. A metric name off
by a letter leaves the HPA without data and the fleet at its minimum,
silently; a saturated one holds it at its maximum.
"""

import os
import re

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
    for i, m in enumerate(hpa["spec"].get("metrics", [])):
        kind = m.get("type")
        if kind == "Pods":
            check_hpa_metric(n, i, m["pods"], "pods", "custom", ctx.metrics,
                             "the server exports (server/service/*/*.cc)", ctx,
                             out)
        elif kind == "External":
            check_hpa_metric(n, i, m["external"], "external", "external",
                             ctx.job_metrics, "the sweep Jobs export "
                             "(client/cli/sweep_metrics.cc)", ctx, out)
            target = m["external"].get("target", {})
            if target.get("type") != "AverageValue":
                out.append("%s: spec.metrics[%d].external.target.type is %s, "
                           "not AverageValue: the work left must be divided "
                           "by the replicas' share of it" % (
                               n, i, target.get("type")))
        else:
            out.append("%s: spec.metrics[%d].type %s: only Pods and External "
                       "metrics are checked" % (n, i, kind))


# Per-replica load that one sweep fills on every replica, whatever their
# number: its scheduler keeps --max-inflight shards on each replica it finds.
# Proportional scaling on any of them pins the fleet at maxReplicas for the
# whole sweep (deploy/k8s/base/hpa.yaml).
SATURATED_BY_A_SWEEP = {
    "bertology_inflight_rows", "bertology_inflight_requests",
    "bertology_sweeps_active", "bertology_sweep_pairs_planned",
    "bertology_sweep_pairs_scored", "bertology_batch_size",
    "bertology_request_duration_seconds",
}


def series_of(query):
    """Metric names a PromQL selector names, histogram suffixes dropped."""
    return {re.sub(r"_(sum|count|bucket)$", "", s)
            for s in re.findall(r"\b(bertology_[a-z0-9_]+)", query)}


def check_hpa_metric(n, i, spec, field, rules_key, exported, who, ctx, out):
    metric = spec["metric"]["name"]
    where = "%s: spec.metrics[%d].%s.metric.name %s" % (n, i, field, metric)
    rules = [r for r in ctx.adapter.get("rules", {}).get(rules_key, [])
             if r.get("name", {}).get("as") == metric]
    series = {metric}
    for r in rules:
        series |= series_of(r.get("seriesQuery", "") + " " +
                            r.get("metricsQuery", ""))
    for s in sorted(series & SATURATED_BY_A_SWEEP):
        out.append("%s: reads %s, a per-replica load one sweep fills on every "
                   "replica (its scheduler keeps --max-inflight shards on "
                   "each): the HPA would hold maxReplicas for the whole sweep"
                   % (where, s))
    if not rules:
        out.append("%s is not served by a prometheus-adapter %s rule in %s" % (
            where, rules_key, os.path.relpath(ADAPTER_RULES, SOURCE)))
        return
    for s in sorted(series - {metric} - exported):
        out.append("%s: its adapter rule reads %s, not a metric %s" % (
            where, s, who))


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
