#!/usr/bin/env python3
"""The split's equivalence, end to end (standard library only): writes a synthetic model
(`sedp model synth`), splits it (`sedp model split`) into cube(s) and a dense model, writes a
pipeline from the cube_accessor options split printed (data_reader, one cube_accessor stage per
cube, model_inference on the dense model), runs it on random requests with `sedp run`, and
compares every model output of every item with `sedp model eval` of the unsplit model on the same
inputs: max relative error at most 1e-5.
Usage: split-check.py SEDP WORKDIR ARCH PRESET [OPSET]"""
import json
import os
import random
import re
import struct
import subprocess
import sys
import zlib

# The TensorProto writer and reader of the CTR example's generator (standard library only); no
# __pycache__ left in the source tree.
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir,
                                "examples", "ctr"))
from gen import read_float_tensor, tensor_proto  # noqa: E402

HASH_KEY = "000102030405060708090a0b0c0d0e0f"
N_REQUESTS, N_ITEMS = 3, 7  # 21 rows, frames of 4: several frames and a partial one
TOLERANCE = 1e-5


def run(argv, **kw):
    p = subprocess.run(argv, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        sys.exit("split-check: %s failed (exit %d):\n%s%s" %
                 (" ".join(argv), p.returncode, p.stdout, p.stderr))
    return p.stdout


def model_io(sedp, path):
    """[(name, dtype, dims)] of the inputs and [name] of the outputs, from `sedp model info`."""
    info = run([sedp, "model", "info", path])
    inputs, outputs, section = [], [], None
    for line in info.splitlines():
        m = re.match(r"(inputs|outputs):\s+\d+", line)
        if m:
            section = m.group(1)
            continue
        m = re.match(r"  (\S+)\s+(\S+)\s+\[(.*)\]$", line)
        if m and section == "inputs":
            dims = [int(d) if d.isdigit() else -1 for d in m.group(3).split(", ")]
            inputs.append((m.group(1), m.group(2), dims))
        elif m and section == "outputs":
            outputs.append(m.group(1))
        elif not line.startswith("  "):
            section = None
    return inputs, outputs


def main():
    sedp, work, arch, preset = sys.argv[1:5]
    opset = sys.argv[5] if len(sys.argv) > 5 else None
    tag = "%s-%s%s" % (arch, preset, "-opset" + opset if opset else "")
    os.makedirs(work, exist_ok=True)
    model = os.path.join(work, tag + ".onnx")
    dense = os.path.join(work, tag + "-dense.onnx")
    cube = os.path.join(work, tag + "-cube")
    synth = [sedp, "model", "synth", "--arch", arch, "--preset", preset, "--seed", "11", "-o", model]
    if opset:
        synth += ["--opset", opset]
    run(synth)
    out = run([sedp, "model", "split", model, "--dense", dense, "--cube", cube,
               "--hash-key", HASH_KEY])
    m = re.search(r"(\d+) rows", out)
    options = []
    for line in out.splitlines():
        if line.startswith("cube_accessor options: "):
            opts = dict(kv.split(" = ", 1) for kv in line[len("cube_accessor options: "):].split("; "))
            options.append(opts)
    if not options:
        sys.exit("split-check: %s: no cube_accessor options in the split's output:\n%s" % (tag, out))

    inputs, outputs = model_io(sedp, model)
    n_tables = int(re.search(r"(\d+) tables", out).group(1))  # each once, shared or not
    rows = int(m.group(1)) // n_tables  # the synthetic tables all have the same rows

    # Random requests: slot_0 on the user (broadcast into every item frame), the rest per item.
    rng = random.Random(zlib.crc32(tag.encode()))
    reqs, rows_all = [], []
    for q in range(N_REQUESTS):
        user = {"user_id": 1 + q}
        items = []
        for i in range(N_ITEMS):
            items.append({"item_id": 1000 * q + i})
        for name, dtype, dims in inputs:
            width = dims[1] if len(dims) > 1 else 1
            if dtype == "float":
                for it in items:
                    it[name] = [round(rng.uniform(-1.5, 1.5), 5) for _ in range(width)]
            elif name == "slot_0":
                user[name] = [rng.randrange(rows) for _ in range(width)]
            else:
                for it in items:
                    it[name] = [rng.randrange(rows) for _ in range(width)]
        reqs.append({"id": "r%d" % q, "user": user, "items": items})
        rows_all += [(user, it) for it in items]
    requests = os.path.join(work, tag + ".jsonl")
    with open(requests, "w") as f:
        for r in reqs:
            f.write(json.dumps(r) + "\n")

    # The pipeline: split's options, one cube_accessor stage per cube.
    lines = ["[pipeline]", "name = split_check", "deadline_ms = 600000", "frame_rows = 4",
             "outputs = " + ", ".join(outputs), "",
             "[stage reader]", "plugin = data_reader", ""]
    prev = "reader"
    for k, o in enumerate(options):
        lines += ["[stage lookup%d]" % k, "plugin = cube_accessor", "after = " + prev,
                  "backend = local"]
        lines += ["%s = %s" % kv for kv in o.items()]
        lines.append("")
        prev = "lookup%d" % k
    lines += ["[stage model]", "plugin = model_inference", "after = " + prev,
              "model = " + os.path.abspath(dense), ""]
    pipeline = os.path.join(work, tag + ".pipeline")
    open(pipeline, "w").write("\n".join(lines))
    result = os.path.join(work, tag + ".out.jsonl")
    run([sedp, "run", "-q", pipeline, "--requests", requests, "-o", result])

    # The unsplit model on the same rows, one batch.
    batch = len(rows_all)
    args = []
    for k, (name, dtype, dims) in enumerate(inputs):
        width = dims[1] if len(dims) > 1 else 1
        vals = [v for user, it in rows_all for v in (user if name in user else it)[name]]
        if dtype == "float":
            t = tensor_proto(name, [batch, width], 1, struct.pack("<%df" % len(vals), *vals))
        else:
            t = tensor_proto(name, [batch] + dims[1:], 7, struct.pack("<%dq" % len(vals), *vals))
        path = os.path.join(work, "%s-input_%d.pb" % (tag, k))
        open(path, "wb").write(t)
        args += ["-i", path]
    ev = os.path.join(work, tag + "-eval")
    run([sedp, "model", "eval", model] + args + ["-o", ev])
    want = {name: read_float_tensor(os.path.join(ev, "output_%d.pb" % k))
            for k, name in enumerate(outputs)}

    errors, worst, n = [], 0.0, 0
    results = [json.loads(line) for line in open(result)]
    if len(results) != N_REQUESTS:
        errors.append("%d results for %d requests" % (len(results), N_REQUESTS))
    row = 0
    for q, res in enumerate(results):
        if res.get("status") != "ok" or len(res.get("items", [])) != N_ITEMS:
            errors.append("request %s: status %s, %d items" %
                          (res.get("id"), res.get("status"), len(res.get("items", []))))
            row += N_ITEMS
            continue
        for i, it in enumerate(res["items"]):
            for name in outputs:
                # [batch, 1] outputs come as numbers, wider ones (dssm's vectors) as lists.
                width = len(want[name]) // batch
                got, w = it.get(name), want[name][row * width:(row + 1) * width]
                if width == 1 and isinstance(got, (int, float)):
                    got = [got]
                if not (isinstance(got, list) and len(got) == width and
                        all(isinstance(v, (int, float)) for v in got)):
                    errors.append("%s item %d: no %s of %d values (%r)" %
                                  (res["id"], i, name, width, got))
                    continue
                for k in range(width):
                    rel = abs(got[k] - w[k]) / max(abs(w[k]), 1e-30)
                    worst = max(worst, rel)
                    n += 1
                    if not rel <= TOLERANCE:
                        errors.append("%s item %d: %s[%d] = %.9g, the unsplit model gives %.9g" %
                                      (res["id"], i, name, k, got[k], w[k]))
            row += 1
    for e in errors[:10]:
        print("split-check: %s: %s" % (tag, e), file=sys.stderr)
    print("split-check: %s: %d cube(s), %d values compared, max relative error %.3g%s" %
          (tag, len(options), n, worst, ", %d errors" % len(errors) if errors else ""))
    sys.exit(1 if errors or n == 0 else 0)


if __name__ == "__main__":
    main()
