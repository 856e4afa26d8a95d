"""components/auth and components/sweep-auth: TLS and token files on
read-only Secret mounts (a subPath mount never sees a rotated Secret), the
server's auth flags given together, exec probes running `bertology
health` over TLS (kubelet's grpc probes speak plain text only), and sweep
clients presenting what the server asks for. A mismatch here is a fleet
that refuses every client, or a token sent in plain text.
"""

import re

from .common import SERVER_AUTH_FILES, flag, flags_of, name_of, port_of


def secret_file(where, what, path, container, pod, out):
    """`path` (a flag's file) must be on a read-only Secret volume mount
    without subPath (a subPath mount never sees the Secret change)."""
    mounts = [m for m in container.get("volumeMounts", [])
              if path.startswith(m["mountPath"].rstrip("/") + "/")]
    if not mounts:
        out.append("%s: %s=%s is not on a mounted volume" % (where, what,
                                                             path))
        return
    m = max(mounts, key=lambda m: len(m["mountPath"]))
    vol = {v["name"]: v for v in pod.get("volumes", [])}.get(m["name"], {})
    if "secret" not in vol and "projected" not in vol:
        out.append("%s: %s=%s is on volume %s, not a Secret" % (
            where, what, path, m["name"]))
    if not m.get("readOnly"):
        out.append("%s: %s=%s: volumeMounts %s is not readOnly" % (
            where, what, path, m["name"]))
    if m.get("subPath"):
        out.append("%s: %s=%s: volumeMounts %s has a subPath, which never "
                   "sees a Secret update" % (where, what, path, m["name"]))


def check_server_auth(cn, args, c, pod, out):
    """components/auth: TLS and token files on Secret mounts, and flags the
    server accepts together."""
    tls_cert, tls_key = flag(args, "tls_cert"), flag(args, "tls_key")
    if bool(tls_cert) != bool(tls_key):
        out.append("%s.args: --tls_cert and --tls_key must be given together"
                   % cn)
    for f in ("tls_client_ca", "token_file"):
        if flag(args, f) and not tls_cert:
            out.append("%s.args: --%s without --tls_cert (%s)" % (
                cn, f, "the server refuses to start" if f == "tls_client_ca"
                else "tokens travel in plain text"))
    for f in SERVER_AUTH_FILES:
        if flag(args, f):
            secret_file(cn + ".args", "--" + f, flag(args, f), c, pod, out)


def check_health_exec(where, p, grpc_port, c, pod, ctx, out):
    """An exec probe running `bertology health` over TLS."""
    cmd = (p or {}).get("exec", {}).get("command")
    if not cmd:
        out.append("%s: not an exec probe (the server has --tls_cert)" %
                   where)
        return
    if cmd[:2] != ["bertology", "health"]:
        out.append("%s.exec.command does not run `bertology health`: %s" % (
            where, cmd[:2]))
    if ctx.health_flags is not None:
        for f, _ in flags_of(cmd):
            if f not in ctx.health_flags:
                out.append("%s.exec.command: --%s is not a `bertology health` "
                           "flag (bertology health --help)" % (where, f))
    target = flag(cmd, "target") or "localhost:50051"
    if port_of(target) != grpc_port:
        out.append("%s.exec.command: --target=%s, but the server listens on "
                   "%s" % (where, target, grpc_port))
    ca = flag(cmd, "tls-ca")
    if not ca:
        out.append("%s.exec.command: no --tls-ca: plain text to a TLS server"
                   % where)
    else:
        secret_file(where + ".exec.command", "--tls-ca", ca, c, pod, out)
    timeout = flag(cmd, "timeout") or "60"
    limit = p.get("timeoutSeconds", 1)
    if not re.fullmatch(r"[0-9.]+", timeout) or float(timeout) >= limit:
        out.append("%s.exec.command: --timeout=%s is not below timeoutSeconds"
                   " %s" % (where, timeout, limit))


def check_client_auth(s, j, out):
    """A sweep Job presents what the server asks for (components/auth and
    components/sweep-auth)."""
    n, server, argv = name_of(j["job"]), name_of(s["dep"]), j["argv"]
    tls = flag(s["args"], "tls_cert")
    if tls and not flag(argv, "tls-ca"):
        out.append("%s.args: no --tls-ca, but %s serves TLS (--tls_cert)" % (
            n, server))
    if not tls and any(flag(argv, f) for f in ("tls-ca", "tls-cert")):
        out.append("%s.args: --tls-ca/--tls-cert, but %s serves plain text "
                   "(no --tls_cert)" % (n, server))
    if tls and (flag(argv, "target") or "").startswith("dns:///") and \
            not flag(argv, "tls-server-name"):
        out.append("%s.args: no --tls-server-name: a dns:/// target reaches "
                   "each replica by its pod IP, which the certificate of %s "
                   "does not carry" % (n, server))
    if flag(s["args"], "tls_client_ca") and not (flag(argv, "tls-cert") and
                                                 flag(argv, "tls-key")):
        out.append("%s.args: no --tls-cert/--tls-key, but %s requires a "
                   "client certificate (--tls_client_ca)" % (n, server))
    if flag(s["args"], "token_file") and not flag(argv, "token-file"):
        out.append("%s.args: no --token-file, but %s requires a bearer token "
                   "(--token_file)" % (n, server))
