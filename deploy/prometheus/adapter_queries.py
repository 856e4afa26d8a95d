"""Writes the prometheus-adapter rules' metricsQuery expressions
(deploy/k8s/examples/prometheus-adapter-rules.yaml) as Prometheus recording
rules, so `promtool test rules adapter-queries_test.yml` evaluates the very
PromQL the adapter would run for the HPA, on made-up series.

The adapter fills its templates before querying; here they are filled the
way it fills them for one object of namespace `bertology`:
<<.Series>> -> the series name, <<.LabelMatchers>> -> namespace="bertology"
(and pod=~"..." for pods, left out: the test's series are all wanted),
<<.GroupBy>> -> pod for custom (per-pod) rules, namespace for external ones.
A recording rule `adapter:NAME` holds each metric NAME the rules serve.

    adapter_queries.py ADAPTER_RULES_YAML OUT_RULES_YAML
"""
import re
import sys

import yaml


def fill(query, series, group_by):
    query = query.replace("<<.Series>>", series)
    query = query.replace("<<.LabelMatchers>>", 'namespace="bertology"')
    return query.replace("<<.GroupBy>>", group_by)


def main(argv):
    with open(argv[1]) as f:
        rules = yaml.safe_load(f)["rules"]
    recording = []
    for key, group_by in (("custom", "pod"), ("external", "namespace")):
        for r in rules.get(key, []):
            series = re.match(r"\s*(\w+)", r["seriesQuery"]).group(1)
            recording.append({
                "record": "adapter:" + r["name"]["as"],
                "expr": fill(r["metricsQuery"], series, group_by)})
    with open(argv[2], "w") as f:
        yaml.safe_dump({"groups": [{"name": "adapter",
                                    "rules": recording}]}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
