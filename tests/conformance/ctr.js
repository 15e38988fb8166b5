#!/usr/bin/env node
'use strict';
// ctr.js --sedp SEDP --src SRCDIR [--work DIR] [--keep] [--realistic] [--valgrind SUPPRESSIONS]
//
// The CTR example against ONNX Runtime on the unsplit model (docs/conformance.md#the-ctr-check):
// examples/ctr/prepare --small writes the dlrm model (model.onnx), its cube and dense model and
// the requests into a scratch copy of the layout pipelines/ctr.pipeline expects; `sedp run`
// scores requests.run.jsonl through the pipeline (cube lookup + pooling, then the dense model);
// the same requests become the unsplit model's inputs here (dense and one id input per slot,
// the item's feature of that name, else the user's), ONNX Runtime runs model.onnx on them, and
// every item's score must agree with sedp's: |ort − sedp| ≤ 1e-5 · max(|ort|, |sedp|). Prints
// the worst item; exits 1 on any disagreement or missing item (keeping the scratch folder).
// --realistic: the full-size example (64 requests of 200 items) instead of --small.
// --valgrind: `sedp run` under memcheck (prepare runs sedp plainly).
const fs = require('fs');
const os = require('os');
const path = require('path');
const { spawnSync } = require('child_process');

const toolsDir = path.resolve(__dirname, '..', '..', 'tools', 'ort');
const c = require(path.join(toolsDir, 'common'));
const pb = require(path.join(toolsDir, 'onnx-pb'));

const RTOL = 1e-5;
const usage = 'usage: ctr.js --sedp SEDP --src SRCDIR [--work DIR] [--keep] [--realistic] [--valgrind SUPP]';
const a = c.parseArgs(process.argv.slice(2), { sedp: 'string', src: 'string', work: 'string', keep: 'bool',
                                               realistic: 'bool', valgrind: 'string' }, usage);
if (!a.sedp || !a.src) c.die(usage);
const ort = c.loadOrt();

function run(cmd, argv, what, env) {
  const r = spawnSync(cmd, argv, { encoding: 'utf8', maxBuffer: 256 << 20, env: env || process.env });
  if (r.error) throw new Error(`${what}: cannot run ${cmd}: ${r.error.message}`);
  if (r.status !== 0) {
    const tail = `${r.stdout || ''}${r.stderr || ''}`.trim().split('\n').slice(-20).join('\n    ');
    throw new Error(`${what}: \`${cmd} ${argv.join(' ')}\` exited with ${r.status ?? r.signal}\n    ${tail}`);
  }
  return r;
}

function readJsonLines(file) {
  return fs.readFileSync(file, 'utf8').split(/\r?\n/).map((l, k) => [l.trim(), k + 1])
    .filter(([l]) => l && !l.startsWith('#'))
    .map(([l, no]) => {
      try { return JSON.parse(l); } catch (e) { throw new Error(`${file}:${no}: ${e.message}`); }
    });
}

// The unsplit model's inputs for every item of every request, in ONNX Runtime's input order:
// each input is the item's feature of the input's name, else the user's.
function modelInputs(model, session, requests) {
  const rows = [];
  for (const r of requests) for (const it of r.items) rows.push({ req: r, item: it });
  const specs = c.inputSpecs(model, { batch: rows.length, session, ranges: {} , dimValues: {} });
  const feeds = {};
  for (const s of specs) {
    const width = pb.numel(s.dims) / rows.length;
    const data = pb.typedArrayFor(s.dataType, pb.numel(s.dims));
    rows.forEach(({ req, item }, i) => {
      const v = s.name in item ? item[s.name] : req.user ? req.user[s.name] : undefined;
      const vals = Array.isArray(v) ? v : v === undefined || v === null ? null : [v];
      if (vals === null || vals.length !== width)
        throw new Error(`request ${req.id} item ${item.item_id}: feature ${s.name}: ` +
                        `${vals === null ? 'missing' : `${vals.length} values`}, the model's input takes ${width} per row`);
      for (let k = 0; k < width; k++) {
        const x = vals[k];
        data[i * width + k] = s.dataType === pb.DT.INT64 ? BigInt(x) : x;
      }
    });
    feeds[s.name] = c.toOrtTensor(ort, { name: s.name, dataType: s.dataType, dims: s.dims, data });
  }
  return { rows, feeds };
}

async function main() {
  const work = a.work ? path.resolve(a.work) : fs.mkdtempSync(path.join(os.tmpdir(), 'sedp-ctr-ort-'));
  const data = path.join(work, 'examples', 'ctr', 'data');
  fs.mkdirSync(path.join(work, 'pipelines'), { recursive: true });
  fs.mkdirSync(path.dirname(data), { recursive: true });
  let ok = false;
  try {
    // The layout pipelines/ctr.pipeline expects: pipelines/ next to examples/ctr/data/.
    const pipeline = path.join(work, 'pipelines', 'ctr.pipeline');
    fs.copyFileSync(path.join(a.src, 'pipelines', 'ctr.pipeline'), pipeline);
    const t0 = Date.now();
    run(path.join(a.src, 'examples', 'ctr', 'prepare'), [...(a.realistic ? [] : ['--small']), `--out=${data}`],
        'prepare', { ...process.env, SEDP: a.sedp });
    const tPrepare = Date.now() - t0;

    // sedp run: the pipeline (cube lookup and pooling, the dense model) on the request log.
    const out = path.join(work, 'run.jsonl');
    let cmd = a.sedp, argv = ['run', '-q', pipeline, '--requests', path.join(data, 'requests.run.jsonl'), '-o', out];
    if (a.valgrind !== undefined) {
      argv = ['--quiet', '--error-exitcode=99', '--leak-check=full', '--errors-for-leak-kinds=definite',
              '--show-leak-kinds=definite', '--num-callers=30',
              ...(a.valgrind ? [`--suppressions=${a.valgrind}`] : []), cmd, ...argv];
      cmd = 'valgrind';
    }
    const t1 = Date.now();
    run(cmd, argv, 'sedp run');
    const tRun = Date.now() - t1;

    // ONNX Runtime on the unsplit model, all items in one batch.
    const requests = readJsonLines(path.join(data, 'requests.run.jsonl'));
    const modelPath = path.join(data, 'model.onnx');
    const model = pb.decodeModel(fs.readFileSync(modelPath));
    const session = await ort.InferenceSession.create(modelPath, c.sessionOptions(1));
    const { rows, feeds } = modelInputs(model, session, requests);
    const res = await session.run(feeds);
    const scores = res[session.outputNames[0]].data;
    if (scores.length !== rows.length)
      throw new Error(`model.onnx gave ${scores.length} values of ${session.outputNames[0]} for ${rows.length} items`);
    const expected = new Map();
    rows.forEach(({ req, item }, i) => expected.set(`${req.id}\t${item.item_id}`, scores[i]));

    // Every item of sedp's answer against ONNX Runtime's score.
    const errors = [];
    let worst = null, n = 0;
    const seen = new Set();
    for (const r of readJsonLines(out)) {
      if (r.status !== 'ok') errors.push(`request ${r.id}: status ${r.status}${r.message ? `: ${r.message}` : ''}`);
      for (const it of r.items || []) {
        const key = `${r.id}\t${it.item_id}`;
        if (it.status !== 'scored' || typeof it.score !== 'number') {
          errors.push(`request ${r.id} item ${it.item_id}: ${it.status}, no score`);
          continue;
        }
        if (!expected.has(key)) {
          errors.push(`request ${r.id} item ${it.item_id}: not among the requests`);
          continue;
        }
        seen.add(key);
        n++;
        const want = expected.get(key), got = it.score;
        const rel = want === got ? 0 : Math.abs(want - got) / Math.max(Math.abs(want), Math.abs(got));
        if (!worst || rel > worst.rel || Number.isNaN(rel)) worst = { rel, req: r.id, item: it.item_id, want, got };
        if (!(rel <= RTOL))
          errors.push(`request ${r.id} item ${it.item_id}: sedp ${got}, ONNX Runtime ${want} (relative error ${rel.toExponential(2)})`);
      }
    }
    for (const key of expected.keys())
      if (!seen.has(key)) errors.push(`request ${key.replace('\t', ' item ')}: no score from sedp run`);

    const size = a.realistic ? 'realistic' : 'small';
    console.log(`ctr (${size}): ${requests.length} requests, ${n} items; prepare ${tPrepare} ms, sedp run ${tRun} ms`);
    if (worst)
      console.log(`ctr: max relative error ${worst.rel.toExponential(2)} (bound ${RTOL}): request ${worst.req} ` +
                  `item ${worst.item}: ONNX Runtime ${worst.want}, sedp run ${worst.got}`);
    if (errors.length) {
      for (const e of errors.slice(0, 20)) console.error(`ctr: ${e}`);
      if (errors.length > 20) console.error(`ctr: … and ${errors.length - 20} more`);
      console.error(`ctr: FAIL: ${errors.length} problems; inputs and outputs kept in ${work}`);
      return 1;
    }
    console.log('ctr: ok: sedp run on the split model agrees with ONNX Runtime on the unsplit model');
    ok = true;
    return 0;
  } finally {
    if (ok && !a.keep && !a.work) fs.rmSync(work, { recursive: true, force: true });
    else if (!ok) console.error(`ctr: scratch folder kept: ${work}`);
  }
}

main().then((code) => process.exit(code), (e) => { console.error(`ctr: ${e.stack || e.message}`); process.exit(1); });
