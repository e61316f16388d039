#!/usr/bin/python3
"""The ai.onnx.ml models check_ml's test_vs_ort runs through gexec and ONNX
Runtime: tree ensembles of every aggregate and post transform (random trees
with a fixed seed), binary classifiers in sklearn's and the boosters' forms,
LabelEncoders both ways, and preprocessing + linear pipelines like
sklearn-onnx's. The name says the input: *_s string [5], *_i int64 [5], else
float32 [8, 4]. Regenerate with: /usr/bin/python3 make_models.py (here)."""
import random

import onnx
from onnx import TensorProto, helper

ML = "ai.onnx.ml"
rng = random.Random(12)


def save(name, nodes, inputs, outputs, inits=()):
    g = helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13),
                                            helper.make_opsetid(ML, 3)])
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
