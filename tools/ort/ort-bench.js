#!/usr/bin/env node
'use strict';
// ort-bench.js MODEL.onnx --batch N --threads T [--seconds S] [--seed S] [--warmup S] [--parallel]
//
// ONNX Runtime's throughput on MODEL at batch N, inputs made once as by make-inputs.js (valid
// embedding indices) and reused by every run; a warm-up of at least 10 runs and --warmup
// seconds (default 0.5), then back-to-back runs for --seconds (default 2). Two ways to use T
// threads:
//   default      one CPU session with intraOpNumThreads=T, interOpNumThreads=1, all graph
//                optimizations, sequential execution (ORT parallelises inside each run);
//   --parallel   T processes, each one such session with intraOpNumThreads=1, running at the
//                same time (T independent streams of runs, as `sedp model bench --threads T`
//                runs T plans); rows/s is all their rows over the span from the first start
//                to the last end.
// Prints `RESULT rows_per_s=…`, `RESULT us_per_run=…` (per run of one stream) and
// `RESULT runs=…` on stdout. The time includes the Node binding's cost per call (a
// setImmediate, wrapping inputs, copying outputs into JS arrays), measured by `--overhead`.
const path = require('path');
const { fork } = require('child_process');
const c = require('./common');
const pb = require('./onnx-pb');

const usage = 'usage: ort-bench.js MODEL.onnx --batch N --threads T [--seconds S] [--seed S] [--warmup S] [--parallel]\n' +
              '       ort-bench.js --overhead [--seconds S]   (cost of one call of a 1-element Identity)';

const now = () => process.hrtime.bigint(); // CLOCK_MONOTONIC: comparable between processes

async function warm(session, feeds, warmup) {
  const t0 = now();
  for (let i = 0; i < 10 || Number(now() - t0) < warmup * 1e9; i++) await session.run(feeds);
}

async function timed(session, feeds, seconds) {
  let runs = 0;
  const start = now();
  let end = start;
  const limit = BigInt(Math.round(seconds * 1e9));
  while (end - start < limit || runs < 3) {
    await session.run(feeds);
    runs++;
    end = now();
  }
  return { runs, start, end };
}

async function prepare(ort, modelPath, batch, seed, intraThreads) {
  const { makeInputs } = require('./make-inputs');
  const session = await ort.InferenceSession.create(modelPath, c.sessionOptions(intraThreads));
  const inputs = await makeInputs(modelPath, { batch, seed, session });
  const feeds = {};
  session.inputNames.forEach((n, k) => { feeds[n] = c.toOrtTensor(ort, inputs[k]); });
  return { session, feeds };
}

// A child of --parallel: prepares and warms up, says 'ready', runs when told 'go', reports.
async function child() {
  const ort = c.loadOrt();
  const [modelPath, batch, seed, seconds, warmup] = JSON.parse(process.env.ORT_BENCH_CHILD);
  const { session, feeds } = await prepare(ort, modelPath, batch, seed, 1);
  await warm(session, feeds, warmup);
  process.send({ ready: true });
  process.once('message', async () => {
    await warm(session, feeds, 0); // a few runs to get back into cache after the wait
    const r = await timed(session, feeds, seconds);
    process.send({ runs: r.runs, start: r.start.toString(), end: r.end.toString() });
    process.disconnect();
  });
}

async function parallel(a, seconds, warmup) {
  const kids = [];
  for (let i = 0; i < a.threads; i++) {
    kids.push(fork(__filename, [], {
      env: { ...process.env, ORT_BENCH_CHILD: JSON.stringify([a._[0], a.batch, (a.seed || 1) + i, seconds, warmup]) },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    }));
  }
  const msg = (k) => new Promise((resolve, reject) => {
    k.once('message', resolve);
    k.once('exit', (code) => reject(new Error(`a benchmark process exited with ${code}`)));
  });
  await Promise.all(kids.map(msg));
  const results = kids.map(msg);
  for (const k of kids) k.send('go');
  const rs = await Promise.all(results);
  const start = rs.map((r) => BigInt(r.start)).reduce((x, y) => (y < x ? y : x));
  const end = rs.map((r) => BigInt(r.end)).reduce((x, y) => (y > x ? y : x));
  const runs = rs.reduce((s, r) => s + r.runs, 0);
  const secs = Number(end - start) / 1e9;
  return { runs, secs, perStream: rs.map((r) => Number(BigInt(r.end) - BigInt(r.start)) / 1e9 / r.runs) };
}

async function main() {
  if (process.env.ORT_BENCH_CHILD) return child();
  const a = c.parseArgs(process.argv.slice(2), { batch: 'int', threads: 'int', seconds: 'float', seed: 'int',
                                                 warmup: 'float', overhead: 'bool', parallel: 'bool' }, usage);
  const ort = c.loadOrt();
  const seconds = a.seconds === undefined ? 2 : a.seconds;
  const warmup = a.warmup === undefined ? 0.5 : a.warmup;
  if (a.overhead) {
    const model = pb.encodeModel({ nodes: [{ op: 'Identity', inputs: ['x'], outputs: ['y'] }],
                                   inputs: [{ name: 'x', elemType: pb.DT.FLOAT, shape: [1] }],
                                   outputs: [{ name: 'y', elemType: pb.DT.FLOAT, shape: [1] }] });
    const s = await ort.InferenceSession.create(model, c.sessionOptions(1));
    const feeds = { x: new ort.Tensor('float32', new Float32Array(1), [1]) };
    await warm(s, feeds, warmup);
    const r = await timed(s, feeds, seconds);
    process.stdout.write(`RESULT call_overhead_us=${(Number(r.end - r.start) / 1e3 / r.runs).toFixed(2)}\n`);
    return;
  }
  if (a._.length !== 1 || !a.batch || !a.threads) c.die(usage);
  if (a.parallel) {
    const { runs, secs, perStream } = await parallel(a, seconds, warmup);
    const us = perStream.reduce((x, y) => x + y, 0) / perStream.length * 1e6;
    process.stdout.write(`RESULT rows_per_s=${(runs * a.batch / secs).toFixed(1)}\n` +
                         `RESULT us_per_run=${us.toFixed(2)}\nRESULT runs=${runs}\n`);
    return;
  }
  const { session, feeds } = await prepare(ort, a._[0], a.batch, a.seed || 1, a.threads);
  await warm(session, feeds, warmup);
  const r = await timed(session, feeds, seconds);
  const secs = Number(r.end - r.start) / 1e9;
  process.stdout.write(`RESULT rows_per_s=${(r.runs * a.batch / secs).toFixed(1)}\n` +
                       `RESULT us_per_run=${(secs / r.runs * 1e6).toFixed(2)}\n` +
                       `RESULT runs=${r.runs}\n`);
}

main().catch((e) => c.die(e.message, 1));
