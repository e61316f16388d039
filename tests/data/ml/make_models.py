#!/usr/bin/python3
"""The ai.onnx.ml models check_ml's test_vs_ort runs through gexec and ONNX
Runtime: tree ensembles of every aggregate and post transform (random trees
with a fixed seed), binary classifiers in sklearn's and the boosters' forms,
LabelEncoders both ways, and preprocessing + linear pipelines like
sklearn-onnx's. TreeEnsemble (opset 5, BRANCH_MEMBER
too), float64 thresholds (*_as_tensor), SVMs of every kernel (libsvm and
liblinear forms, Platt probabilities), CategoryMapper both ways. The name
says the input: *_s string [5], *_i int64 [5], *_d float64 [8, 4], else
float32 [8, 4]. Regenerate with: /usr/bin/python3 make_models.py (here)."""
import random

import onnx
from onnx import TensorProto, helper

ML = "ai.onnx.ml"
rng = random.Random(12)


def save(name, nodes, inputs, outputs, inits=(), ml_opset=3):
    g = helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13),
                                            helper.make_opsetid(ML, ml_opset)])
    m.ir_version = 8
    onnx.save(m, name + ".onnx")


def fx():
    return [helper.make_tensor_value_info("X", TensorProto.FLOAT, [8, 4])]


def out(name, t=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, t, None)


def trees(n_trees, depth, n_out, one_out=None, weights=(-1.0, 1.0)):
    """Random full trees; leaves weigh one or several outputs. Node ids
    are shuffled within each tree so lookups are exercised."""
    a = {k: [] for k in ("treeids", "nodeids", "featureids", "modes", "values",
                         "truenodeids", "falsenodeids", "missing")}
    w = {k: [] for k in ("treeids", "nodeids", "ids", "weights")}
    modes = ["BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT"]
    for t in range(n_trees):
        count = 2 ** (depth + 1) - 1
        ids = list(range(count))
        rng.shuffle(ids)
        for i in range(count):
            leaf = i >= 2 ** depth - 1
            a["treeids"].append(t)
            a["nodeids"].append(ids[i])
            a["featureids"].append(0 if leaf else rng.randrange(4))
            a["modes"].append("LEAF" if leaf else rng.choice(modes))
            a["values"].append(0.0 if leaf else round(rng.uniform(-1, 1), 3))
            a["truenodeids"].append(0 if leaf else ids[2 * i + 1])
            a["falsenodeids"].append(0 if leaf else ids[2 * i + 2])
            a["missing"].append(0)
            if leaf:
                outs = [one_out] if one_out is not None else \
                    rng.sample(range(n_out), rng.randint(1, n_out))
                for o in outs:
                    w["treeids"].append(t)
                    w["nodeids"].append(ids[i])
                    w["ids"].append(o)
                    w["weights"].append(round(rng.uniform(*weights), 3))
    nodes = dict(nodes_treeids=a["treeids"], nodes_nodeids=a["nodeids"],
                 nodes_featureids=a["featureids"], nodes_modes=a["modes"],
                 nodes_values=a["values"], nodes_truenodeids=a["truenodeids"],
                 nodes_falsenodeids=a["falsenodeids"],
                 nodes_missing_value_tracks_true=a["missing"],
                 nodes_hitrates=[1.0] * len(a["treeids"]))
    return nodes, w


for agg in ("SUM", "AVERAGE", "MIN", "MAX"):
    for post in ("NONE", "SOFTMAX", "LOGISTIC", "PROBIT"):
        nodes, w = trees(3, 3, 2)
        kw = {}
        if post == "PROBIT":  # PROBIT wants scores in (0, 1)
            w["weights"] = [round(rng.uniform(0.05, 0.3), 3) for _ in w["weights"]]
            nodes, w1 = trees(3, 3, 1, one_out=0, weights=(0.05, 0.3))
            w = w1
        n_targets = 1 if post == "PROBIT" else 2
        if post != "PROBIT":
            kw["base_values"] = [0.25, -0.5]
        save(f"treereg_{agg.lower()}_{post.lower()}",
             [helper.make_node("TreeEnsembleRegressor", ["X"], ["Y"], domain=ML,
                               n_targets=n_targets, aggregate_function=agg,
                               post_transform=post, target_treeids=w["treeids"],
                               target_nodeids=w["nodeids"], target_ids=w["ids"],
                               target_weights=w["weights"], **nodes, **kw)],
             fx(), [out("Y")])

for post in ("NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO"):
    nodes, w = trees(4, 2, 3, weights=(0.0, 1.0))
    save(f"treecls_multi_{post.lower()}",
         [helper.make_node("TreeEnsembleClassifier", ["X"], ["L", "P"], domain=ML,
                           classlabels_int64s=[3, 5, 9], post_transform=post,
                           class_treeids=w["treeids"], class_nodeids=w["nodeids"],
                           class_ids=w["ids"], class_weights=w["weights"],
                           base_values=[0.1, 0.0, -0.1], **nodes)],
         fx(), [out("L", TensorProto.INT64), out("P")])

# sklearn's binary forest: class 1's probability only, string labels
nodes, w = trees(3, 3, 2, one_out=1, weights=(0.0, 0.34))
save("treecls_forest_bin",
     [helper.make_node("TreeEnsembleClassifier", ["X"], ["L", "P"], domain=ML,
                       classlabels_strings=["no", "yes"], post_transform="NONE",
                       class_treeids=w["treeids"], class_nodeids=w["nodeids"],
                       class_ids=w["ids"], class_weights=w["weights"], **nodes)],
     fx(), [out("L", TensorProto.STRING), out("P")])
# a booster's binary model: one margin, LOGISTIC
nodes, w = trees(5, 2, 1, one_out=0, weights=(-0.6, 0.6))
save("treecls_boost_bin",
     [helper.make_node("TreeEnsembleClassifier", ["X"], ["L", "P"], domain=ML,
                       classlabels_int64s=[0, 1], post_transform="LOGISTIC",
                       base_values=[0.2], class_treeids=w["treeids"],
                       class_nodeids=w["nodeids"], class_ids=w["ids"],
                       class_weights=w["weights"], **nodes)],
     fx(), [out("L", TensorProto.INT64), out("P")])

save("labenc_s",
     [helper.make_node("LabelEncoder", ["X"], ["Y"], domain=ML,
                       keys_strings=["a", "b", "c"], values_int64s=[10, 20, 30],
                       default_int64=-7)],
     [helper.make_tensor_value_info("X", TensorProto.STRING, [5])], [out("Y", TensorProto.INT64)])
save("labenc_i",
     [helper.make_node("LabelEncoder", ["X"], ["Y"], domain=ML,
                       keys_int64s=[0, 1, 2], values_strings=["zero", "one", "two"],
                       default_string="many")],
     [helper.make_tensor_value_info("X", TensorProto.INT64, [5])], [out("Y", TensorProto.STRING)])

# sklearn's StandardScaler + LogisticRegression, and a binary one
coef = [round(rng.uniform(-1, 1), 3) for _ in range(12)]
save("pipe_linear_multi",
     [helper.make_node("Scaler", ["X"], ["S"], domain=ML, offset=[0.1, -0.2, 0.3, 0.0],
                       scale=[1.5, 0.5, 2.0, 1.0]),
      helper.make_node("LinearClassifier", ["S"], ["L", "P"], domain=ML, coefficients=coef,
                       intercepts=[0.1, -0.1, 0.05], classlabels_ints=[0, 1, 2],
                       multi_class=1, post_transform="SOFTMAX")],
     fx(), [out("L", TensorProto.INT64), out("P")])
save("pipe_linear_bin",
     [helper.make_node("Scaler", ["X"], ["S"], domain=ML, offset=[0.5], scale=[2.0]),
      helper.make_node("LinearClassifier", ["S"], ["L", "P"], domain=ML, coefficients=coef[:4],
                       intercepts=[0.3], classlabels_strings=["cat", "dog"],
                       post_transform="LOGISTIC")],
     fx(), [out("L", TensorProto.STRING), out("P")])
save("pipe_preprocess",
     [helper.make_node("Imputer", ["X"], ["I"], domain=ML, imputed_value_floats=[9.0],
                       replaced_value_float=0.0),
      helper.make_node("Normalizer", ["I"], ["N"], domain=ML, norm="L2"),
      helper.make_node("Binarizer", ["N"], ["B"], domain=ML, threshold=0.2),
      helper.make_node("ArrayFeatureExtractor", ["N", "idx"], ["A"], domain=ML),
      helper.make_node("LinearRegressor", ["A"], ["Y"], domain=ML, coefficients=coef[:6],
                       intercepts=[1.0, 2.0, 3.0], targets=3)],
     fx(), [out("B"), out("Y")],
     [helper.make_tensor("idx", TensorProto.INT64, [2], [3, 1])])

# sklearn's OneHotEncoder and ColumnTransformer's concatenation
save("ohe_fv_s",
     [helper.make_node("OneHotEncoder", ["X"], ["O"], domain=ML, cats_strings=["a", "b", "c"]),
      helper.make_node("FeatureVectorizer", ["O"], ["Y"], domain=ML, inputdimensions=[4])],
     [helper.make_tensor_value_info("X", TensorProto.STRING, [5])], [out("O"), out("Y")])
save("ohe_fv",
     [helper.make_node("OneHotEncoder", ["X"], ["O"], domain=ML, cats_int64s=[-1, 0, 1]),
      helper.make_node("FeatureVectorizer", ["X", "X"], ["Y"], domain=ML,
                       inputdimensions=[2, 5])],
     fx(), [out("O"), out("Y")])


def fxd():
    return [helper.make_tensor_value_info("X", TensorProto.DOUBLE, [8, 4])]


# The inputs' values: ((i * 37 % 23) - 11) / 8, so sets of eighths hit.
def trees5(n_trees, depth, n_targets, dtype):
    """Random full trees in opset 5's form: interior nodes and leaves
    apart, listed shuffled; every mode, BRANCH_MEMBER sets of 1..3."""
    a = {k: [] for k in ("featureids", "modes", "splits", "true", "trueleaf", "false",
                         "falseleaf", "missing")}
    leaves = {"targetids": [], "weights": []}
    members, roots = [], []
    n_int = n_trees * (2 ** depth - 1)
    n_leaf = n_trees * 2 ** depth
    ipos = list(range(n_int))
    lpos = list(range(n_leaf))
    rng.shuffle(ipos)
    rng.shuffle(lpos)
    slots = [None] * n_int
    lslots = [None] * n_leaf
    ii = li = 0
    for t in range(n_trees):
        ids = []  # heap order: (is_leaf, position)
        for i in range(2 ** (depth + 1) - 1):
            if i < 2 ** depth - 1:
                ids.append((0, ipos[ii]))
                ii += 1
            else:
                ids.append((1, lpos[li]))
                li += 1
        roots.append(ids[0][1])
        for i in range(2 ** depth - 1):
            mode = rng.randrange(7)
            if mode == 6:
                split = 0.0
                # ONNX Runtime 1.30 takes whole numbers only in sets, and
                # matches -1.375 against -1: sets of 1 to 3
                mset = sorted({float(rng.randrange(1, 4)) for _ in range(rng.randint(1, 3))})
            else:
                split = rng.randrange(-11, 12) / 8 if mode in (4, 5) else \
                    round(rng.uniform(-1, 1), 3)
                mset = None
            slots[ids[i][1]] = (rng.randrange(4), mode, split, ids[2 * i + 1],
                                ids[2 * i + 2], rng.randrange(2), mset)
        for i in range(2 ** depth - 1, 2 ** (depth + 1) - 1):
            lslots[ids[i][1]] = (rng.randrange(n_targets), round(rng.uniform(-1, 1), 3))
    for f, mode, split, tr, fa, miss, mset in slots:
        a["featureids"].append(f)
        a["modes"].append(mode)
        a["splits"].append(split)
        a["trueleaf"].append(tr[0])
        a["true"].append(tr[1])
        a["falseleaf"].append(fa[0])
        a["false"].append(fa[1])
        a["missing"].append(miss)
        if mset is not None:
            members.extend(mset + [float("nan")])
    for tid, wt in lslots:
        leaves["targetids"].append(tid)
        leaves["weights"].append(wt)
    np_t = TensorProto.DOUBLE if dtype == "d" else TensorProto.FLOAT
    attrs = dict(
        nodes_featureids=a["featureids"],
        nodes_modes=helper.make_tensor("m", TensorProto.UINT8, [n_int], a["modes"]),
        nodes_splits=helper.make_tensor("s", np_t, [n_int], a["splits"]),
        nodes_truenodeids=a["true"], nodes_trueleafs=a["trueleaf"],
        nodes_falsenodeids=a["false"], nodes_falseleafs=a["falseleaf"],
        nodes_missing_value_tracks_true=a["missing"],
        leaf_targetids=leaves["targetids"],
        leaf_weights=helper.make_tensor("w", np_t, [n_leaf], leaves["weights"]),
        tree_roots=roots, n_targets=n_targets)
    if members:
        attrs["membership_values"] = helper.make_tensor("mv", np_t, [len(members)], members)
    return attrs


for agg in range(4):
    for post, n_targets in ((0, 3), (2, 3), (1, 2), (4, 1), (3, 3)):
        if agg == 1 or post in (0, 2):
            # float64 SOFTMAX_ZERO: ONNX Runtime 1.30 computes part of it in
            # float32 (off by 4e-8), so it is compared in float32 only
            for dt in ("f", "d") if post != 3 else ("f",):
                t = trees5(4, 3, n_targets, dt)
                if post == 4:  # PROBIT wants scores in (0, 1)
                    t["leaf_weights"] = helper.make_tensor(
                        "w", TensorProto.DOUBLE if dt == "d" else TensorProto.FLOAT,
                        [len(t["leaf_targetids"])],
                        [round(rng.uniform(0.05, 0.2), 3) for _ in t["leaf_targetids"]])
                save(f"tree5_a{agg}_p{post}" + ("_d" if dt == "d" else ""),
                     [helper.make_node("TreeEnsemble", ["X"], ["Y"], domain=ML,
                                       aggregate_function=agg, post_transform=post, **t)],
                     fxd() if dt == "d" else fx(),
                     [out("Y", TensorProto.DOUBLE if dt == "d" else TensorProto.FLOAT)],
                     ml_opset=5)

# opset 3's float64 thresholds and weights (ONNX Runtime reads them for
# float64 inputs only): thresholds a float32 cannot hold, between inputs
for cls in (False, True):
    nodes, w = trees(3, 3, 3 if cls else 2)
    vals = nodes.pop("nodes_values")
    nodes["nodes_values_as_tensor"] = helper.make_tensor(
        "v", TensorProto.DOUBLE, [len(vals)], [v + 1e-9 for v in vals])
    hit = nodes.pop("nodes_hitrates")
    nodes["nodes_hitrates_as_tensor"] = helper.make_tensor("h", TensorProto.DOUBLE, [len(hit)], hit)
    wt = helper.make_tensor("w", TensorProto.DOUBLE, [len(w["weights"])],
                            [x + 1e-10 for x in w["weights"]])
    if cls:
        save("treecls_tensor_d",
             [helper.make_node("TreeEnsembleClassifier", ["X"], ["L", "P"], domain=ML,
                               classlabels_int64s=[4, 5, 6], post_transform="SOFTMAX",
                               class_treeids=w["treeids"], class_nodeids=w["nodeids"],
                               class_ids=w["ids"], class_weights_as_tensor=wt,
                               base_values_as_tensor=helper.make_tensor(
                                   "b", TensorProto.DOUBLE, [3], [0.1, 0.2, 0.3]), **nodes)],
             fxd(), [out("L", TensorProto.INT64), out("P")])
    else:
        save("treereg_tensor_d",
             [helper.make_node("TreeEnsembleRegressor", ["X"], ["Y"], domain=ML, n_targets=2,
                               aggregate_function="SUM", target_treeids=w["treeids"],
                               target_nodeids=w["nodeids"], target_ids=w["ids"],
                               target_weights_as_tensor=wt,
                               base_values_as_tensor=helper.make_tensor(
                                   "b", TensorProto.DOUBLE, [2], [0.5, -0.25]), **nodes)],
             fxd(), [out("Y")])


def vec(n):
    return [round(rng.uniform(-1, 1), 3) for _ in range(n)]


# sklearn's SVC / SVR / OneClassSVM / LinearSVC as sklearn-onnx writes them
kparams = {"LINEAR": [0.0, 0.0, 0.0], "POLY": [0.3, 0.5, 3.0], "RBF": [0.4, 0.0, 0.0],
           "SIGMOID": [0.2, 0.1, 0.0]}
for kernel, post, k, proba, labels in (
        ("RBF", "NONE", 3, True, "i"), ("POLY", "NONE", 3, False, "s"),
        ("SIGMOID", "SOFTMAX", 4, True, "i"), ("LINEAR", "NONE", 2, False, "s"),
        ("RBF", "LOGISTIC", 2, False, "i"), ("RBF", "NONE", 2, True, "s"),
        ("POLY", "SOFTMAX_ZERO", 3, False, "i"), ("RBF", "SOFTMAX", 2, False, "i"),
        ("LINEAR", "SOFTMAX_ZERO", 2, False, "s")):
    vpc = [rng.randint(1, 3) for _ in range(k)]
    v = sum(vpc)
    pairs = k * (k - 1) // 2
    kw = dict(kernel_type=kernel, kernel_params=kparams[kernel], post_transform=post,
              vectors_per_class=vpc, support_vectors=vec(v * 4),
              coefficients=vec((k - 1) * v), rho=vec(pairs))
    if proba:
        kw["prob_a"] = [round(rng.uniform(-3, -0.5), 3) for _ in range(pairs)]
        kw["prob_b"] = vec(pairs)
    if labels == "s":
        kw["classlabels_strings"] = ["c%d" % i for i in range(k)]
    else:
        kw["classlabels_ints"] = [10 + i for i in range(k)]
    save(f"svc_{kernel.lower()}_{post.lower()}_{k}{'_p' if proba else ''}",
         [helper.make_node("SVMClassifier", ["X"], ["L", "P"], domain=ML, **kw)],
         fx(), [out("L", TensorProto.STRING if labels == "s" else TensorProto.INT64), out("P")])
for k, post, pos in ((3, "SOFTMAX", False), (2, "NONE", False), (2, "LOGISTIC", True)):
    coef = [round(rng.uniform(0, 1) if pos else rng.uniform(-1, 1), 3) for _ in range(4 * k)]
    save(f"svc_liblinear_{post.lower()}_{k}",
         [helper.make_node("SVMClassifier", ["X"], ["L", "P"], domain=ML, coefficients=coef,
                           rho=[-0.7 if pos else 0.2], post_transform=post,
                           kernel_params=[0.0, 0.0, 0.0],
                           classlabels_ints=list(range(k)))],
         fx(), [out("L", TensorProto.INT64), out("P")])
for kernel in ("RBF", "POLY", "SIGMOID", "LINEAR"):
    save(f"svr_{kernel.lower()}",
         [helper.make_node("SVMRegressor", ["X"], ["Y"], domain=ML, kernel_type=kernel,
                           kernel_params=kparams[kernel], n_supports=5,
                           support_vectors=vec(20), coefficients=vec(5), rho=[0.3])],
         fx(), [out("Y")])
save("svr_liblinear",
     [helper.make_node("SVMRegressor", ["X"], ["Y"], domain=ML, coefficients=vec(4), rho=[0.1],
                       kernel_params=[0.0, 0.0, 0.0])],
     fx(), [out("Y")])
save("svr_oneclass",
     [helper.make_node("SVMRegressor", ["X"], ["Y"], domain=ML, kernel_type="RBF",
                       kernel_params=[0.5, 0.0, 0.0], n_supports=4, one_class=1,
                       support_vectors=vec(16), coefficients=[0.25] * 4, rho=[-0.6])],
     fx(), [out("Y")])

save("catmap_s",
     [helper.make_node("CategoryMapper", ["X"], ["Y"], domain=ML,
                       cats_strings=["a", "b", "c", "a"], cats_int64s=[1, 2, 3, 4],
                       default_int64=-9)],
     [helper.make_tensor_value_info("X", TensorProto.STRING, [5])], [out("Y", TensorProto.INT64)])
save("catmap_i",
     [helper.make_node("CategoryMapper", ["X"], ["Y"], domain=ML,
                       cats_strings=["zero", "one", "two", "uno"], cats_int64s=[0, 1, 2, 1],
                       default_string="other")],
     [helper.make_tensor_value_info("X", TensorProto.INT64, [5])], [out("Y", TensorProto.STRING)])
