"""Who may call: mutual TLS (--tls_client_ca) and bearer tokens
(--token_file) on the real bertology-server, through the Python client, the
CLI and the sweep scheduler (`bertology sweep`), as the README's security
section describes them.

Certificates are made here with the openssl command line: a CA, a second
CA nobody trusts, a server certificate for localhost/127.0.0.1, a client
certificate from each CA and one from the right CA that expired in 2020.
"""
import os
import shutil
import subprocess
import tempfile
import unittest

import grpc

from testlib import BIN_DIR as BIN, TINY_MODEL_DIR as MODEL
from bertology_client import Client
from live_server import LiveServer, health
from pki import make_pki

FULL = "full-0123456789abcdef-token"
READ = "read-0123456789abcdef-token"
EXAMPLES = [("the film was good", "", 2), ("a bad plot", "", 0),
            ("it was fine", "", 1)]


def write(path, text):
    """Replaces `path` atomically (a rename, as a mounted Secret changes)."""
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)


class AuthTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if shutil.which("openssl") is None:
            raise unittest.SkipTest("openssl is not installed "
                                    "(scripts/install-deps.sh installs it)")
        cls.dir = tempfile.mkdtemp(prefix="bertology-auth-")
        make_pki(cls.dir)
        cls.tokens = cls.path("tokens")
        write(cls.tokens, "# scopes\n%s full\n%s readonly\n" % (FULL, READ))
        for name, token in (("full.token", FULL), ("read.token", READ),
                            ("wrong.token", "wrong-0123456789abcdef-tok")):
            write(cls.path(name), token + "\n")
        cls.server = LiveServer(BIN, [
            "--model=tiny=" + MODEL, "--warmup_passes=1",
            "--tls_cert=" + cls.path("server.pem"),
            "--tls_key=" + cls.path("server.key"),
            "--tls_client_ca=" + cls.path("ca.pem"),
            "--token_file=" + cls.tokens])
        cls.target = "localhost:%d" % cls.server.port
        channel = cls.channel(cert=None)
        cls.server.wait_serving(channel)
        channel.close()

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        shutil.rmtree(cls.dir, ignore_errors=True)

    @classmethod
    def path(cls, name):
        return os.path.join(cls.dir, name)

    @classmethod
    def channel(cls, cert, ca="ca"):
        def read(name):
            with open(cls.path(name), "rb") as f:
                return f.read()
        creds = grpc.ssl_channel_credentials(
            root_certificates=read(ca + ".pem"),
            private_key=read(cert + ".key") if cert else None,
            certificate_chain=read(cert + ".pem") if cert else None)
        return grpc.secure_channel(cls.target, creds)

    @classmethod
    def client(cls, cert="client", token="full", ca="ca", timeout=20.0):
        return Client(cls.target, timeout=timeout,
                      tls_ca=cls.path(ca + ".pem"),
                      tls_cert=cls.path(cert + ".pem") if cert else None,
                      tls_key=cls.path(cert + ".key") if cert else None,
                      token_file=cls.path(token + ".token") if token else None)

    def assertRefused(self, fn, code, text):
        with self.assertRaises(grpc.RpcError) as e:
            fn()
        self.assertEqual(e.exception.code(), code, e.exception.details())
        self.assertIn(text, e.exception.details())

    def classify(self, client):
        return client.classify([x[0] for x in EXAMPLES])

    def test_good_credentials_classify_and_sweep(self):
        with self.client() as c:
            r = self.classify(c)
            self.assertEqual(r.probabilities.shape, (3, 3))
            out = c.sweep_results(EXAMPLES, [{"generator": "layers"}])
            layers = c.info()["models"][0]["num_layers"]
            self.assertEqual(len(out["results"]), layers)
            self.assertEqual(out["baseline"]["examples"], 3)

    def test_no_client_certificate_is_unauthenticated_but_health_is_open(self):
        channel = self.channel(cert=None)
        self.assertEqual(health(channel), 1)  # probes need no certificate
        channel.close()
        with self.client(cert=None) as c:
            self.assertRefused(lambda: self.classify(c),
                               grpc.StatusCode.UNAUTHENTICATED,
                               "client certificate")

    def test_wrong_ca_and_expired_certificates_fail_the_handshake(self):
        for cert in ("other-client", "expired"):
            with self.client(cert=cert) as c:
                self.assertRefused(lambda: self.classify(c),
                                   grpc.StatusCode.UNAVAILABLE, "")
        # The client checks the server too: trusting the other CA fails.
        with self.client(ca="other-ca") as c:
            self.assertRefused(lambda: self.classify(c),
                               grpc.StatusCode.UNAVAILABLE, "")
        # Plain text to a TLS port does not get through either.
        with Client(self.target, timeout=5.0,
                    token_file=self.path("full.token")) as c:
            self.assertRefused(lambda: self.classify(c),
                               grpc.StatusCode.UNAVAILABLE, "")

    def test_missing_and_wrong_tokens_are_unauthenticated(self):
        with self.client(token=None) as c:
            self.assertRefused(lambda: self.classify(c),
                               grpc.StatusCode.UNAUTHENTICATED,
                               "missing bearer token")
        with self.client(token="wrong") as c:
            self.assertRefused(lambda: self.classify(c),
                               grpc.StatusCode.UNAUTHENTICATED, "invalid token")

    def test_readonly_token_may_classify_and_read_but_not_sweep(self):
        with self.client(token="read") as c:
            self.assertEqual(self.classify(c).labels.shape, (3,))
            self.assertEqual(c.info()["models"][0]["name"], "tiny")
            self.assertTrue(c.tokenize("a bad plot")["tokens"])
            att = c.attention("a bad plot", layers=[0])
            self.assertEqual(att["maps"].shape[0], 1)
            self.assertRefused(
                lambda: c.sweep_results(EXAMPLES, [{"generator": "layers"}]),
                grpc.StatusCode.PERMISSION_DENIED, "readonly")

    def test_rotated_token_file_is_reloaded(self):
        new = "rotated-0123456789abcdef-tok"
        write(self.path("new.token"), new + "\n")
        try:
            write(self.tokens, "%s full\n%s readonly\n" % (new, READ))
            with self.client(token="new") as c:
                self.assertEqual(self.classify(c).labels.shape, (3,))
            with self.client(token="full") as c:
                self.assertRefused(lambda: self.classify(c),
                                   grpc.StatusCode.UNAUTHENTICATED,
                                   "invalid token")
        finally:
            write(self.tokens, "%s full\n%s readonly\n" % (FULL, READ))
        with self.client(token="full") as c:
            self.assertEqual(self.classify(c).labels.shape, (3,))

    def cli(self, *args, token="full", cert="client"):
        flags = ["--target=" + self.target, "--tls-ca=" + self.path("ca.pem"),
                 "--timeout=20"]
        if cert:
            flags += ["--tls-cert=" + self.path(cert + ".pem"),
                      "--tls-key=" + self.path(cert + ".key")]
        if token:
            flags += ["--token-file=" + self.path(token + ".token")]
        return subprocess.run(
            [os.path.join(BIN, "bertology"), args[0]] + flags + list(args[1:]),
            capture_output=True, text=True, timeout=120)

    def test_cli_and_scheduler(self):
        data = self.path("data.tsv")
        with open(data, "w") as f:
            for a, _, label in EXAMPLES:
                f.write("%s\t%d\n" % (a, label))
        ok = self.cli("classify", "--text-a=a bad plot")
        self.assertEqual(ok.returncode, 0, ok.stderr)
        with self.client() as c:
            label = c.classify(["a bad plot"]).label_names[0]
        self.assertEqual(ok.stdout.splitlines()[1].split("\t")[1], label)
        refused = self.cli("classify", "--text-a=a bad plot", token=None)
        self.assertEqual(refused.returncode, 1, refused.stderr)
        self.assertIn("missing bearer token", refused.stderr)
        no_cert = self.cli("info", cert=None)
        self.assertEqual(no_cert.returncode, 1, no_cert.stderr)
        self.assertIn("client certificate", no_cert.stderr)
        # The scheduler: two channels to the same replica (a list), the
        # token sent on every shard; a readonly token stops the job at once.
        target = "--target=ipv4:127.0.0.1:%d,127.0.0.1:%d" % (
            self.server.port, self.server.port)
        sweep = ["sweep", "--data=" + data, "--text-b=", "--label=1",
                 "--layers", "--masks-per-shard=1", "--quiet",
                 "--tls-server-name=localhost", target]
        good = self.cli(*sweep)
        self.assertEqual(good.returncode, 0, good.stderr)
        self.assertIn("layer", good.stdout + good.stderr)
        readonly = self.cli(*sweep, token="read")
        self.assertEqual(readonly.returncode, 1, readonly.stderr)
        self.assertIn("PERMISSION_DENIED", readonly.stderr.upper().replace(
            " ", "_"))
        missing = self.cli("info", token="missing")
        self.assertEqual(missing.returncode, 2, missing.stderr)  # usage
        self.assertIn("missing.token: cannot read", missing.stderr)


class TokenWithoutTlsTest(unittest.TestCase):
    """--token_file alone (loopback, or behind a TLS-terminating proxy)."""

    def test_token_over_plain_text(self):
        d = tempfile.mkdtemp(prefix="bertology-auth-")
        try:
            write(os.path.join(d, "tokens"), "%s readonly\n" % READ)
            write(os.path.join(d, "read.token"), READ)
            server = LiveServer(BIN, ["--model=tiny=" + MODEL,
                                      "--warmup_passes=1",
                                      "--token_file=" + os.path.join(d, "tokens")])
            try:
                self.assertIn("tokens travel in plain text", server.output())
                target = "127.0.0.1:%d" % server.port
                channel = grpc.insecure_channel(target)
                server.wait_serving(channel)
                channel.close()
                with Client(target, token_file=os.path.join(d, "read.token")) as c:
                    self.assertEqual(c.classify(["a bad plot"]).labels.shape,
                                     (1,))
                with Client(target) as c:
                    with self.assertRaises(grpc.RpcError) as e:
                        c.classify(["a bad plot"])
                    self.assertEqual(e.exception.code(),
                                     grpc.StatusCode.UNAUTHENTICATED)
            finally:
                server.stop()
        finally:
            shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
