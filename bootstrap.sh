#!/usr/bin/env bash
# gexec set-up on Debian 12, from a fresh clone. Run as root (or with sudo
# available) so missing packages can be installed.
#
#   ./bootstrap.sh demo    install what is missing, build, start gexecd on its
#                          built-in defaults, run examples/mlp.yaml, stop it
#   ./bootstrap.sh test    install what is missing, build, run the whole test
#                          suite, then again under AddressSanitizer + UBSan
#   ./bootstrap.sh deps    only install the packages
#   ./bootstrap.sh build   deps + configure + make (in build/)
set -euo pipefail
cd "$(dirname "$0")"
top=$PWD
jobs=$(nproc 2>/dev/null || echo 2)

# Every library is a Debian package and is checked by PKG_CHECK_MODULES in
# configure.ac. libonnx-dev provides onnx.proto (compiled with protoc-c at
# build time) and libonnx-testdata the node tests tests/conformance runs;
# python3-numpy and python3-pytest the Python client (python/) and its tests.
packages=(
    build-essential autoconf automake libtool pkg-config
    libzmq3-dev libmsgpack-dev libyaml-dev libhwloc-dev libsystemd-dev
    libopenblas-dev nettle-dev check libsqlite3-dev libpq-dev postgresql libmicrohttpd-dev mandoc
    libprotobuf-c-dev protobuf-c-compiler libonnx-dev libonnx-testdata libdnnl-dev
    python3-numpy python3-pytest
)

log() { printf '==> %s\n' "$*" >&2; }

deps() {
    local missing=()
    for p in "${packages[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    log "installing: ${missing[*]}"
    local sudo=()
    [ "$(id -u)" -eq 0 ] || sudo=(sudo)
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

# build DIR [configure flags...]
build() {
    local dir=$1
    shift
    deps
    if [ ! -x "$top/configure" ] || [ "$top/configure.ac" -nt "$top/configure" ] ||
       [ "$top/Makefile.am" -nt "$top/configure" ]; then
        log "autoreconf"
        mkdir -p "$top/m4"
        (cd "$top" && autoreconf -fi >/dev/null)
    fi
    mkdir -p "$dir"
    if [ ! -f "$dir/Makefile" ] || [ "$top/configure" -nt "$dir/Makefile" ]; then
        log "configure $* in $dir"
        (cd "$dir" && "$top/configure" --quiet "$@")
    fi
    log "make in $dir"
    make -s -C "$dir" -j"$jobs"
}

demo() {
    build "$top/build"
    local bin=$top/build
    log "starting gexecd on its built-in defaults"
    "$bin/daemon/gexecd" --foreground &
    local pid=$!
    trap 'kill -TERM $pid 2>/dev/null; wait $pid 2>/dev/null || true' EXIT
    local i
    for i in $(seq 1 100); do
        "$bin/libclient/gexec-submit" --timeout 200 ping >/dev/null 2>&1 && break
        kill -0 $pid 2>/dev/null || { log "gexecd exited"; exit 1; }
        sleep 0.1
    done
    "$bin/libclient/gexec-submit" ping
    log "gexec-submit run examples/mlp.yaml -i x=examples/mlp_input.npy -o out/"
    "$bin/libclient/gexec-submit" run examples/mlp.yaml -i x=examples/mlp_input.npy -o out/ --repeat 100
    ls -l out/
    log "stopping gexecd"
    kill -TERM $pid
    wait $pid
    trap - EXIT
    log "gexecd exited with status 0"
}

# run_suite DIR: make check in DIR; prints the runner's log; sets passed/failed
# and adds to failures
passed=0
failed=0
# what failed, every suite's own line for it (the Check test, the ONNX case,
# the pytest test), repeated before the summary: a log shown by its tail
# still names them
failures=
# s_failures FILE PATTERN: FILE's lines that match PATTERN, added to $failures
s_failures() {
    local got
    got=$(grep -E "$2" "$1" 2>/dev/null | cut -c1-300 || true)
    [ -z "$got" ] || failures="$failures$got
"
}
# s_count WORD: the number before WORD in $line ("40 passed" -> 40), else 0
s_count() {
    echo "$line" | awk -v w="$1" '{for (i = 2; i <= NF; i++) if ($i ~ "^" w) s += $(i - 1)} END {print s + 0}'
}
run_suite() {
    local dir=$1 rc=0
    make -s -C "$dir" -j"$jobs" check >/dev/null 2>&1 || rc=$?
    local logf=$dir/tests/check_gexec.log
    if [ -f "$logf" ]; then
        grep -v '^PASS\|^FAIL' "$logf" | grep -E '^[^ ]' || true
        s_failures "$logf" ':[0-9]+:[FE]:'
        local line
        line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$logf" | tail -1)
        if [ -n "$line" ]; then
            passed=$((passed + $(echo "$line" | cut -d' ' -f1)))
            failed=$((failed + $(echo "$line" | cut -d' ' -f3)))
        else
            failed=$((failed + 1))
        fi
    else
        failed=$((failed + 1))
    fi
    # the ONNX node tests (tests/conformance.sh): each failed case counts
    local conf=$dir/tests/conformance.sh.log
    if [ -f "$conf" ] && line=$(grep -E '^conformance: [0-9]+ passed' "$conf" | tail -1); then
        echo "$line"
        failed=$((failed + $(echo "$line" | cut -d' ' -f4)))
        s_failures "$conf" '^FAIL [^ ]+: '
    fi
    # the Python client's tests (python/tests/check.sh): pytest's summary,
    # "2 failed, 40 passed, 1 skipped in 3.2s"; a run without one that failed
    # (the daemon did not start) counts once
    local py=$dir/python/tests/check.sh
    if [ -f "$py.log" ]; then
        line=$(grep -E '^=* ?[0-9]+ (passed|failed|error)' "$py.log" | tail -1 || true)
        if [ -n "$line" ]; then
            echo "python: $line"
            passed=$((passed + $(s_count passed)))
            failed=$((failed + $(s_count failed) + $(s_count error)))
            s_failures "$py.log" '^(FAILED|ERROR) '
        elif grep -q ':test-result: FAIL' "$py.trs" 2>/dev/null; then
            failed=$((failed + 1))
        fi
    fi
    [ $rc -eq 0 ] || log "make check in $dir failed (status $rc)"
    return 0
}

test_all() {
    build "$top/build"
    log "test suite"
    run_suite "$top/build"
    build "$top/build-asan" --enable-sanitizers
    log "test suite under AddressSanitizer + UBSan"
    # the sanitizers slow everything several times: Check's timeouts too
    CK_TIMEOUT_MULTIPLIER=${CK_TIMEOUT_MULTIPLIER:-5} ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
        UBSAN_OPTIONS=print_stacktrace=1 run_suite "$top/build-asan"
    [ -z "$failures" ] || printf '==> what failed\n%s' "$failures"
    echo "$passed passed, $failed failed"
    [ "$failed" -eq 0 ]
}

case "${1:-}" in
demo) demo ;;
test) test_all ;;
deps) deps ;;
build) build "$top/build" ;;
*) echo "usage: $0 demo|test|deps|build" >&2; exit 2 ;;
esac
