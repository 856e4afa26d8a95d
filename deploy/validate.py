#!/usr/bin/python3
"""Offline checks of deploy/: the rendered Kubernetes manifests against the
Kubernetes schemas, the binaries' flags, the code's ports and metric names,
each other, and the Dockerfiles.

  validate.py [--bin-dir DIR] [--npm-dir DIR] [--self-test]

Renders every kustomization ($BERTOLOGY_KUSTOMIZE, default `kubectl
kustomize`): the server overlays, alone
and together with the sweep Job and its merge step, and the examples (the
auth example fleet together with the auth example sweep and merge).
--npm-dir holds node_modules from deploy/schema/package-lock.json (validate.sh
installs it); the schema check runs deploy/schema/validate-schema.js there.
--bin-dir holds bertology-server and bertology (default $BERTOLOGY_BIN_DIR,
else build/bin); their --help lists the flags the manifests may use.
--self-test breaks copies of the renders and the Dockerfiles on purpose and
checks that each break is reported, naming the object and the field.
Exit status 0 when every check passes; otherwise one line per problem.
"""

import os
import sys

# The checks live in the package deploy/checks/, beside this file. A plain
# script run puts the script's folder first on sys.path, but not under
# `python3 -I` or -P (and PYTHONSAFEPATH): put it there explicitly, so that
# `python3 deploy/validate.py` finds the package from any working
# directory, whatever the interpreter's flags.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from checks.common import (  # noqa: E402
    DOCKERFILES, FLEETS, SOURCE, STORAGE, SWEEPS, Context)
from checks.dockerfiles import install_lists  # noqa: E402
from checks.planted import CASES, DOCKER_CASES, self_test  # noqa: E402
from checks.render import check_all, render  # noqa: E402


def main(argv):
    bin_dir = os.environ.get("BERTOLOGY_BIN_DIR",
                             os.path.join(SOURCE, "build", "bin"))
    npm_dir = os.path.join(SOURCE, "build", "deploy-npm")
    self_testing = False
    it = iter(argv[1:])
    for a in it:
        if a == "--self-test":
            self_testing = True
        elif a == "--bin-dir":
            bin_dir = next(it)
        elif a == "--npm-dir":
            npm_dir = next(it)
        else:
            sys.stderr.write(__doc__)
            return 2
    ctx = Context(bin_dir)
    if ctx.errors:
        for e in ctx.errors:
            print("FAIL:", e)
        return 1
    renders = {k: render(k) for k in list(FLEETS) + SWEEPS + [STORAGE]}
    lists = install_lists()
    if lists.get("--build-only") is None:
        print("FAIL: scripts/install-deps.sh --list --build-only failed")
        return 1
    if self_testing:
        failures = self_test(renders, ctx, npm_dir, lists)
        for f in failures:
            print("FAIL:", f)
        print("%s: %d breaks, %d unnoticed" % (
            "OK" if not failures else "FAIL",
            len(CASES) + len(DOCKER_CASES), len(failures)))
        return 1 if failures else 0
    errors = check_all(renders, ctx, npm_dir, lists)
    total = 0
    for name, errs in errors.items():
        for e in errs:
            print("FAIL: [%s] %s" % (name, e))
        total += len(errs)
        print("%s %-45s %s" % ("ok  " if not errs else "FAIL", name,
                               "%d problems" % len(errs) if errs else
                               "%d Dockerfiles" % len(DOCKERFILES)
                               if name == "docker" else "checked"))
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
