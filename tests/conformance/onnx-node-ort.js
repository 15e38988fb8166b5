#!/usr/bin/env node
'use strict';
// onnx-node-ort.js LIST OUTDIR
//
// ONNX Runtime on ONNX's node tests, in one process: LIST has one test folder per line (each
// with model.onnx and test_data_set_N/input_K.pb); writes OUTDIR/<test>/test_data_set_N/
// output_K.pb. A test ONNX Runtime cannot load or run gets OUTDIR/<test>/error.txt with the
// reason instead (ONNX Runtime does not run every node test of ONNX 1.12 either). Used by
// onnx-node.py (docs/conformance.md#onnx-node-tests).
const fs = require('fs');
const path = require('path');
const c = require('../../tools/ort/common');
const { ortRun } = require('../../tools/ort/ort-run');

async function runTest(dir, outRoot) {
  const name = path.basename(dir);
  const out = path.join(outRoot, name);
  fs.mkdirSync(out, { recursive: true });
  try {
    const sets = fs.readdirSync(dir).filter((f) => /^test_data_set_\d+$/.test(f)).sort();
    for (const set of sets) {
      const inputs = c.readTensorDir(path.join(dir, set), 'input');
      const outs = await ortRun(path.join(dir, 'model.onnx'), inputs);
      c.writeTensorDir(path.join(out, set), 'output', outs);
    }
  } catch (e) {
    fs.writeFileSync(path.join(out, 'error.txt'), String(e.message || e));
  }
}

async function main() {
  const [list, outRoot] = process.argv.slice(2);
  if (!list || !outRoot) c.die('usage: onnx-node-ort.js LIST OUTDIR');
  const dirs = fs.readFileSync(list, 'utf8').split('\n').filter((l) => l.trim());
  for (const d of dirs) await runTest(d, outRoot);
}

main().catch((e) => c.die(e.message, 1));
