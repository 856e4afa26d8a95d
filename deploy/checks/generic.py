"""Checks every workload of a render gets, whatever it is: namespace,
seccomp and non-root pods, claims and volumes that exist, requests within
limits, $(VARS) its environment defines, images pinned (bertology images to
the server version), `cp` that keeps mtimes and modes, no privilege
escalation. A fleet, a sweep and an example must all pass these.
"""

import re

from .common import (NAMESPACE, SERVER_VERSION, containers_of, env_of,
                     name_of, pod_templates, quantity)


# --------------------------------------------------------- generic checks
def check_generic(docs, out):
    for d in docs:
        if d.get("kind") != "Namespace" and \
                d.get("metadata", {}).get("namespace") != NAMESPACE:
            out.append("%s: metadata.namespace is %r, not %s" % (
                name_of(d), d.get("metadata", {}).get("namespace"),
                NAMESPACE))
    pvcs = {d["metadata"]["name"]: d for d in docs
            if d.get("kind") == "PersistentVolumeClaim"}
    for obj, pod, _ in pod_templates(docs):
        n = name_of(obj)
        sc = pod.get("securityContext", {})
        if sc.get("seccompProfile", {}).get("type") != "RuntimeDefault":
            out.append("%s: spec.template.spec.securityContext.seccompProfile"
                       " is not RuntimeDefault" % n)
        if not sc.get("runAsNonRoot"):
            out.append("%s: spec.template.spec.securityContext.runAsNonRoot "
                       "is not true" % n)
        volumes = {v["name"]: v for v in pod.get("volumes", [])}
        for v in volumes.values():
            claim = v.get("persistentVolumeClaim", {}).get("claimName")
            if claim and claim not in pvcs:
                out.append("%s: volumes.%s: PersistentVolumeClaim %s is not "
                           "in the render" % (n, v["name"], claim))
        for where, c in containers_of(pod):
            cn = "%s: %s[%s]" % (n, where, c.get("name"))
            for m in c.get("volumeMounts", []):
                if m["name"] not in volumes:
                    out.append("%s.volumeMounts: volume %s is not defined" %
                               (cn, m["name"]))
            res = c.get("resources", {})
            req, lim = res.get("requests", {}), res.get("limits", {})
            if where == "containers" and not ("cpu" in req and
                                              "memory" in req):
                out.append("%s.resources.requests: needs cpu and memory" % cn)
            for r in set(req) & set(lim):
                try:
                    if quantity(req[r]) > quantity(lim[r]):
                        out.append("%s.resources.requests.%s %s is above its "
                                   "limit %s" % (cn, r, req[r], lim[r]))
                except ValueError as e:
                    out.append("%s.resources.%s: %s" % (cn, r, e))
            for r in lim:
                if "/" in r and r in req and str(req[r]) != str(lim[r]):
                    out.append("%s.resources: extended resource %s needs "
                               "requests == limits" % (cn, r))
            env, missing = env_of(c, docs)
            for cm in missing:
                out.append("%s.envFrom: ConfigMap %s is not in the render" %
                           (cn, cm))
            for a in c.get("command", []) + c.get("args", []):
                for var in re.findall(r"\$\((\w+)\)", a):
                    if var not in env:
                        out.append("%s.args: %s uses $(%s), which is not in "
                                   "its environment" % (cn, a, var))
            image = c.get("image", "")
            name, _, tag = image.rpartition(":") if ":" in \
                image.split("/")[-1] else (image, "", "")
            if not tag or tag == "latest":
                out.append("%s.image %s is not pinned to a tag (none or "
                           "latest)" % (cn, image))
            elif name.split("/")[-1].startswith("bertology-server") and \
                    tag != SERVER_VERSION:
                out.append("%s.image %s: the tag is not the server version "
                           "%s (server/service/registry/version.h)" % (cn, image,
                                                              SERVER_VERSION))
            cmd = c.get("command", [])
            if cmd[:1] == ["cp"]:
                opts = "".join(a[1:] for a in cmd[1:] if a.startswith("-")
                               and not a.startswith("--"))
                if "p" not in opts and "a" not in opts and \
                        "--preserve" not in cmd and "--archive" not in cmd:
                    out.append("%s.command: %s copies without -p: the copies "
                               "get new mtimes and modes (keep them: cp -Rp)"
                               % (cn, " ".join(cmd)))
            sec = c.get("securityContext", {})
            if sec.get("allowPrivilegeEscalation") is not False:
                out.append("%s.securityContext.allowPrivilegeEscalation is "
                           "not false" % cn)
