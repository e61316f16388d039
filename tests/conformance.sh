#!/bin/sh
# make check's wrapper for the ONNX node test runner: first checks the
# byte comparison that --modes relies on (--self-test, no data needed); then
# skips (77) when the test data (Debian's libonnx-testdata) is not
# installed, else runs the suites simple, pytorch-converted and
# pytorch-operator (-s) when they are installed beside the node tests,
# then the node cases, each case in seq and again in every other fixed
# mode (--modes: each mode's outputs must be byte-identical to seq's), the
# node cases once more over two devices (--device testdev), and passes the
# runner's status through. GEXEC_ONNX_DATA overrides the data
# directory.
# make check runs this from the top build directory
runner=tests/conformance
[ -x "$runner" ] || runner=$(dirname "$0")/conformance
"$runner" --self-test || exit 1
data=${GEXEC_ONNX_DATA:-/usr/share/libonnx-testdata/data/node}
if [ ! -d "$data" ]; then
    echo "conformance: $data not found (install libonnx-testdata); skipped"
    exit 77
fi
# the other suites of the same data (opset 6 exports, sequences, strings),
# when they are there; the node tests' line stays the last
root=$(dirname "$data")
if [ -d "$root/simple" ] && [ -d "$root/pytorch-converted" ] && [ -d "$root/pytorch-operator" ]; then
    "$runner" -d "$root" -s simple,pytorch-converted,pytorch-operator --modes "$@" || exit 1
fi
# the node cases over two devices: a gexecd whose test device "testdev"
# (memory of its own, tests/testdev.c) takes every subgraph it can, so
# partitions, copies and per-device arenas run in every mode
testdev=$(dirname "$runner")/gexecd-testdev
# (and again claiming only what the CUDA backend's rules claim: the
# subgraphs a GPU would take, with its memory as out of the host's reach)
if [ -x "$testdev" ]; then
    GEXEC_DAEMON=$testdev "$runner" -d "$data" --device testdev --modes "$@" || exit 1
    GEXEC_TESTDEV_RULES=cuda GEXEC_DAEMON=$testdev "$runner" -d "$data" --device testdev \
        --modes "$@" || exit 1
fi
exec "$runner" -d "$data" --modes "$@"
# the single-mode run (each case once, in mode auto), as before --modes:
# exec "$runner" -d "$data" "$@"
