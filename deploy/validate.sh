#!/usr/bin/env bash
# Offline validation of deploy/: needs no cluster and no network.
#   1. kubectl kustomize renders deploy/k8s (YAML and kustomization valid);
#   2. validate.py checks the rendered objects against the server's flags,
#      the Prometheus config and docker/Dockerfile, and its self-test shows
#      those checks catch broken manifests;
#   3. promtool checks the scrape config, the rules and the rule unit tests.
# (kubectl --dry-run=client still asks a server for the REST mapping, so it
# cannot be used offline.) Exit 77 (skipped) when kubectl or python3-yaml
# is missing.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
py=/usr/bin/python3
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

if ! command -v kubectl >/dev/null; then
  echo "SKIP: kubectl not installed"; exit 77
fi
if ! "$py" -c 'import yaml' 2>/dev/null; then
  echo "SKIP: python3-yaml not installed"; exit 77
fi

echo "== kubectl kustomize deploy/k8s"
kubectl kustomize "$here/k8s" > "$tmp/rendered.yaml"
grep -c '^kind:' "$tmp/rendered.yaml" | sed 's/^/objects: /'

echo "== structure"
"$py" "$here/validate.py" "$tmp/rendered.yaml"
"$py" "$here/validate.py" --self-test "$tmp/rendered.yaml"

echo "== grafana dashboard"
"$py" - "$here/grafana/bertology-dashboard.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["panels"], "no panels"
for p in d["panels"]:
    for t in p.get("targets", []):
        assert "bertology" in t["expr"], t
print("OK: %d panels" % len(d["panels"]))
PY

if command -v promtool >/dev/null; then
  echo "== promtool"
  cd "$here/prometheus"
  promtool check config prometheus.yml
  promtool check rules bertology-rules.yml
  promtool test rules bertology-rules_test.yml
  # Debian's promtool is built without Kubernetes discovery.
  if out=$(promtool check config prometheus-kubernetes-sd.yml 2>&1); then
    echo "$out"
  elif grep -q "field kubernetes_sd_configs not found" <<<"$out"; then
    echo "note: this promtool lacks kubernetes_sd; checked as YAML only"
    "$py" -c 'import sys, yaml; yaml.safe_load(open(sys.argv[1]))' \
      prometheus-kubernetes-sd.yml
  else
    echo "$out"; exit 1
  fi
else
  echo "note: promtool not installed; Prometheus files not checked"
fi
echo "deploy: all checks passed"
