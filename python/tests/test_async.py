"""Futures, cancel and deadlines, made deterministic with a daemon of one
worker and a job (data/spin.yaml) that runs until it is cancelled or its
deadline expires: whatever is queued behind it stays queued."""

import threading

import numpy as np
import pytest

import gexec
from conftest import Daemon, data, wait_for

X2 = np.zeros(2, np.float32)
X3 = np.ones((1, 3), np.float32)


def _start_blocker(c, g, **kw):
    """Submit the spin job and wait until it occupies the one worker."""
    f = c.submit(g, {"x": X2}, **kw)
    wait_for(lambda: c.stats()["workers_busy"] == 1, "the spin job to start")
    return f


def _in_use(f):
    """Someone holds or waits for f's connection (its ticket lock): with no
    other caller, the thread waiting in f.result()."""
    lock = f._conn.lock
    return lock._next > lock._serving


def test_submit_many_then_collect(client):
    g = client.load(data("affine.yaml"))
    xs = [np.full((i + 1, 3), i, np.float32) for i in range(20)]
    fs = [client.submit(g, {"x": x}) for x in xs]
    for x, f in zip(reversed(xs), reversed(fs)):  # out of submission order
        np.testing.assert_array_equal(f.result()["y"], x * 2 + 1)
        assert f.done()
        assert f.info.compute_us >= 0 and f.info.device
        assert f.exception() is None
        assert f.cancel() is False  # its reply is in


def test_cancel_queued_job(spin):
    c, g = spin
    blocker = _start_blocker(c, g)
    try:
        queued = c.submit(data("affine.yaml"), {"x": X3})
        assert not queued.done()
        with pytest.raises(TimeoutError):
            queued.result(timeout=0.1)  # it cannot run while the spin job holds the worker
        assert queued.cancel() is True
        with pytest.raises(gexec.CancelledError) as ei:
            queued.result()
        assert ei.value.name == "GX_ECANCELLED" and "queued" in ei.value.message
        assert queued.exception() is ei.value
        assert queued.done() and queued.cancel() is False
    finally:
        assert blocker.cancel() is True
    with pytest.raises(gexec.CancelledError):
        blocker.result()
    # the worker is free again
    np.testing.assert_array_equal(c.run(data("affine.yaml"), {"x": X3})["y"], X3 * 3)


def test_cancel_running_job_from_another_thread(spin):
    c, g = spin
    blocker = _start_blocker(c, g)
    got = []

    def waiter():
        try:
            blocker.result(timeout=60)
            got.append("finished")
        except BaseException as e:  # recorded for the main thread's asserts
            got.append(e)

    t = threading.Thread(target=waiter)
    t.start()
    wait_for(lambda: not t.is_alive() or _in_use(blocker), "the waiter to wait")
    assert blocker.cancel() is True  # gets through while the waiter waits
    t.join(60)
    assert not t.is_alive()
    assert len(got) == 1 and isinstance(got[0], gexec.CancelledError), got
    assert "cancelled" in got[0].message
    assert c.stats()["cancelled"] >= 1


def test_future_not_held_up_by_a_waiting_run(spin):
    """A run() waiting in one thread (queued behind the spin job) does not
    hold the connection of a pending Future: cancel() gets through, and
    then the run goes ahead."""
    c, g = spin
    blocker = _start_blocker(c, g)
    done = []
    t = threading.Thread(target=lambda: done.append(c.run(data("affine.yaml"), {"x": X3})))
    t.start()
    wait_for(lambda: c.stats()["queue_length"] == 1, "the run to be queued")
    assert blocker.cancel() is True
    with pytest.raises(gexec.CancelledError):
        blocker.result()
    t.join(60)
    assert not t.is_alive() and len(done) == 1
    np.testing.assert_array_equal(done[0]["y"], X3 * 3)


def test_deadline_expires_in_queue(spin):
    c, g = spin
    blocker = _start_blocker(c, g)
    try:
        late = c.submit(data("affine.yaml"), {"x": X3}, deadline_ms=50)
        with pytest.raises(gexec.DeadlineError) as ei:
            late.result()
        assert ei.value.name == "GX_ETIMEDOUT" and "queued" in ei.value.message
        assert not blocker.done()  # it was never cancelled
    finally:
        blocker.cancel()
    with pytest.raises(gexec.CancelledError):
        blocker.result()


def test_deadline_expires_while_running(spin):
    c, g = spin
    with pytest.raises(gexec.DeadlineError) as ei:
        c.run(g, {"x": X2}, deadline_ms=100)
    assert "deadline expired" in ei.value.message
    assert ei.value.info is not None  # the daemon answered (it says how, if it ran)
    f = c.submit(g, {"x": X2}, deadline_ms=100)
    assert isinstance(f.exception(), gexec.DeadlineError)



def test_close_while_a_thread_waits():
    """close() gets through while another thread waits on a Future, which
    then raises instead of waiting on a closed connection."""
    d = Daemon("--cpus", "0")
    try:
        c = gexec.Client(d.endpoint, timeout_ms=30000)
        blocker = _start_blocker(c, c.load(data("spin.yaml")))
        got = []

        def waiter():
            try:
                blocker.result(timeout=60)
                got.append("finished")
            except BaseException as e:  # recorded for the main thread's asserts
                got.append(e)

        t = threading.Thread(target=waiter)
        t.start()
        wait_for(lambda: not t.is_alive() or _in_use(blocker), "the waiter to wait")
        c.close()
        t.join(60)
        assert not t.is_alive()
        assert len(got) == 1 and isinstance(got[0], gexec.Error), got
        assert "closed" in got[0].message
        assert blocker.cancel() is False and blocker.done()
    finally:
        assert d.stop() == 0  # the spin job is cancelled by the shutdown


def test_priority_is_passed(spin):
    """Behind the running spin job, a quick job at priority -50 and then a
    second spin job at -10: once the first is cancelled the second runs
    (forever) and the quick one stays queued; in arrival order the quick
    one would have run first and finished."""
    c, g = spin
    affine = c.load(data("affine.yaml"))  # compiled now: its run is one queued job
    first = _start_blocker(c, g)
    quick = c.submit(affine, {"x": X3}, priority=-50)
    second = c.submit(g, {"x": X2}, priority=-10)
    assert first.cancel() is True
    with pytest.raises(gexec.CancelledError):
        first.result()

    def settled():
        s = c.stats()
        return s["workers_busy"] == 1 and (s["queue_length"] == 1 or quick.done())

    wait_for(settled, "the second spin job to run")
    try:
        assert not quick.done() and c.stats()["queue_length"] == 1
    finally:
        assert second.cancel() is True
    with pytest.raises(gexec.CancelledError):
        second.result()
    np.testing.assert_array_equal(quick.result()["y"], X3 * 3)


def test_reply_received_before_close_is_kept(one_worker):
    """Two Futures on one connection of a one-worker daemon: the first
    finishes first, so waiting for the second receives the first's reply
    too; after close() the first still gives its outputs."""
    c = gexec.Client(one_worker.endpoint, timeout_ms=30000)
    g = c.load(data("affine.yaml"))
    f1 = c.submit(g, {"x": X3}, mode="seq")  # one job at a time, in order
    f2 = c.submit(g, {"x": X3 * 2}, mode="seq")
    assert f1._conn is f2._conn
    np.testing.assert_array_equal(f2.result()["y"], X3 * 5)
    c.close()
    np.testing.assert_array_equal(f1.result()["y"], X3 * 3)
