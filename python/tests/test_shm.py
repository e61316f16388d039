"""Shared-memory arrays (docs/shm.md): gexec.SharedMemory, Client.register,
inputs read in place, outputs written into the region, the automatic
threshold, and the lifetime rules. Against a gexecd of this module's own,
so its STATS count only these regions."""

import gc
import os
import threading

import numpy as np
import pytest

import gexec
from conftest import data, Daemon


@pytest.fixture(scope="module")
def daemon():
    d = Daemon()
    yield d
    assert d.stop() == 0


def _regions(endpoint):
    with gexec.Client(endpoint, shm_threshold=False) as c:
        return c.stats()["shm"]["regions"]


def _x(n, seed=1):
    return np.random.default_rng(seed).standard_normal((n, 3)).astype(np.float32)


def test_region_inputs_and_outputs_equal_socket(daemon):
    n = 50000  # 600 kB each way
    x = _x(n)
    with gexec.Client(daemon.endpoint, shm_threshold=False) as sock:
        g = sock.load(data("affine.yaml"))
        want = sock.run(g, {"x": x})["y"]
    assert _regions(daemon.endpoint) == 0
    with gexec.Client(daemon.endpoint, shm_threshold=False) as c, \
            gexec.SharedMemory(4 << 20) as shm:
        c.register(shm)
        assert _regions(daemon.endpoint) == 1
        xs = shm.array(x.shape, np.float32)
        xs[...] = x
        y = c.run(g, {"x": xs}, output_shm=(shm, 1 << 20))["y"]
        assert y.dtype == np.float32 and y.shape == (n, 3)
        assert shm.offset_of(y) is not None and shm.offset_of(y) >= 1 << 20  # in the area
        assert y.tobytes() == want.tobytes()
        # the daemon wrote there: the region's bytes are the output's
        raw = shm.array(y.nbytes, np.uint8, shm.offset_of(y))
        assert raw.tobytes() == want.tobytes()
        # the input was read where it lies: a change to it changes the result
        xs[0, 0] = 100.0
        y2 = c.run(g, {"x": xs}, output_shm=(shm, 1 << 20))["y"]
        assert y2[0, 0] == 201.0
        assert y[0, 0] == 201.0  # same place in the area: overwritten by the next run
        del y, y2, xs, raw
        gc.collect()
    assert _regions(daemon.endpoint) == 0  # closed: unregistered


def test_output_area_too_small_comes_back_as_usual(daemon):
    x = _x(1000)
    with gexec.Client(daemon.endpoint) as c, gexec.SharedMemory(1 << 16) as shm:
        g = c.load(data("affine.yaml"))
        c.register(shm)
        y = c.run(g, {"x": x}, output_shm=(shm, 0, 100))["y"]
        assert shm.offset_of(y) is None  # did not fit: its own buffer
        np.testing.assert_array_equal(y, x * 2 + 1)
        y = c.run(g, {"x": x}, output_shm=shm)["y"]
        assert shm.offset_of(y) == 0
        np.testing.assert_array_equal(y, x * 2 + 1)
        del y
        gc.collect()


def test_automatic_threshold(daemon):
    x = _x(20000)  # 240 kB (the ring, with its own region, is off here)
    with gexec.Client(daemon.endpoint, shm_threshold=1 << 30, ring=False) as c:
        g = c.load(data("affine.yaml"))
        np.testing.assert_array_equal(c.run(g, {"x": x})["y"], x * 2 + 1)
        assert c.stats()["shm"]["regions"] == 0  # below the threshold: the socket
    with gexec.Client(daemon.endpoint, shm_threshold=1024, ring=False) as c:
        np.testing.assert_array_equal(c.run(g, {"x": x})["y"], x * 2 + 1)
        assert c.stats()["shm"]["regions"] == 1  # libgexec's own region took it
    assert _regions(daemon.endpoint) == 0  # gone with the client


def test_submit_and_threads_register_per_connection(daemon):
    """Concurrent calls use several connections: each registers the region
    when it first needs it, and every result is right. (Where an output
    lands is not asserted here: jobs merged by dynamic batching come back
    in frames.)"""
    with gexec.Client(daemon.endpoint) as c, gexec.SharedMemory(8 << 20) as shm:
        g = c.load(data("affine.yaml"))
        c.register(shm)
        k, n = 8, 4000
        xs = [shm.array((n, 3), np.float32, i * (n * 12 + 64)) for i in range(k)]
        for i, a in enumerate(xs):
            a[...] = _x(n, i)
        area = 1 << 20
        futs = [c.submit(g, {"x": xs[i]}, output_shm=(shm, area + i * (n * 12 + 64),
                                                      n * 12)) for i in range(k)]
        errors = []

        def worker(i):
            try:
                y = c.run(g, {"x": xs[i]}, output_shm=(shm, 4 * area + i * (n * 12 + 64),
                                                       n * 12))["y"]
                np.testing.assert_array_equal(y, _x(n, i) * 2 + 1)
            except Exception as e:  # reported below
                errors.append(e)

        ts = [threading.Thread(target=worker, args=(i,)) for i in range(k)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        assert not errors, errors
        for i, f in enumerate(futs):
            y = f.result()["y"]
            np.testing.assert_array_equal(y, _x(n, i) * 2 + 1)
        # every array over the region goes before it closes: the loop's
        # last Future too, whose output lies in the region unless its job
        # was merged by dynamic batching
        del futs, f, y, xs, a
        gc.collect()


def test_misuse_is_refused(daemon):
    x = _x(10)
    with gexec.Client(daemon.endpoint) as c:
        g = c.load(data("affine.yaml"))
        shm = gexec.SharedMemory(4096)
        with pytest.raises(gexec.InvalidInputError, match="not registered"):
            c.run(g, {"x": x}, output_shm=shm)
        with pytest.raises(gexec.InvalidInputError):
            c.unregister(shm)
        with pytest.raises(gexec.InvalidInputError):
            shm.array((4096,), np.float32)  # 16 kB in 4 kB
        with pytest.raises(gexec.InvalidInputError):
            gexec.SharedMemory(0)
        c.register(shm)
        with pytest.raises(gexec.InvalidInputError, match="outside"):
            c.run(g, {"x": x}, output_shm=(shm, 4000, 200))
        a = shm.array((2, 3), np.float32)
        with pytest.raises(BufferError):
            shm.close()  # an array over it is alive
        b = a[1]
        del a
        gc.collect()
        with pytest.raises(BufferError):
            shm.close()  # a view keeps it too
        del b
        gc.collect()
        shm.close()
        assert shm.closed
        assert c.stats()["shm"]["regions"] == 0  # close() unregistered it
        with pytest.raises(gexec.InvalidInputError, match="closed"):
            shm.array((1,), np.float32)
        with pytest.raises(gexec.InvalidInputError, match="closed"):
            c.register(shm)
        # the daemon keeps serving
        np.testing.assert_array_equal(c.run(g, {"x": x})["y"], x * 2 + 1)


def test_array_keeps_region_alive(daemon):
    with gexec.Client(daemon.endpoint) as c:
        g = c.load(data("affine.yaml"))
        shm = gexec.SharedMemory(1 << 16)
        c.register(shm)
        x = shm.array((100, 3), np.float32)
        x[...] = 1
        y = c.run(g, {"x": x}, output_shm=(shm, 4096))["y"]
        c.unregister(shm)
        del shm, x
        gc.collect()
        np.testing.assert_array_equal(y, np.full((100, 3), 3, np.float32))  # still mapped
        y[...] = 5
        assert float(y.sum()) == 1500.0


def test_input_is_read_in_the_region(daemon):
    """An input in a registered region is named by its place, not sent: a
    region whose file was truncated after registration is refused
    (GX_EIO) where a copy would have gone through."""
    with gexec.Client(daemon.endpoint) as c:
        g = c.load(data("affine.yaml"))
        shm = gexec.SharedMemory(1 << 20)
        c.register(shm)
        x = shm.array((1000, 3), np.float32)
        x[...] = 1
        np.testing.assert_array_equal(c.run(g, {"x": x})["y"], np.full((1000, 3), 3))
        os.truncate(f"/dev/shm/{shm.name}", 1 << 19)  # x's pages stay
        with pytest.raises(gexec.Error) as e:
            c.run(g, {"x": x})
        assert e.value.name == "GX_EIO" and "truncated" in e.value.message
        np.testing.assert_array_equal(c.run(g, {"x": x.copy()})["y"], np.full((1000, 3), 3))
        del x, e  # (the exception's traceback holds the inputs)
        gc.collect()
        shm.close()


def test_small_jobs_through_the_ring(daemon, monkeypatch):
    """On a local daemon libgexec sends small runs through its shared-memory
    ring (docs/shm.md, "Ring") by default; results are the socket's.
    GEXEC_RING=0 or ring=False keeps them on the socket."""
    x = _x(4)
    with gexec.Client(daemon.endpoint, shm_threshold=False, ring=False) as sock:
        g = sock.load(data("affine.yaml"))
        before = sock.stats()["ring"]["jobs"]
        want = sock.run(g, {"x": x})["y"]
        assert sock.stats()["ring"]["jobs"] == before  # ring=False: the socket
        with gexec.Client(daemon.endpoint) as c:
            for _ in range(5):
                assert c.run(g, {"x": x})["y"].tobytes() == want.tobytes()
        assert sock.stats()["ring"]["jobs"] == before + 5
        monkeypatch.setenv("GEXEC_RING", "0")
        with gexec.Client(daemon.endpoint) as c:
            assert c.run(g, {"x": x})["y"].tobytes() == want.tobytes()
        assert sock.stats()["ring"]["jobs"] == before + 5
