"""One Client shared by many threads; several processes, each with its own
Client, and a Client inherited across fork()."""

import multiprocessing as mp
import os
import threading

import numpy as np

import gexec
from conftest import data, example

THREADS = 16
RUNS = 25


def _x(i, j):
    return np.full((1 + (i + j) % 7, 3), i * 1000 + j, np.float32)


def test_threads_share_one_client(client):
    g = client.load(data("affine.yaml"))
    mlp = client.load(example("mlp.yaml"))
    x_mlp = np.load(example("mlp_input.npy"))
    y_mlp = client.run(mlp, {"x": x_mlp})["y"]
    errors = []
    start = threading.Barrier(THREADS)

    def worker(i):
        try:
            start.wait()
            for j in range(RUNS):
                x = _x(i, j)
                if j % 5 == 4:  # futures and explain mixed in
                    f = client.submit(g, {"x": x})
                    client.explain(mlp)
                    y = f.result()["y"]
                else:
                    y = client.run(g, {"x": x})["y"]
                np.testing.assert_array_equal(y, x * 2 + 1)
                if j % 7 == 0:
                    assert client.run(mlp, {"x": x_mlp})["y"].tobytes() == y_mlp.tobytes()
        except BaseException as e:  # reported by the main thread
            errors.append((i, e))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads)
    assert errors == []
    # a pool bounded by the callers: a connection is opened only when every
    # other one is busy (<= one per thread) or has a pending Future (<= one
    # per thread here)
    assert 1 <= len(client._conns) <= 2 * THREADS


def test_futures_waited_from_other_threads(client):
    g = client.load(data("affine.yaml"))
    xs = [_x(i, 0) for i in range(40)]
    fs = [client.submit(g, {"x": x}) for x in xs]
    results = [None] * len(fs)

    def collect(k):
        for i in range(k, len(fs), 4):
            results[i] = fs[i].result()["y"]

    threads = [threading.Thread(target=collect, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    for x, y in zip(xs, results):
        np.testing.assert_array_equal(y, x * 2 + 1)


def _child(endpoint, k, q):
    try:
        with gexec.Client(endpoint) as c:
            g = c.load(data("affine.yaml"))
            for j in range(20):
                x = _x(k, j)
                np.testing.assert_array_equal(c.run(g, {"x": x})["y"], x * 2 + 1)
        q.put((k, "ok"))
    except BaseException as e:
        q.put((k, repr(e)))


def test_several_processes(endpoint):
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=_child, args=(endpoint, k, q)) for k in range(4)]
    for p in procs:
        p.start()
    got = sorted(q.get(timeout=120) for _ in procs)
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    assert got == [(k, "ok") for k in range(4)]


def test_client_used_across_fork(endpoint):
    """A child of fork() uses the parent's Client: it opens connections of its
    own; the parent's keep working."""
    c = gexec.Client(endpoint)
    g = c.load(data("affine.yaml"))
    x = np.ones((2, 3), np.float32)
    pending = c.submit(g, {"x": x})  # outstanding in the parent during the fork
    pids = []
    for k in range(3):
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                ok = all((c.run(g, {"x": _x(k, j)})["y"] == _x(k, j) * 2 + 1).all()
                         for j in range(10))
                try:
                    pending.result()
                    ok = False  # the parent's Future is not the child's
                except gexec.Error:
                    pass
                code = 0 if ok else 2
            finally:
                os._exit(code)
        pids.append(pid)
    for pid in pids:
        _, st = os.waitpid(pid, 0)
        assert os.WIFEXITED(st) and os.WEXITSTATUS(st) == 0
    np.testing.assert_array_equal(pending.result()["y"], x * 2 + 1)
    np.testing.assert_array_equal(c.run(g, {"x": x})["y"], x * 2 + 1)
    c.close()
