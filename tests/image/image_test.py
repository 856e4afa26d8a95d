"""`make image-test`: the image `make image` built from docker/Dockerfile,
run as an operator runs it, with nothing mocked.

- The server container runs read-only (no tmpfs either, as Kubernetes'
  readOnlyRootFilesystem), non-root, all capabilities dropped, serving the
  model baked in at /models/default; the image's own HEALTHCHECK answers.
- `bertology classify` in a second container of the same image prints the
  same bytes as the host's build/bin binaries (server and CLI) on the same
  model and rows.
- The sweep Job's own arguments (deploy/k8s/sweep, deploy/k8s/sweep-merge,
  read from the manifests) run as two parts and a merge, in containers, with
  the progress files in a folder that does not exist yet, and give results
  identical to one plain sweep.
- The TLS + token flags of deploy/k8s/components/auth serve and refuse as on
  the host, with certificates made here; the component's exec probe works.
- `stop` drains a call in flight: it finishes OK and the server exits 0.

The engine and image come from scripts/container-engine.sh (ENGINE, IMAGE);
host binaries from BERTOLOGY_BIN_DIR (default build/bin). Run with Debian's
/usr/bin/python3 (python3-yaml, grpcio). The containers are removed at the
end, also on failure.
"""
import glob
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest

import yaml

SOURCE = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.environ.get("BERTOLOGY_BIN_DIR", os.path.join(SOURCE, "build", "bin"))
ENGINE = os.environ.get("ENGINE", "podman")
IMAGE = os.environ.get("IMAGE", "")
MODEL = os.path.join(SOURCE, "models", "querytitle-zh-tiny")
TEST_TSV = os.path.join(MODEL, "data", "test.tsv")
UID = 10001  # docker/Dockerfile's USER, the manifests' runAsUser/fsGroup
# The sweep Job's --limit is 1000 rows; this many keep the test in minutes.
SWEEP_ROWS = 40
sys.path.insert(0, os.path.join(SOURCE, "tests", "python"))

from pki import make_pki  # noqa: E402


def run(argv, check=True, timeout=600, **kw):
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=timeout, **kw)
    if check and p.returncode != 0:
        raise AssertionError("%s exited %d:\n%s%s" % (
            " ".join(argv), p.returncode, p.stdout.decode(errors="replace"),
            p.stderr.decode(errors="replace")))
    return p


def engine(*args, **kw):
    return run([ENGINE] + list(args), **kw)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# What Kubernetes enforces with the manifests' securityContext.
LOCKED_DOWN = ["--read-only", "--cap-drop=ALL",
               "--security-opt=no-new-privileges"] + (
    ["--read-only-tmpfs=false"] if ENGINE == "podman" else [])


def host_cli(*args, **kw):
    return run([os.path.join(BIN, "bertology")] + list(args), **kw)


def container_cli(*args, volumes=(), env=(), **kw):
    """`bertology ARGS` in a fresh locked-down container on the host's
    network (the server's ports are published on 127.0.0.1)."""
    argv = ["run", "--rm", "--network=host", *LOCKED_DOWN,
            "--entrypoint", "bertology"]
    for v in volumes:
        argv += ["-v", v]
    for e in env:
        argv += ["-e", e]
    return engine(*argv, IMAGE, *args, **kw)


class ServerContainer:
    """The image's server, published on free 127.0.0.1 ports; `args` are
    appended to the image's (CMD replaced when given)."""

    def __init__(self, name, args=(), volumes=(), env=()):
        self.name = "%s-%d" % (name, os.getpid())
        self.port, self.metrics = free_port(), free_port()
        argv = ["run", "-d", "--name", self.name, *LOCKED_DOWN,
                # Above --grace_period_s (30 s): stop waits for the drain.
                "--stop-timeout=40",
                "-p", "127.0.0.1:%d:50051" % self.port,
                "-p", "127.0.0.1:%d:9090" % self.metrics]
        for v in volumes:
            argv += ["-v", v]
        for e in env:
            argv += ["-e", e]
        engine("rm", "-f", self.name, check=False)
        engine(*argv, IMAGE, *args)
        self.target = "127.0.0.1:%d" % self.port

    def logs(self):
        p = engine("logs", self.name, check=False)
        return (p.stdout + p.stderr).decode(errors="replace")

    def wait_serving(self, *health_flags, timeout=180):
        deadline = time.time() + timeout
        while time.time() < deadline:
            p = host_cli("health", "--target=" + self.target, "--timeout=2",
                         *health_flags, check=False)
            if p.returncode == 0:
                return
            state = engine("inspect", "--format", "{{.State.Status}}",
                           self.name, check=False).stdout.decode().strip()
            if state not in ("running", "created"):
                break
            time.sleep(1)
        raise AssertionError("%s not SERVING:\n%s" % (self.name, self.logs()))

    def remove(self):
        engine("rm", "-f", "-t", "0", self.name, check=False)


def chown_tree(path):
    """What the manifests' fsGroup does for a volume: the container's user
    may write it."""
    for root, dirs, files in os.walk(path):
        for n in [root] + [os.path.join(root, f) for f in dirs + files]:
            os.chown(n, UID, UID)


def manifest_container(rel, name):
    with open(os.path.join(SOURCE, rel)) as f:
        for doc in yaml.safe_load_all(f):
            if doc and doc.get("kind") == "Job":
                spec = doc["spec"]["template"]["spec"]
                for c in spec.get("initContainers", []) + spec["containers"]:
                    if c["name"] == name:
                        return c
    raise AssertionError("%s: no container %s" % (rel, name))


def job_args(args, target, index=None, parts=None):
    """The Job's args with what only a cluster has replaced: the target,
    the metrics port (all parts share the host's network), the linger, the
    row count, the part count; $(JOB_COMPLETION_INDEX) expanded as
    Kubernetes expands it."""
    out = []
    for a in args:
        if a.startswith("--target="):
            a = "--target=" + target
        elif a.startswith("--metrics-listen="):
            a = "--metrics-listen=127.0.0.1:%d" % free_port()
        elif a.startswith("--metrics-linger="):
            a = "--metrics-linger=0"
        elif a.startswith("--limit="):
            a = "--limit=%d" % SWEEP_ROWS
        elif a.startswith("--part=") and parts:
            a = re.sub(r"/\d+$", "/%d" % parts, a)
        if index is not None:
            a = a.replace("$(JOB_COMPLETION_INDEX)", str(index))
        out.append(a)
    return out


def tree_bytes(root):
    out = {}
    for path in sorted(glob.glob(os.path.join(root, "**"), recursive=True)):
        if os.path.isfile(path):
            with open(path, "rb") as f:
                out[os.path.relpath(path, root)] = f.read()
    return out


class ImageTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not IMAGE:
            raise unittest.SkipTest("IMAGE is not set (make image-test sets "
                                    "it from scripts/container-engine.sh)")
        cls.dir = tempfile.mkdtemp(prefix="bertology-image-")
        os.chmod(cls.dir, 0o755)
        cls.server = ServerContainer("bertology-image-test")
        cls.server.wait_serving()

    @classmethod
    def tearDownClass(cls):
        cls.server.remove()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_runs_read_only_as_non_root(self):
        name = self.server.name
        self.assertEqual(engine("exec", name, "id", "-u").stdout.strip(),
                         str(UID).encode())
        p = engine("exec", name, "touch", "/models/default/x", check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn(b"Read-only file system", p.stderr)
        p = engine("exec", name, "touch", "/tmp/x", check=False)
        self.assertNotEqual(p.returncode, 0, "/tmp is writable")

    def test_image_healthcheck_answers_serving(self):
        if ENGINE == "podman":
            # Runs the image's HEALTHCHECK command; fails where the image
            # has none (an OCI-format build drops it).
            p = engine("healthcheck", "run", self.server.name, check=False)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        cmd = engine("inspect", "--format",
                     "{{json .Config.Healthcheck.Test}}", self.server.name)
        self.assertIn(b"bertology health", cmd.stdout)
        out = engine("exec", self.server.name, "sh", "-c",
                     "bertology health $BERTOLOGY_HEALTH_ARGS").stdout
        self.assertIn(b"SERVING", out)

    def test_classify_in_a_second_container_matches_the_host(self):
        host = subprocess.Popen(
            [os.path.join(BIN, "bertology-server"), "--listen=127.0.0.1:0",
             "--metrics_listen=", "--model=default=" + MODEL],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        try:
            port = None
            for line in host.stdout:
                m = re.search(rb"listening on port (\d+)", line)
                if m:
                    port = int(m.group(1))
                    break
            self.assertIsNotNone(port, "the host server printed no port")
            deadline = time.time() + 120
            while host_cli("health", "--target=127.0.0.1:%d" % port,
                           check=False).returncode != 0:
                self.assertLess(time.time(), deadline, "host server not up")
                time.sleep(0.5)
            flags = ["classify", "--header=no", "--text-a=0", "--text-b=1",
                     "--label=2", "--limit=25", "--json"]
            mine = host_cli(*flags, "--target=127.0.0.1:%d" % port,
                            "--data=" + TEST_TSV).stdout
            theirs = container_cli(
                *flags, "--target=" + self.server.target,
                "--data=/data/querytitle-zh-tiny/test.tsv").stdout
            self.assertGreater(len(mine), 1000)
            self.assertEqual(theirs, mine)
        finally:
            host.terminate()
            host.wait(timeout=30)

    def test_indexed_sweep_and_merge_as_the_job_runs_them(self):
        sweeps = os.path.join(self.dir, "sweeps")  # the claim: empty
        inputs = os.path.join(self.dir, "input")  # the emptyDir
        os.makedirs(sweeps)
        os.makedirs(inputs)
        chown_tree(self.dir)
        fetch = manifest_container("deploy/k8s/sweep/sweep-job.yaml",
                                   "fetch-data")
        engine("run", "--rm", *LOCKED_DOWN, "-v", inputs + ":/input",
               "--entrypoint", fetch["command"][0], IMAGE,
               *fetch["command"][1:])
        sweep = manifest_container("deploy/k8s/sweep/sweep-job.yaml", "sweep")
        mounts = [sweeps + ":/sweeps", inputs + ":/input:ro"]
        parts = [subprocess.Popen(
            [ENGINE, "run", "--rm", "--network=host", *LOCKED_DOWN,
             "--entrypoint", sweep["command"][0],
             "-e", "JOB_COMPLETION_INDEX=%d" % i,
             "-v", mounts[0], "-v", mounts[1], IMAGE] +
            job_args(sweep["args"], self.server.target, i, parts=2),
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            for i in range(2)]
        for i, p in enumerate(parts):
            out = p.communicate(timeout=900)[0].decode(errors="replace")
            self.assertEqual(p.returncode, 0, "part %d:\n%s" % (i, out))
        self.assertEqual(sorted(os.listdir(os.path.join(sweeps, "run"))),
                         ["part-0.progress.jsonl", "part-1.progress.jsonl"])
        merge = manifest_container("deploy/k8s/sweep-merge/merge-job.yaml",
                                   "sweep")
        engine("run", "--rm", "--network=host", *LOCKED_DOWN,
               "--entrypoint", merge["command"][0], "-v", mounts[0],
               "-v", mounts[1], IMAGE,
               *job_args(merge["args"], self.server.target))
        plain = os.path.join(self.dir, "plain")
        args = [a for a in job_args(sweep["args"], self.server.target)
                if not re.match(r"--(part|progress-file|metrics-\w+)=", a)]
        args = [("--data=" + TEST_TSV) if a.startswith("--data=") else a
                for a in args]
        host_cli(*args, "--out-dir=" + plain)
        merged = tree_bytes(os.path.join(sweeps, "run", "results"))
        expected = tree_bytes(plain)
        self.assertTrue(expected, "the plain sweep wrote nothing")
        self.assertEqual(sorted(merged), sorted(expected))
        for name in expected:
            self.assertEqual(merged[name], expected[name], name)

    def test_tls_and_tokens_serve_and_refuse(self):
        pki = os.path.join(self.dir, "pki")
        os.makedirs(pki)
        make_pki(pki, server_san="DNS:localhost,IP:127.0.0.1,DNS:bertology-"
                 "headless.bertology.svc.cluster.local")
        tls, tokens = os.path.join(self.dir, "tls"), os.path.join(
            self.dir, "tokens")
        os.makedirs(tls)
        os.makedirs(tokens)
        # The Secrets' keys (kubernetes.io/tls plus ca.crt).
        for src, dst in (("server.pem", "tls.crt"), ("server.key", "tls.key"),
                         ("ca.pem", "ca.crt")):
            shutil.copy(os.path.join(pki, src), os.path.join(tls, dst))
        with open(os.path.join(tokens, "tokens"), "w") as f:
            f.write("full-0123456789abcdef-token full\n")
        with open(os.path.join(pki, "full.token"), "w") as f:
            f.write("full-0123456789abcdef-token\n")
        with open(os.path.join(pki, "wrong.token"), "w") as f:
            f.write("wrong-0123456789abcdef-tok\n")
        chown_tree(self.dir)
        with open(os.path.join(SOURCE, "deploy", "k8s", "components", "auth",
                               "kustomization.yaml")) as f:
            ops = yaml.safe_load(f)["patches"][1]["patch"]
        ops = yaml.safe_load(ops)
        flags = [op["value"] for op in ops if op["op"] == "add"]
        probe = [op["value"]["exec"]["command"] for op in ops
                 if op["path"].endswith("readinessProbe")][0]
        self.assertEqual(len(flags), 4, flags)
        server = ServerContainer(
            "bertology-image-tls", ["--model=default=/models/default"] + flags,
            volumes=[tls + ":/etc/bertology/tls:ro",
                     tokens + ":/etc/bertology/tokens:ro"],
            env=["BERTOLOGY_HEALTH_ARGS=--target=localhost:50051 "
                 "--tls-ca=/etc/bertology/tls/ca.crt"])
        try:
            server.wait_serving("--tls-ca=" + os.path.join(pki, "ca.pem"))
            engine("exec", server.name, *probe)
            if ENGINE == "podman":
                engine("healthcheck", "run", server.name)
            tls = ["--target=" + server.target, "--tls-ca=/pki/ca.pem"]
            cert = ["--tls-cert=/pki/client.pem", "--tls-key=/pki/client.key"]
            full = ["--token-file=/pki/full.token"]
            ask = ["classify", "--text-a=查询", "--text-b=标题"]
            ok = container_cli(*ask, *tls, *cert, *full,
                               volumes=[pki + ":/pki:ro"])
            self.assertIn(b"label", ok.stdout)
            # What tests/python/test_auth.py expects of the host binaries.
            for argv, text in (
                    (cert + ["--token-file=/pki/wrong.token"],
                     b"invalid token"),
                    (cert, b"missing bearer token"),
                    (full, b"client certificate"),
                    (["--tls-cert=/pki/other-client.pem",
                      "--tls-key=/pki/other-client.key"] + full, b"")):
                p = container_cli(*ask, *tls, *argv, check=False,
                                  volumes=[pki + ":/pki:ro"])
                self.assertEqual(p.returncode, 1, argv)
                self.assertIn(text, p.stderr, argv)
            p = container_cli(*ask, "--target=" + server.target, check=False)
            self.assertNotEqual(p.returncode, 0, "plaintext was answered")
        finally:
            server.remove()

    def test_stop_drains_a_call_in_flight(self):
        server = ServerContainer("bertology-image-drain")
        try:
            server.wait_serving()
            # One shard holding the whole sweep: one call in flight, a few
            # seconds long here, well inside the 30 s grace.
            sweep = subprocess.Popen(
                [os.path.join(BIN, "bertology"), "sweep",
                 "--target=" + server.target, "--data=" + TEST_TSV,
                 "--header=no", "--text-a=0", "--text-b=1", "--label=2",
                 "--heads", "--limit=25", "--masks-per-shard=1000",
                 "--max-inflight=1", "--out-dir=" + os.path.join(
                     self.dir, "drained")],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            self.wait_for_sweep(server, sweep)
            started = time.time()
            stop = subprocess.Popen([ENGINE, "stop", server.name],
                                    stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT)
            # The server has taken the signal (it logs "draining") while
            # the sweep's call is still open: the call really is drained,
            # not finished before the stop. A sweep that ends first fails
            # here rather than passing without a drain.
            while "draining" not in server.logs():
                self.assertIsNone(stop.poll(), "stop ended before draining")
                self.assertLess(time.time() - started, 40, "no drain logged")
                time.sleep(0.05)
            self.assertIsNone(sweep.poll(),
                              "the sweep ended before the server drained")
            stop.communicate(timeout=120)
            stopped = time.time() - started
            self.assertEqual(stop.returncode, 0)
            out = sweep.communicate(timeout=120)[0].decode(errors="replace")
            self.assertEqual(sweep.returncode, 0, out)
            code = engine("inspect", "--format", "{{.State.ExitCode}}",
                          server.name).stdout.strip()
            self.assertEqual(code, b"0", server.logs())
            self.assertLess(stopped, 40, "stop waited past the grace")
        finally:
            server.remove()

    def wait_for_sweep(self, server, sweep):
        """Until the server's metrics show the sweep running."""
        import urllib.request
        deadline = time.time() + 60
        while time.time() < deadline:
            self.assertIsNone(sweep.poll(), "the sweep ended before stop")
            with urllib.request.urlopen("http://127.0.0.1:%d/metrics" %
                                        server.metrics, timeout=5) as r:
                text = r.read().decode()
            if re.search(r"^bertology_sweeps_active 1(\.0+)?$", text, re.M):
                return
            time.sleep(0.1)
        self.fail("no sweep in flight within 60 s")


if __name__ == "__main__":
    unittest.main(verbosity=2)
