"""Rendering and running the checks: each kustomization through
$BERTOLOGY_KUSTOMIZE, the sets of renders checked together (a fleet alone
and with its sweep and merge, each sweep, each sweep with its merge), the
Kubernetes schema check (deploy/schema/validate-schema.js), check_set and
check_all, and the checks of the tree's layout: no claim inside a sweep's
kustomization, no README wait that only ends on completion.
"""

import json
import os
import subprocess
import tempfile

import yaml

from .common import (DEFAULT_SWEEPS, DEPLOY, FLEET_SWEEPS, FLEETS, K8S,
                     SOURCE, STORAGE, SWEEPS, name_of)
from .dockerfiles import check_dockerfile
from .fleet import check_fleet
from .generic import check_generic
from .sweeps import check_sweeps, check_together


# ------------------------------------------------------------- rendering
def render(kdir):
    cmd = os.environ.get("BERTOLOGY_KUSTOMIZE", "kubectl kustomize").split()
    r = subprocess.run(cmd + [os.path.join(K8S, kdir)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("kubectl kustomize %s: %s" % (kdir, r.stderr))
    return [d for d in yaml.safe_load_all(r.stdout) if d]


def sets_of(renders):
    """Named object sets to check: each fleet alone and with its sweep and
    merge (FLEET_SWEEPS), each sweep render, each sweep with its merge."""
    def sweep_docs(sweep, merge):
        return renders[sweep] + [d for d in renders[merge]
                                 if d.get("kind") == "Job"] + renders[STORAGE]
    out = {}
    for f in FLEETS:
        sweep, merge = FLEET_SWEEPS.get(f, DEFAULT_SWEEPS)
        out[f] = ("fleet", f, renders[f])
        out["%s + %s + %s" % (f, sweep, merge)] = (
            "both", f, renders[f] + sweep_docs(sweep, merge))
    for sw in SWEEPS:
        out[sw] = ("sweep", None, renders[sw] + renders[STORAGE])
    for sweep, merge in dict.fromkeys([DEFAULT_SWEEPS] +
                                      list(FLEET_SWEEPS.values())):
        out["%s + %s" % (sweep, merge)] = ("sweep", None,
                                           sweep_docs(sweep, merge))
    return out


def schema_errors(cases, npm_dir):
    """Runs deploy/schema/validate-schema.js over {case: [objects]}."""
    with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
        json.dump(cases, f)
        f.flush()
        r = subprocess.run(["node", os.path.join(DEPLOY, "schema",
                                                 "validate-schema.js"),
                            npm_dir, f.name], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("validate-schema.js failed: %s" % r.stderr)
    return json.loads(r.stdout)


def check_set(kind, fleet, docs, ctx):
    out = []
    check_generic(docs, out)
    if kind in ("fleet", "both"):
        check_fleet(docs, ctx, FLEETS[fleet], out)
    if kind in ("sweep", "both"):
        check_sweeps(docs, ctx, out)
    if kind == "both":
        check_together(docs, out)
    return out


def check_all(renders, ctx, npm_dir, lists):
    sets = sets_of(renders)
    errors = {name: check_set(k, f, d, ctx) for name, (k, f, d)
              in sets.items()}
    schema = schema_errors({n: renders[n] for n in renders}, npm_dir)
    for n, errs in schema.items():
        errors.setdefault(n, []).extend(errs)
    docker = []
    for rel, text in ctx.dockerfiles.items():
        check_dockerfile(rel, text, lists, docker)
    errors["docker"] = docker
    errors["claims"] = check_claims(renders)
    errors["readme"] = check_wait_commands(
        "README.md", open(os.path.join(SOURCE, "README.md")).read())
    return errors


def check_claims(renders):
    """No sweep kustomization holds a PersistentVolumeClaim: deleting the
    sweep to rerun it would delete its parts and results."""
    out = []
    for sw in SWEEPS:
        for d in renders[sw]:
            if d.get("kind") == "PersistentVolumeClaim":
                out.append("kustomization %s holds %s: `kubectl delete -k` of "
                           "the sweep deletes its results (keep it in %s)" %
                           (sw, name_of(d), STORAGE))
    return out


def check_wait_commands(rel, text):
    """A `kubectl wait --for=condition=complete` on a Job waits out its
    timeout when the Job fails (an index out of retries)."""
    return ["%s:%d: kubectl wait --for=condition=complete only ends when the "
            "Job completes; it waits out its timeout when an index fails" %
            (rel, i + 1) for i, line in enumerate(text.splitlines())
            if "wait" in line and "--for=condition=complete" in line]
