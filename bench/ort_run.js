// ONNX Runtime's side of bench/real_models.py, through the onnxruntime-node
// package bench/ort.sh installs:
//
//     node bench/ort_run.js MODULE_DIR MODEL SPEC.json OUT.json
//
// SPEC: {"inputs": [{"name", "dtype", "shape", "file"}], "runs", "threads"}.
// Runs the model once, then `runs` times timed (session.run, the N-API
// call included), and writes each output's raw bytes beside SPEC and
// {"us": median, "outputs": [{"name", "dtype", "shape", "file"}]} to OUT.
'use strict';
const fs = require('fs');
const path = require('path');

const TYPES = {
  float32: Float32Array, float64: Float64Array, int64: BigInt64Array, int32: Int32Array,
  uint8: Uint8Array, int8: Int8Array, bool: Uint8Array,
};

async function main() {
  const [dir, model, specFile, outFile] = process.argv.slice(2);
  const ort = require(path.resolve(dir, 'onnxruntime-node'));
  const spec = JSON.parse(fs.readFileSync(specFile));
  const sess = await ort.InferenceSession.create(model, {
    intraOpNumThreads: spec.threads || 1, interOpNumThreads: 1, graphOptimizationLevel: 'all',
  });
  const feeds = {};
  for (const i of spec.inputs) {
    const b = fs.readFileSync(i.file);
    const data = new TYPES[i.dtype](b.buffer.slice(b.byteOffset, b.byteOffset + b.length));
    feeds[i.name] = new ort.Tensor(i.dtype, data, i.shape);
  }
  let out = await sess.run(feeds);
  const times = [];
  for (let k = 0; k < (spec.runs || 5); k++) {
    const t0 = process.hrtime.bigint();
    out = await sess.run(feeds);
    times.push(Number(process.hrtime.bigint() - t0) / 1000);
  }
  times.sort((a, b) => a - b);
  const res = {us: times[times.length >> 1], outputs: []};
  sess.outputNames.forEach((name, k) => {
    const t = out[name];
    const file = `${specFile}.out${k}.bin`;
    fs.writeFileSync(file, Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength));
    res.outputs.push({name, dtype: t.type, shape: t.dims, file});
  });
  fs.writeFileSync(outFile, JSON.stringify(res));
}

main().catch((e) => {
  console.error(`ort_run.js: ${e.message || e}`);
  process.exit(1);
});
