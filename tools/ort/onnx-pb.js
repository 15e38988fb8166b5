'use strict';
// A minimal protobuf reader/writer for the parts of ONNX that the ORT reference tools need:
// TensorProto (the .pb files of ONNX's backend test data) in both directions, and a read-only
// walk of ModelProto → GraphProto → NodeProto / TensorProto dims / ValueInfoProto, plus a small
// model writer for self-tests. Field numbers are ONNX's (onnx/onnx.proto3). Plain Node, no
// dependencies; written for correctness on small and medium files, not for speed.

const DT = { FLOAT: 1, UINT8: 2, INT8: 3, UINT16: 4, INT16: 5, INT32: 6, INT64: 7, STRING: 8,
             BOOL: 9, FLOAT16: 10, DOUBLE: 11, UINT32: 12, UINT64: 13 };
const DT_NAME = { 1: 'float', 2: 'uint8', 3: 'int8', 4: 'uint16', 5: 'int16', 6: 'int32',
                  7: 'int64', 8: 'string', 9: 'bool', 10: 'float16', 11: 'double', 12: 'uint32',
                  13: 'uint64' };
// ONNX Runtime's JS tensor type names by ONNX data type.
const DT_ORT = { 1: 'float32', 2: 'uint8', 3: 'int8', 4: 'uint16', 5: 'int16', 6: 'int32',
                 7: 'int64', 9: 'bool', 11: 'float64', 12: 'uint32', 13: 'uint64' };
const ORT_DT = Object.fromEntries(Object.entries(DT_ORT).map(([k, v]) => [v, Number(k)]));

// ---- wire format: reading ----------------------------------------------------------------

class Reader {
  constructor(buf, start = 0, end = buf.length) {
    this.buf = buf;
    this.pos = start;
    this.end = end;
  }
  done() { return this.pos >= this.end; }
  // A varint as a BigInt (unsigned 64-bit).
  varintBig() {
    let result = 0n, shift = 0n;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.end) throw new Error('protobuf: truncated varint');
      const b = this.buf[this.pos++];
      result |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return BigInt.asUintN(64, result);
      shift += 7n;
    }
    throw new Error('protobuf: varint longer than 10 bytes');
  }
  // A varint as a Number; fast path for values below 2^28, exact up to 2^53.
  varint() {
    const b0 = this.pos < this.end ? this.buf[this.pos] : 0x80;
    if (b0 < 0x80) { this.pos++; return b0; }
    const v = this.varintBig();
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) throw new Error('protobuf: varint too large for a Number');
    return Number(v);
  }
  // An int64 varint (two's complement) as a Number (throws beyond 2^53).
  int64() {
    const v = BigInt.asIntN(64, this.varintBig());
    if (v > BigInt(Number.MAX_SAFE_INTEGER) || v < BigInt(Number.MIN_SAFE_INTEGER))
      throw new Error('protobuf: int64 beyond 2^53');
    return Number(v);
  }
  int32() { return Number(BigInt.asIntN(32, this.varintBig())); }
  fixed32() {
    if (this.pos + 4 > this.end) throw new Error('protobuf: truncated fixed32');
    const v = this.buf.readFloatLE(this.pos);
    this.pos += 4;
    return v;
  }
  fixed64double() {
    if (this.pos + 8 > this.end) throw new Error('protobuf: truncated fixed64');
    const v = this.buf.readDoubleLE(this.pos);
    this.pos += 8;
    return v;
  }
  bytes() {
    const n = this.varint();
    if (this.pos + n > this.end) throw new Error('protobuf: truncated length-delimited field');
    const s = this.pos;
    this.pos += n;
    return this.buf.subarray(s, s + n);
  }
  sub() {
    const n = this.varint();
    if (this.pos + n > this.end) throw new Error('protobuf: truncated sub-message');
    const r = new Reader(this.buf, this.pos, this.pos + n);
    this.pos += n;
    return r;
  }
  string() { return this.bytes().toString('utf8'); }
  tag() {
    const t = this.varint();
    return [t >>> 3, t & 7];
  }
  skip(wire) {
    switch (wire) {
      case 0: this.varintBig(); break;
      case 1: this.pos += 8; break;
      case 2: { const n = this.varint(); this.pos += n; break; }
      case 5: this.pos += 4; break;
      default: throw new Error(`protobuf: unsupported wire type ${wire}`);
    }
    if (this.pos > this.end) throw new Error('protobuf: truncated field');
  }
  // A repeated scalar field, packed (wire 2) or one element (its own wire type): calls @one
  // on a reader positioned at each element.
  repeated(wire, elemWire, one) {
    if (wire === 2 && elemWire !== 2) {
      const r = this.sub();
      while (!r.done()) one(r);
    } else if (wire === elemWire) {
      one(this);
    } else {
      throw new Error(`protobuf: wire type ${wire} where ${elemWire} or packed was expected`);
    }
  }
}

// ---- wire format: writing ----------------------------------------------------------------

class Writer {
  constructor() { this.parts = []; this.len = 0; }
  push(b) { this.parts.push(b); this.len += b.length; }
  varint(v) {
    let x = BigInt.asUintN(64, BigInt(v));
    const out = [];
    do {
      let b = Number(x & 0x7fn);
      x >>= 7n;
      if (x !== 0n) b |= 0x80;
      out.push(b);
    } while (x !== 0n);
    this.push(Buffer.from(out));
  }
  tag(field, wire) { this.varint((field << 3) | wire); }
  int(field, v) { this.tag(field, 0); this.varint(v); }
  bytes(field, b) { this.tag(field, 2); this.varint(b.length); this.push(Buffer.from(b)); }
  string(field, s) { this.bytes(field, Buffer.from(String(s), 'utf8')); }
  float(field, v) { const b = Buffer.alloc(4); b.writeFloatLE(v); this.tag(field, 5); this.push(b); }
  message(field, w) { this.bytes(field, w.finish()); }
  packedVarints(field, values) {
    const w = new Writer();
    for (const v of values) w.varint(v);
    this.bytes(field, w.finish());
  }
  finish() { return Buffer.concat(this.parts, this.len); }
}

// ---- TensorProto ---------------------------------------------------------------------------

function elemSize(dt) {
  switch (dt) {
    case DT.FLOAT: case DT.INT32: case DT.UINT32: return 4;
    case DT.INT64: case DT.UINT64: case DT.DOUBLE: return 8;
    case DT.UINT8: case DT.INT8: case DT.BOOL: return 1;
    case DT.UINT16: case DT.INT16: case DT.FLOAT16: return 2;
    default: return 0;
  }
}

function typedArrayFor(dt, n) {
  switch (dt) {
    case DT.FLOAT: return new Float32Array(n);
    case DT.DOUBLE: return new Float64Array(n);
    case DT.INT64: return new BigInt64Array(n);
    case DT.UINT64: return new BigUint64Array(n);
    case DT.INT32: return new Int32Array(n);
    case DT.UINT32: return new Uint32Array(n);
    case DT.INT16: return new Int16Array(n);
    case DT.UINT16: case DT.FLOAT16: return new Uint16Array(n);
    case DT.INT8: return new Int8Array(n);
    case DT.UINT8: case DT.BOOL: return new Uint8Array(n);
    default: throw new Error(`TensorProto: unsupported data_type ${dt}`);
  }
}

function numel(dims) { return dims.reduce((a, b) => a * b, 1); }

// Decodes a TensorProto from @buf (or a Reader over one). With { dataToo: false } only name,
// type and dims are read (for initializers of a large model). Returns
// { name, dataType, dims, data } where data is a typed array of the tensor's type.
function decodeTensor(src, { dataToo = true } = {}) {
  const r = src instanceof Reader ? src : new Reader(src);
  const t = { name: '', dataType: 0, dims: [], data: null };
  let raw = null;
  const floatData = [], int32Data = [], int64Data = [], doubleData = [], uint64Data = [];
  let external = false;
  while (!r.done()) {
    const [f, w] = r.tag();
    switch (f) {
      case 1: r.repeated(w, 0, (x) => t.dims.push(x.int64())); break;
      case 2: t.dataType = r.int32(); break;
      case 8: t.name = r.string(); break;
      case 9: raw = r.bytes(); break;
      case 4: if (dataToo) r.repeated(w, 5, (x) => floatData.push(x.fixed32())); else r.skip(w); break;
      case 5: if (dataToo) r.repeated(w, 0, (x) => int32Data.push(x.int32())); else r.skip(w); break;
      case 7: if (dataToo) r.repeated(w, 0, (x) => int64Data.push(BigInt.asIntN(64, x.varintBig()))); else r.skip(w); break;
      case 10: if (dataToo) r.repeated(w, 1, (x) => doubleData.push(x.fixed64double())); else r.skip(w); break;
      case 11: if (dataToo) r.repeated(w, 0, (x) => uint64Data.push(x.varintBig())); else r.skip(w); break;
      case 14: external = r.int32() === 1; break;
      default: r.skip(w);
    }
  }
  if (!dataToo) return t;
  if (external) throw new Error(`TensorProto ${t.name}: external data is not supported`);
  const n = numel(t.dims);
  const dt = t.dataType;
  if (raw !== null) {
    const size = elemSize(dt);
    if (size === 0) throw new Error(`TensorProto ${t.name}: unsupported data_type ${dt}`);
    if (raw.length !== n * size)
      throw new Error(`TensorProto ${t.name}: raw_data has ${raw.length} bytes, dims ${JSON.stringify(t.dims)} need ${n * size}`);
    const a = typedArrayFor(dt, n);
    // Copy into an aligned buffer (raw_data may sit at any offset of the file).
    Buffer.from(a.buffer, a.byteOffset, a.byteLength).set(raw);
    t.data = a;
    return t;
  }
  const a = typedArrayFor(dt, n);
  let src2;
  switch (dt) {
    case DT.FLOAT: src2 = floatData; break;
    case DT.DOUBLE: src2 = doubleData; break;
    case DT.INT64: src2 = int64Data; break;
    case DT.UINT64: case DT.UINT32: src2 = uint64Data; break;
    default: src2 = int32Data; // int32, int16, int8, uint16, uint8, bool, float16
  }
  if (src2.length !== n)
    throw new Error(`TensorProto ${t.name}: ${src2.length} values, dims ${JSON.stringify(t.dims)} need ${n}`);
  for (let i = 0; i < n; i++) a[i] = dt === DT.UINT32 ? Number(src2[i]) : src2[i];
  t.data = a;
  return t;
}

// Encodes { name, dataType, dims, data } as a TensorProto with raw_data (little-endian, as
// ONNX requires; this machine is little-endian too).
function encodeTensor({ name, dataType, dims, data }) {
  const w = new Writer();
  if (dims.length) w.packedVarints(1, dims);
  w.int(2, dataType);
  if (name) w.string(8, name);
  let bytes;
  if (dataType === DT.BOOL) {
    bytes = Buffer.alloc(data.length);
    for (let i = 0; i < data.length; i++) bytes[i] = data[i] ? 1 : 0;
  } else {
    if (data.length !== numel(dims)) throw new Error(`encodeTensor ${name}: ${data.length} values for dims ${JSON.stringify(dims)}`);
    bytes = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  }
  w.bytes(9, bytes);
  return w.finish();
}

// ---- ModelProto (reading) ------------------------------------------------------------------

function decodeShape(r) {
  const dims = [];
  while (!r.done()) {
    const [f, w] = r.tag();
    if (f === 1) {
      const d = r.sub();
      let dim = null;
      while (!d.done()) {
        const [g, w2] = d.tag();
        if (g === 1) dim = d.int64();
        else if (g === 2) dim = d.string();
        else d.skip(w2);
      }
      dims.push(dim); // a Number, a String (symbolic) or null (unknown)
    } else r.skip(w);
  }
  return dims;
}

function decodeValueInfo(r) {
  const v = { name: '', elemType: 0, shape: null };
  while (!r.done()) {
    const [f, w] = r.tag();
    if (f === 1) v.name = r.string();
    else if (f === 2) {
      const tp = r.sub();
      while (!tp.done()) {
        const [g, w2] = tp.tag();
        if (g === 1) {
          const tt = tp.sub();
          while (!tt.done()) {
            const [h, w3] = tt.tag();
            if (h === 1) v.elemType = tt.int32();
            else if (h === 2) v.shape = decodeShape(tt.sub());
            else tt.skip(w3);
          }
        } else tp.skip(w2);
      }
    } else r.skip(w);
  }
  return v;
}

function decodeAttribute(r) {
  const a = { name: '', type: 0, f: 0, i: 0, s: '', ints: [], floats: [] };
  while (!r.done()) {
    const [f, w] = r.tag();
    switch (f) {
      case 1: a.name = r.string(); break;
      case 20: a.type = r.int32(); break;
      case 2: a.f = r.fixed32(); break;
      case 3: a.i = r.int64(); break;
      case 4: a.s = r.string(); break;
      case 5: a.t = decodeTensor(r.sub()); break;
      case 7: r.repeated(w, 5, (x) => a.floats.push(x.fixed32())); break;
      case 8: r.repeated(w, 0, (x) => a.ints.push(x.int64())); break;
      default: r.skip(w);
    }
  }
  return a;
}

function decodeNode(r) {
  const n = { name: '', opType: '', domain: '', inputs: [], outputs: [], attrs: {} };
  while (!r.done()) {
    const [f, w] = r.tag();
    switch (f) {
      case 1: n.inputs.push(r.string()); break;
      case 2: n.outputs.push(r.string()); break;
      case 3: n.name = r.string(); break;
      case 4: n.opType = r.string(); break;
      case 7: n.domain = r.string(); break;
      case 5: { const a = decodeAttribute(r.sub()); n.attrs[a.name] = a; break; }
      default: r.skip(w);
    }
  }
  return n;
}

// Reads a model's graph: nodes, initializers (name, type, dims; data only with
// { initializerData: true }), inputs (initializers excluded) and outputs.
function decodeModel(buf, { initializerData = false } = {}) {
  const r = new Reader(buf);
  const m = { irVersion: 0, opsets: {}, producer: '', graph: null };
  while (!r.done()) {
    const [f, w] = r.tag();
    if (f === 1) m.irVersion = r.int64();
    else if (f === 2) m.producer = r.string();
    else if (f === 8) {
      const o = r.sub();
      let domain = '', version = 0;
      while (!o.done()) {
        const [g, w2] = o.tag();
        if (g === 1) domain = o.string();
        else if (g === 2) version = o.int64();
        else o.skip(w2);
      }
      m.opsets[domain === 'ai.onnx' ? '' : domain] = version;
    } else if (f === 7) m.graph = decodeGraph(r.sub(), initializerData);
    else r.skip(w);
  }
  if (!m.graph) throw new Error('ModelProto: no graph');
  return m;
}

function decodeGraph(r, initializerData) {
  const g = { name: '', nodes: [], initializers: new Map(), inputs: [], outputs: [] };
  const allInputs = [];
  while (!r.done()) {
    const [f, w] = r.tag();
    switch (f) {
      case 1: g.nodes.push(decodeNode(r.sub())); break;
      case 2: g.name = r.string(); break;
      case 5: { const t = decodeTensor(r.sub(), { dataToo: initializerData }); g.initializers.set(t.name, t); break; }
      case 11: allInputs.push(decodeValueInfo(r.sub())); break;
      case 12: g.outputs.push(decodeValueInfo(r.sub())); break;
      default: r.skip(w);
    }
  }
  g.inputs = allInputs.filter((v) => !g.initializers.has(v.name));
  return g;
}

// ---- ModelProto (writing, for self-tests) --------------------------------------------------

function encodeValueInfo(name, elemType, shape) {
  const dimsW = new Writer();
  for (const d of shape) {
    const dw = new Writer();
    if (typeof d === 'string') dw.string(2, d); else dw.int(1, d);
    dimsW.message(1, dw);
  }
  const tt = new Writer();
  tt.int(1, elemType);
  tt.message(2, dimsW);
  const tp = new Writer();
  tp.message(1, tt);
  const v = new Writer();
  v.string(1, name);
  v.message(2, tp);
  return v;
}

function encodeAttribute(name, value) {
  const a = new Writer();
  a.string(1, name);
  if (Array.isArray(value)) { a.packedVarints(8, value); a.int(20, 7); }
  else if (typeof value === 'number' && Number.isInteger(value)) { a.int(3, value); a.int(20, 2); }
  else if (typeof value === 'number') { a.float(2, value); a.int(20, 1); }
  else if (typeof value === 'string') { a.string(4, value); a.int(20, 3); }
  else if (value && value.dataType) { a.bytes(5, encodeTensor(value)); a.int(20, 4); }
  else throw new Error(`attribute ${name}: unsupported value`);
  return a;
}

// { opset, nodes: [{ op, inputs, outputs, attrs }], initializers: [tensor], inputs:
// [{ name, elemType, shape }], outputs: [...] } → ModelProto bytes.
function encodeModel({ opset = 13, irVersion = 8, producer = 'sedp-tools-ort', name = 'g',
                       nodes, initializers = [], inputs, outputs }) {
  const g = new Writer();
  nodes.forEach((n, k) => {
    const nw = new Writer();
    for (const i of n.inputs) nw.string(1, i);
    for (const o of n.outputs) nw.string(2, o);
    nw.string(3, n.name || `${n.op}_${k}`);
    nw.string(4, n.op);
    for (const [an, av] of Object.entries(n.attrs || {})) nw.message(5, encodeAttribute(an, av));
    g.message(1, nw);
  });
  g.string(2, name);
  for (const t of initializers) g.bytes(5, encodeTensor(t));
  for (const v of inputs) g.message(11, encodeValueInfo(v.name, v.elemType, v.shape));
  for (const v of outputs) g.message(12, encodeValueInfo(v.name, v.elemType, v.shape));
  const m = new Writer();
  m.int(1, irVersion);
  m.string(2, producer);
  m.message(7, g);
  const os = new Writer();
  os.string(1, '');
  os.int(2, opset);
  m.message(8, os);
  return m.finish();
}

module.exports = { DT, DT_NAME, DT_ORT, ORT_DT, Reader, Writer, decodeTensor, encodeTensor,
                   decodeModel, encodeModel, numel, typedArrayFor };
