#!/usr/bin/env node
'use strict';
// conformance.js --sedp SEDP [--work DIR] [--keep] [--quick] [--valgrind SUPPRESSIONS]
//                [--arch A …] [--batch N …] [--seed S …] [--model FILE.onnx …]
//
// Runs every synthetic model of `sedp model synth` through sedp (`sedp model eval`) and through
// ONNX Runtime (tools/ort) on the same inputs and compares every output element by element
// (tools/ort/compare.js: |a − b| ≤ 1e-5·max(|a|,|b|) + 1e-6). The matrix (docs/conformance.md):
//   small preset: every arch × seeds 1, 2 × batch 1, 7, 64, 256;
//   realistic preset: every arch, seed 1, batch 64.
// --quick: small preset, seed 1, batch 7 (what runs under valgrind, where every sedp command
// runs under memcheck with --valgrind's suppressions). --model: check given files instead of
// the synth models (at --batch, default 1 7 64 256). Prints a table; exits 1 on any mismatch,
// naming the model, batch, output and worst element.
const fs = require('fs');
const os = require('os');
const path = require('path');
const { spawnSync } = require('child_process');

const toolsDir = path.resolve(__dirname, '..', '..', 'tools', 'ort');
const c = require(path.join(toolsDir, 'common'));
const pb = require(path.join(toolsDir, 'onnx-pb'));
const { makeInputs } = require(path.join(toolsDir, 'make-inputs'));
const { ortRun } = require(path.join(toolsDir, 'ort-run'));
const { compareOutputs, describe, RTOL, ATOL } = require(path.join(toolsDir, 'compare'));

const ARCHS = ['mlp', 'dlrm', 'dcn', 'deepfm', 'mmoe'];
const usage = 'usage: conformance.js --sedp SEDP [--work DIR] [--keep] [--quick] [--valgrind SUPP] ' +
              '[--arch A …] [--batch N …] [--seed S …] [--model FILE.onnx …]';

const a = c.parseArgs(process.argv.slice(2), { sedp: 'string', work: 'string', keep: 'bool', quick: 'bool',
                                               valgrind: 'string', arch: 'list', batch: 'list', seed: 'list',
                                               model: 'list' }, usage);
if (!a.sedp) c.die(usage);
const ort = c.loadOrt();

function sedp(args, what) {
  let cmd = a.sedp, argv = args;
  if (a.valgrind !== undefined) {
    cmd = 'valgrind';
    argv = ['--quiet', '--error-exitcode=99', '--leak-check=full', '--errors-for-leak-kinds=definite',
            '--show-leak-kinds=definite', '--num-callers=30',
            ...(a.valgrind ? [`--suppressions=${a.valgrind}`] : []), a.sedp, ...args];
  }
  const t0 = process.hrtime.bigint();
  const r = spawnSync(cmd, argv, { encoding: 'utf8', maxBuffer: 64 << 20 });
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  if (r.error) throw new Error(`${what}: cannot run ${cmd}: ${r.error.message}`);
  if (r.status !== 0) {
    const tail = (r.stderr || '').trim().split('\n').slice(-15).join('\n    ');
    const e = new Error(`${what}: \`sedp ${args.join(' ')}\` exited with ${r.status ?? r.signal}\n    ${tail}`);
    e.sedpFailure = true;
    throw e;
  }
  return ms;
}

// The cases: [{ label, file (or synth args), batches }].
function cases() {
  const list = [];
  if (a.model.length) {
    const batches = a.batch.length ? a.batch.map(Number) : [1, 7, 64, 256];
    for (const f of a.model) list.push({ label: path.basename(f), file: path.resolve(f), batches, seed: 1 });
    return list;
  }
  const archs = a.arch.length ? a.arch : ARCHS;
  for (const arch of archs) if (!ARCHS.includes(arch)) c.die(`unknown arch ${arch}`);
  const quick = a.quick || a.valgrind !== undefined;
  const seeds = a.seed.length ? a.seed.map(Number) : quick ? [1] : [1, 2];
  const batches = a.batch.length ? a.batch.map(Number) : quick ? [7] : [1, 7, 64, 256];
  for (const arch of archs)
    for (const seed of seeds)
      list.push({ label: `${arch}/small/s${seed}`, synth: { arch, seed, preset: 'small' }, batches, seed });
  if (!quick) {
    const rb = a.batch.length ? batches : [64];
    for (const arch of archs)
      list.push({ label: `${arch}/realistic/s1`, synth: { arch, seed: 1, preset: 'realistic' }, batches: rb, seed: 1 });
  }
  return list;
}

function pad(s, n) { s = String(s); return s.length >= n ? s : s + ' '.repeat(n - s.length); }
function lpad(s, n) { s = String(s); return s.length >= n ? s : ' '.repeat(n - s.length) + s; }

async function main() {
  const work = a.work ? path.resolve(a.work) : fs.mkdtempSync(path.join(os.tmpdir(), 'sedp-conformance-'));
  fs.mkdirSync(work, { recursive: true });
  const list = cases();
  const failures = [];
  let nCases = 0, nFailed = 0;
  const header = `${pad('model', 24)} ${lpad('batch', 5)}  ${pad('outputs', 22)} ${lpad('max rel', 9)} ${lpad('max abs', 9)} ` +
                 `${lpad('worst/tol', 9)} ${lpad('sedp ms', 8)}  result`;
  process.stdout.write(`tolerance: |ort − sedp| ≤ ${RTOL}·max(|ort|,|sedp|) + ${ATOL} per element` +
                       `${a.valgrind !== undefined ? '; sedp under valgrind memcheck' : ''}\n${header}\n${'-'.repeat(header.length)}\n`);
  const t0 = Date.now();
  for (const cs of list) {
    const dir = path.join(work, cs.label.replace(/\//g, '_'));
    fs.mkdirSync(dir, { recursive: true });
    let file = cs.file;
    try {
      if (cs.synth) {
        file = path.join(dir, 'model.onnx');
        sedp(['model', 'synth', '--arch', cs.synth.arch, '--seed', String(cs.synth.seed),
              '--preset', cs.synth.preset, '-o', file], `${cs.label}: synth`);
      }
    } catch (e) {
      nCases += cs.batches.length;
      nFailed += cs.batches.length;
      failures.push(e.message);
      process.stdout.write(`${pad(cs.label, 24)} ${lpad('-', 5)}  FAIL ${e.message.split('\n')[0]}\n`);
      continue;
    }
    let model, session;
    try {
      model = pb.decodeModel(fs.readFileSync(file));
      session = await ort.InferenceSession.create(file, c.sessionOptions(1));
    } catch (e) {
      nCases += cs.batches.length;
      nFailed += cs.batches.length;
      failures.push(`${cs.label}: ONNX Runtime cannot load the model: ${e.message}`);
      process.stdout.write(`${pad(cs.label, 24)} ${lpad('-', 5)}  FAIL ONNX Runtime cannot load it: ${e.message.split('\n')[0]}\n`);
      continue;
    }
    for (const batch of cs.batches) {
      nCases++;
      const bdir = path.join(dir, `b${batch}`);
      const inDir = path.join(bdir, 'inputs'), ortDir = path.join(bdir, 'ort'), sedpDir = path.join(bdir, 'sedp');
      fs.mkdirSync(sedpDir, { recursive: true });
      const where = `${cs.label} batch ${batch}`;
      try {
        const inputs = await makeInputs(file, { batch, seed: cs.seed * 1000 + batch, model, session });
        c.writeTensorDir(inDir, 'input', inputs);
        const expected = await ortRun(file, inputs, { session });
        c.writeTensorDir(ortDir, 'output', expected);
        const ms = sedp(['model', 'eval', file, ...inputs.flatMap((_, k) => ['-i', path.join(inDir, `input_${k}.pb`)]),
                         '-o', sedpDir], where);
        const actual = c.readTensorDir(sedpDir, 'output');
        const res = compareOutputs(expected, actual);
        let maxRel = 0, maxAbs = 0, worst = 0;
        for (const o of res.outputs) {
          maxRel = Math.max(maxRel, o.result.maxRel);
          maxAbs = Math.max(maxAbs, o.result.maxAbs);
          if (o.result.worst) worst = Math.max(worst, o.result.worst.ratio);
          if (o.result.problem) worst = Infinity;
        }
        const outs = expected.map((t) => t.name).join(',');
        process.stdout.write(`${pad(cs.label, 24)} ${lpad(batch, 5)}  ${pad(outs.length > 22 ? outs.slice(0, 21) + '…' : outs, 22)} ` +
                             `${lpad(maxRel.toExponential(1), 9)} ${lpad(maxAbs.toExponential(1), 9)} ` +
                             `${lpad(Number.isFinite(worst) ? worst.toFixed(3) : 'inf', 9)} ${lpad(ms.toFixed(0), 8)}  ` +
                             `${res.ok ? 'ok' : 'FAIL'}\n`);
        if (!res.ok) {
          nFailed++;
          const lines = [];
          if (res.problem) lines.push(res.problem);
          for (const o of res.outputs) if (!o.result.ok) lines.push(describe(o));
          failures.push(`${where} (${file}):\n    ${lines.join('\n    ')}\n    inputs ${inDir}, ort ${ortDir}, sedp ${sedpDir}`);
        }
      } catch (e) {
        nFailed++;
        failures.push(e.sedpFailure ? e.message : `${where}: ${e.stack}`);
        process.stdout.write(`${pad(cs.label, 24)} ${lpad(batch, 5)}  FAIL ${e.message.split('\n')[0]}\n`);
      }
    }
    if (session.release) await session.release();
  }
  const secs = ((Date.now() - t0) / 1000).toFixed(1);
  if (failures.length) {
    process.stdout.write(`\nmismatches and errors:\n${failures.map((f) => `  ${f}`).join('\n')}\n`);
    a.keep = true;
  }
  if (a.keep || a.work) process.stdout.write(`files kept in ${work}\n`);
  else fs.rmSync(work, { recursive: true, force: true });
  process.stdout.write(`conformance: ${nCases - nFailed} of ${nCases} cases agree with ONNX Runtime ${ort.env.versions.node || ''} (${secs} s)\n`);
  process.exit(failures.length ? 1 : 0);
}

main().catch((e) => { process.stderr.write(`conformance: ${e.stack}\n`); process.exit(1); });
