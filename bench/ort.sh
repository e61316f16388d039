#!/bin/sh
# Fetch ONNX Runtime for bench_ort and print the path of its C library.
#
#     bench/ort.sh [DIR]        # default DIR: build/ort next to bench/
#
# ONNX Runtime comes from npm: the package onnxruntime-node ships
# libonnxruntime.so.1 (bin/napi-v*/linux/<arch>/). The package's install
# script (which would fetch GPU libraries) is not run. A second call finds
# the library and downloads nothing. Prints the library's absolute path on
# stdout; anything else goes to stderr, and the exit status is 1 when the
# library cannot be had (no npm, no network, an unsupported machine).
# ORT_NPM_VERSION overrides the version (default 1.30.0).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
dir=${1:-$here/../build/ort}
[ -d "$dir" ] && dir=$(cd "$dir" && pwd)
version=${ORT_NPM_VERSION:-1.30.0}

case $(uname -m) in
x86_64 | amd64) arch=x64 ;;
aarch64 | arm64) arch=arm64 ;;
*)
    echo "ort.sh: onnxruntime-node has no Linux build for $(uname -m)" >&2
    exit 1
    ;;
esac

# find_lib: the library under $dir, or nothing
find_lib() {
    for f in "$dir"/node_modules/onnxruntime-node/bin/napi-v*/linux/"$arch"/libonnxruntime.so.1; do
        if [ -f "$f" ]; then
            echo "$f"
            return 0
        fi
    done
    return 0
}

lib=$(find_lib)
if [ -n "$lib" ] && grep -q "\"version\": *\"$version\"" \
    "$dir/node_modules/onnxruntime-node/package.json" 2>/dev/null; then
    echo "$(cd "$(dirname "$lib")" && pwd)/libonnxruntime.so.1"
    exit 0
fi

command -v npm > /dev/null 2>&1 || {
    echo "ort.sh: npm not found (ONNX Runtime comes from the npm package onnxruntime-node)" >&2
    exit 1
}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
echo "ort.sh: installing onnxruntime-node@$version into $dir" >&2
# --ignore-scripts: the package's postinstall only fetches CUDA/TensorRT
# libraries; the CPU library is in the package itself.
npm install --prefix "$dir" --no-save --ignore-scripts --no-audit --no-fund \
    --loglevel=error "onnxruntime-node@$version" >&2 || {
    echo "ort.sh: npm install onnxruntime-node@$version failed" >&2
    exit 1
}
lib=$(find_lib)
if [ -z "$lib" ]; then
    echo "ort.sh: no libonnxruntime.so.1 for linux/$arch in onnxruntime-node@$version" >&2
    exit 1
fi
echo "$(cd "$(dirname "$lib")" && pwd)/libonnxruntime.so.1"
