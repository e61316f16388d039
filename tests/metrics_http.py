#!/usr/bin/env python3
"""The Prometheus endpoint scraped by a real HTTP client (urllib).

Starts the built gexecd with metrics.listen on a free loopback port, runs
jobs in two modes with gexec-submit, scrapes http://.../metrics, parses the
text exposition (version 0.0.4) strictly and checks it against the jobs run
and STATS; checks that `gexec-submit stats --prometheus` prints the same
families and series; and that other paths and methods are refused.

usage: metrics_http.py BUILDDIR SRCDIR   (make check: tests/metrics.sh)
"""
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

BUILD, SRC = sys.argv[1], sys.argv[2]
GEXECD = os.path.join(BUILD, "daemon", "gexecd")
SUBMIT = os.path.join(BUILD, "libclient", "gexec-submit")

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
SAMPLE = re.compile(r"^(%s)(\{(.*)\})? (\S+)$" % NAME)
LABEL = re.compile(r'(%s)="((?:[^"\\\n]|\\.)*)"(,|$)' % NAME)


def fail(msg):
    print("metrics_http: FAIL: " + msg)
    sys.exit(1)


def parse(text):
    """{family: {"type": t, "help": h, "samples": [(name, labels, value)]}},
    refusing anything the 0.0.4 text format does not allow."""
    fams, current = {}, None
    if not text.endswith("\n"):
        fail("exposition does not end with a newline")
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith("# HELP ") or line.startswith("# TYPE "):
            parts = line.split(" ", 3)
            if len(parts) != 4 or not re.fullmatch(NAME, parts[2]):
                fail("line %d: bad comment %r" % (n, line))
            fam = fams.setdefault(parts[2], {"type": None, "help": None, "samples": []})
            if fam["samples"]:
                fail("line %d: %s after its samples" % (n, parts[1]))
            key = "help" if parts[1] == "HELP" else "type"
            if fam[key] is not None:
                fail("line %d: second %s for %s" % (n, parts[1], parts[2]))
            if key == "type" and parts[3] not in ("counter", "gauge", "histogram", "summary", "untyped"):
                fail("line %d: unknown type %r" % (n, parts[3]))
            fam[key] = parts[3]
            current = parts[2]
            continue
        if line.startswith("#") or not line:
            fail("line %d: unexpected %r" % (n, line))
        m = SAMPLE.match(line)
        if not m:
            fail("line %d: not a sample: %r" % (n, line))
        name, labels_text, value = m.group(1), m.group(3) or "", m.group(4)
        labels, pos = {}, 0
        while pos < len(labels_text):
            lm = LABEL.match(labels_text, pos)
            if not lm:
                fail("line %d: bad labels %r" % (n, labels_text))
            labels[lm.group(1)] = lm.group(2)
            pos = lm.end()
        v = float(value)  # raises on a bad value
        if current is None or not (name == current or (fams[current]["type"] == "histogram" and name in (
                current + "_bucket", current + "_sum", current + "_count"))):
            fail("line %d: %s outside its family (current %s)" % (n, name, current))
        fams[current]["samples"].append((name, labels, v))
    for name, fam in fams.items():
        if fam["type"] is None or fam["help"] is None:
            fail("%s lacks TYPE or HELP" % name)
    return fams


def histograms(fam, name):
    """{label value: (buckets [(le, cumulative)], sum, count)} of one histogram family."""
    out = {}
    for sample, labels, v in fam["samples"]:
        key = tuple(sorted((k, x) for k, x in labels.items() if k != "le"))
        h = out.setdefault(key, {"buckets": [], "sum": None, "count": None})
        if sample == name + "_bucket":
            h["buckets"].append((math.inf if labels["le"] == "+Inf" else float(labels["le"]), v))
        elif sample == name + "_sum":
            h["sum"] = v
        else:
            h["count"] = v
    for key, h in out.items():
        les = [le for le, _ in h["buckets"]]
        if les != sorted(les) or les[-1] != math.inf:
            fail("%s%s: buckets not increasing to +Inf" % (name, key))
        counts = [c for _, c in h["buckets"]]
        if counts != sorted(counts):
            fail("%s%s: cumulative counts decrease" % (name, key))
        if counts[-1] != h["count"]:
            fail("%s%s: +Inf bucket %g != count %g" % (name, key, counts[-1], h["count"]))
    return out


def series(fams):
    return {(name, tuple(sorted(lab.items()))) for f in fams.values() for name, lab, _ in f["samples"]}


def main():
    tmp = tempfile.mkdtemp(prefix="gexec-metrics-")
    sock = "ipc://%s/gexecd.sock" % tmp
    conf = os.path.join(tmp, "gexecd.yaml")
    with open(conf, "w") as f:
        f.write('metrics:\n  listen: "127.0.0.1:0"\nprofile:\n  dir: ""\ntune:\n  mode: "off"\n')
    env = dict(os.environ, GEXEC_SOCKET=sock)
    d = subprocess.Popen([GEXECD, "--foreground", "--config", conf, "--log-level", "warn"], env=env)
    try:
        for _ in range(200):
            if subprocess.run([SUBMIT, "--timeout", "200", "ping"], env=env,
                              capture_output=True).returncode == 0:
                break
            if d.poll() is not None:
                fail("gexecd exited with %d" % d.returncode)
            time.sleep(0.05)
        else:
            fail("gexecd never answered")
        mlp = os.path.join(SRC, "examples", "mlp.yaml")
        x = "x=" + os.path.join(SRC, "examples", "mlp_input.npy")
        for mode, n in (("seq", 7), ("inter", 4)):
            subprocess.run([SUBMIT, "run", mlp, "-i", x, "--mode", mode, "--repeat", str(n)],
                           env=env, check=True, capture_output=True)
        stats = json.loads(subprocess.run([SUBMIT, "stats", "--json"], env=env, check=True,
                                          capture_output=True, text=True).stdout)
        url = stats.get("metrics_url", "")
        if not re.fullmatch(r"http://127\.0\.0\.1:[1-9][0-9]*/metrics", url):
            fail("STATS metrics_url is %r" % url)

        with urllib.request.urlopen(url, timeout=10) as r:
            if r.status != 200:
                fail("GET %s: %d" % (url, r.status))
            ctype = r.headers.get("Content-Type", "")
            if not ctype.startswith("text/plain") or "version=0.0.4" not in ctype:
                fail("Content-Type %r" % ctype)
            text = r.read().decode("utf-8")
        fams = parse(text)

        for name in ("gexec_requests_total", "gexec_runs_total", "gexec_jobs_total",
                     "gexec_graphs_loaded", "gexec_workers", "gexec_job_latency_seconds",
                     "gexec_graph_job_compute_seconds"):
            if name not in fams:
                fail("no family %s" % name)
        jobs = {lab["mode"]: v for _, lab, v in fams["gexec_jobs_total"]["samples"]}
        if jobs != {"seq": 7, "inter": 4}:
            fail("gexec_jobs_total: %r, ran seq 7 and inter 4" % jobs)
        runs = {lab["status"]: v for _, lab, v in fams["gexec_runs_total"]["samples"]}
        if runs.get("ok") != 11 or runs.get("failed") != 0:
            fail("gexec_runs_total: %r" % runs)
        if fams["gexec_graphs_loaded"]["samples"][0][2] != 1:
            fail("gexec_graphs_loaded is not 1")
        for base in ("gexec_job_queue_wait_seconds", "gexec_job_compute_seconds", "gexec_job_latency_seconds"):
            if fams[base]["type"] != "histogram":
                fail("%s is not a histogram" % base)
            h = histograms(fams[base], base)
            got = {dict(k)["mode"]: v["count"] for k, v in h.items()}
            if got != {"seq": 7, "inter": 4}:
                fail("%s counts %r" % (base, got))
            # the same histogram as STATS (bucket i of STATS is the step i of the cumulative)
            kind = {"gexec_job_queue_wait_seconds": "queue", "gexec_job_compute_seconds": "compute",
                    "gexec_job_latency_seconds": "e2e"}[base]
            for mode in ("seq", "inter"):
                want = stats["latency"]["modes"][mode][kind]
                cum = [c for _, c in h[(("mode", mode),)]["buckets"]]
                steps = [cum[0]] + [b - a for a, b in zip(cum, cum[1:])]
                if steps != want["buckets"]:
                    fail("%s{mode=%s}: %r, STATS says %r" % (base, mode, steps, want["buckets"]))
                if abs(h[(("mode", mode),)]["sum"] - want["sum_us"] / 1e6) > 1e-6:
                    fail("%s{mode=%s} sum differs from STATS" % (base, mode))
            les = [le for le, _ in h[(("mode", "seq"),)]["buckets"][:-1]]
            if [round(le * 1e6) for le in les] != stats["latency"]["bounds_us"]:
                fail("%s: le bounds are not STATS' bounds_us" % base)
        graph = histograms(fams["gexec_graph_job_compute_seconds"], "gexec_graph_job_compute_seconds")
        if [v["count"] for v in graph.values()] != [11]:
            fail("gexec_graph_job_compute_seconds: %r" % graph)

        # the CLI prints the same text: the same families and series
        cli = parse(subprocess.run([SUBMIT, "stats", "--prometheus"], env=env, check=True,
                                   capture_output=True, text=True).stdout)
        if series(cli) != series(fams):
            fail("stats --prometheus differs: %r" % (series(cli) ^ series(fams)))

        for path, method, code in (("/", "GET", 404), ("/metrics", "POST", 405)):
            req = urllib.request.Request(url.replace("/metrics", path), method=method,
                                         data=b"x" if method == "POST" else None)
            try:
                urllib.request.urlopen(req, timeout=10)
                fail("%s %s answered 2xx" % (method, path))
            except urllib.error.HTTPError as e:
                if e.code != code:
                    fail("%s %s: %d, expected %d" % (method, path, e.code, code))
        # it still serves after those
        with urllib.request.urlopen(url, timeout=10) as r:
            parse(r.read().decode("utf-8"))
    finally:
        d.send_signal(signal.SIGTERM)
        try:
            rc = d.wait(timeout=30)
        except subprocess.TimeoutExpired:
            d.kill()
            rc = d.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    if rc != 0:
        fail("gexecd exited with %d" % rc)
    print("metrics_http: ok")


if __name__ == "__main__":
    main()
