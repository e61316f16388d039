#!/bin/sh
# Build and run every benchmark in bench/, printing all figures in one run.
#
#     bench/run.sh [BUILD_DIR] [--quick] [--socket EP] [-- BENCH_LATENCY_ARGS...]
#
# BUILD_DIR is a configured build tree (default: build/ next to bench/).
# --quick and --socket EP go to the benchmarks that talk to gexecd
# (bench_latency, bench_modes, bench_ort): short runs, and a running daemon
# instead of one each starts from BUILD_DIR on a temporary ipc socket.
# bench_matmul runs with OpenBLAS's own choice of kernels (OPENBLAS_CORETYPE
# unset), with OPENBLAS_CORETYPE=SkylakeX (AVX-512 CPUs only), and with the
# environment's OPENBLAS_CORETYPE if it sets another one, each with OpenBLAS's
# default threads and with one thread (",1thr": how gexecd's workers run it);
# the figures are printed side by side. bench_ort (gexec against ONNX
# Runtime) first has bench/ort.sh fetch ONNX Runtime into BUILD_DIR/ort
# (npm, once) and runs without it, saying so, when that fails. Every other
# bench/bench_*.c runs once; arguments after `--` go to bench_latency alone
# (e.g. -- --runs 100).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
build=$here/../build
# --quick and --socket, for every benchmark that talks to gexecd
quick=
socket=
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
    case $1 in
    --quick) quick=--quick ;;
    --socket)
        [ $# -ge 2 ] || { echo "run.sh: --socket needs an endpoint" >&2; exit 2; }
        socket=$2
        shift
        ;;
    -*) echo "run.sh: unknown option $1 (usage: run.sh [BUILD_DIR] [--quick] [--socket EP] [-- BENCH_LATENCY_ARGS...])" >&2; exit 2 ;;
    *) build=$1 ;;
    esac
    shift
done
[ $# -gt 0 ] && [ "$1" = "--" ] && shift
build=$(cd "$build" && pwd)

# daemon_bench NAME [ARGS...]: build/bench/NAME with --quick and --socket
# when given, then ARGS
daemon_bench() {
    prog=$build/bench/$1
    shift
    # shellcheck disable=SC2086 # $quick is empty or one word
    "$prog" $quick ${socket:+--socket "$socket"} "$@"
}

benches=
for src in "$here"/bench_*.c; do
    benches="$benches ${src##*/}"
done
benches=$(echo "$benches" | sed 's/\.c//g')

targets=
for b in $benches; do
    targets="$targets bench/$b"
done
echo "== building:$targets"
# shellcheck disable=SC2086 # one word per target
make -s -C "$build" $targets

has_avx512() {
    grep -q ' avx512f ' /proc/cpuinfo 2>/dev/null && grep -q ' avx512bw ' /proc/cpuinfo &&
        grep -q ' avx512vl ' /proc/cpuinfo && grep -q ' avx512dq ' /proc/cpuinfo
}

# One bench_matmul run: $1 label, $2 OPENBLAS_CORETYPE ("" = unset),
# $3 OPENBLAS_NUM_THREADS ("" = as the environment says).
matmul_one() {
    env -u OPENBLAS_CORETYPE ${2:+OPENBLAS_CORETYPE=$2} ${3:+OPENBLAS_NUM_THREADS=$3} \
        "$build/bench/bench_matmul" > "$tmp/$1"
    printf '%-16s %s\n' "$1:" "$(grep '^#' "$tmp/$1" | sed 's/^# //')"
    grep '^matmul' "$tmp/$1" | awk '{print $2 "x" $4, $5}' > "$tmp/$1.col"
    labels="$labels $1"
}

# bench_matmul under several OpenBLAS core types, each with OpenBLAS's
# default thread count and with one thread (as gexecd's workers run it), the
# GFLOP/s side by side.
run_matmul() {
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    env_core=${OPENBLAS_CORETYPE:-}
    labels=
    cores="unset"
    if has_avx512; then
        cores="$cores SkylakeX"
    else
        echo "(no AVX-512 on this CPU: OPENBLAS_CORETYPE=SkylakeX skipped)"
    fi
    if [ -n "$env_core" ] && [ "$env_core" != SkylakeX ]; then
        cores="$cores $env_core"
    fi
    for c in $cores; do
        core=$c
        [ "$c" = unset ] && core=
        matmul_one "$c" "$core" ""
        matmul_one "$c,1thr" "$core" 1
    done
    printf '%-18s' "GFLOP/s"
    for l in $labels; do
        printf ' %14s' "$l"
    done
    echo
    first=${labels# }
    first=${first%% *}
    while read -r size _; do
        printf '%-18s' "matmul $size"
        for l in $labels; do
            printf ' %14s' "$(awk -v s="$size" '$1 == s {print $2}' "$tmp/$l.col")"
        done
        echo
    done < "$tmp/$first.col"
    rm -rf "$tmp"
    trap - EXIT
}

for b in $benches; do
    echo
    case $b in
    bench_matmul)
        echo "== bench_matmul (the MatMul kernel alone, no daemon)"
        run_matmul
        ;;
    bench_latency)
        echo "== bench_latency (through gexecd)"
        daemon_bench bench_latency "$@"
        ;;
    bench_modes)
        echo "== bench_modes (every parallel mode and auto, through gexecd)"
        daemon_bench bench_modes
        ;;
    bench_ort)
        echo "== bench_ort (gexec against ONNX Runtime, the same ONNX models)"
        if ort_lib=$("$here/ort.sh" "$build/ort"); then
            daemon_bench bench_ort --ort "$ort_lib"
        else
            daemon_bench bench_ort --no-fetch
        fi
        ;;
    *)
        echo "== $b"
        "$build/bench/$b"
        ;;
    esac
done
