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
const { compareOutputs, describe, RTOL, ATOL, ATOL_INTERMEDIATE } = require(path.join(toolsDir, 'compare'));
const { exposeIntermediates } = require(path.join(toolsDir, 'expose'));

const ARCHS = ['mlp', 'dlrm', 'dcn', 'deepfm', 'mmoe', 'wdl', 'dcnv2', 'dssm', 'esmm', 'ple', 'din', 'dien', 'bst'];

// The sequence models' inputs (docs/models.md#synth): `item` [batch, 1] and `hist`
// [batch, seq_len] index one table, emb_item; `hist` is right-padded with 0. make-inputs.js
// draws ids uniformly over the table's rows (it follows each id input to its Gather), so 0 is
// rare: here the ids of `hist` are made non-zero and some rows get a padded tail, the same rows
// for every seed: row r keeps 1 + 7r mod L ids, all L when r mod 3 = 2, none when r mod 12 = 4
// (a user without history). Checks that the ids lie within the table and that some rows are
// padded (batches above 1). Throws on a violation.
function seqInputs(model, inputs) {
  const hist = inputs.find((t) => t.name === 'hist'), item = inputs.find((t) => t.name === 'item');
  if (!hist && !item) return;
  const table = model.graph.initializers.get('emb_item');
  if (!hist || !item || !table) throw new Error('a sequence model needs inputs hist and item and the table emb_item');
  const rows = table.dims[0];
  for (const t of [hist, item])
    for (const v of t.data)
      if (v < 0n || v >= BigInt(rows)) throw new Error(`input ${t.name}: id ${v} outside emb_item's ${rows} rows`);
  const [b, L] = hist.dims;
  let padded = 0;
  for (let r = 0; r < b; r++) {
    const len = r % 3 === 2 ? L : r % 12 === 4 ? 0 : 1 + (7 * r) % L;
    for (let j = 0; j < L; j++) {
      const k = r * L + j;
      if (j >= len) hist.data[k] = 0n;
      else if (hist.data[k] === 0n) hist.data[k] = 1n;
    }
    if (len < L) padded++;
  }
  if (b > 1 && padded === 0) throw new Error('no row of hist is padded: the mask is not exercised');
}
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

// Runs one variant of a case (the model's own outputs, or every intermediate value) through both
// engines and compares. Returns { ok, row, failure }.
async function runVariant(v, cs, batch, inputs, inDir, bdir, producers) {
  const ortDir = path.join(bdir, `ort-${v.tag}`), sedpDir = path.join(bdir, `sedp-${v.tag}`);
  fs.mkdirSync(sedpDir, { recursive: true });
  const where = `${cs.label} batch ${batch}${v.tag === 'all' ? ' (every intermediate value)' : ''}`;
  const expected = await ortRun(v.file, inputs, { session: v.session });
  c.writeTensorDir(ortDir, 'output', expected);
  const ms = sedp(['model', 'eval', v.file, ...inputs.flatMap((_, k) => ['-i', path.join(inDir, `input_${k}.pb`)]),
                   '-o', sedpDir], where);
  const actual = c.readTensorDir(sedpDir, 'output');
  // The model's own outputs (the first ones in both variants) strictly; intermediates with a
  // floor of ATOL_INTERMEDIATE.
  const res = compareOutputs(expected, actual, (k) => ({ rtol: RTOL, atol: k < v.nOutputs ? ATOL : ATOL_INTERMEDIATE }));
  let maxRel = 0, maxAbs = 0, worst = 0;
  for (const o of res.outputs) {
    maxRel = Math.max(maxRel, o.result.maxRel);
    maxAbs = Math.max(maxAbs, o.result.maxAbs);
    if (o.result.worst) worst = Math.max(worst, o.result.worst.ratio);
    if (o.result.problem) worst = Infinity;
  }
  let outs = v.tag === 'all' ? `all ${expected.length} values` : expected.map((t) => t.name).join(',');
  if (outs.length > 20) outs = outs.slice(0, 19) + '…';
  const row = `${pad(cs.label, 24)} ${lpad(batch, 5)}  ${pad(outs, 20)} ${lpad(maxRel.toExponential(1), 9)} ` +
              `${lpad(maxAbs.toExponential(1), 9)} ${lpad(Number.isFinite(worst) ? worst.toFixed(3) : 'inf', 9)} ` +
              `${lpad(ms.toFixed(0), 8)}  ${res.ok ? 'ok' : 'FAIL'}`;
  if (res.ok) return { ok: true, row };
  const lines = [];
  if (res.problem) lines.push(res.problem);
  const bad = res.outputs.filter((o) => !o.result.ok);
  for (const o of bad.slice(0, 6)) {
    const n = producers.get(o.name);
    lines.push(describe(o) + (n ? ` [${n.opType} node ${n.name || '?'}]` : ''));
  }
  if (bad.length > 6) lines.push(`… and ${bad.length - 6} more outputs outside the tolerance`);
  if (v.tag === 'all' && bad.length) {
    const first = bad[0], n = producers.get(first.name);
    lines.unshift(`first divergence (node order): ${first.name}${n ? ` from ${n.opType} node ${n.name || '?'}` : ''}`);
  }
  return { ok: false, row, failure: `${where}, model ${v.file}:\n    ${lines.join('\n    ')}\n    inputs ${inDir}, ort ${ortDir}, sedp ${sedpDir}` };
}

async function main() {
  const work = a.work ? path.resolve(a.work) : fs.mkdtempSync(path.join(os.tmpdir(), 'sedp-conformance-'));
  fs.mkdirSync(work, { recursive: true });
  const list = cases();
  const failures = [];
  let nCases = 0, nFailed = 0;
  const header = `${pad('model', 24)} ${lpad('batch', 5)}  ${pad('compared', 20)} ${lpad('max rel', 9)} ${lpad('max abs', 9)} ` +
                 `${lpad('worst/tol', 9)} ${lpad('sedp ms', 8)}  result`;
  process.stdout.write(`tolerance: |ort − sedp| ≤ ${RTOL}·max(|ort|,|sedp|) + ${ATOL} per element of the model's outputs, ` +
                       `+ ${ATOL_INTERMEDIATE} for intermediate values` +
                       `${a.valgrind !== undefined ? '; sedp under valgrind memcheck' : ''}\n` +
                       'each case twice: the model as it is (its outputs), and with every intermediate value made a graph output\n' +
                       `${header}\n${'-'.repeat(header.length)}\n`);
  const t0 = Date.now();
  const failRow = (cs, batch, msg) => process.stdout.write(`${pad(cs.label, 24)} ${lpad(batch, 5)}  FAIL ${msg.split('\n')[0]}\n`);
  for (const cs of list) {
    const dir = path.join(work, cs.label.replace(/\//g, '_'));
    fs.mkdirSync(dir, { recursive: true });
    let file = cs.file;
    const variants = [];
    let model;
    try {
      if (cs.synth) {
        file = path.join(dir, 'model.onnx');
        sedp(['model', 'synth', '--arch', cs.synth.arch, '--seed', String(cs.synth.seed),
              '--preset', cs.synth.preset, '-o', file], `${cs.label}: synth`);
      }
      const buf = fs.readFileSync(file);
      model = pb.decodeModel(buf);
      const nOutputs = model.graph.outputs.length;
      variants.push({ tag: 'outputs', file, nOutputs, session: await ort.InferenceSession.create(file, c.sessionOptions(1)) });
      const allFile = path.join(dir, 'model-all-values.onnx');
      fs.writeFileSync(allFile, exposeIntermediates(buf).buf);
      variants.push({ tag: 'all', file: allFile, nOutputs, session: await ort.InferenceSession.create(allFile, c.sessionOptions(1)) });
    } catch (e) {
      nCases += cs.batches.length * 2;
      nFailed += cs.batches.length * 2;
      failures.push(e.sedpFailure ? e.message : `${cs.label}: ${e.message}`);
      failRow(cs, '-', e.message);
      continue;
    }
    const producers = new Map();
    for (const n of model.graph.nodes) for (const o of n.outputs) producers.set(o, n);
    for (const batch of cs.batches) {
      const bdir = path.join(dir, `b${batch}`);
      const inDir = path.join(bdir, 'inputs');
      let inputs;
      try {
        inputs = await makeInputs(file, { batch, seed: cs.seed * 1000 + batch, model, session: variants[0].session });
        seqInputs(model, inputs);
        c.writeTensorDir(inDir, 'input', inputs);
      } catch (e) {
        nCases += 2;
        nFailed += 2;
        failures.push(`${cs.label} batch ${batch}: cannot make inputs: ${e.message}`);
        failRow(cs, batch, e.message);
        continue;
      }
      for (const v of variants) {
        nCases++;
        try {
          const r = await runVariant(v, cs, batch, inputs, inDir, bdir, producers);
          process.stdout.write(r.row + '\n');
          if (!r.ok) {
            nFailed++;
            failures.push(r.failure);
          }
        } catch (e) {
          nFailed++;
          failures.push(e.sedpFailure ? e.message : `${cs.label} batch ${batch}: ${e.stack}`);
          failRow(cs, batch, e.message);
        }
      }
    }
    for (const v of variants) if (v.session.release) await v.session.release();
  }
  const secs = ((Date.now() - t0) / 1000).toFixed(1);
  if (failures.length) {
    process.stdout.write(`\nmismatches and errors:\n${failures.map((f) => `  ${f}`).join('\n')}\n`);
    a.keep = true;
  }
  if (a.keep || a.work) process.stdout.write(`files kept in ${work}\n`);
  else fs.rmSync(work, { recursive: true, force: true });
  process.stdout.write(`conformance: ${nCases - nFailed} of ${nCases} comparisons agree with ONNX Runtime ${ort.env.versions.node || ''} (${secs} s)\n`);
  process.exit(failures.length ? 1 : 0);
}

main().catch((e) => { process.stderr.write(`conformance: ${e.stack}\n`); process.exit(1); });
