#!/usr/bin/env bash
# Every GPU check of the CUDA backend in one run, on a machine with a GPU,
# the CUDA toolkit and driver, from the repository root, with gpu-carry/
# made by tests/gpu/pack.sh elsewhere (gpu-carry/gexec-gpu.tar.gz, unpacked
# into a temporary directory whose lib/ goes first in LD_LIBRARY_PATH):
#
#   tests/gpu/run.sh
#
# 1. nvidia-smi -L
# 2. check_cuda: each kernel against the CPU in-process (PASS/FAIL per case,
#    "N passed, N failed"; cuDNN ops and fused groups too), then MatMul
#    1024^3 and 4096^3 through a plan vs cuBLAS alone and a 200-op
#    elementwise chain fused vs one launch per op (TIME lines)
# 3. the real gexecd preferring cuda, 4 client processes running the MLP
#    example at once: every job answered, outputs equal to a CPU-only
#    gexecd's, nvidia-smi showing one context, the reply's device time,
#    STATS' topology line counting the GPU;
#    then a gexecd with gpu_tf32 true says so and runs a job
# 4. the ONNX node conformance run with cuda preferred for every subgraph
#    it can take, in every mode (when pack.sh packed the test data)
# 5. convnets (batch 32 and 1, a 100-block residual net) in PyTorch eager,
#    PyTorch CUDA Graphs and through gexecd (tests/gpu/bench_torch.py)
# Prints everything on stdout; each part's failure is reported and the
# next part still runs; the last line sums up. Bounded to about 4 minutes.
set -u
cd "$(dirname "$0")/../.."
top=$PWD
pack=$top/gpu-carry/gexec-gpu.tar.gz
fails=0
part() { printf '\n=== %s ===\n' "$*"; }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# unpacked outside gpu-carry/, which stays as pack.sh made it
[ -f "$pack" ] || { echo "no $pack: run tests/gpu/pack.sh where gexec was built"; exit 1; }
carry=$(mktemp -d "${TMPDIR:-/tmp}/gexec-gpu.XXXXXX")
trap 'rm -rf "$carry"' EXIT
tar -C "$carry" -xzf "$pack" || { echo "cannot unpack $pack"; exit 1; }
cudalib=
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
    [ -d "$d" ] && cudalib=$cudalib:$d
done
export LD_LIBRARY_PATH="$carry/lib$cudalib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
bin=$carry/bin
# cuDNN (a build with it links libcudnn.so.9): the toolkit's, the system's,
# or a Python wheel's (PyTorch's nvidia-cudnn) when neither has it
if ldd "$bin/check_cuda" 2>/dev/null | grep -q "libcudnn.*not found"; then
    for d in /usr/local/cuda*/lib* /usr/lib/x86_64-linux-gnu \
             $(ls -d /usr/local/lib/python3*/dist-packages/nvidia/cudnn/lib \
                     /usr/lib/python3*/dist-packages/nvidia/cudnn/lib \
                     /usr/local/lib/python3*/site-packages/nvidia/cudnn/lib \
                     /opt/conda/lib/python3*/site-packages/nvidia/cudnn/lib \
                     "$HOME"/.local/lib/python3*/site-packages/nvidia/cudnn/lib 2>/dev/null); do
        if [ -f "$d/libcudnn.so.9" ]; then
            echo "cuDNN from $d"
            export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$d"
            break
        fi
    done
fi
echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
# A carried library that needs a newer glibc than this machine's (built on
# Debian 12, glibc 2.36: libstdc++ is the one that does) steps aside for
# the machine's own copy.
mkdir -p "$carry/lib-off"
for l in "$carry"/lib/*.so*; do
    if ldd "$l" 2>&1 | grep -q "version .GLIBC_[0-9.]*. not found"; then
        echo "$(basename "$l") needs a newer glibc: using this machine's copy"
        mv "$l" "$carry/lib-off/"
    fi
done
ldd "$bin/gexecd" "$bin/check_cuda" | grep "not found" && fail "libraries missing (above)"
"$bin/gexecd" --version || fail "gexecd does not start"

part "1. GPUs"
timeout 20 nvidia-smi -L || fail "nvidia-smi -L"
timeout 20 nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv || true

part "2. check_cuda (kernels vs CPU, then MatMul and fused-chain timing)"
timeout 180 "$bin/check_cuda"
rc=$?
case $rc in
    0) echo "check_cuda: all passed" ;;
    77) fail "check_cuda skipped: no usable GPU (see its SKIP line)" ;;
    124) fail "check_cuda timed out after 180 s" ;;
    *) fail "check_cuda exit $rc" ;;
esac

part "3. gexecd on cuda, 4 client processes"
tmp=$(mktemp -d)
submit=$bin/gexec-submit
start() { # name prefer gpus [tf32] -> pid in $tmp/$1.pid
    cat > "$tmp/$1.yaml" <<EOC
socket: "ipc://$tmp/$1.sock"
gpus: "$3"
gpu_tf32: ${4:-false}
log_level: info
partition:
  prefer: [$2]
  cost_check: false
tune:
  mode: "off"
EOC
    "$bin/gexecd" -f -c "$tmp/$1.yaml" --profile-dir "" > "$tmp/$1.log" 2>&1 &
    echo $! > "$tmp/$1.pid"
    for _ in $(seq 1 100); do
        "$submit" --socket "ipc://$tmp/$1.sock" --timeout 1000 ping > /dev/null 2>&1 && return 0
        sleep 0.2
    done
    echo "gexecd ($1) did not answer; its log:"; cat "$tmp/$1.log"; return 1
}
stop() { [ -f "$tmp/$1.pid" ] && kill "$(cat "$tmp/$1.pid")" 2> /dev/null; wait "$(cat "$tmp/$1.pid")" 2> /dev/null; }
graph=examples/mlp.yaml
input=x=examples/mlp_input.npy
if start ref "cpu" none; then
    timeout 30 "$submit" --socket "ipc://$tmp/ref.sock" run "$graph" -i "$input" -o "$tmp/ref" ||
        fail "the CPU-only reference run"
    stop ref
else
    fail "the CPU-only gexecd"
fi
if start gpu "cuda, cpu" all; then
    sock=ipc://$tmp/gpu.sock
    grep -i "cuda" "$tmp/gpu.log"
    timeout 30 "$submit" --socket "$sock" explain "$graph" -i "$input" > "$tmp/explain.txt" 2>&1
    sed -n 1,40p "$tmp/explain.txt"
    grep -q "not offering backend 'cuda'" "$tmp/gpu.log" && fail "gexecd does not offer cuda (its log says why)"
    echo "explain mentions cuda: $(grep -c cuda "$tmp/explain.txt") line(s)"
    timeout 30 "$submit" --socket "$sock" run "$graph" -i "$input" -o "$tmp/one" > "$tmp/one.txt" 2>&1
    grep -E "ran:|why:" "$tmp/one.txt"
    grep -q "ran:.*(on the device [0-9]*us)" "$tmp/one.txt" || fail "the reply reports no device time"
    pids=()
    for i in 1 2 3 4; do
        timeout 45 "$submit" --socket "$sock" run "$graph" -i "$input" -o "$tmp/out$i" --repeat 250 \
            > "$tmp/client$i.txt" 2>&1 &
        pids+=($!)
    done
    sleep 1
    echo "-- nvidia-smi while the clients run (one gexecd context expected):"
    timeout 20 nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv || true
    nctx=$(timeout 20 nvidia-smi --query-compute-apps=pid --format=csv,noheader 2> /dev/null |
           grep -c -w "$(cat "$tmp/gpu.pid")" || true)
    echo "contexts of gexecd (pid $(cat "$tmp/gpu.pid")): $nctx"
    [ "$nctx" = 1 ] || fail "gexecd holds $nctx contexts, not 1 (or nvidia-smi cannot tell)"
    for i in 1 2 3 4; do
        if wait "${pids[$((i - 1))]}"; then
            if [ -f "$tmp/ref/y.npy" ] && "$bin/check_cuda" --npy-close "$tmp/out$i/y.npy" "$tmp/ref/y.npy"; then
                echo "client $i: 250 jobs answered, output equals the CPU's"
            else
                fail "client $i: output differs from the CPU's (or no reference)"
            fi
        else
            fail "client $i failed:"; tail -5 "$tmp/client$i.txt"
        fi
    done
    echo "-- daemon stats:"
    timeout 20 "$submit" --socket "$sock" stats > "$tmp/stats.txt" 2>&1
    head -30 "$tmp/stats.txt"
    grep -q "^topology:.*, [1-9][0-9]* GPUs*$" "$tmp/stats.txt" ||
        fail "the topology line counts no GPU"
    timeout 20 "$submit" --socket "$sock" perf "$graph" -i "$input" --concurrency 4 --duration 3 2>&1 | tail -12
    stop gpu
    echo "-- gexecd log (cuda lines, warnings, errors):"
    grep -i -E "cuda|warn|error" "$tmp/gpu.log" | head -30
else
    fail "gexecd preferring cuda"
fi
if start tf32 "cuda, cpu" all true; then
    grep -q "may use TF32" "$tmp/tf32.log" || fail "gexecd with gpu_tf32 true does not say so"
    grep -i "cuda:" "$tmp/tf32.log" | head -2
    timeout 30 "$submit" --socket "ipc://$tmp/tf32.sock" run "$graph" -i "$input" -o "$tmp/tf32" \
        > "$tmp/tf32.txt" 2>&1 || fail "a job on gexecd with gpu_tf32 true"
    grep -E "ran:" "$tmp/tf32.txt"
    stop tf32
else
    fail "gexecd with gpu_tf32 true"
fi
rm -rf "$tmp"

part "4. ONNX node conformance with cuda preferred (min_nodes 1), every mode"
if [ -f "$top/gpu-carry/onnx-node.tar.gz" ]; then
    tar -C "$carry" -xzf "$top/gpu-carry/onnx-node.tar.gz"
    GEXEC_DAEMON=$bin/gexecd timeout 240 "$bin/conformance" -d "$carry/node" --device cuda \
        --modes > "$carry/conf.txt" 2>&1
    rc=$?
    grep -E "^FAIL" "$carry/conf.txt" | head -40
    tail -1 "$carry/conf.txt"
    [ "$rc" = 0 ] || fail "conformance over cuda (exit $rc)"
else
    echo "no gpu-carry/onnx-node.tar.gz (libonnx-testdata was not installed where pack.sh ran)"
fi

part "5. the same convnets in PyTorch (eager, CUDA Graph) and through gexecd"
if python3 -c "import torch" 2> /dev/null; then
    timeout 240 python3 "$top/tests/gpu/bench_torch.py" "$bin" "$carry/torch"
    rc=$?
    [ "$rc" = 0 ] || [ "$rc" = 77 ] || fail "bench_torch (exit $rc; its gexecd log: $carry/torch/gexecd.log)"
    [ "$rc" = 0 ] || tail -20 "$carry/torch/gexecd.log" 2> /dev/null
else
    echo "no PyTorch here: skipped"
fi

part "summary"
if [ "$fails" = 0 ]; then echo "run.sh: every part passed"; else echo "run.sh: $fails part(s) failed"; fi
exit $((fails > 0))
