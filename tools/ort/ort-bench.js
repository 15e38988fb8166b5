#!/usr/bin/env node
'use strict';
// ort-bench.js MODEL.onnx --batch N --threads T [--seconds S] [--seed S] [--warmup S]
//
// ONNX Runtime's throughput on MODEL at batch N: one CPU session with intraOpNumThreads=T,
// interOpNumThreads=1, all graph optimizations, sequential execution; inputs made once as by
// make-inputs.js (valid embedding indices) and reused by every run; a warm-up of at least 10
// runs and --warmup seconds (default 0.5), then back-to-back runs for --seconds (default 2).
// Prints `RESULT rows_per_s=…`, `RESULT us_per_run=…` and `RESULT runs=…` on stdout. The time
// includes the Node binding's cost per call (a setImmediate, wrapping inputs, copying outputs
// into JS arrays): a few microseconds, measured separately by `--overhead`.
const c = require('./common');
const { makeInputs } = require('./make-inputs');
const pb = require('./onnx-pb');

const usage = 'usage: ort-bench.js MODEL.onnx --batch N --threads T [--seconds S] [--seed S] [--warmup S]\n' +
              '       ort-bench.js --overhead [--seconds S]   (cost of one call of a 1-element Identity)';

async function timeRuns(session, feeds, seconds, warmup) {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < 10 || Number(process.hrtime.bigint() - t0) < warmup * 1e9; i++) await session.run(feeds);
  let runs = 0;
  const start = process.hrtime.bigint();
  let now = start;
  const limit = BigInt(Math.round(seconds * 1e9));
  while (now - start < limit || runs < 3) {
    await session.run(feeds);
    runs++;
    now = process.hrtime.bigint();
  }
  return { runs, secs: Number(now - start) / 1e9 };
}

async function main() {
  const a = c.parseArgs(process.argv.slice(2), { batch: 'int', threads: 'int', seconds: 'float', seed: 'int',
                                                 warmup: 'float', overhead: 'bool' }, usage);
  const ort = c.loadOrt();
  const seconds = a.seconds === undefined ? 2 : a.seconds;
  const warmup = a.warmup === undefined ? 0.5 : a.warmup;
  if (a.overhead) {
    const model = pb.encodeModel({ nodes: [{ op: 'Identity', inputs: ['x'], outputs: ['y'] }],
                                   inputs: [{ name: 'x', elemType: pb.DT.FLOAT, shape: [1] }],
                                   outputs: [{ name: 'y', elemType: pb.DT.FLOAT, shape: [1] }] });
    const s = await ort.InferenceSession.create(model, c.sessionOptions(1));
    const { runs, secs } = await timeRuns(s, { x: new ort.Tensor('float32', new Float32Array(1), [1]) }, seconds, warmup);
    process.stdout.write(`RESULT call_overhead_us=${(secs / runs * 1e6).toFixed(2)}\n`);
    return;
  }
  if (a._.length !== 1 || !a.batch || !a.threads) c.die(usage);
  const modelPath = a._[0];
  const inputs = await makeInputs(modelPath, { batch: a.batch, seed: a.seed || 1 });
  const session = await ort.InferenceSession.create(modelPath, c.sessionOptions(a.threads));
  const feeds = {};
  session.inputNames.forEach((n, k) => { feeds[n] = c.toOrtTensor(ort, inputs[k]); });
  const { runs, secs } = await timeRuns(session, feeds, seconds, warmup);
  process.stdout.write(`RESULT rows_per_s=${(runs * a.batch / secs).toFixed(1)}\n` +
                       `RESULT us_per_run=${(secs / runs * 1e6).toFixed(2)}\n` +
                       `RESULT runs=${runs}\n`);
}

main().catch((e) => c.die(e.message, 1));
