"""The bertology-server the model-card scripts measure through
(make_model_card.py, head_findings.py): the model as "querytitle", and the
model it was fine-tuned from as STARTING_POINT when given.
"""
import os
import subprocess
import sys
import tempfile
import time

from bertology_client import Client

STARTING_POINT = "querytitle-mlm"  # the starting point's name on the server


def start_server(bin_dir, model, starting_point=None):
    """The server with MODEL as its default model "querytitle" and, when
    given, the model it was fine-tuned from as STARTING_POINT."""
    log = tempfile.NamedTemporaryFile(prefix="card-server-", suffix=".log")
    extra = ([f"--model={STARTING_POINT}={starting_point}"]
             if starting_point else [])
    proc = subprocess.Popen(
        [os.path.join(bin_dir, "bertology-server"), "--model=querytitle=" + model]
        + extra + ["--listen=127.0.0.1:0", "--metrics_listen=", "--threads=1"],
        stdout=log, stderr=subprocess.STDOUT)
    port = None
    while port is None:
        if proc.poll() is not None:
            sys.exit("server exited: " + open(log.name).read())
        for line in open(log.name):
            if "listening on port" in line:
                port = int(line.split("listening on port")[1].split(",")[0])
        time.sleep(0.1)
    client = Client(f"127.0.0.1:{port}", timeout=600)
    while client.health() != "SERVING":
        time.sleep(0.2)
    return proc, client, port, log
