#!/usr/bin/env node
'use strict';
// expose.js MODEL.onnx -o OUT.onnx: the same model with every node output that is not already a
// graph output appended to the graph outputs (name only: the engines infer type and shape), so
// that two engines can be compared on every intermediate value, not just the final scores.
// The model's own outputs keep their positions (output_0 … output_{n−1}); the intermediates
// follow in node order. Everything else in the file is copied byte for byte.
const fs = require('fs');
const pb = require('./onnx-pb');
const c = require('./common');

// Returns { buf, names } where names are the appended outputs in order.
function exposeIntermediates(buf) {
  const model = pb.decodeModel(buf);
  const g = model.graph;
  const taken = new Set([...g.outputs.map((o) => o.name), ...g.inputs.map((i) => i.name), ...g.initializers.keys()]);
  const names = [];
  for (const n of g.nodes) {
    for (const o of n.outputs) {
      if (o && !taken.has(o)) { taken.add(o); names.push(o); }
    }
  }
  const extra = new pb.Writer();
  for (const name of names) {
    const v = new pb.Writer();
    v.string(1, name);
    extra.message(12, v);
  }
  const extraBytes = extra.finish();
  // Copy ModelProto's fields, the graph (field 7) with the extra outputs appended.
  const r = new pb.Reader(buf);
  const out = new pb.Writer();
  while (!r.done()) {
    const start = r.pos;
    const [f, w] = r.tag();
    if (f === 7 && w === 2) {
      const graph = r.bytes();
      out.bytes(7, Buffer.concat([graph, extraBytes]));
    } else {
      r.skip(w);
      out.push(buf.subarray(start, r.pos));
    }
  }
  return { buf: out.finish(), names };
}

function main() {
  const a = c.parseArgs(process.argv.slice(2), { o: 'string' }, 'usage: expose.js MODEL.onnx -o OUT.onnx');
  // -o comes as a positional pair with this parser; accept both -o X and --o X.
  let input = a._[0], output = a.o;
  const k = a._.indexOf('-o');
  if (k >= 0) { output = a._[k + 1]; a._.splice(k, 2); input = a._[0]; }
  if (!input || !output) c.die('usage: expose.js MODEL.onnx -o OUT.onnx');
  const { buf, names } = exposeIntermediates(fs.readFileSync(input));
  fs.writeFileSync(output, buf);
  process.stderr.write(`${names.length} intermediate values exposed\n`);
}

module.exports = { exposeIntermediates };
if (require.main === module) main();
