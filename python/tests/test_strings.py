"""String tensors (docs/strings.md): numpy str, bytes and object arrays in,
numpy str (or, for bytes that are not UTF-8, object) arrays out."""

import numpy as np
import pytest

import gexec

# s (strings) -> Cast to float32 -> f; StringConcat(s, s) -> cc; s -> Identity -> same
GRAPH = b"""
name: strings
inputs:
  - {name: s, dtype: string, shape: [3]}
outputs:
  - {name: f}
  - {name: cc}
  - {name: same}
nodes:
  - {op: Cast, inputs: [s], outputs: [f], attrs: {to: 1}}
  - {op: StringConcat, inputs: [s, s], outputs: [cc]}
  - {op: Identity, inputs: [s], outputs: [same]}
"""


def test_str_in_and_out(client):
    out = client.run(GRAPH, {"s": np.array(["1.5", "-2e1", "héllo"])})
    np.testing.assert_array_equal(out["f"][:2], np.array([1.5, -20], np.float32))
    assert np.isnan(out["f"][2])
    assert out["cc"].dtype.kind == "U"
    assert out["cc"].tolist() == ["1.51.5", "-2e1-2e1", "héllohéllo"]
    assert out["same"].tolist() == ["1.5", "-2e1", "héllo"]


def test_bytes_and_objects(client):
    out = client.run(GRAPH, {"s": np.array([b"a", b"", b"\xff"], dtype=object)})
    assert out["same"].dtype == object  # not UTF-8: the bytes as they are
    assert out["same"].tolist() == [b"a", b"", b"\xff"]
    out = client.run(GRAPH, {"s": np.array([b"1", b"2", b"3"])})  # numpy 'S'
    assert out["cc"].tolist() == ["11", "22", "33"]
    out = client.run(GRAPH, {"s": np.array(["x", b"y", "z"], dtype=object)})
    assert out["same"].tolist() == ["x", "y", "z"]


def test_bad_string_inputs(client):
    with pytest.raises(gexec.InvalidInputError, match="a string tensor takes str or bytes"):
        client.run(GRAPH, {"s": np.array(["x", 1, "z"], dtype=object)})
    with pytest.raises(gexec.Error):  # two strings where the graph wants three
        client.run(GRAPH, {"s": np.array(["x", "y"])})
    assert client.run(GRAPH, {"s": np.array(["4", "5", "6"])})["f"].tolist() == [4, 5, 6]
