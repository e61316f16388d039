#!/usr/bin/env python3
"""The log of a detached gexecd (no --foreground; daemon/log.h): the
starting command returns once the daemon serves, and the daemon's lines go
to log_file (appended), not to the terminal it came from; a log_file that
cannot be opened stops the start with exit status 2. Without log_file (the
default) the lines go to syslog: datagrams of facility daemon, read here
from a socket of the test's own (GEXECD_SYSLOG_SOCKET, the log module's
hook in place of /dev/log), so the host's syslog daemon plays no part. The
daemon is stopped by the pid its log names. No timing is asserted: each
wait is bounded.

usage: detach.py BUILDDIR   (make check: tests/detach.sh)
"""
import os
import re
import shutil
import signal
import socket
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
    """A configuration file; log_file None: the key left out (its default)."""
    conf = os.path.join(tmp, "gexecd.yaml")
    with open(conf, "w") as f:
        f.write('profile:\n  dir: ""\ntune:\n  mode: "off"\nartifacts:\n  dir: ""\n')
        if log_file is not None:
            f.write('log_file: "%s"\n' % log_file)
    return conf


def stop(pid):
    os.kill(pid, signal.SIGTERM)
    for _ in range(600):  # bounded: 60 s
        if gone(pid):
            return
        time.sleep(0.1)
    fail("the detached daemon did not stop on SIGTERM")


SYSLOG_LINE = re.compile(r"<(\d+)>[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d gexecd\[(\d+)\]: "
                         r"([A-Z]+): (.*)\0?$")


def syslog_until(sock, want, seen):
    """Reads datagrams from sock into seen (level, text) until one's text
    starts with want; each must be a syslog line of facility daemon (3) at the
    priority of its level, from one pid. Returns that pid."""
    prio = {"ERROR": 3, "WARN": 4, "INFO": 6, "DEBUG": 7}
    pid = None
    while True:
        try:
            data = sock.recv(65536).decode()
        except socket.timeout:
            fail("no syslog line with %r; got %r" % (want, seen))
        m = SYSLOG_LINE.match(data)
        if not m:
            fail("not a syslog line: %r" % data)
        if int(m.group(1)) != 3 * 8 + prio.get(m.group(3), -100):
            fail("priority %s for a %s line: %r" % (m.group(1), m.group(3), data))
        if pid is not None and int(m.group(2)) != pid:
            fail("lines from two pids: %r" % data)
        pid = int(m.group(2))
        seen.append((m.group(3), m.group(4)))
        if m.group(4).startswith(want):
            return pid


def check_syslog(tmp, env):
    """The default, no log_file: a detached daemon logs to syslog."""
    path = os.path.join(tmp, "log.sock")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(path)
    sock.settimeout(60)  # bounded, not a timing assertion
    pid = None
    try:
        p = subprocess.run([GEXECD, "--config", config(tmp, None)],
                           env=dict(env, GEXECD_SYSLOG_SOCKET=path),
                           capture_output=True, text=True, timeout=120)
        if p.returncode != 0:
            fail("gexecd (detached, syslog) exited with %d: %s" % (p.returncode, p.stderr))
        if p.stdout or p.stderr:
            fail("the detached daemon wrote to the terminal: %r %r" % (p.stdout, p.stderr))
        seen = []
        pid = syslog_until(sock, "gexecd ", seen)
        m = re.search(r"serving on \S+ \(pid (\d+)\)", seen[-1][1])
        if not m or int(m.group(1)) != pid:
            fail("the serving line names another pid: %r (syslog pid %d)" % (seen[-1], pid))
        syslog_until(sock, "ready", seen)
        stop(pid)
        pid = None
        syslog_until(sock, "stopped", seen)
    finally:
        if pid and not gone(pid):
            os.kill(pid, signal.SIGKILL)
        sock.close()


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
        stop(pid)
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
        check_syslog(tmp, env)
    finally:
        if pid and not gone(pid):
            os.kill(pid, signal.SIGKILL)
        shutil.rmtree(tmp, ignore_errors=True)
    print("detach: ok")


if __name__ == "__main__":
    main()
