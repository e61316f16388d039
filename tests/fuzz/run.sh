#!/usr/bin/env bash
# Fuzz gexec's parsers of untrusted bytes with libFuzzer (a developer tool,
# not part of `make check`; check_fuzz replays the corpus there).
#
#   tests/fuzz/run.sh [-j JOBS] [SECONDS] [TARGET...]
#
# Targets (tests/fuzz/fuzz.h): wire npy yaml onnx config artifact consts (default: all). Each is
# built into build-fuzz/ with clang -fsanitize=fuzzer,address,undefined from
# the sources (the kernels by gcc, below) and runs SECONDS (default 60), JOBS
# targets at a time (default 1). It starts from tests/fuzz/corpus/<target>
# and works in build-fuzz/corpus/<target>; at the end the inputs that add
# new edges are merged (-set_cover_merge=1) into tests/fuzz/corpus/<target>,
# so the committed corpus grows only by what is new (keep it under ~200
# files and 2 MB per target). tests/fuzz/<target>.dict, a
# libFuzzer dictionary (keys, op names, dtypes), is used when present.
#
# Crashes, leaks, sanitizer reports and timeouts (over 1 s) land in
# build-fuzz/artifacts/<target>/. Minimise one with
#   build-fuzz/fuzz_<target> -minimize_crash=1 -runs=10000 <artifact>
# and keep it in tests/fuzz/crashes/ until the bug is fixed, then move it
# into tests/fuzz/corpus/<target>/.
#
# Needs Debian's clang and libFuzzer, ASan and UBSan runtimes:
#   apt-get install clang libclang-rt-14-dev
# plus a configured build (./bootstrap.sh build: build/config.h and the
# dependencies' flags come from there). CC=clang-15 etc. to pick
# another clang. Environment: GX_FUZZ_TIMEOUT (seconds per input, 1),
# GX_FUZZ_FLAGS (extra libFuzzer flags), GX_FUZZ_MERGE=0 to leave the
# committed corpus alone.
set -euo pipefail
cd "$(dirname "$0")/../.."
top=$PWD
out=$top/build-fuzz
cc=${CC:-clang}
[[ $cc == cc || $cc == gcc* ]] && cc=clang # libFuzzer is clang's

jobs=1
if [ "${1:-}" = -j ]; then
    jobs=$2
    shift 2
fi
secs=${1:-60}
shift || true
all_targets=(wire npy yaml onnx config artifact consts)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all_targets[@]}")
for t in "${targets[@]}"; do
    [[ " ${all_targets[*]} " == *" $t "* ]] ||
        { echo "unknown target '$t' (${all_targets[*]})" >&2; exit 2; }
done

log() { printf '==> %s\n' "$*" >&2; }

# The library, op and daemon sources a target may reach: every source
# gexecd and libgexec build from but the two main()s, so that a new file
# needs no list here; the configured build's config.h and its dependency
# flags (build/Makefile's, as configure found them: CUDA where present).
[ -f "$top/build/config.h" ] || { echo "run ./bootstrap.sh build first (build/config.h)" >&2; exit 2; }
mkvar() { sed -n "s/^$1 = //p" "$top/build/Makefile" | head -1; }
sources=()
for f in core/*.c libclient/*.c daemon/*.c daemon/compile/*.c daemon/exec/*.c daemon/tune/*.c; do
    [ "$f" = daemon/main.c ] || [ "$f" = libclient/submit.c ] || sources+=("$f")
done
# the kernels use GCC's vector builtins and target clones: built by gcc,
# without the fuzzer's coverage (the parsers and the compiler are what
# the targets explore)
gcc_sources=(ops/*.c ops/cpu/*.c)
grep -q '^#define HAVE_CUDA 1' "$top/build/config.h" && gcc_sources+=(ops/cuda/*.c)
sources+=("$out/gen/libclient/onnx.pb-c.c" tests/fuzz/fuzz_util.c tests/fuzz/fuzz_graph.c)
dep_flags=()
for v in ZMQ MSGPACK YAML HWLOC NETTLE SYSTEMD BLAS PROTOBUF_C SQLITE PQ MHD CUDA; do
    # shellcheck disable=SC2207
    dep_flags+=($(mkvar "${v}_CFLAGS"))
done
dep_libs=()
for v in ZMQ MSGPACK YAML HWLOC NETTLE SYSTEMD BLAS PROTOBUF_C SQLITE PQ MHD CUDA DNNL; do
    # shellcheck disable=SC2207
    dep_libs+=($(mkvar "${v}_LIBS"))
done
cflags=(
    -std=gnu11 -g -O1 -fno-omit-frame-pointer
    -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
    -Wall -Wextra -Wstrict-prototypes -Wswitch-enum -Wmissing-prototypes -Wshadow
    -Wno-unused-parameter
    -D_GNU_SOURCE -DGX_LIBFUZZER -I"$top/include" -I"$top" -I"$out/gen" -I"$top/build"
    -DGX_SYSCONFDIR='"/etc"' -DGX_TEST_SRCDIR="\"$top\""
    "${dep_flags[@]}"
)

# The kernels' objects, once per run.
build_ops() {
    log "building the kernels with gcc (build-fuzz/ops)"
    mkdir -p "$out/ops"
    local f o
    ops_objs=()
    for f in "${gcc_sources[@]}"; do
        o=$out/ops/${f//\//_}.o
        gcc -std=gnu11 -g -O2 -D_GNU_SOURCE -I"$top/include" -I"$top" -I"$top/build" \
            "${dep_flags[@]}" -c "$f" -o "$o"
        ops_objs+=("$o")
    done
}

build() {
    local t=$1
    log "building build-fuzz/fuzz_$t"
    "$cc" "${cflags[@]}" -o "$out/fuzz_$t" "tests/fuzz/fuzz_$t.c" "${sources[@]}" \
        "${ops_objs[@]}" "${dep_libs[@]}" -ldl -lm -pthread
}

run() {
    local t=$1 work=$out/corpus/$1 art=$out/artifacts/$1/ dict=()
    mkdir -p "$work" "$art" "tests/fuzz/corpus/$t"
    [ -f "tests/fuzz/$t.dict" ] && dict=(-dict="tests/fuzz/$t.dict")
    log "fuzzing $t for ${secs}s (log: build-fuzz/fuzz_$t.log)"
    # shellcheck disable=SC2086
    ASAN_OPTIONS=detect_leaks=1 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        "$out/fuzz_$t" -max_total_time="$secs" -timeout="${GX_FUZZ_TIMEOUT:-1}" \
        -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix="$art" "${dict[@]}" \
        ${GX_FUZZ_FLAGS:-} "$work" "tests/fuzz/corpus/$t" </dev/null >"$out/fuzz_$t.log" 2>&1 ||
        log "$t: stopped on a finding; see build-fuzz/fuzz_$t.log and $art"
    grep -E '^stat::(number_of_executed_units|average_exec_per_sec|new_units_added|peak_rss_mb)' \
        "$out/fuzz_$t.log" | sed "s/^/$t: /" >&2 || true
    if [ "${GX_FUZZ_MERGE:-1}" != 0 ]; then
        local before after
        before=$(find "tests/fuzz/corpus/$t" -type f | wc -l)
        # Set-cover merge on edges only (no hit counts) keeps the corpus small.
        "$out/fuzz_$t" -set_cover_merge=1 -use_counters=0 -timeout="${GX_FUZZ_TIMEOUT:-1}" \
            -rss_limit_mb=4096 \
            "tests/fuzz/corpus/$t" "$work" </dev/null >"$out/merge_$t.log" 2>&1 ||
            log "$t: merge failed; see build-fuzz/merge_$t.log"
        after=$(find "tests/fuzz/corpus/$t" -type f | wc -l)
        log "$t: corpus $before -> $after files ($(du -sh "tests/fuzz/corpus/$t" | cut -f1))"
    fi
}

mkdir -p "$out/gen/libclient/pb"
# ONNX's onnx.proto through protoc-c, as the Makefile does (ONNX_PROTO=PATH)
cp "${ONNX_PROTO:-/usr/include/onnx/onnx.proto}" "$out/gen/libclient/pb/onnx.proto"
protoc-c --proto_path="$out/gen/libclient/pb" --c_out="$out/gen/libclient" \
    "$out/gen/libclient/pb/onnx.proto"
build_ops
for t in "${targets[@]}"; do
    build "$t"
done
running=0
for t in "${targets[@]}"; do
    if [ "$running" -ge "$jobs" ]; then
        wait -n || true
        running=$((running - 1))
    fi
    run "$t" &
    running=$((running + 1))
done
wait
n=$(find "$out/artifacts" -type f | wc -l)
[ "$n" -eq 0 ] || log "$n finding(s) under build-fuzz/artifacts/ (from this run or earlier ones)"
