#!/usr/bin/env bash
# Packs what tests/gpu/run.sh needs on a GPU machine that has the CUDA
# toolkit and driver but none of this project's libraries: the built
# gexecd, gexec-submit (the real binary, not libtool's wrapper), libgexec,
# tests/gpu/check_cuda, tests/conformance (and the ONNX node tests, when
# installed here), and every shared library ldd shows for them that is
# neither CUDA's (/usr/local/cuda*) nor glibc's. Builds nothing: run it
# here, from the repository root, after `make check` in the build tree.
#
#   tests/gpu/pack.sh [BUILD_DIR]   (default build-cuda) -> gpu-carry/gexec-gpu.tar.gz
#
# The programs and libraries (about 63 MiB, 36 of them OpenBLAS) travel as
# one gzip'd tar of bin/ and lib/ (about 22 MiB) so that gpu-carry/ stays
# under 60 MiB; tests/gpu/run.sh unpacks it into gpu-carry/ there. Last,
# the packed gexecd is checked to start (--version) from the unpacked copy
# in an empty environment.
set -euo pipefail
build=${1:-build-cuda}
carry=gpu-carry
out=$(mktemp -d)/gpu-carry
trap 'rm -rf "$(dirname "$out")"' EXIT
[ -x "$build/daemon/gexecd" ] || { echo "pack.sh: no $build/daemon/gexecd; build first" >&2; exit 1; }
[ -x "$build/tests/gpu/check_cuda" ] ||
    { echo "pack.sh: no $build/tests/gpu/check_cuda; run make check (or make tests/gpu/check_cuda) in $build" >&2; exit 1; }
rm -rf "$carry"
mkdir -p "$carry" "$out/bin" "$out/lib"

# the real ELF of a libtool-built program
real() {
    local p=$1 d b
    d=$(dirname "$p"); b=$(basename "$p")
    if file -b "$p" | grep -q ELF; then echo "$p"
    elif [ -x "$d/.libs/$b" ]; then echo "$d/.libs/$b"
    elif [ -x "$d/.libs/lt-$b" ]; then echo "$d/.libs/lt-$b"
    else echo "pack.sh: no binary behind $p" >&2; return 1; fi
}

for p in daemon/gexecd libclient/gexec-submit tests/gpu/check_cuda tests/conformance; do
    cp -L "$(real "$build/$p")" "$out/bin/"
done
cp -P "$build"/libclient/.libs/libgexec.so* "$out/lib/"

# glibc's own libraries stay: the GPU machine's must be used
glibc='^(libc|libm|libpthread|libdl|librt|libresolv|libutil|libanl|libnsl|libmvec|ld-linux-x86-64|linux-vdso)\.so'
LD_LIBRARY_PATH="$out/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ldd "$out"/bin/* "$out"/lib/libgexec.so.0 |
    awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u |
    while read -r name path; do
        case "$path" in /usr/local/cuda*|"$out"/*) continue ;; esac
        if [[ "$name" =~ $glibc ]]; then continue; fi
        [ -e "$out/lib/$name" ] || cp -L "$path" "$out/lib/$name"
    done

# debug info stays here: the binaries and libraries travel stripped
strip --strip-debug "$out"/bin/* "$out"/lib/*.so* 2>/dev/null || true

missing=$(LD_LIBRARY_PATH="$out/lib" ldd "$out"/bin/* | grep "not found" | grep -v -E "libcu|libnvrtc" || true)
[ -z "$missing" ] || { echo "pack.sh: unresolved: $missing" >&2; exit 1; }
tar -C "$out" -czf "$carry/gexec-gpu.tar.gz" bin lib
# the ONNX node tests (Debian's libonnx-testdata), for the conformance run
# over cuda, when they are installed here
nodes=/usr/share/libonnx-testdata/data
if [ -d "$nodes/node" ]; then tar -C "$nodes" -czf "$carry/onnx-node.tar.gz" node; fi
echo "unpacked: $(ls "$out/bin" | wc -l) programs, $(ls "$out/lib" | wc -l) libraries, $(du -sm "$out" | cut -f1) MiB"
ls "$out/bin" "$out/lib" | tr '\n' ' '; echo

# the unpacked copy starts in an empty environment
check=$(dirname "$out")/check
mkdir -p "$check" && tar -C "$check" -xzf "$carry/gexec-gpu.tar.gz"
env -i LD_LIBRARY_PATH="$check/lib" "$check/bin/gexecd" --version
env -i LD_LIBRARY_PATH="$check/lib" "$check/bin/gexec-submit" --version
size=$(du -sm "$carry" | cut -f1)
echo "$carry/: ${size} MiB ($(du -sh "$carry/gexec-gpu.tar.gz" | cut -f1) gexec-gpu.tar.gz)"
[ "$size" -lt 60 ] || { echo "pack.sh: ${size} MiB is over the 60 MiB limit" >&2; exit 1; }
