"""Failures: clear exceptions carrying the gexec status, a daemon that keeps
serving after bad requests, and an absent or stopped daemon that raises
instead of hanging."""

import os

import numpy as np
import pytest

import gexec
from conftest import Daemon, example, data


def _ok(client):
    """The daemon still serves: a correct run after the failures."""
    y = client.run(data("affine.yaml"), {"x": np.ones((1, 3), np.float32)})["y"]
    np.testing.assert_array_equal(y, np.full((1, 3), 3, np.float32))


def test_bad_inputs_raise_and_daemon_keeps_serving(client):
    g = client.load(example("mlp.yaml"))
    cases = [
        ({"x": np.ones((2, 2), np.float32)}, "GX_ESHAPE", "expected float32 [1,4]"),
        ({"x": np.ones((1, 4), np.int32)}, None, "got int32"),
        ({"nope": np.ones((1, 4), np.float32)}, None, "nope"),
        ({}, None, "x"),
    ]
    for inputs, name, text in cases:
        with pytest.raises(gexec.InvalidInputError) as ei:
            client.run(g, inputs)
        e = ei.value
        assert isinstance(e, gexec.Error) and isinstance(e, ValueError)
        assert e.status < 0 and e.name.startswith("GX_E")
        if name:
            assert e.name == name
        assert text in e.message and str(e) == f"{e.name}: {e.message}"
        assert not e.message.startswith(e.name)
        _ok(client)


def test_local_argument_errors(client):
    g = client.load(data("affine.yaml"))
    x = np.ones((1, 3), np.float32)
    with pytest.raises(gexec.InvalidInputError, match="unknown mode 'fast'.*seq"):
        client.run(g, {"x": x}, mode="fast")
    with pytest.raises(gexec.InvalidInputError, match="priority"):
        client.run(g, {"x": x}, priority=1000)
    with pytest.raises(gexec.InvalidInputError, match="deadline"):
        client.run(g, {"x": x}, deadline_ms=-5)
    with pytest.raises(gexec.InvalidInputError, match="no gexec dtype"):
        client.run(g, {"x": np.ones((1, 3), np.complex64)})
    with pytest.raises(gexec.InvalidInputError, match="at most 8"):
        client.run(g, {"x": np.ones((1,) * 9, np.float32)})
    with pytest.raises(TypeError):
        client.run(42, {"x": x})
    _ok(client)


def test_bad_graph_files(client, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\ninputs:\n  - {name: x, dtype: floaty, shape: [1]}\n")
    with pytest.raises(gexec.Error) as ei:
        client.load(bad)
    assert str(bad) in ei.value.message and ":3:" in ei.value.message  # file:line:column
    with pytest.raises(gexec.Error) as ei:
        client.load(tmp_path / "missing.yaml")
    assert "missing.yaml" in ei.value.message
    with pytest.raises(gexec.Error):
        client.load(b"\x08\x08\xff\xff garbage that is not a ModelProto", format="onnx")
    unknown_op = (b"name: u\ninputs:\n  - {name: x, dtype: float32, shape: [1]}\n"
                  b"nodes:\n  - {op: NoSuchOp, inputs: [x], outputs: [y]}\noutputs: [y]\n")
    with pytest.raises(gexec.InvalidInputError) as ei:
        client.load(unknown_op)
    assert ei.value.name == "GX_EOP" and "NoSuchOp" in ei.value.message
    with pytest.raises(gexec.InvalidInputError):
        client.run(unknown_op, {"x": np.ones(1, np.float32)})
    _ok(client)


def test_unknown_graph_id(client):
    g = client.load(data("affine.yaml"))
    g.id = "0" * 64
    with pytest.raises(gexec.InvalidInputError) as ei:
        client.run(g, {"x": np.ones((1, 3), np.float32)})
    assert ei.value.name == "GX_ENOTFOUND"
    _ok(client)


def test_absent_daemon_raises_connect_error(tmp_path):
    ep = f"ipc://{tmp_path}/nobody-listens.sock"
    with gexec.Client(ep, timeout_ms=300) as c:
        for call in (c.ping, c.stats, lambda: c.load(data("affine.yaml")),
                     lambda: c.run(data("affine.yaml"), {"x": np.ones((1, 3), np.float32)})):
            with pytest.raises(gexec.ConnectError) as ei:
                call()
            e = ei.value
            assert e.name == "GX_ECONNECT" and isinstance(e, ConnectionError)
            assert "nobody-listens.sock" in e.message and "is gexecd running?" in e.message
    # a submitted job ends only by the client's timeout: one long enough
    # that its future is surely not done 50 ms in, however loaded the machine
    with gexec.Client(ep, timeout_ms=2000) as c:
        f = c.submit(data("affine.yaml"), {"x": np.ones((1, 3), np.float32)})
        with pytest.raises(TimeoutError):
            f.result(timeout=0.05)
        with pytest.raises(gexec.ConnectError, match="within 2000 ms"):
            f.result()


def test_malformed_endpoint():
    with pytest.raises(gexec.InvalidInputError, match="bogus"):
        gexec.Client("bogus://where")


def test_stopped_daemon_raises_connect_error():
    d = Daemon()
    try:
        with gexec.Client(d.endpoint, timeout_ms=30000) as c:
            g = c.load(data("affine.yaml"))
            c.run(g, {"x": np.ones((1, 3), np.float32)})
            assert d.stop() == 0
            with pytest.raises(gexec.ConnectError) as ei:
                c.run(g, {"x": np.ones((1, 3), np.float32)})
            assert "gexecd.sock" in ei.value.message
    finally:
        d.stop()


def test_closed_client(endpoint):
    c = gexec.Client(endpoint)
    g = c.load(data("affine.yaml"))
    c.close()
    c.close()  # idempotent
    with pytest.raises(gexec.Error, match="closed"):
        c.run(g, {"x": np.ones((1, 3), np.float32)})


def test_library_path_is_the_one_asked_for():
    want = os.environ.get("GEXEC_LIBRARY")
    if not want:
        pytest.skip("GEXEC_LIBRARY not set")
    assert gexec.library_path == want


def test_missing_library_is_a_clear_import_error(tmp_path):
    import subprocess
    import sys
    env = dict(os.environ, GEXEC_LIBRARY=str(tmp_path / "libgexec.so.0"))
    p = subprocess.run([sys.executable, "-c", "import gexec"], env=env, capture_output=True,
                       text=True, timeout=60)
    assert p.returncode != 0
    assert "ImportError: gexec: cannot load libgexec" in p.stderr
    assert str(tmp_path / "libgexec.so.0") in p.stderr


def test_priority_above_the_limit_is_refused():
    d = Daemon(config="limits:\n  max_client_priority: 0\n  priority_users: []\n")
    try:
        with gexec.Client(d.endpoint) as c:
            g = c.load(data("affine.yaml"))
            with pytest.raises(gexec.PermissionDeniedError) as ei:
                c.run(g, {"x": np.ones((1, 3), np.float32)}, priority=50)
            assert ei.value.name == "GX_EPERM" and isinstance(ei.value, PermissionError)
            assert "max_client_priority" in ei.value.message
            y = c.run(g, {"x": np.ones((1, 3), np.float32)}, priority=0)["y"]
            np.testing.assert_array_equal(y, np.full((1, 3), 3, np.float32))
    finally:
        assert d.stop() == 0


def test_evicted_graph_is_loaded_again():
    """graphs.max 1: loading a second graph drops the first (idle); running,
    submitting or explaining the first loads it again, once, transparently."""
    d = Daemon(config="graphs:\n  max: 1\n")
    try:
        with gexec.Client(d.endpoint) as c:
            x = np.ones((1, 3), np.float32)
            g = c.load(data("affine.yaml"))
            mlp = c.load(example("mlp.yaml"))
            loads = c.stats()["loads"]
            np.testing.assert_array_equal(c.run(g, {"x": x})["y"], x * 3)
            c.load(example("mlp.yaml"))  # drops g again
            f = c.submit(g, {"x": x})
            np.testing.assert_array_equal(f.result()["y"], x * 3)
            c.run(mlp, {"x": np.load(example("mlp_input.npy"))})  # drops g
            assert c.explain(g, {"x": x})["steps"]
            assert c.stats()["loads"] >= loads + 5  # g, mlp, g, mlp, g
    finally:
        assert d.stop() == 0
