"""NetworkPolicies: each selects its pods, names its peers (no empty
namespaceSelector, no rule open to every pod), admits every container
port, and keeps metrics to Prometheus's namespace; admits() tells whether
a client's pods reach a port. A policy can both lock the sweep out and let
the whole cluster in.
"""

from .common import matches, name_of


def policy_rules(np, port_names):
    """The ingress rules of `np` that admit any of port_names."""
    return [r for r in np["spec"].get("ingress", [])
            if not r.get("ports") or
            any(p.get("port") in port_names for p in r.get("ports", []))]


def check_networkpolicy(np, labels, container, out):
    n = name_of(np)
    if not matches(np["spec"].get("podSelector", {}).get("matchLabels"),
                   labels):
        out.append("%s: spec.podSelector selects no pod of its workload" % n)
    if "Ingress" not in np["spec"].get("policyTypes", []):
        out.append("%s: spec.policyTypes lacks Ingress" % n)
    for i, r in enumerate(np["spec"].get("ingress", [])):
        if not r.get("from"):
            out.append("%s: spec.ingress[%d] has no `from`: open to all" %
                       (n, i))
        if not r.get("ports"):
            out.append("%s: spec.ingress[%d] has no `ports`: every port" %
                       (n, i))
        for j, peer in enumerate(r.get("from", [])):
            ns = peer.get("namespaceSelector")
            if ns is not None and not ns.get("matchLabels") and \
                    not ns.get("matchExpressions"):
                out.append("%s: spec.ingress[%d].from[%d].namespaceSelector "
                           "is empty: it admits labelled pods of every "
                           "namespace" % (n, i, j))
            if not peer.get("podSelector", {}).get("matchLabels") and \
                    "ipBlock" not in peer:
                out.append("%s: spec.ingress[%d].from[%d] admits every pod "
                           "of its namespaces" % (n, i, j))
    for p in container.get("ports", []):
        if not policy_rules(np, {p.get("name"), p["containerPort"]}):
            out.append("%s: no ingress rule admits port %s (%s): nothing can "
                       "reach it" % (n, p.get("name"), p["containerPort"]))
    metrics = policy_rules(np, {"metrics"})
    for r in metrics:
        for peer in r.get("from", []):
            if not peer.get("namespaceSelector", {}).get("matchLabels"):
                out.append("%s: the metrics port is open to pods of any "
                           "namespace, not only Prometheus's" % n)


def admits(np, port_names, pod_labels):
    for r in policy_rules(np, port_names):
        for peer in r.get("from", []):
            if matches(peer.get("podSelector", {}).get("matchLabels"),
                       pod_labels) and \
                    "matchLabels" not in peer.get("namespaceSelector", {}):
                return True
    return False
