#!/usr/bin/env node
'use strict';
// make-inputs.js MODEL.onnx --batch N --seed S --out DIR [--dim NAME=V …] [--range INPUT=N …]
//
// Writes DIR/input_K.pb (serialized TensorProto) for every graph input, in graph-input order
// (initializers excluded): float inputs standard normal, integer inputs uniform over the rows
// of the embedding table they index (found by following the input to the Gather that uses it;
// --range overrides), bool inputs fair coin flips. Deterministic in (model, batch, seed).
// The first dimension of every input, when symbolic, is the batch; other symbolic dimensions
// need --dim. Uses ONNX Runtime's view of the inputs when onnxruntime-node can be loaded
// (--no-ort: read them from the file only).
const fs = require('fs');
const pb = require('./onnx-pb');
const c = require('./common');

const usage = 'usage: make-inputs.js MODEL.onnx --batch N --seed S --out DIR [--dim NAME=V …] [--range INPUT=N …] [--no-ort]';

function pairs(list, what) {
  const o = {};
  for (const p of list) {
    const m = /^([^=]+)=(\d+)$/.exec(p);
    if (!m) c.die(`--${what} wants NAME=INTEGER, not ${p}`);
    o[m[1]] = Number(m[2]);
  }
  return o;
}

// The inputs for @modelPath at @batch rows, decoded TensorProtos in graph-input order.
// @model: the decoded model, @session: an open ORT session of it (both read when not given).
async function makeInputs(modelPath, { batch, seed, dims = {}, ranges = {}, useOrt = true,
                                       model = null, session = null }) {
  model = model || pb.decodeModel(fs.readFileSync(modelPath));
  let own = null;
  if (useOrt && !session) {
    let ort = null;
    try { ort = require('onnxruntime-node'); } catch (e) { /* the file's view only */ }
    if (ort) own = session = await ort.InferenceSession.create(modelPath, c.sessionOptions(1));
  }
  const specs = c.inputSpecs(model, { batch, dimValues: dims, ranges, session });
  if (own && own.release) await own.release();
  return c.makeTensors(specs, seed);
}

async function main() {
  const a = c.parseArgs(process.argv.slice(2), { batch: 'int', seed: 'int', out: 'string', dim: 'list',
                                                 range: 'list', 'no-ort': 'bool' }, usage);
  if (a._.length !== 1 || a.batch === undefined || a.out === undefined) c.die(usage);
  if (a.batch < 1) c.die('--batch must be at least 1');
  const tensors = await makeInputs(a._[0], { batch: a.batch, seed: a.seed || 0, dims: pairs(a.dim, 'dim'),
                                             ranges: pairs(a.range, 'range'), useOrt: !a['no-ort'] });
  c.writeTensorDir(a.out, 'input', tensors);
  for (const [k, t] of tensors.entries())
    process.stderr.write(`input_${k}.pb: ${t.name} ${pb.DT_NAME[t.dataType]} [${t.dims.join(', ')}]\n`);
}

module.exports = { makeInputs };
if (require.main === module) main().catch((e) => c.die(e.message, 1));
