'use strict';
// Shared helpers of the ORT reference tools: argument parsing, loading onnxruntime-node with a
// clear message, deterministic random inputs that are valid for the model (embedding indices
// within their tables), and reading/writing folders of input_K.pb / output_K.pb.

const fs = require('fs');
const path = require('path');
const pb = require('./onnx-pb');

function die(msg, code = 2) {
  process.stderr.write(`${path.basename(process.argv[1] || 'ort')}: ${msg}\n`);
  process.exit(code);
}

// Parses argv into { _: [positional], key: value } for the options listed in @spec
// ({ name: 'string' | 'int' | 'float' | 'list' | 'bool' }).
function parseArgs(argv, spec, usage) {
  const out = { _: [] };
  for (const [k, t] of Object.entries(spec)) if (t === 'list') out[k] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '-h' || a === '--help') { process.stdout.write(usage + '\n'); process.exit(0); }
    if (!a.startsWith('--')) { out._.push(a); continue; }
    let key = a.slice(2), val = null;
    const eq = key.indexOf('=');
    if (eq >= 0) { val = key.slice(eq + 1); key = key.slice(0, eq); }
    const t = spec[key];
    if (!t) die(`unknown option --${key}\n${usage}`);
    if (t === 'bool') { out[key] = true; continue; }
    if (val === null) {
      if (i + 1 >= argv.length) die(`--${key} needs a value\n${usage}`);
      val = argv[++i];
    }
    if (t === 'int') {
      if (!/^-?\d+$/.test(val)) die(`--${key}: not an integer: ${val}`);
      out[key] = Number(val);
    } else if (t === 'float') {
      if (!Number.isFinite(Number(val))) die(`--${key}: not a number: ${val}`);
      out[key] = Number(val);
    } else if (t === 'list') out[key].push(val);
    else out[key] = val;
  }
  return out;
}

// onnxruntime-node, found next to these scripts or on NODE_PATH (tools/ort/ensure-deps.sh
// installs it into a cache folder and prints that folder).
function loadOrt() {
  try {
    return require('onnxruntime-node');
  } catch (e) {
    die(`cannot load onnxruntime-node (${e.message.split('\n')[0]}); run tools/ort/ensure-deps.sh ` +
        'and put the folder it prints on NODE_PATH, or run npm ci --ignore-scripts in tools/ort', 3);
  }
}

// ---- deterministic random numbers ----------------------------------------------------------

// xoshiro128** seeded through splitmix32 from (seed, stream): independent streams per input.
function rng(seed, stream = 0) {
  let x = (Math.imul(seed >>> 0, 0x9e3779b9) ^ Math.imul(stream + 1, 0x85ebca6b)) >>> 0;
  const sm = () => {
    x = (x + 0x9e3779b9) >>> 0;
    let z = x;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return (z ^ (z >>> 16)) >>> 0;
  };
  const s = [sm(), sm(), sm(), sm()];
  const rotl = (v, k) => ((v << k) | (v >>> (32 - k))) >>> 0;
  const next = () => {
    const r = Math.imul(rotl(Math.imul(s[1], 5) >>> 0, 7), 9) >>> 0;
    const t = (s[1] << 9) >>> 0;
    s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3];
    s[2] ^= t; s[3] = rotl(s[3], 11);
    return r;
  };
  return {
    u32: next,
    uniform: () => (next() + 0.5) / 4294967296, // (0, 1)
    below: (n) => Math.floor(((next() + 0.5) / 4294967296) * n), // [0, n)
    normal() {
      const u = (next() + 0.5) / 4294967296, v = (next() + 0.5) / 4294967296;
      return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
    },
  };
}

// ---- what a model's inputs need --------------------------------------------------------------

// Ops through which an index tensor flows unchanged in value on its way to a Gather.
const PASS_THROUGH = new Set(['Identity', 'Cast', 'Reshape', 'Flatten', 'Squeeze', 'Unsqueeze',
                              'Slice', 'Transpose', 'Expand', 'Split', 'Concat', 'Tile']);

// The first dimension of the tensor @name if it is an initializer or a Constant's value.
function tableRows(graph, name, producers, depth = 0) {
  const init = graph.initializers.get(name);
  if (init) return init.dims.length ? init.dims[0] : null;
  const p = producers.get(name);
  if (!p || depth > 8) return null;
  if (p.opType === 'Constant' && p.attrs.value && p.attrs.value.t) return p.attrs.value.t.dims[0];
  if (p.opType === 'Identity' || p.opType === 'Cast') return tableRows(graph, p.inputs[0], producers, depth + 1);
  return null;
}

// For an integer input: the number of rows of the smallest embedding table it indexes, found by
// following it through value-preserving ops to the Gathers that use it as indices. null if none.
function indexRange(graph, inputName) {
  const consumers = new Map(), producers = new Map();
  for (const n of graph.nodes) {
    n.inputs.forEach((i, k) => {
      if (!consumers.has(i)) consumers.set(i, []);
      consumers.get(i).push([n, k]);
    });
    for (const o of n.outputs) producers.set(o, n);
  }
  let best = null;
  const seen = new Set([inputName]);
  const queue = [inputName];
  while (queue.length) {
    const v = queue.shift();
    for (const [n, k] of consumers.get(v) || []) {
      if ((n.opType === 'Gather' || n.opType === 'GatherElements') && k === 1) {
        const rows = tableRows(graph, n.inputs[0], producers);
        const axis = n.attrs.axis ? n.attrs.axis.i : 0;
        if (rows !== null && axis === 0) best = best === null ? rows : Math.min(best, rows);
      } else if (PASS_THROUGH.has(n.opType) && k === 0) {
        for (const o of n.outputs) if (!seen.has(o)) { seen.add(o); queue.push(o); }
      }
    }
  }
  if (best === null) {
    // The synth models' convention: input slot_K indexes initializer emb_K.
    const m = /^slot_(\d+)$/.exec(inputName);
    if (m) {
      const t = graph.initializers.get(`emb_${m[1]}`);
      if (t && t.dims.length) best = t.dims[0];
    }
  }
  return best;
}

// The graph inputs with the shapes and ranges to generate: [{ name, dataType, dims, range }].
// The first dimension, if symbolic or unknown, is the batch; other symbolic dimensions take the
// value given in @dimValues (name → value), else an error. @session, when given, supplies the
// input order, types and shapes as ONNX Runtime sees them (inputNames / inputMetadata).
function inputSpecs(model, { batch, dimValues = {}, ranges = {}, session = null }) {
  const graph = model.graph;
  let specs = graph.inputs.map((v) => ({ name: v.name, dataType: v.elemType, shape: v.shape }));
  if (session && Array.isArray(session.inputMetadata) && session.inputMetadata.length === specs.length) {
    specs = session.inputMetadata.map((md, k) => ({
      name: md.name || session.inputNames[k],
      dataType: pb.ORT_DT[md.type] || specs[k].dataType,
      shape: Array.isArray(md.shape) ? md.shape.map((d) => (typeof d === 'number' && d < 0 ? null : d)) : specs[k].shape,
    }));
  } else if (session && session.inputNames.join('\n') !== specs.map((s) => s.name).join('\n')) {
    throw new Error(`graph inputs ${specs.map((s) => s.name)} differ from ORT's ${session.inputNames}`);
  }
  return specs.map((s) => {
    if (!s.shape) throw new Error(`input ${s.name}: no shape in the model`);
    const dims = s.shape.map((d, k) => {
      if (typeof d === 'number' && d >= 0) return d;
      if (typeof d === 'string' && d in dimValues) return dimValues[d];
      if (k === 0) return batch;
      throw new Error(`input ${s.name}: dimension ${k} (${d === null ? 'unknown' : d}) needs --dim NAME=VALUE`);
    });
    let range = null;
    if (s.dataType === pb.DT.INT64 || s.dataType === pb.DT.INT32) {
      range = s.name in ranges ? ranges[s.name] : indexRange(graph, s.name);
      if (range === null)
        throw new Error(`input ${s.name}: integer input that indexes no embedding table found in the graph; pass --range ${s.name}=N`);
    }
    return { name: s.name, dataType: s.dataType, dims, range };
  });
}

// Random tensors for @specs: floats standard normal, indices uniform in [0, range), bools fair.
function makeTensors(specs, seed) {
  return specs.map((s, k) => {
    const r = rng(seed, k);
    const n = pb.numel(s.dims);
    const data = pb.typedArrayFor(s.dataType, n);
    for (let i = 0; i < n; i++) {
      switch (s.dataType) {
        case pb.DT.FLOAT: case pb.DT.DOUBLE: data[i] = r.normal(); break;
        case pb.DT.INT64: data[i] = BigInt(r.below(s.range)); break;
        case pb.DT.INT32: data[i] = r.below(s.range); break;
        case pb.DT.BOOL: data[i] = r.u32() & 1; break;
        default: throw new Error(`input ${s.name}: cannot generate ${pb.DT_NAME[s.dataType] || s.dataType} values`);
      }
    }
    return { name: s.name, dataType: s.dataType, dims: s.dims, data };
  });
}

// ---- folders of .pb files --------------------------------------------------------------------

function readTensorDir(dir, prefix) {
  const files = fs.readdirSync(dir).filter((f) => new RegExp(`^${prefix}_\\d+\\.pb$`).test(f));
  files.sort((a, b) => Number(a.match(/\d+/)[0]) - Number(b.match(/\d+/)[0]));
  files.forEach((f, k) => {
    if (f !== `${prefix}_${k}.pb`) throw new Error(`${dir}: ${prefix}_${k}.pb is missing`);
  });
  return files.map((f) => pb.decodeTensor(fs.readFileSync(path.join(dir, f))));
}

function writeTensorDir(dir, prefix, tensors) {
  fs.mkdirSync(dir, { recursive: true });
  tensors.forEach((t, k) => fs.writeFileSync(path.join(dir, `${prefix}_${k}.pb`), pb.encodeTensor(t)));
}

function toOrtTensor(ort, t) {
  const type = pb.DT_ORT[t.dataType];
  if (!type) throw new Error(`tensor ${t.name}: type ${t.dataType} has no ONNX Runtime equivalent here`);
  const data = t.dataType === pb.DT.BOOL ? Uint8Array.from(t.data) : t.data;
  return new ort.Tensor(type, data, t.dims);
}

function fromOrtTensor(name, v) {
  const dataType = pb.ORT_DT[v.type];
  if (!dataType) throw new Error(`output ${name}: ONNX Runtime type ${v.type} not handled`);
  return { name, dataType, dims: Array.from(v.dims, Number), data: v.data };
}

// Session options of every reference run: the thread count asked for, one inter-op thread,
// all graph optimizations, sequential execution.
function sessionOptions(threads) {
  return {
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    graphOptimizationLevel: 'all',
    executionMode: 'sequential',
    executionProviders: ['cpu'],
  };
}

module.exports = { die, parseArgs, loadOrt, rng, indexRange, inputSpecs, makeTensors,
                   readTensorDir, writeTensorDir, toOrtTensor, fromOrtTensor, sessionOptions };
