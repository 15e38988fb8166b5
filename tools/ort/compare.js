#!/usr/bin/env node
'use strict';
// compare.js EXPECTED_DIR ACTUAL_DIR [--rtol R] [--atol A]
//
// Compares OUT/output_K.pb of two runs (expected: ONNX Runtime's) element by element. Floating
// elements a (expected) and b (actual) agree when
//     |a − b| ≤ rtol · max(|a|, |b|) + atol        (defaults rtol = 1e-5, atol = 1e-6)
// or both are NaN, or both are the same infinity; integer and bool elements must be equal.
// Counts, names (where both have one), types and shapes must match. Prints one line per output
// and exits 1 on any mismatch, naming the output and its worst element.
const c = require('./common');
const pb = require('./onnx-pb');

const RTOL = 1e-5, ATOL = 1e-6;
// The floor for intermediate values (tests/conformance exposes every node output): values made
// by cancellation inside a model (a factorization machine's ½((Σv)² − Σv²)) carry rounding
// errors of the size of the cancelled terms, not of the result. docs/conformance.md.
const ATOL_INTERMEDIATE = 1e-5;

function unravel(i, dims) {
  const idx = new Array(dims.length).fill(0);
  for (let k = dims.length - 1; k >= 0; k--) {
    idx[k] = i % dims[k];
    i = Math.floor(i / dims[k]);
  }
  return idx;
}

const isFloat = (dt) => dt === pb.DT.FLOAT || dt === pb.DT.DOUBLE || dt === pb.DT.FLOAT16;

// One output: { ok, problem, n, maxAbs, maxRel, worst: { index, expected, actual, ratio } }
// where ratio = |a − b| / (rtol·max(|a|,|b|) + atol) (≤ 1 passes) and maxRel is the largest
// |a − b| / max(|a|,|b|) over elements where that maximum is not zero.
function compareTensor(exp, act, { rtol = RTOL, atol = ATOL } = {}) {
  const r = { ok: true, problem: null, n: exp.data ? exp.data.length : 0, maxAbs: 0, maxRel: 0,
              worst: null, nBad: 0 };
  if (exp.dataType !== act.dataType) {
    return { ...r, ok: false, problem: `type ${pb.DT_NAME[act.dataType] || act.dataType}, expected ${pb.DT_NAME[exp.dataType] || exp.dataType}` };
  }
  if (exp.dims.join(',') !== act.dims.join(',')) {
    return { ...r, ok: false, problem: `shape [${act.dims.join(', ')}], expected [${exp.dims.join(', ')}]` };
  }
  const fl = isFloat(exp.dataType);
  let worstRatio = -1;
  for (let i = 0; i < r.n; i++) {
    let ratio, abs = 0, rel = 0;
    if (fl) {
      const a = Number(exp.data[i]), b = Number(act.data[i]);
      if (Number.isNaN(a) || Number.isNaN(b) || !Number.isFinite(a) || !Number.isFinite(b)) {
        ratio = (Object.is(a, b) || (Number.isNaN(a) && Number.isNaN(b))) ? 0 : Infinity;
      } else {
        abs = Math.abs(a - b);
        const m = Math.max(Math.abs(a), Math.abs(b));
        rel = m > 0 ? abs / m : 0;
        ratio = abs / (rtol * m + atol);
      }
    } else {
      ratio = exp.data[i] === act.data[i] ? 0 : Infinity;
    }
    if (abs > r.maxAbs) r.maxAbs = abs;
    if (rel > r.maxRel) r.maxRel = rel;
    if (ratio > 1) r.nBad++;
    if (ratio > worstRatio) {
      worstRatio = ratio;
      r.worst = { index: unravel(i, exp.dims), expected: exp.data[i], actual: act.data[i], ratio };
    }
  }
  if (r.nBad) r.ok = false;
  return r;
}

// Every output of two runs: [{ name, result }] plus a problem for count mismatches. @opts:
// { rtol, atol } for every output, or a function of the output's index returning them.
function compareOutputs(expected, actual, opts) {
  const res = { ok: true, problem: null, outputs: [] };
  if (expected.length !== actual.length) {
    res.ok = false;
    res.problem = `${actual.length} outputs, expected ${expected.length}`;
  }
  const n = Math.min(expected.length, actual.length);
  for (let k = 0; k < n; k++) {
    const e = expected[k], a = actual[k];
    let r;
    if (a.name && e.name && a.name !== e.name) r = { ok: false, problem: `output_${k} is named ${a.name}, expected ${e.name}`, n: 0, maxAbs: 0, maxRel: 0, nBad: 0 };
    else r = compareTensor(e, a, typeof opts === 'function' ? opts(k) : opts);
    r.tol = typeof opts === 'function' ? opts(k) : opts;
    if (!r.ok) res.ok = false;
    res.outputs.push({ index: k, name: e.name || `output_${k}`, result: r });
  }
  return res;
}

function fmt(v) {
  if (typeof v === 'bigint') return v.toString();
  return Number(v).toPrecision(9);
}

// "output prob: worst [17, 0]: ort 0.512345 sedp 0.512399 (|Δ| 5.4e-05, 9.1× the tolerance), 3 of 256 elements outside"
function describe(o) {
  const r = o.result;
  if (r.problem) return `output ${o.name}: ${r.problem}`;
  const w = r.worst;
  if (!w) return `output ${o.name}: empty`;
  const ratio = Number.isFinite(w.ratio) ? `${w.ratio.toFixed(2)}× the tolerance` : 'not equal';
  return `output ${o.name}: worst element [${w.index.join(', ')}]: ort ${fmt(w.expected)} sedp ${fmt(w.actual)} ` +
         `(${ratio}); ${r.nBad} of ${r.n} elements outside; max abs ${r.maxAbs.toExponential(2)}, max rel ${r.maxRel.toExponential(2)}`;
}

function main() {
  const a = c.parseArgs(process.argv.slice(2), { rtol: 'float', atol: 'float' },
                        'usage: compare.js EXPECTED_DIR ACTUAL_DIR [--rtol R] [--atol A]');
  if (a._.length !== 2) c.die('usage: compare.js EXPECTED_DIR ACTUAL_DIR [--rtol R] [--atol A]');
  const res = compareOutputs(c.readTensorDir(a._[0], 'output'), c.readTensorDir(a._[1], 'output'),
                             { rtol: a.rtol === undefined ? RTOL : a.rtol, atol: a.atol === undefined ? ATOL : a.atol });
  if (res.problem) process.stdout.write(`${res.problem}\n`);
  for (const o of res.outputs) process.stdout.write(`${o.result.ok ? 'ok  ' : 'FAIL'} ${describe(o)}\n`);
  process.exit(res.ok ? 0 : 1);
}

module.exports = { compareTensor, compareOutputs, describe, RTOL, ATOL, ATOL_INTERMEDIATE };
if (require.main === module) main();
