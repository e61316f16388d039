"""A small ONNX model written with a few lines of protobuf encoding, so the
tests need no ONNX package: y = Relu(MatMul(x, W) + b)."""

import numpy as np


def _varint(n):
    out = bytearray()
    n &= (1 << 64) - 1
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _key(field, wire):
    return _varint(field << 3 | wire)


def _int(field, n):
    return _key(field, 0) + _varint(n)


def _bytes(field, b):
    if isinstance(b, str):
        b = b.encode()
    return _key(field, 2) + _varint(len(b)) + b


def _tensor(name, a):
    a = np.ascontiguousarray(a, dtype=np.float32)
    return (b"".join(_int(1, d) for d in a.shape) + _int(2, 1) + _bytes(8, name)
            + _bytes(9, a.tobytes()))


def _value_info(name, shape):
    dims = b"".join(_bytes(1, _int(1, d) if isinstance(d, int) else _bytes(2, d))
                    for d in shape)
    tensor_type = _int(1, 1) + _bytes(2, dims)          # elem_type FLOAT, shape
    return _bytes(1, name) + _bytes(2, _bytes(1, tensor_type))


def _node(op, inputs, outputs, name):
    return (b"".join(_bytes(1, i) for i in inputs) + b"".join(_bytes(2, o) for o in outputs)
            + _bytes(3, name) + _bytes(4, op))


def mlp_model(w, b):
    """The bytes of a ModelProto (opset 17) computing Relu(x @ w + b) for
    x of shape [N, w.shape[0]] (N symbolic)."""
    graph = (_bytes(1, _node("MatMul", ["x", "W"], ["h"], "mm"))
             + _bytes(1, _node("Add", ["h", "b"], ["hb"], "bias"))
             + _bytes(1, _node("Relu", ["hb"], ["y"], "relu"))
             + _bytes(2, "tiny_mlp")
             + _bytes(5, _tensor("W", w)) + _bytes(5, _tensor("b", b))
             + _bytes(11, _value_info("x", ["N", w.shape[0]]))
             + _bytes(12, _value_info("y", ["N", w.shape[1]])))
    opset = _bytes(1, "") + _int(2, 17)
    return _int(1, 8) + _bytes(8, opset) + _bytes(7, graph)

