"""Running graphs: YAML and ONNX, by path, bytes and loaded handle; dtypes;
outputs that own their buffers; explain and stats."""

import gc
import os

import numpy as np
import pytest

import gexec
from conftest import example, data, Daemon
from onnx_model import mlp_model

MLP_Y = np.array([[0.2624, 0.4392, 0.2984]], np.float32)  # examples/README.md


def test_mlp_yaml_by_path_bytes_and_handle(client):
    x = np.load(example("mlp_input.npy"))
    by_path = client.run(example("mlp.yaml"), {"x": x})
    with open(example("mlp.yaml"), "rb") as f:
        by_bytes = client.run(f.read(), {"x": x})
    g = client.load(example("mlp.yaml"))
    assert g.inputs == ["x"] and g.outputs == ["y"] and len(g.id) == 64
    by_id = client.run(g, {"x": x})
    for out in (by_path, by_bytes, by_id):
        assert list(out) == ["y"]
        assert out["y"].dtype == np.float32 and out["y"].shape == (1, 3)
        np.testing.assert_allclose(out["y"], MLP_Y, atol=1e-4)
    assert by_path["y"].tobytes() == by_id["y"].tobytes()


def test_loop_example_two_outputs(client):
    out = client.run(example("loop.yaml"), {"x": np.load(example("loop_input.npy"))})
    np.testing.assert_array_equal(out["total"], np.array([3.5, 29], np.float32))
    np.testing.assert_array_equal(out["partials"],
                                  np.array([[1.5, 9], [2.5, 19], [3.5, 29]], np.float32))


def test_cnn_example_every_mode(client):
    x = np.load(example("cnn_input.npy"))
    g = client.load(example("cnn.yaml"))
    ref = client.run(g, {"x": x}, mode="seq")["y"]
    assert ref.shape[0] == 1 and abs(float(ref.sum()) - 1.0) < 1e-4  # a softmax
    for mode in gexec.modes():
        f = client.submit(g, {"x": x}, mode=mode, priority=-5)
        y = f.result()["y"]
        # the daemon reports the mode it used (a combined mode it may narrow)
        assert f.info.mode in gexec.modes() and f.info.mode != "auto"
        if mode != "auto":  # the daemon says it was asked for this mode
            assert f.info.reason.startswith(f"requested {mode}:"), f.info.reason
        if mode == "seq":
            assert f.info.mode == "seq" and f.info.workers == 1
        np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-6)


def test_symbolic_batch_and_requested_outputs(client):
    g = client.load(data("affine.yaml"))
    for n in (1, 5, 64):
        x = np.arange(n * 3, dtype=np.float32).reshape(n, 3)
        np.testing.assert_array_equal(client.run(g, {"x": x})["y"], x * 2 + 1)
    out = client.run(example("loop.yaml"), {"x": np.load(example("loop_input.npy"))},
                     outputs=["partials"])
    assert list(out) == ["partials"] and out["partials"].shape == (3, 2)


def test_noncontiguous_and_byteswapped_inputs(client):
    g = client.load(data("affine.yaml"))
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    x = base[:, ::2]  # a strided view
    assert not x.flags.c_contiguous
    np.testing.assert_array_equal(client.run(g, {"x": x})["y"], x * 2 + 1)
    xs = np.arange(6, dtype=">f4").reshape(2, 3)  # big-endian
    np.testing.assert_array_equal(client.run(g, {"x": xs})["y"],
                                  xs.astype(np.float32) * 2 + 1)


def _identity_yaml(dtype_name):
    return (f"name: ident\ninputs:\n  - {{name: x, dtype: {dtype_name}, shape: [2, 3]}}\n"
            "nodes:\n  - {op: Identity, inputs: [x], outputs: [y]}\noutputs: [y]\n").encode()


@pytest.mark.parametrize("name", sorted(gexec.dtypes()))
def test_every_numpy_dtype_round_trips(client, name):
    npdt = gexec.dtypes()[name]
    rng = np.random.default_rng(7)
    if npdt == np.bool_:
        x = rng.integers(0, 2, (2, 3)).astype(np.bool_)
    elif npdt.kind == "f":
        x = rng.standard_normal((2, 3)).astype(npdt)
    else:
        info = np.iinfo(npdt)
        x = np.array([[info.min, info.max, 0], [1, 2, 3]], npdt)
    y = client.run(_identity_yaml(name), {"x": x})["y"]
    assert y.dtype == npdt and y.shape == x.shape
    assert y.tobytes() == x.tobytes()


def test_dtype_table_covers_the_library():
    names = gexec.dtypes()
    for n in ("float32", "float16", "float64", "int64", "int32", "int8", "uint8", "bool",
              "int16", "uint16", "uint32", "uint64"):
        assert np.dtype(n) == names[n]


def test_outputs_own_their_buffers(endpoint):
    c = gexec.Client(endpoint)
    g = c.load(data("affine.yaml"))
    x = np.arange(3000, dtype=np.float32).reshape(1000, 3)
    y = c.run(g, {"x": x})["y"]
    assert y.flags.writeable and y.flags.aligned and y.flags.c_contiguous
    assert not y.flags.owndata  # the gexec tensor's buffer, taken over (no copy)
    v = y[10:20]  # a view keeps the buffer alive as well
    del y
    c.close()
    del c
    gc.collect()
    np.testing.assert_array_equal(v, x[10:20] * 2 + 1)
    v += 1  # writable
    np.testing.assert_array_equal(v, x[10:20] * 2 + 2)


W = np.array([[1, -1, 0.5, 2], [0, 1, -2, 1], [3, 0, 1, -1]], np.float32)
B = np.array([0.5, -0.25, 0, 1], np.float32)


def _mlp_ref(x):
    return np.maximum(x @ W + B, 0)


def test_onnx_model_by_path_and_bytes(client, tmp_path):
    model = mlp_model(W, B)
    path = tmp_path / "tiny.onnx"
    path.write_bytes(model)
    x = np.array([[1, 2, 3], [-1, 0.5, 2], [0, 0, 0]], np.float32)
    g = client.load(path)
    assert g.inputs == ["x"] and g.outputs == ["y"]
    for graph in (g, str(path), model):
        y = client.run(graph, {"x": x})["y"]
        np.testing.assert_allclose(y, _mlp_ref(x), rtol=1e-6)
    assert client.load(model).id == g.id  # one canonical graph, one id
    assert client.load(model, format="onnx").id == g.id


ONNX_ADD = "/usr/share/libonnx-testdata/data/node/test_add/model.onnx"


@pytest.mark.skipif(not os.path.exists(ONNX_ADD), reason="libonnx-testdata not installed")
def test_onnx_node_test_model(client):
    g = client.load(ONNX_ADD)
    assert len(g.inputs) == 2
    rng = np.random.default_rng(1)
    a, b = (rng.standard_normal((3, 4, 5)).astype(np.float32) for _ in range(2))
    out = client.run(g, dict(zip(g.inputs, (a, b))))
    np.testing.assert_array_equal(out[g.outputs[0]], a + b)


def test_explain(client):
    g = client.load(example("mlp.yaml"))
    plan = client.explain(g)
    assert isinstance(plan, dict) and plan["steps"]
    assert client.explain(example("mlp.yaml"), {"x": np.load(example("mlp_input.npy"))})["steps"]
    with pytest.raises(gexec.InvalidInputError) as ei:
        client.explain(g, {"x": np.ones((7, 7), np.float32)})
    assert ei.value.name == "GX_ESHAPE" and not ei.value.message.startswith("GX_")


def test_stats_count_runs(client):
    before = client.stats()
    assert isinstance(before, dict) and before["workers"] >= 1
    g = client.load(data("affine.yaml"))
    for _ in range(3):
        client.run(g, {"x": np.ones((1, 3), np.float32)})
    after = client.stats()
    assert after["runs_ok"] >= before["runs_ok"] + 3


def test_default_endpoint_follows_gexec_socket(endpoint, monkeypatch):
    monkeypatch.setenv("GEXEC_SOCKET", endpoint)
    assert gexec.default_endpoint() == endpoint
    with gexec.Client() as c:
        assert c.endpoint == endpoint
        c.ping()


def test_empty_and_scalar_tensors(client):
    g = client.load(data("affine.yaml"))
    y = client.run(g, {"x": np.zeros((0, 3), np.float32)})["y"]
    assert y.shape == (0, 3) and y.dtype == np.float32
    scalar = (b"name: s\ninputs:\n  - {name: x, dtype: int64, shape: []}\n"
              b"nodes:\n  - {op: Neg, inputs: [x], outputs: [y]}\noutputs: [y]\n")
    y = client.run(scalar, {"x": np.int64(41)})["y"]
    assert y.shape == () and y.dtype == np.int64 and int(y) == -41


def test_several_daemons_one_client():
    """A comma-separated endpoint list: jobs alternate between the daemons,
    the graph loaded once runs on both, RunInfo.endpoint says where."""
    a, b = Daemon(), Daemon()
    try:
        with gexec.Client(f"{a.endpoint},{b.endpoint}", timeout_ms=30000) as c:
            g = c.load(example("mlp.yaml"))
            x = np.load(example("mlp_input.npy"))
            where = []
            for _ in range(4):
                f = c.submit(g, {"x": x})
                np.testing.assert_allclose(f.result()["y"], MLP_Y, atol=1e-4)
                where.append(f.info.endpoint)
            assert sorted(where) == sorted([a.endpoint, b.endpoint] * 2)
    finally:
        assert a.stop() == 0 and b.stop() == 0
