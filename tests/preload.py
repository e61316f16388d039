#!/usr/bin/env python3
"""graphs.preload (daemon/preload.h): the graphs are compiled and warmed
before gexecd reports READY=1 on a NOTIFY_SOCKET of our own, so the first
LIST after READY shows them ready and preloaded with a plan, and a RUN by
name compiles nothing (compile_us 0); an ONNX model preloads too (when
Debian's libonnx-testdata is there); a preload that fails stops the start
with exit status 2 and a line naming the entry. No timing is asserted:
each wait is only bounded.

usage: preload.py BUILDDIR SRCDIR   (make check: tests/preload.sh)
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile

BUILD, SRC = sys.argv[1], sys.argv[2]
GEXECD = os.path.join(BUILD, "daemon", "gexecd")
SUBMIT = os.path.join(BUILD, "libclient", "gexec-submit")
MLP = os.path.join(SRC, "examples", "mlp.yaml")
MLP_IN = os.path.join(SRC, "examples", "mlp_input.npy")
RELU = "/usr/share/libonnx-testdata/data/node/test_relu/model.onnx"


def fail(msg):
    print("preload: FAIL: " + msg)
    sys.exit(1)


def config(tmp, preload):
    conf = os.path.join(tmp, "gexecd.yaml")
    with open(conf, "w") as f:
        f.write('profile:\n  dir: ""\ntune:\n  mode: "off"\nartifacts:\n  dir: ""\n'
                "graphs:\n  preload: %s\n" % json.dumps(preload))
    return conf


def submit(env, *args):
    p = subprocess.run([SUBMIT, *args], env=env, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        fail("gexec-submit %s: exit %d: %s" % (" ".join(args), p.returncode, p.stderr))
    return p.stdout


def served(tmp):
    """Preloads, READY=1, then LIST and RUN by name."""
    path = os.path.join(tmp, "notify.sock")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(path)
    s.settimeout(120)
    preload = ["mlp=" + MLP]
    if os.path.exists(RELU):
        preload.append("relu=" + RELU)
    env = dict(os.environ, NOTIFY_SOCKET=path, GEXEC_SOCKET="ipc://%s/gexecd.sock" % tmp)
    log = open(os.path.join(tmp, "stderr.log"), "w+")
    d = subprocess.Popen([GEXECD, "--foreground", "--config", config(tmp, preload)], env=env,
                         stderr=log)
    try:
        while True:
            try:
                msg = s.recv(4096).decode()
            except socket.timeout:
                fail("no READY=1 from gexecd")
            if "READY=1" in msg.splitlines():
                break
        # READY=1 came: every preload is done, nothing else loaded a graph
        graphs = json.loads(submit(env, "list", "--json"))
        byname = {g["name"]: g for g in graphs}
        if len(graphs) != len(preload) or set(byname) != {p.split("=")[0] for p in preload}:
            fail("LIST after READY=1: %r, expected %r" % (graphs, preload))
        for g in graphs:
            if g["ready"] is not True or g["preloaded"] is not True or g["plans"] < 1:
                fail("graph %s not compiled and warmed at READY=1: %r" % (g["name"], g))
        table = submit(env, "list")
        if "preloaded" not in table:
            fail("gexec-submit list does not show readiness:\n" + table)
        run = json.loads(submit(env, "run", "--name", "mlp", "-i", "x=" + MLP_IN, "--json"))
        if run["compile_us"] != 0 or run["outputs"][0]["name"] != "y":
            fail("RUN by name after the preload compiled again or went wrong: %r" % run)
        graphs = json.loads(submit(env, "list", "--json"))
        if {g["name"]: g["plans"] for g in graphs}["mlp"] != 1:
            fail("the RUN by name made a new plan: %r" % graphs)
        log.seek(0)
        text = log.read()
        at, ready = text.find("preloaded " + MLP), text.find("INFO: ready")
        if at < 0 or ready < 0 or at > ready:
            fail("the log does not say the preload before 'ready':\n" + text)
    finally:
        d.send_signal(signal.SIGTERM)
        try:
            rc = d.wait(timeout=60)
        except subprocess.TimeoutExpired:
            d.kill()
            rc = d.wait()
        s.close()
    if rc != 0:
        fail("gexecd exited with %d" % rc)


def refused(tmp):
    """A preload that cannot load: exit status 2, the entry named."""
    bad = os.path.join(tmp, "missing.yaml")
    env = dict(os.environ, GEXEC_SOCKET="ipc://%s/gexecd2.sock" % tmp)
    for flags in (["--foreground"], []):  # in the foreground and detached
        p = subprocess.run([GEXECD, *flags, "--config", config(tmp, ["mlp=" + MLP, "x=" + bad])],
                           env=env, capture_output=True, text=True, timeout=120)
        if p.returncode != 2 or "graphs.preload[1] (x=%s)" % bad not in p.stderr:
            fail("a missing preload file %s: exit %d, stderr %r" % (flags, p.returncode, p.stderr))
    p = subprocess.run([GEXECD, "--foreground", "--config", config(tmp, ["a b=" + MLP])],
                       env=env, capture_output=True, text=True, timeout=60)
    if p.returncode != 2 or "graphs.preload" not in p.stderr:
        fail("a bad preload name: exit %d, stderr %r" % (p.returncode, p.stderr))


def main():
    tmp = tempfile.mkdtemp(prefix="gexec-preload-")
    try:
        served(tmp)
        refused(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("preload: ok")


if __name__ == "__main__":
    main()
