"""The checks of deploy/validate.py (its entry point), one module a concern:

  common       paths, fixed names, object helpers, the Context (the binaries'
               flags, metric names, adapter rule, prometheus.yml, Dockerfiles)
  generic      what every workload gets (namespace, security, resources,
               images, environment)
  fleet        the server Deployment, its Services, PDB, PrometheusRule
  auth         TLS and token files, exec health probes, sweep clients' auth
  metrics      the HPA's metric and the PodMonitors
  network      NetworkPolicies
  sweeps       sweep Jobs, their indexed parts and merge step, and a fleet
               with its sweeps
  dockerfiles  docker/Dockerfile and Dockerfile.cuda, install-deps.sh lists
  render       kustomize renders, the sets checked together, the schema
               check, check_all, claims and README wait commands
  planted      the self-test: planted breaks each check must report
"""
