"""Test certificates made with the openssl command line (tests/python/
test_auth.py, tests/image/image_test.py): a CA, a second CA nobody trusts, a
server certificate, a client certificate from each CA and one from the right
CA that expired in 2020."""
import os
import subprocess


def openssl(*args, cwd):
    subprocess.run(["openssl"] + list(args), cwd=cwd, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def make_pki(d, server_san="DNS:localhost,IP:127.0.0.1"):
    """Writes ca.pem, other-ca.pem, server.{pem,key}, client.{pem,key},
    other-client.{pem,key} and expired.{pem,key} into `d`; the server
    certificate is for `server_san` (a subjectAltName value)."""
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
          "-nodes"]
    for ca in ("ca", "other-ca"):
        openssl("req", "-x509", *ec, "-keyout", ca + ".key", "-out",
                ca + ".pem", "-days", "2", "-subj", "/CN=" + ca, cwd=d)

    def leaf(name, ca, san):
        openssl("req", "-new", *ec, "-keyout", name + ".key", "-out",
                name + ".csr", "-subj", "/CN=" + name, cwd=d)
        with open(os.path.join(d, name + ".ext"), "w") as f:
            f.write("subjectAltName=%s\n" % san)
        openssl("x509", "-req", "-in", name + ".csr", "-CA", ca + ".pem",
                "-CAkey", ca + ".key", "-CAcreateserial", "-days", "2",
                "-extfile", name + ".ext", "-out", name + ".pem", cwd=d)

    leaf("server", "ca", server_san)
    leaf("client", "ca", "DNS:client")
    leaf("other-client", "other-ca", "DNS:client")
    # `openssl x509` cannot back-date a certificate; `openssl ca` can.
    openssl("req", "-new", *ec, "-keyout", "expired.key", "-out",
            "expired.csr", "-subj", "/CN=expired", cwd=d)
    os.makedirs(os.path.join(d, "issued"))
    open(os.path.join(d, "index.txt"), "w").close()
    with open(os.path.join(d, "serial"), "w") as f:
        f.write("1000\n")
    with open(os.path.join(d, "ca.cnf"), "w") as f:
        f.write("[ca]\ndefault_ca = own\n[own]\ndir = .\n"
                "database = index.txt\nnew_certs_dir = issued\n"
                "certificate = ca.pem\nprivate_key = ca.key\n"
                "serial = serial\ndefault_md = sha256\npolicy = any\n"
                "[any]\ncommonName = supplied\n")
    openssl("ca", "-batch", "-config", "ca.cnf", "-in", "expired.csr",
            "-out", "expired.pem", "-notext", "-startdate", "20200101000000Z",
            "-enddate", "20200102000000Z", cwd=d)
