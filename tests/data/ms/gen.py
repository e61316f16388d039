#!/usr/bin/python3
"""Write the small ONNX models of check_onnx_ms (tests/check_onnx_ms.c).

Each is an ordinary ai.onnx model in which ONNX Runtime's graph
optimizations put com.microsoft contrib ops when it saves the model
optimized: the test has ORT save it, runs the saved model through gexec and
compares with ORT's outputs on this original.

    /usr/bin/python3 tests/data/ms/gen.py tests/data/ms
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(12)


def w(name, *shape, scale=0.3):
    return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)


def save(path, nodes, inputs, outputs, inits, opset=17):
    g = helper.make_graph(nodes, path.split("/")[-1], inputs, outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, path)


def vi(name, *shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, list(shape))


def gelu_nodes(x, y, p):
    """x * 0.5 * (1 + erf(x / sqrt(2))), as torch exports it"""
    return [
        helper.make_node("Div", [x, p + "sqrt2"], [p + "d"]),
        helper.make_node("Erf", [p + "d"], [p + "e"]),
        helper.make_node("Add", [p + "e", p + "one"], [p + "a"]),
        helper.make_node("Mul", [x, p + "a"], [p + "m"]),
        helper.make_node("Mul", [p + "m", p + "half"], [y]),
    ], [numpy_helper.from_array(np.array(v, np.float32), p + n)
        for n, v in (("sqrt2", np.sqrt(2)), ("one", 1.0), ("half", 0.5))]


def cnn(path):
    """Conv + BN + Relu, Conv + LeakyRelu, Conv + Clip, Conv + Sigmoid,
    Conv + HardSigmoid, Conv + Tanh: FusedConv with each activation"""
    nodes, inits = [], []
    c, x = 3, "x"
    acts = [("Relu", {}), ("LeakyRelu", {"alpha": 0.2}), ("Clip", None), ("Sigmoid", {}),
            ("HardSigmoid", {"alpha": 0.3, "beta": 0.4}), ("Tanh", {})]
    for i, (act, attrs) in enumerate(acts):
        o = 4
        inits += [w(f"w{i}", o, c, 3, 3), w(f"b{i}", o)]
        nodes.append(helper.make_node("Conv", [x, f"w{i}", f"b{i}"], [f"c{i}"],
                                      kernel_shape=[3, 3], pads=[1, 1, 1, 1]))
        y = f"c{i}"
        if i == 0:
            inits += [numpy_helper.from_array(np.abs(rng.standard_normal(o)).astype(np.float32) + 0.5, n)
                      for n in ("bs", "bv")]
            inits += [w("bb", o), w("bm", o)]
            nodes.append(helper.make_node("BatchNormalization", [y, "bs", "bb", "bm", "bv"], ["bn"]))
            y = "bn"
        if act == "Clip":
            inits += [numpy_helper.from_array(np.array(v, np.float32), n)
                      for n, v in (("lo", -0.5), ("hi", 0.6))]
            nodes.append(helper.make_node("Clip", [y, "lo", "hi"], [f"a{i}"]))
        else:
            nodes.append(helper.make_node(act, [y], [f"a{i}"], **attrs))
        x, c = f"a{i}", o
    nodes.append(helper.make_node("Identity", [x], ["y"]))
    save(path, nodes, [vi("x", 2, 3, 6, 6)], [vi("y", 2, 4, 6, 6)], inits)


def mlp(path):
    """MatMul + Add + erf Gelu (Gelu), x * Sigmoid(x) (QuickGelu), Gemm"""
    g, gi = gelu_nodes("h", "g", "g_")
    nodes = [helper.make_node("MatMul", ["x", "w0"], ["m"]),
             helper.make_node("Add", ["m", "b0"], ["h"])] + g + [
        helper.make_node("Sigmoid", ["g"], ["s"]),
        helper.make_node("Mul", ["g", "s"], ["q"]),
        helper.make_node("Gemm", ["q", "w1", "b1"], ["y"], transB=1)]
    save(path, nodes, [vi("x", 4, 8)], [vi("y", 4, 5)],
         [w("w0", 8, 16), w("b0", 16), w("w1", 5, 16), w("b1", 5)] + gi)


def block(path):
    """A transformer block: attention with a scaled Q K^T (FusedMatMul),
    residual + LayerNorm (SkipLayerNormalization), an erf Gelu MLP"""
    b, s, h = 2, 5, 8
    g, gi = gelu_nodes("f1", "fg", "g_")
    nodes = [
        helper.make_node("MatMul", ["x", "wq"], ["q"]),
        helper.make_node("MatMul", ["x", "wk"], ["k"]),
        helper.make_node("MatMul", ["x", "wv"], ["v"]),
        helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),
        helper.make_node("MatMul", ["q", "kt"], ["qk"]),
        helper.make_node("Div", ["qk", "scale"], ["qks"]),
        helper.make_node("Softmax", ["qks"], ["p"], axis=-1),
        helper.make_node("MatMul", ["p", "v"], ["att"]),
        helper.make_node("MatMul", ["att", "wo"], ["o"]),
        helper.make_node("Add", ["o", "x"], ["r1"]),
        helper.make_node("LayerNormalization", ["r1", "g1", "b1"], ["n1"], axis=-1, epsilon=1e-5),
        helper.make_node("MatMul", ["n1", "wf1"], ["f0"]),
        helper.make_node("Add", ["f0", "bf1"], ["f1"])] + g + [
        helper.make_node("MatMul", ["fg", "wf2"], ["f2"]),
        helper.make_node("Add", ["f2", "n1"], ["r2"]),
        helper.make_node("LayerNormalization", ["r2", "g2", "b2"], ["y"], axis=-1, epsilon=1e-5)]
    inits = [w(n, h, h) for n in ("wq", "wk", "wv", "wo")] + [
        numpy_helper.from_array(np.array(np.sqrt(h), np.float32), "scale"),
        w("g1", h), w("b1", h), w("g2", h), w("b2", h),
        w("wf1", h, 2 * h), w("bf1", 2 * h), w("wf2", 2 * h, h)] + gi
    save(path, nodes, [vi("x", b, s, h)], [vi("y", b, s, h)], inits)


def dq_mlp(path):
    """DynamicQuantizeLinear + MatMulInteger + scales (DynamicQuantizeMatMul)"""
    bw = rng.integers(-100, 100, (8, 6)).astype(np.int8)
    nodes = [
        helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"]),
        helper.make_node("MatMulInteger", ["xq", "bw", "xz"], ["mi"]),
        helper.make_node("Cast", ["mi"], ["mf"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["xs", "bs"], ["sc"]),
        helper.make_node("Mul", ["mf", "sc"], ["mm"]),
        helper.make_node("Add", ["mm", "bias"], ["y"])]
    inits = [numpy_helper.from_array(bw, "bw"),
             numpy_helper.from_array(np.array(0.02, np.float32), "bs"), w("bias", 6)]
    save(path, nodes, [vi("x", 4, 8)], [vi("y", 4, 6)], inits)


def qconv(path):
    """QuantizeLinear, QLinearConv, DequantizeLinear: at ORT_ENABLE_ALL the
    NHWC QLinearConv of com.microsoft (channels_last)"""
    wq = rng.integers(-60, 60, (8, 4, 3, 3)).astype(np.int8)
    sc = lambda n, v: numpy_helper.from_array(np.array(v, np.float32), n)
    zp = lambda n, v, t: numpy_helper.from_array(np.array(v, t), n)
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
        helper.make_node("QLinearConv", ["xq", "xs", "xz", "wq", "ws", "wz", "ys", "yz", "bq"],
                         ["yq"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("DequantizeLinear", ["yq", "ys", "yz"], ["y"])]
    inits = [sc("xs", 0.02), zp("xz", 128, np.uint8), numpy_helper.from_array(wq, "wq"),
             sc("ws", 0.01), zp("wz", 0, np.int8), sc("ys", 0.05), zp("yz", 120, np.uint8),
             numpy_helper.from_array(rng.integers(-500, 500, 8).astype(np.int32), "bq")]
    save(path, nodes, [vi("x", 1, 4, 7, 7)], [vi("y", 1, 8, 4, 4)], inits)


def qdq_ops(path):
    """QDQ around Add, Mul, Sigmoid, LeakyRelu, Concat, GlobalAveragePool:
    QLinearAdd, QLinearMul, QLinearSigmoid, QLinearLeakyRelu, QLinearConcat,
    QLinearGlobalAveragePool"""
    c = lambda n, v, t=np.float32: numpy_helper.from_array(np.array(v, t), n)
    nodes = [helper.make_node("Neg", ["x"], ["x2"])]
    inits = [c("s", 0.05), c("z", 128, np.uint8), c("s2", 0.03), c("z2", 100, np.uint8)]

    def qdq(x, y, s="s", z="z"):
        nodes.append(helper.make_node("QuantizeLinear", [x, s, z], [y + "q"]))
        nodes.append(helper.make_node("DequantizeLinear", [y + "q", s, z], [y]))

    qdq("x", "xd")
    qdq("x2", "x2d")
    nodes.append(helper.make_node("Add", ["xd", "x2d"], ["a"]))
    qdq("a", "ad", "s2", "z2")
    nodes.append(helper.make_node("Mul", ["ad", "xd"], ["m"]))
    qdq("m", "md")
    nodes.append(helper.make_node("Sigmoid", ["md"], ["sg"]))
    qdq("sg", "sgd", "s2", "z2")
    nodes.append(helper.make_node("LeakyRelu", ["sgd"], ["lr"], alpha=0.1))
    qdq("lr", "lrd")
    nodes.append(helper.make_node("Concat", ["lrd", "xd"], ["cc"], axis=1))
    qdq("cc", "ccd")
    nodes.append(helper.make_node("GlobalAveragePool", ["ccd"], ["gp"]))
    qdq("gp", "y", "s2", "z2")
    save(path, nodes, [vi("x", 1, 4, 4, 4)], [vi("y", 1, 8, 1, 1)], inits)


def nchwc_cnn(path):
    """What ORT_ENABLE_ALL turns into com.microsoft.nchwc ops on CPUs with
    NCHWc kernels: Conv 3->16 (NCHW input), Conv 16->32 + Relu, depthwise
    Conv + Clip, a residual Add (the Conv's Sum input), MaxPool,
    AveragePool, Conv 32->20 (padded output channels) + HardSigmoid,
    Upsample (Resize nearest and linear), GlobalAveragePool and
    GlobalMaxPool"""
    nodes, inits = [], []

    def conv(x, y, o, c, k=3, group=1, act=None, **attrs):
        i = len(inits)
        inits.extend([w(f"cw{i}", o, c // group, k, k), w(f"cb{i}", o)])
        out = y if act is None else y + "_c"
        nodes.append(helper.make_node("Conv", [x, f"cw{i}", f"cb{i}"], [out], group=group,
                                      kernel_shape=[k, k], pads=[k // 2] * 4, **attrs))
        if act == "Clip":
            nodes.append(helper.make_node("Clip", [out, "lo", "hi"], [y]))
        elif act is not None:
            nodes.append(helper.make_node(act, [out], [y]))

    inits_c = [numpy_helper.from_array(np.array(v, np.float32), n)
               for n, v in (("lo", 0.0), ("hi", 6.0))]
    conv("x", "a", 16, 3, act="Relu")
    conv("a", "b", 32, 16, act="Relu")
    conv("b", "c", 32, 32, group=32, act="Clip")
    conv("c", "d", 32, 32, k=1)
    nodes.append(helper.make_node("Add", ["d", "b"], ["e"]))
    nodes.append(helper.make_node("Relu", ["e"], ["e2"]))
    nodes.append(helper.make_node("MaxPool", ["e2"], ["f"], kernel_shape=[2, 2], strides=[2, 2]))
    nodes.append(helper.make_node("AveragePool", ["f"], ["g"], kernel_shape=[3, 3],
                                  pads=[1, 1, 1, 1], count_include_pad=0))
    conv("g", "h", 20, 32, act="HardSigmoid", strides=[2, 2])
    nodes.append(helper.make_node("Resize", ["h", "", "sc"], ["u"], mode="nearest"))
    conv("u", "u1", 32, 20, k=1)
    nodes.append(helper.make_node("Resize", ["u1", "", "sc"], ["u1r"], mode="nearest",
                                  coordinate_transformation_mode="asymmetric",
                                  nearest_mode="floor"))
    conv("u1r", "u2", 32, 32, k=1, act="Relu")
    nodes.append(helper.make_node("Resize", ["u2", "", "sc"], ["v"], mode="linear"))
    nodes.append(helper.make_node("GlobalAveragePool", ["v"], ["ga"]))
    nodes.append(helper.make_node("GlobalMaxPool", ["v"], ["gm"]))
    nodes.append(helper.make_node("Concat", ["ga", "gm"], ["y"], axis=1))
    inits_c.append(numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "sc"))
    save(path, nodes, [vi("x", 2, 3, 16, 16)], [vi("y", 2, 64, 1, 1)], inits + inits_c)


# Models written with com.microsoft ops by hand, in the forms
# onnxruntime.transformers' fusions write (ORT runs them as they are).


def save_ms(path, nodes, inputs, outputs, inits):
    g = helper.make_graph(nodes, path.split("/")[-1], inputs, outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17),
                                            helper.make_opsetid("com.microsoft", 1)])
    m.ir_version = 8
    onnx.save(m, path)


def vi32(name, *shape):
    return helper.make_tensor_value_info(name, TensorProto.INT32, list(shape))


def attention(name, mask=None, past=False, attn_bias=False, qkv=None, present=False, **attrs):
    """Attention on x [2, 5, 8] with packed weights and bias, 2 heads;
    mask: the shape of the int32 input 'mask' (mask_index)"""
    hq, hk, hv = qkv or (8, 8, 8)
    ins = ["x", "w", "b", "mask" if mask else "", "past" if past else "",
           "attn_bias" if attn_bias else ""]
    while not ins[-1]:
        ins.pop()
    outs = ["y"] + (["present"] if present else [])
    if qkv:
        attrs["qkv_hidden_sizes"] = list(qkv)
    node = helper.make_node("Attention", ins, outs, domain="com.microsoft", num_heads=2, **attrs)
    inputs = [vi("x", 2, 5, 8)]
    if mask:
        inputs.append(vi32("mask", *mask))
    if past:
        inputs.append(vi("past", 2, 2, 2, 3, hk // 2))
    if attn_bias:
        inputs.append(vi("attn_bias", 1, 2, 5, 5 + (3 if past else 0)))
    outputs = [vi("y", 2, 5, hv)] + ([vi("present", 2, 2, 2, 8, hk // 2)] if present else [])
    return lambda path: save_ms(path, [node], inputs, outputs,
                                [w("w", 8, hq + hk + hv), w("b", hq + hk + hv)])


def attn_reduce(path):
    """Attention whose mask_index is made as the transformer fusions make
    it: ReduceSum of the [B, S] attention mask over axis 1, Cast to int32
    (its rank known from no declaration, only from the nodes)"""
    nodes = [helper.make_node("ReduceSum", ["mask", "ax"], ["len64"], keepdims=0),
             helper.make_node("Cast", ["len64"], ["len"], to=TensorProto.INT32),
             helper.make_node("Attention", ["x", "w", "b", "len"], ["y"], domain="com.microsoft",
                              num_heads=2)]
    inits = [w("w", 8, 24), w("b", 24), numpy_helper.from_array(np.array([1], np.int64), "ax")]
    save_ms(path, nodes, [vi("x", 2, 5, 8), vi32("mask", 2, 5)], [vi("y", 2, 5, 8)], inits)


def mha_bnsh(path):
    """MultiHeadAttention with 4-D key and value [B, N, L, H] (a cross
    attention cache), bias and key lengths"""
    nodes = [helper.make_node("MatMul", ["x", "wq"], ["q"]),
             helper.make_node("MultiHeadAttention", ["q", "key", "value", "b", "mask"], ["y"],
                              domain="com.microsoft", num_heads=2)]
    save_ms(path, nodes, [vi("x", 2, 5, 8), vi("key", 2, 2, 6, 4), vi("value", 2, 2, 6, 4),
                          vi32("mask", 2)], [vi("y", 2, 5, 8)], [w("wq", 8, 8), w("b", 24)])


def mha(name, mask=None, past=False, attn_bias=False, present=False, bias=True, cross=True,
        **attrs):
    """MultiHeadAttention of x [2, 5, 8] (query) and kv [2, 6, 8] (cross)
    or x projected by MatMuls (key, value), 2 heads"""
    kv = "kv" if cross else "x"
    nodes = [helper.make_node("MatMul", ["x", "wq"], ["q"]),
             helper.make_node("MatMul", [kv, "wk"], ["k"]),
             helper.make_node("MatMul", [kv, "wv"], ["v"])]
    ins = ["q", "k", "v", "b" if bias else "", "mask" if mask else "",
           "attn_bias" if attn_bias else "", "past_key" if past else "",
           "past_value" if past else ""]
    while not ins[-1]:
        ins.pop()
    outs = ["y"] + (["present_key", "present_value"] if present else [])
    nodes.append(helper.make_node("MultiHeadAttention", ins, outs, domain="com.microsoft",
                                  num_heads=2, **attrs))
    t = (6 if cross else 5) + (3 if past else 0)
    inputs = [vi("x", 2, 5, 8)] + ([vi("kv", 2, 6, 8)] if cross else [])
    if mask:
        inputs.append(vi32("mask", *mask))
    if attn_bias:
        inputs.append(vi("attn_bias", 2, 1, 5, t))
    if past:
        inputs += [vi("past_key", 2, 2, 3, 4), vi("past_value", 2, 2, 3, 4)]
    outputs = [vi("y", 2, 5, 8)]
    if present:
        outputs += [vi("present_key", 2, 2, t, 4), vi("present_value", 2, 2, t, 4)]
    inits = [w("wq", 8, 8), w("wk", 8, 8), w("wv", 8, 8)] + ([w("b", 24)] if bias else [])
    return lambda path: save_ms(path, nodes, inputs, outputs, inits)


def fmm_batch(path):
    """FusedMatMul with transBatchA/transBatchB (and transA/transB)"""
    nodes = [helper.make_node("FusedMatMul", ["x", "a"], ["y1"], domain="com.microsoft",
                              transBatchB=1, alpha=0.5),
             helper.make_node("FusedMatMul", ["y1", "b"], ["y2"], domain="com.microsoft",
                              transBatchA=1, transA=1),
             helper.make_node("FusedMatMul", ["y2", "c"], ["y"], domain="com.microsoft",
                              transBatchA=1, transBatchB=1, transB=1)]
    # x [2, 5, 8] @ a [8, 2, 3] read [2, 8, 3] -> y1 [2, 5, 3], read [5, 3, 2]
    # @ b [5, 2, 4] -> y2 [5, 3, 4], read [3, 5, 4] @ c [7, 3, 4] read
    # [3, 4, 7] -> y [3, 5, 7]; y1 and y2 have their rank in value_info
    g = helper.make_graph(nodes, "fmm_batch", [vi("x", 2, 5, 8)], [vi("y", 3, 5, 7)],
                          [w("a", 8, 2, 3), w("b", 5, 2, 4), w("c", 7, 3, 4)],
                          value_info=[vi("y1", 2, 5, 3), vi("y2", 5, 3, 4)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17),
                                            helper.make_opsetid("com.microsoft", 1)])
    m.ir_version = 8
    onnx.save(m, path)


DIRECT = {
    "attn_lengths": attention("attn_lengths", mask=(2,)),
    "attn_end_start": attention("attn_end_start", mask=(4,), mask_filter_value=-1000.0),
    "attn_mask2d": attention("attn_mask2d", mask=(2, 5), scale=0.4),
    "attn_mask3d": attention("attn_mask3d", mask=(2, 5, 5)),
    "attn_causal": attention("attn_causal", unidirectional=1),
    "attn_gpt2": attention("attn_gpt2", mask=(2, 8), past=True, present=True, unidirectional=1),
    "attn_qkv": attention("attn_qkv", qkv=(8, 8, 12), attn_bias=True, unidirectional=1),
    "mha_cross": mha("mha_cross", mask=(2,)),
    "mha_self": mha("mha_self", mask=(2, 8), past=True, present=True, attn_bias=True,
                    unidirectional=1, bias=False, cross=False),
    "fmm_batch": fmm_batch,
    "attn_reduce": attn_reduce,
    "mha_bnsh": mha_bnsh,
}


def qmbv2(path):
    """A quantized MobileNetV2 block, static QDQ as ONNX Runtime writes it:
    QLinearConv 1x1 21 -> 63 (uint8 weights, zero point 3), depthwise 3x3
    and 1x1 63 -> 21 (int8, per-channel scales), the residual Add between
    DequantizeLinear and QuantizeLinear (QLinearAdd at ORT_ENABLE_EXTENDED);
    gexec runs the QLinearConvs in NHWC"""
    c, e = 21, 63
    sc = lambda n, v: numpy_helper.from_array(np.array(v, np.float32), n)
    zp = lambda n, v, t: numpy_helper.from_array(np.array(v, t), n)
    inits = [sc("s", 0.025), zp("z", 128, np.uint8), sc("s1", 0.03), zp("z1", 110, np.uint8),
             sc("s2", 0.035), zp("z2", 140, np.uint8), sc("s3", 0.03), zp("z3", 125, np.uint8)]
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"])]

    def qconv(x, xs, xz, y, ys, yz, m, cg, k, group, wdt, wzp):
        n = y + "."
        if wdt == np.uint8:
            wq = rng.integers(0, 256, (m, cg, k, k)).astype(np.uint8)
            ws, wz = sc(n + "ws", 0.004), zp(n + "wz", wzp, np.uint8)
        else:
            wq = rng.integers(-127, 128, (m, cg, k, k)).astype(np.int8)
            ws = numpy_helper.from_array((rng.random(m) * 0.004 + 0.002).astype(np.float32),
                                         n + "ws")
            wz = numpy_helper.from_array(np.zeros(m, np.int8), n + "wz")
        inits.extend([numpy_helper.from_array(wq, n + "w"), ws, wz,
                      numpy_helper.from_array(rng.integers(-300, 300, m).astype(np.int32),
                                              n + "b")])
        nodes.append(helper.make_node(
            "QLinearConv", [x, xs, xz, n + "w", n + "ws", n + "wz", ys, yz, n + "b"], [y],
            kernel_shape=[k, k], pads=[k // 2] * 4, group=group))

    qconv("xq", "s", "z", "eq", "s1", "z1", e, c, 1, 1, np.uint8, 3)
    qconv("eq", "s1", "z1", "dq", "s2", "z2", e, 1, 3, e, np.int8, 0)
    qconv("dq", "s2", "z2", "pq", "s3", "z3", c, e, 1, 1, np.int8, 0)
    nodes += [helper.make_node("DequantizeLinear", ["pq", "s3", "z3"], ["p"]),
              helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["xd"]),
              helper.make_node("Add", ["p", "xd"], ["a"]),
              helper.make_node("QuantizeLinear", ["a", "s", "z"], ["aq"]),
              helper.make_node("DequantizeLinear", ["aq", "s", "z"], ["y"])]
    save(path, nodes, [vi("x", 1, c, 13, 11)], [vi("y", 1, c, 13, 11)], inits)


# ---- com.microsoft ops of exported LLMs (written by hand; each model with
# its own random generator, so the models above stay as they are) ----


def pack_bits(q, bits):
    """uint8 values q [..., n] (each < 2^bits) packed low bits first"""
    per = 8 // bits
    q = q.reshape(*q.shape[:-1], -1, per).astype(np.uint32)
    return sum(q[..., i] << (i * bits) for i in range(per)).astype(np.uint8)


def matmul_nbits(name, K, N, bits, bs, zp=None, bias=False, shape=(2, 3), seed=0, **attrs):
    """MatMulNBits of x [*shape, K] with random B [N, K] of bits-wide
    values in blocks of bs; zp: None, "u8" (packed) or "f32" """
    r = np.random.default_rng(seed)
    kb = (K + bs - 1) // bs
    q = r.integers(0, 1 << bits, (N, kb * bs)).astype(np.uint8)
    inits = [numpy_helper.from_array(pack_bits(q, bits).reshape(N, kb, bs * bits // 8), "B"),
             numpy_helper.from_array(r.uniform(0.02, 0.2, N * kb).astype(np.float32), "scales")]
    ins = ["x", "B", "scales"]
    if zp == "u8":
        zrow = (kb * bits + 7) // 8
        z = r.integers(0, 1 << bits, (N, zrow * (8 // bits))).astype(np.uint8)
        inits.append(numpy_helper.from_array(pack_bits(z, bits).reshape(-1), "zp"))
    elif zp == "f32":
        inits.append(numpy_helper.from_array(
            r.uniform(0, (1 << bits) - 1, N * kb).astype(np.float32), "zp"))
    ins.append("zp" if zp else "")
    if bias:
        inits.append(numpy_helper.from_array(r.standard_normal(N).astype(np.float32), "bias"))
        ins += ["", "bias"]
    while not ins[-1]:
        ins.pop()
    node = helper.make_node("MatMulNBits", ins, ["y"], domain="com.microsoft", K=K, N=N,
                            bits=bits, block_size=bs, **attrs)
    return lambda path: save_ms(path, [node], [vi("x", *shape, K)], [vi("y", *shape, N)], inits)


def rotary(name, x_shape, pos, max_pos=16, half=2, seed=0, **attrs):
    """com.microsoft RotaryEmbedding of x with position_ids pos (a
    constant of the model) and random caches [max_pos, half]"""
    r = np.random.default_rng(seed)
    pos = np.array(pos, np.int64)
    inits = [numpy_helper.from_array(pos, "pos"),
             numpy_helper.from_array(r.uniform(-1, 1, (max_pos, half)).astype(np.float32), "cos"),
             numpy_helper.from_array(r.uniform(-1, 1, (max_pos, half)).astype(np.float32), "sin")]
    node = helper.make_node("RotaryEmbedding", ["x", "pos", "cos", "sin"], ["y"],
                            domain="com.microsoft", **attrs)
    return lambda path: save_ms(path, [node], [vi("x", *x_shape)], [vi("y", *x_shape)], inits)

def gqa(name, B=2, S=4, P=0, N=4, KV=2, H=8, packed=False, rot=0, seed=0, **attrs):
    """com.microsoft GroupQueryAttention, N query and KV key/value heads of
    size H, S new tokens after a past of P; rot: rotary caches [16, rot]
    (0: no do_rotary). Inputs query (key, value unless packed), past_key,
    past_value (P > 0), seqlens_k [B] and total_sequence_length (int32)."""
    r = np.random.default_rng(seed)
    ins = ["query", "" if packed else "key", "" if packed else "value",
           "past_key" if P else "", "past_value" if P else "", "seqlens_k", "total"]
    inputs = [vi("query", B, S, (N + 2 * KV) * H if packed else N * H)]
    if not packed:
        inputs += [vi("key", B, S, KV * H), vi("value", B, S, KV * H)]
    if P:
        inputs += [vi("past_key", B, KV, P, H), vi("past_value", B, KV, P, H)]
    inputs += [vi32("seqlens_k", B), vi32("total")]
    inits = []
    if rot:
        ins += ["cos", "sin"]
        inits = [numpy_helper.from_array(r.uniform(-1, 1, (16, rot)).astype(np.float32), "cos"),
                 numpy_helper.from_array(r.uniform(-1, 1, (16, rot)).astype(np.float32), "sin")]
        attrs["do_rotary"] = 1
    node = helper.make_node("GroupQueryAttention", ins, ["y", "present_key", "present_value"],
                            domain="com.microsoft", num_heads=N, kv_num_heads=KV, **attrs)
    outputs = [vi("y", B, S, N * H), vi("present_key", B, KV, P + S, H),
               vi("present_value", B, KV, P + S, H)]
    return lambda path: save_ms(path, [node], inputs, outputs, inits)


def hand_gqa(path):
    """Two GroupQueryAttention nodes small enough to work out by hand
    (check_onnx_ms's test_onnx_ms_hand_gqa): g1 of 2 query heads on 1
    key/value head of size 2, 2 tokens, no past, scale ln 3; g2 of one head
    of size 2 with a past of 1 and do_rotary (caches [4, 1]: the new token
    at position 1 has cos 0 and sin 1)."""
    n1 = helper.make_node("GroupQueryAttention", ["q1", "k1", "v1", "", "", "sl1", "t1"],
                          ["y1", "pk1", "pv1"], domain="com.microsoft", num_heads=2,
                          kv_num_heads=1, scale=float(np.log(3.0)))
    n2 = helper.make_node("GroupQueryAttention",
                          ["q2", "k2", "v2", "past_k2", "past_v2", "sl2", "t2", "cos", "sin"],
                          ["y2", "pk2", "pv2"], domain="com.microsoft", num_heads=1,
                          kv_num_heads=1, scale=1.0, do_rotary=1)
    inits = [numpy_helper.from_array(np.array([[1], [0], [-1], [0]], np.float32), "cos"),
             numpy_helper.from_array(np.array([[0], [1], [0], [-1]], np.float32), "sin")]
    inputs = [vi("q1", 1, 2, 4), vi("k1", 1, 2, 2), vi("v1", 1, 2, 2), vi32("sl1", 1),
              vi32("t1"), vi("q2", 1, 1, 2), vi("k2", 1, 1, 2), vi("v2", 1, 1, 2),
              vi("past_k2", 1, 1, 1, 2), vi("past_v2", 1, 1, 1, 2), vi32("sl2", 1), vi32("t2")]
    outputs = [vi("y1", 1, 2, 4), vi("pk1", 1, 1, 2, 2), vi("pv1", 1, 1, 2, 2),
               vi("y2", 1, 1, 2), vi("pk2", 1, 1, 2, 2), vi("pv2", 1, 1, 2, 2)]
    save_ms(path, [n1, n2], inputs, outputs, inits)


def gqa_refused(path):
    """GroupQueryAttention with local_window_size 2 (gexec refuses it)"""
    node = helper.make_node("GroupQueryAttention", ["q", "k", "v", "", "", "sl", "t"], ["y"],
                            domain="com.microsoft", num_heads=2, kv_num_heads=1,
                            local_window_size=2)
    save_ms(path, [node], [vi("q", 1, 2, 4), vi("k", 1, 2, 2), vi("v", 1, 2, 2),
                           vi32("sl", 1), vi32("t")], [vi("y", 1, 2, 4)], [])

def eln(name, B=2, S=5, V=20, P=8, H=8, seg=True, mask=True, pos_ids=None, sums=True, seed=0,
        **attrs):
    """com.microsoft EmbedLayerNormalization of input_ids [B, S] (int32)
    with random embeddings (vocabulary V, P positions, 2 segments); seg:
    segment_ids; mask: the int32 input mask; pos_ids: position_ids (a
    constant); sums: the embedding_sum output too"""
    r = np.random.default_rng(seed)
    inits = [numpy_helper.from_array(r.standard_normal((V, H)).astype(np.float32), "word"),
             numpy_helper.from_array(r.standard_normal((P, H)).astype(np.float32), "pos"),
             numpy_helper.from_array(r.uniform(0.5, 1.5, H).astype(np.float32), "gamma"),
             numpy_helper.from_array(r.standard_normal(H).astype(np.float32), "beta")]
    if seg:
        inits.append(numpy_helper.from_array(r.standard_normal((2, H)).astype(np.float32),
                                             "segment"))
    if pos_ids is not None:
        inits.append(numpy_helper.from_array(np.array(pos_ids, np.int32), "position_ids"))
    ins = ["input_ids", "segment_ids" if seg else "", "word", "pos", "segment" if seg else "",
           "gamma", "beta", "mask" if mask else "", "position_ids" if pos_ids is not None else ""]
    while not ins[-1]:
        ins.pop()
    outs = ["y", "mask_index"] + (["embedding_sum"] if sums else [])
    node = helper.make_node("EmbedLayerNormalization", ins, outs, domain="com.microsoft",
                            **attrs)
    inputs = [vi32("input_ids", B, S)] + ([vi32("segment_ids", B, S)] if seg else []) + \
        ([vi32("mask", B, S)] if mask else [])
    outputs = [vi("y", B, S, H), vi32("mask_index", B)] + \
        ([vi("embedding_sum", B, S, H)] if sums else [])
    return lambda path: save_ms(path, [node], inputs, outputs, inits)


def hand_eln(path):
    """EmbedLayerNormalization small enough to work out by hand
    (check_onnx_ms's test_onnx_ms_hand_gqa): word i the unit vector e_i of
    4 dims, positions [1, 1, 0, 0], [0, 2, 0, 0], [0, 0, 0, 3], segments
    0 and [0, 0, 5, 0]; epsilon 0.01"""
    word = np.eye(4, dtype=np.float32)
    pos = np.array([[1, 1, 0, 0], [0, 2, 0, 0], [0, 0, 0, 3]], np.float32)
    seg = np.array([[0, 0, 0, 0], [0, 0, 5, 0]], np.float32)
    inits = [numpy_helper.from_array(word, "word"), numpy_helper.from_array(pos, "pos"),
             numpy_helper.from_array(seg, "segment"),
             numpy_helper.from_array(np.array([1, 2, 1, 1], np.float32), "gamma"),
             numpy_helper.from_array(np.array([0, 0, 0, 1], np.float32), "beta")]
    node = helper.make_node("EmbedLayerNormalization",
                            ["ids", "seg", "word", "pos", "segment", "gamma", "beta", "mask"],
                            ["y", "mask_index", "sum"], domain="com.microsoft", epsilon=0.01)
    save_ms(path, [node], [vi32("ids", 1, 3), vi32("seg", 1, 3), vi32("mask", 1, 3)],
            [vi("y", 1, 3, 4), vi32("mask_index", 1), vi("sum", 1, 3, 4)], inits)



def hand_llm(path):
    """MatMulNBits, RotaryEmbedding and GemmFastGelu small enough to work
    out by hand (check_onnx_ms's test_onnx_ms_hand_llm): a [2, 4] times B
    of 4-bit blocks of 2 along K (N = 2: columns [1, 3, 15, 5] with zero
    points 4 and 8, scales 0.5 and 2; [8, 0, 2, 10] with zero points 8 and
    2, scales 1 and 0.25), plus a bias; one head of size 4 rotated at
    position 1 (cos [0, 1], sin [1, 0]); a [1, 2] Gemm with FastGelu."""
    nb = helper.make_node("MatMulNBits", ["a", "B", "sc", "zp", "", "bias"], ["y"],
                          domain="com.microsoft", K=4, N=2, bits=4, block_size=2)
    rope = helper.make_node("RotaryEmbedding", ["r", "pos", "cos", "sin"], ["ry"],
                            domain="com.microsoft", num_heads=1)
    gfg = helper.make_node("GemmFastGelu", ["g", "gw", "gb"], ["gy"], domain="com.microsoft")
    inits = [numpy_helper.from_array(np.array([[[49], [95]], [[8], [162]]], np.uint8), "B"),
             numpy_helper.from_array(np.array([0.5, 2, 1, 0.25], np.float32), "sc"),
             numpy_helper.from_array(np.array([132, 40], np.uint8), "zp"),
             numpy_helper.from_array(np.array([0.5, -1], np.float32), "bias"),
             numpy_helper.from_array(np.array([1], np.int64), "pos"),
             numpy_helper.from_array(np.array([[1, 1], [0, 1], [0.5, 0]], np.float32), "cos"),
             numpy_helper.from_array(np.array([[0, 0], [1, 0], [0.5, 1]], np.float32), "sin"),
             numpy_helper.from_array(np.array([[1], [2]], np.float32), "gw"),
             numpy_helper.from_array(np.array([0.5], np.float32), "gb")]
    save_ms(path, [nb, rope, gfg], [vi("a", 2, 4), vi("r", 1, 2, 4), vi("g", 1, 2)],
            [vi("y", 2, 2), vi("ry", 1, 2, 4), vi("gy", 1, 1)], inits)


def qgap_nhwc(path):
    """QLinearGlobalAveragePool with channels_last between QuantizeLinear and
    DequantizeLinear: x [1, 3, 4, 5] read as NHWC (5 channels)."""
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"]),
             helper.make_node("QLinearGlobalAveragePool", ["xq", "s", "z", "s2", "z2"], ["yq"],
                              domain="com.microsoft", channels_last=1),
             helper.make_node("DequantizeLinear", ["yq", "s2", "z2"], ["y"])]
    inits = [numpy_helper.from_array(np.array(0.02, np.float32), "s"),
             numpy_helper.from_array(np.array(128, np.uint8), "z"),
             numpy_helper.from_array(np.array(0.01, np.float32), "s2"),
             numpy_helper.from_array(np.array(120, np.uint8), "z2")]
    save_ms(path, nodes, [vi("x", 1, 3, 4, 5)], [vi("y", 1, 1, 1, 5)], inits)

GQA = {
    "gqa_prompt": gqa("gqa_prompt", seed=11),
    "gqa_past_rope": gqa("gqa_past_rope", B=1, S=2, P=3, H=16, rot=8, seed=12),
    "gqa_packed_inter": gqa("gqa_packed_inter", B=2, S=1, P=5, H=32, packed=True, rot=8, seed=13,
                            rotary_interleaved=1, local_window_size=-1),
    "gqa_packed_softcap": gqa("gqa_packed_softcap", S=3, N=6, KV=3, H=8, packed=True, seed=14,
                              softcap=1.5, scale=0.7),
    "hand_gqa": hand_gqa,
    "gqa_refused": gqa_refused,
    "eln_bert": eln("eln_bert", seed=21, epsilon=1e-5),
    "eln_distil": eln("eln_distil", B=3, S=4, seg=False, mask=False, pos_ids=[[3, 2, 1, 0]],
                      sums=False, seed=22),
    "hand_eln": hand_eln,
}


LLM = {
    "mnb4": matmul_nbits("mnb4", 40, 6, 4, 16, zp="u8", bias=True, seed=1),
    "mnb4_plain": matmul_nbits("mnb4_plain", 32, 5, 4, 16, shape=(4,), seed=2),
    "mnb8": matmul_nbits("mnb8", 64, 3, 8, 32, zp="u8", seed=3),
    "mnb2": matmul_nbits("mnb2", 40, 5, 2, 16, zp="u8", bias=True, seed=10),
    "mnb4_f32zp": matmul_nbits("mnb4_f32zp", 48, 7, 4, 32, zp="f32", bias=True, seed=4),
    "rope_pos": rotary("rope_pos", (2, 5, 8), [[0, 1, 2, 3, 4], [7, 8, 9, 10, 11]], seed=6,
                       num_heads=2),
    "rope_offset": rotary("rope_offset", (2, 5, 8), [3], seed=7, num_heads=2, interleaved=1),
    "rope_noheads": rotary("rope_noheads", (2, 5, 8), [[4, 3, 2, 1, 0], [0, 2, 4, 6, 8]],
                           seed=8),
    "rope_4d_part": rotary("rope_4d_part", (2, 2, 5, 8), [[1, 2, 3, 4, 5], [0, 0, 1, 1, 2]],
                           seed=9, num_heads=2, rotary_embedding_dim=4),
    "hand_llm": hand_llm,
    "qgap_nhwc": qgap_nhwc,
}


if __name__ == "__main__":
    d = sys.argv[1] if len(sys.argv) > 1 else "."
    for f in (cnn, mlp, block, dq_mlp, qconv, qdq_ops):
        f(f"{d}/{f.__name__}.onnx")
    for name, f in DIRECT.items():
        f(f"{d}/{name}.onnx")
    nchwc_cnn(f"{d}/nchwc_cnn.onnx")
    qmbv2(f"{d}/qmbv2.onnx")
    for name, f in LLM.items():
        f(f"{d}/{name}.onnx")
    for name, f in GQA.items():
        f(f"{d}/{name}.onnx")
