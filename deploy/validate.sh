#!/usr/bin/env bash
# Offline validation of deploy/ (no cluster, no Docker engine), run by CTest
# as deploy_validate:
#   1. installs what it needs: kubectl (Debian's kubernetes-client when none
#      is on PATH) and python3-yaml through scripts/install-deps.sh, and the
#      pinned npm packages of deploy/schema/package-lock.json (npm ci into
#      $BERTOLOGY_BUILD_DIR/deploy-npm, again only when the lock changes:
#      from the npm registry, or offline from the vendored npm cache where
#      the registry does not answer);
#   2. validate.py renders every kustomization (the cpu and gpu overlays,
#      alone and with the sweep Job and its merge step, and the examples),
#      checks every object against the Kubernetes schemas
#      (kubernetes-models, plus unknown fields), the flags against
#      `bertology-server --helpfull`, `bertology sweep --help` and (exec
#      probes) `bertology health --help` ($BERTOLOGY_BIN_DIR), ports,
#      probes, TLS/token flags of servers and sweeps against each other,
#      metric names, requests vs
#      limits, the Dockerfiles; its self-test breaks copies on purpose and
#      expects each break to be reported with the object and field;
#   3. promtool checks the Prometheus config, rules and rule tests, and
#      evaluates the prometheus-adapter queries the HPA scales on
#      (prometheus/adapter_queries.py, adapter-queries_test.yml).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
src="$(dirname "$here")"
py=/usr/bin/python3
bin_dir="${BERTOLOGY_BIN_DIR:-$src/build/bin}"
npm_dir="${BERTOLOGY_BUILD_DIR:-$src/build}/deploy-npm"

if ! command -v kubectl >/dev/null || ! "$py" -c 'import yaml' 2>/dev/null ||
   ! command -v npm >/dev/null; then
  echo "== installing kubectl / python3-yaml / npm (scripts/install-deps.sh)"
  "$src/scripts/install-deps.sh"
fi
for tool in kubectl node npm; do
  command -v "$tool" >/dev/null || { echo "FAIL: $tool is missing"; exit 1; }
done
# The manifests use kustomize v4+ (components, labels, directory
# resources): kubectl >= 1.24 embeds it. Debian 12's kubernetes-client is
# kubectl 1.20 (kustomize v2.0.3), which cannot render them; a standalone
# `kustomize` (v4+) on PATH is used then. Otherwise this fails: no skip.
minor="$(kubectl version --client -o json 2>/dev/null |
  "$py" -c 'import json,sys; print(int(json.load(sys.stdin)["clientVersion"]["minor"].rstrip("+")))' \
  2>/dev/null || echo 0)"
if [ "$minor" -ge 24 ]; then
  export BERTOLOGY_KUSTOMIZE="kubectl kustomize"
elif command -v kustomize >/dev/null &&
     [[ "$(kustomize version 2>&1)" =~ v([4-9]|[1-9][0-9])\. ]]; then
  export BERTOLOGY_KUSTOMIZE="kustomize build"
else
  echo "FAIL: kubectl 1.$minor's kustomize cannot render deploy/k8s" \
    "(components, labels): install kubectl >= 1.24 or kustomize >= v4" \
    "(Debian 12's kubernetes-client is kubectl 1.20)"
  exit 1
fi

# The lock's packages come from the npm registry where it answers (a user's
# machine), else from the vendored npm cache (the project's machines reach
# PyPI and Debian's archive, not the npm registry): $BERTOLOGY_NPM_CACHE, by
# default $BERTOLOGY_SHARED_DIR/vendor/npm-cache (../shared beside the
# checkout unless CMake's BERTOLOGY_SHARED_DIR says otherwise) holds exactly the
# lock's packages. npm writes into its cache, so it gets a copy. Neither
# working is a failure naming both: the check is never skipped.
shared_dir="${BERTOLOGY_SHARED_DIR:-$(dirname "$src")/shared}"
vendored_cache="${BERTOLOGY_NPM_CACHE:-$shared_dir/vendor/npm-cache}"
# npm 10.8 can exit 0 without installing ("Exit handler never called!"
# when the registry is unreachable), so success is judged by what is on
# disk: every package of the lock at its locked version.
lock_installed() {
  (cd "$npm_dir" && node -e '
    const fs = require("fs");
    const lock = JSON.parse(fs.readFileSync("package-lock.json"));
    for (const [path, p] of Object.entries(lock.packages)) {
      if (!path || p.optional) continue;
      const pj = path + "/package.json";
      if (!fs.existsSync(pj) ||
          JSON.parse(fs.readFileSync(pj)).version !== p.version) {
        console.error("missing " + path + "@" + p.version); process.exit(1);
      }
    }')
}
install_schema_packages() {
  echo "== npm ci (deploy/schema/package-lock.json) into $npm_dir"
  local log="$npm_dir/npm-ci.log"
  if (cd "$npm_dir" && npm ci --no-audit --no-fund --loglevel=error \
        --fetch-retries=0 --fetch-timeout=20000) >"$log" 2>&1 &&
     lock_installed 2>>"$log"; then
    echo "installed from the npm registry ($(npm config get registry))"
    return
  fi
  echo "the npm registry did not answer ($(grep -m1 "npm error" "$log"));" \
    "installing offline from the vendored cache $vendored_cache"
  local registry_log="$log.registry"
  mv "$log" "$registry_log"
  if [ -d "$vendored_cache/_cacache" ]; then
    rm -rf "$npm_dir/.npm-cache"
    cp -R "$vendored_cache" "$npm_dir/.npm-cache"
    if (cd "$npm_dir" && npm ci --offline --no-audit --no-fund \
          --loglevel=error --cache "$npm_dir/.npm-cache") >"$log" 2>&1 &&
       lock_installed 2>>"$log"; then
      echo "installed offline from $vendored_cache"
      return
    fi
    echo "FAIL: cannot install deploy/schema/package-lock.json's packages:" \
      "the npm registry ($(npm config get registry)) did not answer" \
      "(see $registry_log) and the offline install from the vendored cache" \
      "$vendored_cache failed:"
    cat "$log"
  else
    echo "FAIL: cannot install deploy/schema/package-lock.json's packages:" \
      "the npm registry ($(npm config get registry)) did not answer" \
      "(see $registry_log) and there is no vendored npm cache at" \
      "$vendored_cache (set BERTOLOGY_NPM_CACHE to one made with" \
      "'npm ci --cache DIR' from that lock)"
  fi
  exit 1
}

lock="$here/schema/package-lock.json"
stamp="$npm_dir/.lock.sha256"
want="$(sha256sum "$lock" | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ] ||
   [ ! -d "$npm_dir/node_modules/kubernetes-models" ]; then
  mkdir -p "$npm_dir"
  cp "$here/schema/package.json" "$lock" "$npm_dir/"
  install_schema_packages
  echo "$want" > "$stamp"
fi

echo "== manifests (rendered with: $BERTOLOGY_KUSTOMIZE)"
"$py" "$here/validate.py" --bin-dir "$bin_dir" --npm-dir "$npm_dir"
echo "== self-test"
"$py" "$here/validate.py" --bin-dir "$bin_dir" --npm-dir "$npm_dir" \
  --self-test

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

echo "== metric names in rules and dashboard"
"$py" "$here/prometheus/check_metric_names.py" "$src"

echo "== promtool"
command -v promtool >/dev/null || "$src/scripts/install-deps.sh"
cd "$here/prometheus"
promtool check config prometheus.yml
promtool check rules bertology-rules.yml
promtool test rules bertology-rules_test.yml
# The HPA's metrics as prometheus-adapter computes them, evaluated.
adapter=$(mktemp -d)
trap 'rm -rf "$adapter"' EXIT
"$py" adapter_queries.py ../k8s/examples/prometheus-adapter-rules.yaml \
  "$adapter/adapter-queries.yml"
cp adapter-queries_test.yml "$adapter/"
promtool test rules "$adapter/adapter-queries_test.yml"
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
echo "deploy: all checks passed"
