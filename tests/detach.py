#!/usr/bin/env python3
"""The log of a detached gexecd (no --foreground; daemon/log.h): the
starting command returns once the daemon serves, and the daemon's lines go
to log_file (appended), not to the terminal it came from; a log_file that
cannot be opened stops the start with exit status 2. The daemon is stopped
by the pid its log names. No timing is asserted: each wait is bounded.

usage: detach.py BUILDDIR   (make check: tests/detach.sh)
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

GEXECD = os.path.join(sys.argv[1], "daemon", "gexecd")
SUBMIT = os.path.join(sys.argv[1], "libclient", "gexec-submit")


def fail(msg):
    print("detach: FAIL: " + msg)
    sys.exit(1)


def config(tmp, log_file):
    conf = os.path.join(tmp, "gexecd.yaml")
    with open(conf, "w") as f:
        f.write('profile:\n  dir: ""\ntune:\n  mode: "off"\nartifacts:\n  dir: ""\n'
                'log_file: "%s"\n' % log_file)
    return conf


def gone(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def main():
    tmp = tempfile.mkdtemp(prefix="gexec-detach-")
    log = os.path.join(tmp, "state", "gexecd.log")
    os.mkdir(os.path.dirname(log))
    env = dict(os.environ, GEXEC_SOCKET="ipc://%s/gexecd.sock" % tmp)
    env.pop("JOURNAL_STREAM", None)
    env.pop("NOTIFY_SOCKET", None)
    pid = None
    try:
        # stdout and stderr are pipes the test reads to their end: a daemon
        # that kept them would hold them open (and communicate() would wait)
        p = subprocess.run([GEXECD, "--config", config(tmp, log)], env=env,
                           capture_output=True, text=True, timeout=120)
        if p.returncode != 0:
            fail("gexecd (detached) exited with %d: %s" % (p.returncode, p.stderr))
        if p.stdout or p.stderr:
            fail("the detached daemon wrote to the terminal: %r %r" % (p.stdout, p.stderr))
        with open(log) as f:
            text = f.read()
        m = re.search(r"serving on \S+ \(pid (\d+)\)", text)
        if not m or "INFO: ready" not in text:
            fail("log_file lacks the start lines:\n" + text)
        pid = int(m.group(1))
        q = subprocess.run([SUBMIT, "ping"], env=env, capture_output=True, text=True, timeout=60)
        if q.returncode != 0:
            fail("the detached daemon does not answer: %s" % q.stderr)
        os.kill(pid, signal.SIGTERM)
        for _ in range(600):  # bounded: 60 s
            if gone(pid):
                break
            time.sleep(0.1)
        else:
            fail("the detached daemon did not stop on SIGTERM")
        pid = None
        with open(log) as f:
            text = f.read()
        if "INFO: stopped" not in text:
            fail("log_file lacks the stop line:\n" + text)
        # a log_file that cannot be opened: a configuration error
        bad = os.path.join(tmp, "no-such-dir", "gexecd.log")
        p = subprocess.run([GEXECD, "--config", config(tmp, bad)], env=env,
                           capture_output=True, text=True, timeout=60)
        if p.returncode != 2 or "log_file: cannot open " + bad not in p.stderr:
            fail("an unopenable log_file: exit %d, stderr %r" % (p.returncode, p.stderr))
        p = subprocess.run([GEXECD, "--config", config(tmp, "relative.log")], env=env,
                           capture_output=True, text=True, timeout=60)
        if p.returncode != 2 or "log_file" not in p.stderr:
            fail("a relative log_file: exit %d, stderr %r" % (p.returncode, p.stderr))
    finally:
        if pid and not gone(pid):
            os.kill(pid, signal.SIGKILL)
        shutil.rmtree(tmp, ignore_errors=True)
    print("detach: ok")


if __name__ == "__main__":
    main()
