#!/usr/bin/env python3
"""gexecd's messages to systemd, read from a NOTIFY_SOCKET of our own:
READY=1 with a STATUS= line once serving; WATCHDOG=1 when WATCHDOG_USEC is
set; on SIGHUP RELOADING=1 (with MONOTONIC_USEC), then READY=1 and a STATUS=
line saying the reload; STOPPING=1 on SIGTERM. No timing is asserted: each
wait is only bounded.

usage: sdnotify.py BUILDDIR   (make check: tests/sdnotify.sh)
"""
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile

GEXECD = os.path.join(sys.argv[1], "daemon", "gexecd")


def fail(msg):
    print("sdnotify: FAIL: " + msg)
    sys.exit(1)


def main():
    tmp = tempfile.mkdtemp(prefix="gexec-notify-")
    path = os.path.join(tmp, "notify.sock")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(path)
    s.settimeout(30)
    conf = os.path.join(tmp, "gexecd.yaml")
    with open(conf, "w") as f:
        f.write('profile:\n  dir: ""\ntune:\n  mode: "off"\n')
    env = dict(os.environ, NOTIFY_SOCKET=path, WATCHDOG_USEC="200000",
               GEXEC_SOCKET="ipc://%s/gexecd.sock" % tmp)
    env.pop("WATCHDOG_PID", None)
    d = subprocess.Popen([GEXECD, "--foreground", "--config", conf, "--log-level", "warn"], env=env)
    got = []

    def until(pred, what):
        while True:
            try:
                msg = s.recv(4096).decode()
            except socket.timeout:
                fail("no %s from gexecd (got %r)" % (what, got))
            got.append(msg)
            fields = dict(line.split("=", 1) for line in msg.splitlines() if "=" in line)
            if pred(fields):
                return fields

    try:
        f = until(lambda f: f.get("READY") == "1", "READY=1")
        if "serving on ipc://" not in f.get("STATUS", ""):
            fail("READY=1 without a STATUS= line: %r" % f)
        until(lambda f: f.get("WATCHDOG") == "1", "WATCHDOG=1")
        d.send_signal(signal.SIGHUP)
        f = until(lambda f: f.get("RELOADING") == "1", "RELOADING=1")
        if not f.get("MONOTONIC_USEC", "").isdigit():
            fail("RELOADING=1 without MONOTONIC_USEC: %r" % f)
        f = until(lambda f: f.get("READY") == "1", "READY=1 after the reload")
        if "reloaded" not in f.get("STATUS", ""):
            fail("READY=1 after SIGHUP says %r" % f)
        d.send_signal(signal.SIGTERM)
        until(lambda f: f.get("STOPPING") == "1", "STOPPING=1")
    finally:
        if d.poll() is None:
            d.send_signal(signal.SIGTERM)
        try:
            rc = d.wait(timeout=30)
        except subprocess.TimeoutExpired:
            d.kill()
            rc = d.wait()
        s.close()
        shutil.rmtree(tmp, ignore_errors=True)
    if rc != 0:
        fail("gexecd exited with %d" % rc)
    print("sdnotify: ok")


if __name__ == "__main__":
    main()
