#!/bin/sh
# make check's wrapper for the ONNX node test runner: skips (77) when the
# test data (Debian's libonnx-testdata) is not installed, else runs every
# case and passes the runner's status through. GEXEC_ONNX_DATA overrides the
# data directory.
data=${GEXEC_ONNX_DATA:-/usr/share/libonnx-testdata/data/node}
if [ ! -d "$data" ]; then
    echo "conformance: $data not found (install libonnx-testdata); skipped"
    exit 77
fi
# make check runs this from the top build directory
runner=tests/conformance
[ -x "$runner" ] || runner=$(dirname "$0")/conformance
exec "$runner" -d "$data" "$@"
