"""Starts the real bertology-server for a Python test and finds its port.

The server listens on port 0 and prints "listening on port N"; the tests
read N from its log, so parallel test runs never collide on a port.
"""
import os
import re
import subprocess
import tempfile
import time


class LiveServer:
    """`bertology-server` with `flags`, until stop(). `port` is set once it
    listens; wait_serving() waits for health SERVING on the caller's
    channel."""

    def __init__(self, bin_dir, flags, timeout=60.0):
        self.log = tempfile.NamedTemporaryFile(prefix="bertology-py-", suffix=".log")
        self.proc = subprocess.Popen(
            [os.path.join(bin_dir, "bertology-server"), "--listen=127.0.0.1:0",
             "--metrics_listen="] + list(flags),
            stdout=self.log, stderr=subprocess.STDOUT)
        self.port = None
        deadline = time.time() + timeout
        while time.time() < deadline and self.port is None:
            m = re.search(r"listening on port (\d+)", self.output())
            if m:
                self.port = int(m.group(1))
            elif self.proc.poll() is not None:
                raise RuntimeError("server exited: " + self.output())
            time.sleep(0.02)
        if self.port is None:
            self.stop()
            raise RuntimeError("server printed no port: " + self.output())

    def wait_serving(self, channel, timeout=120.0):
        """Polls grpc.health.v1 on `channel` until SERVING (after the
        models' warm-up); RuntimeError with the server's log on timeout or
        exit."""
        import grpc  # the callers' stack; this module stays grpc-free
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                if health(channel) == 1:
                    return
            except grpc.RpcError:
                pass
            if self.proc.poll() is not None:
                break
            time.sleep(0.02)
        raise RuntimeError("server not SERVING: " + self.output())

    def output(self):
        with open(self.log.name) as f:
            return f.read()

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)
        self.log.close()


def health(channel):
    """grpc.health.v1 Check of service "" through the generated stub
    (grpc_health.v1, built beside bertology.v1): the status, 1 = SERVING."""
    from grpc_health.v1 import health_pb2, health_pb2_grpc
    stub = health_pb2_grpc.HealthStub(channel)
    return stub.Check(health_pb2.HealthCheckRequest(), timeout=5).status
