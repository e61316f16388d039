"""Fixtures for the Python client's tests.

check.sh starts the shared gexecd and sets GEXEC_SOCKET; the tests that need
a daemon of their own (one worker, or one they stop) start it with Daemon,
from $GEXECD. Run outside check.sh, the shared daemon is started here too.
"""

import os
import shutil
import signal
import subprocess
import tempfile
import time

import pytest

import gexec

SRCDIR = os.environ.get("GEXEC_SRCDIR") or os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", ".."))
EXAMPLES = os.path.join(SRCDIR, "examples")
HERE = os.path.dirname(os.path.abspath(__file__))


def example(name):
    return os.path.join(EXAMPLES, name)


def data(name):
    return os.path.join(HERE, "data", name)


class Daemon:
    """A gexecd of its own on an ipc socket in a temporary directory."""

    def __init__(self, *args, config=""):
        binary = os.environ.get("GEXECD")
        if not binary:
            pytest.skip("GEXECD (the gexecd to start) is not set; run through check.sh")
        self.dir = tempfile.mkdtemp(prefix="gexec-pyd-", dir=os.environ.get("GEXEC_TEST_TMP"))
        self.endpoint = f"ipc://{self.dir}/gexecd.sock"
        conf = os.path.join(self.dir, "gexecd.yaml")
        with open(conf, "w") as f:  # a spin job left running is cancelled soon on SIGTERM
            f.write("shutdown_grace_ms: 200\n" + config)
        env = dict(os.environ)
        env.pop("LD_PRELOAD", None)
        self.proc = subprocess.Popen(
            [binary, "--foreground", "--config", conf, "--socket", self.endpoint,
             "--profile-dir", os.path.join(self.dir, "profiles"), "--log-level", "error",
             *args], env=env)
        probe = gexec.Client(self.endpoint, timeout_ms=200)
        try:
            for _ in range(150):
                if self.proc.poll() is not None:
                    raise RuntimeError(f"gexecd exited during start ({self.proc.returncode})")
                try:
                    probe.ping()
                    return
                except gexec.ConnectError:
                    pass
            raise RuntimeError("gexecd did not answer PING")
        finally:
            probe.close()

    def stop(self):
        """SIGTERM, then the exit status (gexecd exits 0 on a clean stop)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)
        return self.proc.returncode


@pytest.fixture(scope="session")
def endpoint():
    ep = os.environ.get("GEXEC_SOCKET")
    if ep:
        yield ep
        return
    d = Daemon()
    yield d.endpoint
    d.stop()


@pytest.fixture
def client(endpoint):
    with gexec.Client(endpoint, timeout_ms=30000) as c:
        yield c


@pytest.fixture(scope="module")
def one_worker():
    """A gexecd with one worker: a job stays queued while another runs."""
    d = Daemon("--cpus", "0")
    yield d
    assert d.stop() == 0


@pytest.fixture
def spin(one_worker):
    """(client, graph) where graph loops until cancelled or its deadline."""
    with gexec.Client(one_worker.endpoint, timeout_ms=30000) as c:
        yield c, c.load(data("spin.yaml"))


def wait_for(pred, what, seconds=30):
    """Poll pred until true; fails the test after seconds (a bound, not a
    measurement: the conditions polled for do come true)."""
    end = time.monotonic() + seconds
    while not pred():
        assert time.monotonic() < end, f"timed out waiting for {what}"
        time.sleep(0.01)
