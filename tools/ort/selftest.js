#!/usr/bin/env node
'use strict';
// selftest.js [--keep DIR]: checks the reference tools themselves, without sedp. Builds a small
// recommendation-shaped model with the encoder of onnx-pb.js (an embedding Gather with sum
// pooling, a dense input, Concat, Gemm + Relu, Gemm, Sigmoid; opset 13), makes inputs with
// make-inputs.js (the index range must be read from the graph), runs ONNX Runtime through
// ort-run.js's path (files written and read back) and compares with the same network computed
// here in double precision. Exit 0 when everything agrees to float rounding.
const fs = require('fs');
const os = require('os');
const path = require('path');
const pb = require('./onnx-pb');
const c = require('./common');
const { makeInputs } = require('./make-inputs');
const { ortRun } = require('./ort-run');

function randTensor(name, dims, r, scale) {
  const data = new Float32Array(pb.numel(dims));
  for (let i = 0; i < data.length; i++) data[i] = r.normal() * scale;
  return { name, dataType: pb.DT.FLOAT, dims, data };
}

async function main() {
  const a = c.parseArgs(process.argv.slice(2), { keep: 'string' }, 'usage: selftest.js [--keep DIR]');
  const dir = a.keep || fs.mkdtempSync(path.join(os.tmpdir(), 'ort-selftest-'));
  fs.mkdirSync(dir, { recursive: true });
  const r = c.rng(42, 99);
  const R = 37, E = 4, D = 3, H = 6, BAG = 2;
  const emb = randTensor('table_a', [R, E], r, 1);
  const w1 = randTensor('w1', [E + D, H], r, 0.5), b1 = randTensor('b1', [H], r, 0.1);
  const w2 = randTensor('w2', [H, 1], r, 0.5), b2 = randTensor('b2', [1], r, 0.1);
  const axes = { name: 'axes', dataType: pb.DT.INT64, dims: [1], data: BigInt64Array.from([1n]) };
  const model = pb.encodeModel({
    opset: 13,
    nodes: [
      { op: 'Identity', inputs: ['ids'], outputs: ['ids2'] },
      { op: 'Gather', inputs: ['table_a', 'ids2'], outputs: ['e'], attrs: { axis: 0 } },
      { op: 'ReduceSum', inputs: ['e', 'axes'], outputs: ['pooled'], attrs: { keepdims: 0 } },
      { op: 'Concat', inputs: ['pooled', 'dense'], outputs: ['x'], attrs: { axis: 1 } },
      { op: 'Gemm', inputs: ['x', 'w1', 'b1'], outputs: ['h'] },
      { op: 'Relu', inputs: ['h'], outputs: ['hr'] },
      { op: 'Gemm', inputs: ['hr', 'w2', 'b2'], outputs: ['logit'] },
      { op: 'Sigmoid', inputs: ['logit'], outputs: ['prob'] },
    ],
    initializers: [emb, w1, b1, w2, b2, axes],
    inputs: [{ name: 'dense', elemType: pb.DT.FLOAT, shape: ['batch', D] },
             { name: 'ids', elemType: pb.DT.INT64, shape: ['batch', BAG] }],
    outputs: [{ name: 'prob', elemType: pb.DT.FLOAT, shape: ['batch', 1] },
              { name: 'logit', elemType: pb.DT.FLOAT, shape: ['batch', 1] }],
  });
  const modelPath = path.join(dir, 'tiny.onnx');
  fs.writeFileSync(modelPath, model);

  // The reader sees what the writer wrote.
  const m = pb.decodeModel(model);
  if (m.graph.inputs.map((v) => v.name).join() !== 'dense,ids') throw new Error('decodeModel: inputs');
  if (c.indexRange(m.graph, 'ids') !== R) throw new Error(`indexRange: ${c.indexRange(m.graph, 'ids')} != ${R}`);

  // TensorProto: unpacked and typed fields decode like packed raw_data.
  const w = new pb.Writer();
  w.int(1, 2); w.int(1, 2); w.int(2, pb.DT.INT64); w.string(8, 'u');
  for (const v of [-1, 5, 2 ** 40, 0]) w.int(7, v);
  const u = pb.decodeTensor(w.finish());
  if (u.dims.join() !== '2,2' || Array.from(u.data).join() !== '-1,5,1099511627776,0') throw new Error('decodeTensor: unpacked int64');
  const fw = new pb.Writer();
  fw.packedVarints(1, [3]); fw.int(2, pb.DT.FLOAT);
  const fb = new pb.Writer(); for (const v of [1.5, -2, 0.25]) { const b = Buffer.alloc(4); b.writeFloatLE(v); fb.push(b); }
  fw.bytes(4, fb.finish());
  if (Array.from(pb.decodeTensor(fw.finish()).data).join() !== '1.5,-2,0.25') throw new Error('decodeTensor: packed float_data');

  let worst = 0;
  for (const batch of [1, 5, 64]) {
    const inDir = path.join(dir, `b${batch}`, 'in'), outDir = path.join(dir, `b${batch}`, 'out');
    c.writeTensorDir(inDir, 'input', await makeInputs(modelPath, { batch, seed: batch }));
    const inputs = c.readTensorDir(inDir, 'input');
    c.writeTensorDir(outDir, 'output', await ortRun(modelPath, inputs));
    const [prob, logit] = c.readTensorDir(outDir, 'output');
    if (prob.name !== 'prob' || logit.name !== 'logit') throw new Error('output order or names');
    if (prob.dims.join() !== `${batch},1`) throw new Error(`prob dims ${prob.dims}`);
    const dense = inputs[0].data, ids = inputs[1].data;
    for (let b = 0; b < batch; b++) {
      const x = [];
      for (let e = 0; e < E; e++) {
        let s = 0;
        for (let k = 0; k < BAG; k++) {
          const id = Number(ids[b * BAG + k]);
          if (id < 0 || id >= R) throw new Error(`index ${id} out of range`);
          s += emb.data[id * E + e];
        }
        x.push(s);
      }
      for (let d = 0; d < D; d++) x.push(dense[b * D + d]);
      let l = b2.data[0];
      for (let h = 0; h < H; h++) {
        let acc = b1.data[h];
        for (let i = 0; i < E + D; i++) acc += x[i] * w1.data[i * H + h];
        l += Math.max(acc, 0) * w2.data[h];
      }
      const p = 1 / (1 + Math.exp(-l));
      for (const [got, want] of [[logit.data[b], l], [prob.data[b], p]]) {
        // float32 rounding of a short dot product: a relative 1e-5 plus an absolute 1e-5.
        const err = Math.abs(got - want) / (1e-5 * Math.abs(want) + 1e-5);
        worst = Math.max(worst, err);
      }
    }
  }
  if (!a.keep) fs.rmSync(dir, { recursive: true, force: true });
  if (worst > 1) throw new Error(`ONNX Runtime disagrees with the double-precision reference: ${worst.toFixed(2)}× the tolerance`);
  process.stdout.write(`selftest: ok (ONNX Runtime vs a double-precision reference: worst error ${worst.toFixed(3)}× the tolerance)\n`);
}

main().catch((e) => { process.stderr.write(`selftest: FAIL: ${e.stack}\n`); process.exit(1); });
