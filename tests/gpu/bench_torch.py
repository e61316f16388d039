#!/usr/bin/env python3
"""The same convnets on the same GPU: PyTorch eager, PyTorch with a CUDA
Graph, and gexecd (through its socket, as a client sees it), side by side.

    bench_torch.py BIN_DIR WORK_DIR

BIN_DIR holds gexecd and gexec-submit (tests/gpu/pack.sh's bin/). On a GPU
machine with PyTorch (and the onnx package for torch.onnx.export): each
model is exported to ONNX, gexecd (preferring cuda) serves it, and
`gexec-submit perf` measures it with one client; PyTorch is timed the way
gexecd runs a job: the input copied from host memory, the model, the
output copied back. Outputs are compared. Prints one TIME line per model
and runtime and a ratio line; exits 1 if an output differs, 77 without a
GPU or PyTorch.
"""
import json
import os
import subprocess
import sys
import time

try:
    import numpy as np
    import torch
    import torch.nn as nn
except ImportError as e:
    print(f"SKIP bench_torch: {e}")
    sys.exit(77)
if not torch.cuda.is_available():
    print("SKIP bench_torch: no CUDA device for PyTorch")
    sys.exit(77)

BIN, WORK = sys.argv[1], sys.argv[2]
DEV = torch.device("cuda")
torch.backends.cudnn.allow_tf32 = False  # float32 both sides
torch.backends.cuda.matmul.allow_tf32 = False


def convnet():
    return nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(64, 128, 3, padding=1), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, 10))


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(c, c, 3, padding=1), nn.BatchNorm2d(c), nn.ReLU(),
                                  nn.Conv2d(c, c, 3, padding=1), nn.BatchNorm2d(c))

    def forward(self, x):
        return torch.relu(x + self.body(x))


def deep(blocks=100):  # about 700 ONNX nodes before gexec's rewrites
    return nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(),
                         *[Block(32) for _ in range(blocks)],
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10))


def median_ms(fn, n):
    for _ in range(5):
        fn()
    ts = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return sorted(ts)[len(ts) // 2] * 1e3


def torch_times(model, x_host):
    x_pinned = x_host.pin_memory()

    def eager():
        with torch.no_grad():
            return model(x_host.to(DEV)).cpu()

    static_x = x_host.to(DEV)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s), torch.no_grad():
        for _ in range(3):
            model(static_x)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g), torch.no_grad():
        static_y = model(static_x)

    def graphed():
        static_x.copy_(x_pinned, non_blocking=True)
        g.replay()
        return static_y.cpu()

    return eager, graphed


def gexecd_time(onnx_path, x_npy, y_ref, sock):
    submit = os.path.join(BIN, "gexec-submit")
    out = os.path.join(WORK, "out")
    subprocess.run([submit, "--socket", sock, "run", onnx_path, "-i", f"x={x_npy}", "-o", out],
                   check=True, capture_output=True, timeout=120)
    names = [f for f in os.listdir(out) if f.endswith(".npy")]
    y = np.load(os.path.join(out, names[0]))
    err = float(np.max(np.abs(y - y_ref)) / (np.max(np.abs(y_ref)) + 1e-30))
    r = subprocess.run([submit, "--socket", sock, "perf", onnx_path, "-i", f"x={x_npy}",
                        "--concurrency", "1", "--duration", "3", "--json"],
                       check=True, capture_output=True, text=True, timeout=120)
    j = json.loads(r.stdout.strip().splitlines()[-1])
    ex = subprocess.run([submit, "--socket", sock, "explain", onnx_path, "-i", f"x={x_npy}"],
                        capture_output=True, text=True, timeout=120).stdout
    on_cuda = sum(1 for line in ex.splitlines() if " cuda." in line)
    return j, err, on_cuda


def main():
    os.makedirs(WORK, exist_ok=True)
    sock = f"ipc://{WORK}/gexecd.sock"
    conf = os.path.join(WORK, "gexecd.yaml")
    with open(conf, "w") as f:
        f.write(f'socket: "{sock}"\nlog_level: info\npartition:\n  prefer: [cuda, cpu]\n'
                'tune:\n  mode: "off"\n')
    log = open(os.path.join(WORK, "gexecd.log"), "w")
    d = subprocess.Popen([os.path.join(BIN, "gexecd"), "-f", "-c", conf, "--profile-dir", ""],
                         stdout=log, stderr=log)
    bad = 0
    try:
        for _ in range(100):
            if subprocess.run([os.path.join(BIN, "gexec-submit"), "--socket", sock, "ping"],
                              capture_output=True).returncode == 0:
                break
            time.sleep(0.2)
        torch.manual_seed(0)
        for name, model, shape in (("convnet b32", convnet(), (32, 3, 64, 64)),
                                   ("convnet b1", convnet(), (1, 3, 64, 64)),
                                   ("resnet-like 100 blocks b8", deep(), (8, 3, 32, 32))):
            model = model.eval().to(DEV)
            x = torch.randn(*shape)
            onnx_path = os.path.join(WORK, name.replace(" ", "_") + ".onnx")
            try:
                torch.onnx.export(model, x.to(DEV), onnx_path, input_names=["x"],
                                  output_names=["y"], opset_version=17, dynamo=False)
            except TypeError:
                torch.onnx.export(model, x.to(DEV), onnx_path, input_names=["x"],
                                  output_names=["y"], opset_version=17)
            x_npy = os.path.join(WORK, "x.npy")
            np.save(x_npy, x.numpy())
            eager, graphed = torch_times(model, x)
            y_ref = eager().numpy()
            t_eager, t_graph = median_ms(eager, 50), median_ms(graphed, 50)
            j, err, on_cuda = gexecd_time(onnx_path, x_npy, y_ref, sock)
            lat = j.get("latency_us", {})
            p50 = lat.get("p50", float("nan")) / 1e3
            comp = j.get("split_us", {}).get("compute", float("nan")) / 1e3
            dev = j.get("split_us", {}).get("device", float("nan")) / 1e3
            ok = err < 1e-3
            bad += not ok
            print(f"TIME {name}: PyTorch eager {t_eager:.3f} ms, PyTorch CUDA Graph "
                  f"{t_graph:.3f} ms (copies in and out included) | gexecd end to end p50 "
                  f"{p50:.3f} ms, its compute {comp:.3f} ms, {dev:.3f} ms of it on the GPU "
                  f"({on_cuda} steps on cuda); "
                  f"max relative difference {err:.2g} {'ok' if ok else 'DIFFERS'}")
            print(f"TIME {name}: gexecd compute / PyTorch eager {comp / t_eager:.2f}, "
                  f"/ PyTorch CUDA Graph {comp / t_graph:.2f}")
    finally:
        d.terminate()
        d.wait(timeout=20)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
