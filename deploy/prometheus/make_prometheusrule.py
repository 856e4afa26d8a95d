#!/usr/bin/python3
"""Writes deploy/k8s/base/prometheusrule.yaml, the Prometheus Operator's
PrometheusRule carrying the groups of deploy/prometheus/bertology-rules.yml
(the file promtool checks and tests): one source for the rules, and
deploy/validate.py fails when the two differ.

Run: /usr/bin/python3 deploy/prometheus/make_prometheusrule.py
"""
import os

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
RULES = os.path.join(HERE, "bertology-rules.yml")
OUT = os.path.join(os.path.dirname(HERE), "k8s", "base", "prometheusrule.yaml")

HEADER = """\
# The alerting and recording rules of deploy/prometheus/bertology-rules.yml
# (checked and tested there by promtool) as a PrometheusRule for the
# Prometheus Operator, which loads rules whose labels its Prometheus's
# ruleSelector matches (add yours under metadata.labels, e.g. release: ...).
# Made by deploy/prometheus/make_prometheusrule.py; deploy/validate.py fails
# when its groups differ from the file's.
"""


def literal_blocks(dumper, text):
    """Multi-line expressions as `|` blocks, as in the rules file."""
    style = "|" if "\n" in text else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)


def main():
    yaml.SafeDumper.add_representer(str, literal_blocks)
    with open(RULES) as f:
        groups = yaml.safe_load(f)["groups"]
    rule = {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {"name": "bertology",
                     "labels": {"app.kubernetes.io/name": "bertology-server"}},
        "spec": {"groups": groups},
    }
    with open(OUT, "w") as f:
        f.write(HEADER)
        yaml.safe_dump(rule, f, sort_keys=False, width=100)
    print("wrote", OUT)


if __name__ == "__main__":
    main()
