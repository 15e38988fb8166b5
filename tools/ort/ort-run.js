#!/usr/bin/env node
'use strict';
// ort-run.js MODEL.onnx --inputs DIR --outputs DIR [--threads T]
//
// Runs ONNX Runtime (CPU) on DIR/input_K.pb, given in graph-input order, and writes
// OUTDIR/output_K.pb in graph-output order, each named after its graph output: the layout of
// ONNX's backend test data and of `sedp model eval`.
const c = require('./common');

const usage = 'usage: ort-run.js MODEL.onnx --inputs DIR --outputs DIR [--threads T]';

// Runs @modelPath on @inputs (decoded TensorProtos) and returns the outputs, decoded, in
// graph-output order. @session: an open session to reuse.
async function ortRun(modelPath, inputs, { threads = 1, session = null } = {}) {
  const ort = c.loadOrt();
  const s = session || await ort.InferenceSession.create(modelPath, c.sessionOptions(threads));
  if (inputs.length !== s.inputNames.length)
    throw new Error(`${inputs.length} inputs given, the model has ${s.inputNames.length} (${s.inputNames.join(', ')})`);
  const feeds = {};
  s.inputNames.forEach((n, k) => { feeds[n] = c.toOrtTensor(ort, inputs[k]); });
  const res = await s.run(feeds);
  const outs = s.outputNames.map((n) => c.fromOrtTensor(n, res[n]));
  if (!session && s.release) await s.release();
  return outs;
}

async function main() {
  const a = c.parseArgs(process.argv.slice(2), { inputs: 'string', outputs: 'string', threads: 'int' }, usage);
  if (a._.length !== 1 || !a.inputs || !a.outputs) c.die(usage);
  const inputs = c.readTensorDir(a.inputs, 'input');
  const outs = await ortRun(a._[0], inputs, { threads: a.threads || 1 });
  c.writeTensorDir(a.outputs, 'output', outs);
  for (const [k, t] of outs.entries())
    process.stderr.write(`output_${k}.pb: ${t.name} [${t.dims.join(', ')}]\n`);
}

module.exports = { ortRun };
if (require.main === module) main().catch((e) => c.die(e.message, 1));
