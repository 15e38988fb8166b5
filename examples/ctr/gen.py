#!/usr/bin/env python3
"""The CTR example's generator (standard library only): writes the model, splits it into a cube
and a dense model, draws users and items with Zipf-distributed feature ids, scores every item with
the unsplit model (`sedp model eval`) to draw a recall `escore` correlated with that score, and
writes the request files (JSON Lines, PredictRequest JSON lines, a protobuf request log); with
--repository, also a model repository of two versions over the same requests
(pipelines/ctr-live.pipeline): version 2 a retrained dense model over version 1's embeddings and
cube, or with --new-embeddings, other embeddings too; with --multi-model, a dcn and an mmoe model
over the dlrm's embedding tables (one cube for the three: pipelines/multi-model.pipeline,
pipelines/ab.pipeline). Run through examples/ctr/prepare."""
import argparse
import bisect
import json
import math
import os
import random
import shutil
import struct
import subprocess
import sys

PRESETS = {
    # slots and dense are the same in both, so that one pipeline file fits both models.
    "realistic": dict(rows=10000, ids=4, requests=64, items=200),
    "small": dict(rows=100, ids=3, requests=4, items=12),
}
SLOTS = 26
# --repository: the versions of model 'ctr' written to OUT/models: (version, the seed of its
# embedding tables, the seed of its other weights (sedp model synth --seed, --dense-seed), the
# version whose cube it packs or None for its own). Version 2 is a retrained dense model over
# version 1's embeddings: it packs version 1's cube, the same bytes, which a server shares between
# the two (docs/model-lifecycle.md, "Cubes are shared").
REPOSITORY_VERSIONS = ((1, 1, 1, None), (2, 1, 2, 1))
# --repository --new-embeddings: version 2 of other embeddings too, its own cube.
REPOSITORY_NEW_EMBEDDINGS = ((1, 1, 1, None), (2, 2, 2, None))
DENSE = 13
USER_SLOTS = 13  # slot_0 … slot_12 describe the user, slot_13 … slot_25 the item
# --multi-model: the other models over the dlrm's embedding tables, and their outputs (graph-output
# order, as `sedp model eval` writes them).
MULTI_MODELS = (("dcn", ("prob",)), ("mmoe", ("ctr", "cvr")))
# sedp model synth's weight streams (core/nn/synth.c, synth-builder.c): splitmix64, the state of a
# seed S starting at S ^ SYNTH_SEED_MIX and advancing by SYNTH_GAMMA per weight drawn.
SYNTH_SEED_MIX = 0x5ED9C0FFEE5EED
SYNTH_GAMMA = 0x9E3779B97F4A7C15

# --din: DIN over the user's clicks (docs/sequences.md). The user's profile is 4 slots, the item
# its catalogue id and 13 dense features; the behaviour sequence is cut to SEQ_LEN. One pipeline
# file (pipelines/ctr-din.pipeline) fits both presets, so only rows and dim differ.
DIN_SLOTS = 4
SEQ_LEN = 50
DIN_PRESETS = {
    "realistic": dict(rows=10000, dim=32, ids=4, requests=64, items=200, clicks=120),
    "small": dict(rows=100, dim=8, ids=3, requests=4, items=12, clicks=80),
}


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def tensor_proto(name, dims, data_type, raw):
    """A TensorProto: dims (1), data_type (2), name (8), raw_data (9)."""
    msg = bytearray()
    for d in dims:
        msg += varint(1 << 3 | 0) + varint(d)
    msg += varint(2 << 3 | 0) + varint(data_type)
    nb = name.encode()
    msg += varint(8 << 3 | 2) + varint(len(nb)) + nb
    msg += varint(9 << 3 | 2) + varint(len(raw)) + raw
    return bytes(msg)


def ld(field, payload):
    """A length-delimited field (wire type 2): key, length, bytes."""
    return varint(field << 3 | 2) + varint(len(payload)) + payload


def feature_ids(ids):
    """A sedp.serving.Feature holding ids (4): an IdList with ids (1) packed."""
    return ld(4, ld(1, b"".join(varint(i) for i in ids)) if ids else b"")


def feature_floats(values):
    """A sedp.serving.Feature holding floats (5): a FloatList with values (1) packed."""
    return ld(5, ld(1, struct.pack("<%df" % len(values), *values)) if values else b"")


def features(field, feats):
    """map<string, Feature> field `field`: one entry (key 1, value 2) per feature."""
    return b"".join(ld(field, ld(1, k.encode()) + ld(2, v)) for k, v in feats.items())


def predict_request(request_id, top_k, user_id, user_feats, items):
    """A serialized sedp.serving.PredictRequest (core/proto/sedp.proto): request_id (1), user (2:
    id 1, features 2), items (3: id 1, features 2, escore 3 as a float), top_k (5)."""
    user = varint(1 << 3 | 0) + varint(user_id) + features(2, user_feats)
    msg = ld(1, request_id.encode()) + ld(2, user)
    for item_id, escore, feats in items:
        item = varint(1 << 3 | 0) + varint(item_id) + features(2, feats)
        item += varint(3 << 3 | 5) + struct.pack("<f", escore)
        msg += ld(3, item)
    return msg + varint(5 << 3 | 0) + varint(top_k)


def read_varint(buf, pos):
    n = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        n |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return n, pos


def read_float_tensor(path):
    """The float values of a TensorProto file (raw_data or float_data)."""
    buf = open(path, "rb").read()
    pos, values = 0, []
    while pos < len(buf):
        key, pos = read_varint(buf, pos)
        field, wire = key >> 3, key & 7
        if wire == 0:
            _, pos = read_varint(buf, pos)
        elif wire == 5:
            if field == 4:
                values.append(struct.unpack_from("<f", buf, pos)[0])
            pos += 4
        elif wire == 1:
            pos += 8
        elif wire == 2:
            n, pos = read_varint(buf, pos)
            chunk = buf[pos:pos + n]
            pos += n
            if field in (9, 4):
                values.extend(struct.unpack("<%df" % (n // 4), chunk))
        else:
            raise SystemExit("gen.py: %s: unexpected wire type %d" % (path, wire))
    return values


class Zipf:
    """Ids 0 … rows-1 drawn with P(rank r) ∝ 1/(r+1)^s, ranks mapped to ids by a permutation."""

    def __init__(self, rng, rows, s=1.1):
        acc, self.cum = 0.0, []
        for r in range(rows):
            acc += 1.0 / (r + 1) ** s
            self.cum.append(acc)
        self.perm = list(range(rows))
        rng.shuffle(self.perm)
        self.rng = rng

    def draw(self):
        u = self.rng.random() * self.cum[-1]
        return self.perm[min(bisect.bisect_left(self.cum, u), len(self.perm) - 1)]


def items_range(text):
    """--items N or MIN-MAX, as a (min, max) pair."""
    lo, _, hi = text.partition("-")
    try:
        lo, hi = int(lo), int(hi or lo)
    except ValueError:
        raise argparse.ArgumentTypeError("'%s' is not N or MIN-MAX" % text)
    if not 1 <= lo <= hi:
        raise argparse.ArgumentTypeError("'%s': need 1 <= MIN <= MAX" % text)
    return (lo, hi)


def run(cmd):
    print("+ " + " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sedp", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--small", action="store_true")
    ap.add_argument("--requests", type=int)
    ap.add_argument("--items", type=items_range,
                    help="candidates per request: N, or MIN-MAX drawn uniformly per request")
    ap.add_argument("--seed", type=int, default=1, help="seed of the requests' draws")
    ap.add_argument("--model-seed", type=int, default=1,
                    help="seed of the model's weights (sedp model synth --seed), independent of "
                    "--seed")
    ap.add_argument("--din", action="store_true",
                    help="DIN over the users' clicks (pipelines/ctr-din.pipeline) instead of dlrm")
    ap.add_argument("--repository", action="store_true",
                    help="also OUT/models/ctr/1 and 2: bundles of the model of seed 1 and of the "
                    "same embeddings (version 1's cube) under dense weights of seed 2, and their "
                    "scores of the same requests in OUT/expected-v1.tsv, expected-v2.tsv")
    ap.add_argument("--new-embeddings", action="store_true",
                    help="with --repository: version 2 is the model of seed 2 throughout, its "
                    "embeddings and cube too")
    ap.add_argument("--multi-model", action="store_true",
                    help="also a dcn and an mmoe model over the dlrm's embedding tables (cube/ "
                    "serves the three): model-dcn.onnx, dense-dcn.onnx, model-mmoe.onnx, "
                    "dense-mmoe.onnx and their scores expected-dcn.tsv, expected-mmoe.tsv "
                    "(pipelines/multi-model.pipeline, pipelines/ab.pipeline)")
    a = ap.parse_args()
    if a.new_embeddings and not a.repository:
        ap.error("--new-embeddings goes with --repository")
    if a.model_seed < 0:
        ap.error("--model-seed wants a non-negative integer")
    if a.din:
        if a.repository:
            ap.error("--repository is for the dlrm model (pipelines/ctr-live.pipeline), not --din")
        if a.multi_model:
            ap.error("--multi-model is for the dlrm model's cube (pipelines/multi-model.pipeline), "
                     "not --din")
        return main_din(a)
    preset = "small" if a.small else "realistic"
    p = PRESETS[preset]
    n_req = a.requests or p["requests"]
    items_lo, items_hi = a.items or (p["items"], p["items"])
    rows, ids = p["rows"], p["ids"]
    out = a.out
    if os.path.isdir(out):
        shutil.rmtree(out)
    os.makedirs(out)

    synth_args = ["--arch", "dlrm", "--preset", preset, "--slots", str(SLOTS), "--dense",
                  str(DENSE), "--ids-per-slot", str(ids), "--rows", str(rows)]
    model = synth_and_split(a.sedp, out, synth_args + ["--seed", str(a.model_seed)])

    rng = random.Random(a.seed)
    zipf = [Zipf(rng, rows) for _ in range(SLOTS)]
    reqs = []
    for q in range(n_req):
        user = {"user_id": 1000 + q}
        for k in range(USER_SLOTS):
            user["slot_%d" % k] = [zipf[k].draw() for _ in range(ids)]
        items = []
        n_items = rng.randint(items_lo, items_hi) if items_hi > items_lo else items_lo
        for i in range(n_items):
            it = {"item_id": 100000 + q * items_hi + i,
                  "dense": [round(rng.gauss(0.0, 1.0), 4) for _ in range(DENSE)]}
            for k in range(USER_SLOTS, SLOTS):
                it["slot_%d" % k] = [zipf[k].draw() for _ in range(ids)]
            items.append(it)
        reqs.append({"id": "q%d" % q, "user": user, "items": items})

    # Score every item with the unsplit model: one batch of all items of all requests.
    rows_all = [(r, it) for r in reqs for it in r["items"]]
    batch = len(rows_all)
    inputs = [tensor_proto("dense", [batch, DENSE], 1,
                           struct.pack("<%df" % (batch * DENSE),
                                       *[v for _, it in rows_all for v in it["dense"]]))]
    for k in range(SLOTS):
        vals = [v for r, it in rows_all
                for v in (r["user"] if k < USER_SLOTS else it)["slot_%d" % k]]
        inputs.append(tensor_proto("slot_%d" % k, [batch, ids], 7,
                                   struct.pack("<%dq" % len(vals), *vals)))
    scores = eval_scores(a.sedp, model, out, inputs, batch)

    write_expected_and_requests(rng, out, reqs, rows_all, scores)
    if a.multi_model:
        write_multi_models(a.sedp, out, model, synth_args, a.model_seed, inputs, rows_all)
    if a.repository:
        write_repository(a.sedp, out, synth_args, inputs, rows_all,
                         REPOSITORY_NEW_EMBEDDINGS if a.new_embeddings else REPOSITORY_VERSIONS)
    shutil.rmtree(os.path.join(out, "eval-in"))
    train_shedder(a.sedp, out)
    multi = ("; model-dcn.onnx, dense-dcn.onnx, model-mmoe.onnx, dense-mmoe.onnx over cube/, "
             "expected-dcn.tsv, expected-mmoe.tsv" if a.multi_model else "")
    print("wrote %s: %s model, %d requests of %s items (requests.jsonl, requests.pb, "
          "requests.run.jsonl, expected.tsv%s%s%s)" % (out, preset, n_req,
          items_lo if items_lo == items_hi else "%d-%d" % (items_lo, items_hi),
          ", shedder.onnx" if os.path.exists(os.path.join(out, "shedder.onnx")) else "", multi,
          ("; models/ctr/1, 2 (%s), expected-v1.tsv, expected-v2.tsv" %
           ("new embeddings" if a.new_embeddings else "2: version 1's cube, other dense weights"))
          if a.repository else ""))


def write_repository(sedp, out, synth_args, inputs, rows_all, versions):
    """--repository: for each (version, seed, dense seed, cube of) of @versions, the model
    synthesized with those seeds, split, and packed as out/models/ctr/VERSION (`sedp model pack`)
    with its own cube or a copy of the cube of version `cube of` (the same bytes: its embedding
    tables are that version's, and a server shares the cube); its unsplit model's scores of every
    item of the same requests in out/expected-vVERSION.tsv (request id, item id, score:
    expected.tsv's format, the scores as `sedp model eval` gives them, not clipped). The ids are
    hashed with the cube's hash key by the pipeline, so a dense model with another version's cube
    of the same tables computes its unsplit model's function."""
    repo = os.path.join(out, "models")
    for version, seed, dense_seed, cube_of in versions:
        work = os.path.join(out, "v%d" % version)
        os.makedirs(work)
        model = synth_and_split(sedp, work, synth_args + ["--seed", str(seed),
                                                          "--dense-seed", str(dense_seed)])
        scores = eval_scores(sedp, model, work, inputs, len(rows_all))
        with open(os.path.join(out, "expected-v%d.tsv" % version), "w") as f:
            for (r, it), s in zip(rows_all, scores):
                f.write("%s\t%d\t%.9g\n" % (r["id"], it["item_id"], s))
        # pack takes a folder of one model and its cubes, nothing else
        parts = os.path.join(work, "parts")
        os.makedirs(parts)
        os.rename(os.path.join(work, "dense.onnx"), os.path.join(parts, "dense.onnx"))
        if cube_of is None:
            os.rename(os.path.join(work, "cube"), os.path.join(parts, "cube"))
        else:
            shutil.copytree(os.path.join(repo, "ctr", str(cube_of), "cube"),
                            os.path.join(parts, "cube"))
        run([sedp, "model", "pack", parts, "--name", "ctr", "--version", str(version),
             "--repository", repo])
        shutil.rmtree(work)


def write_multi_models(sedp, out, dlrm, synth_args, model_seed, inputs, rows_all):
    """--multi-model: for each architecture of MULTI_MODELS, its model over the embedding tables of
    @dlrm (out/model.onnx, split into out/cube): out/model-ARCH.onnx (kept, unsplit, for checking),
    split with the cube's hash key into out/dense-ARCH.onnx and a cube that must hold the same
    bytes as out/cube (compared, then removed: out/cube serves every model), and the unsplit
    model's outputs for every item in out/expected-ARCH.tsv (request id, item id, then one
    column per output: the scores as `sedp model eval` gives them, not clipped).

    The tables: synth draws the tables of --seed S from a stream that advances in step with the
    other weights' (one step per weight). The dlrm draws its bottom MLP (B weights) before emb_0;
    dcn and mmoe draw emb_0 first. So their tables are the dlrm's under the seed whose stream
    starts where the dlrm's stream of S stands after B steps (shared_table_seed); their other
    weights come from --dense-seed, the dlrm's seed."""
    key = cube_meta(os.path.join(out, "cube"))["hash_key"]
    table_seed = shared_table_seed(model_seed, params_before(dlrm, "emb_0"))
    arch_at = synth_args.index("--arch") + 1
    for arch, outputs in MULTI_MODELS:
        args = synth_args[:arch_at] + [arch] + synth_args[arch_at + 1:]
        model = os.path.join(out, "model-%s.onnx" % arch)
        run([sedp, "model", "synth"] + args + ["--seed", str(table_seed), "--dense-seed",
                                               str(model_seed), "-o", model])
        cube = os.path.join(out, "cube-%s" % arch)
        run([sedp, "model", "split", model, "--dense", os.path.join(out, "dense-%s.onnx" % arch),
             "--cube", cube, "--hash-key", key])
        same_cube(os.path.join(out, "cube"), cube)
        shutil.rmtree(cube)
        cols = eval_outputs(sedp, model, out, inputs, len(rows_all), len(outputs),
                            "eval-out-%s" % arch)
        shutil.rmtree(os.path.join(out, "eval-out-%s" % arch))
        with open(os.path.join(out, "expected-%s.tsv" % arch), "w") as f:
            for n, (r, it) in enumerate(rows_all):
                f.write("%s\t%d\t%s\n" % (r["id"], it["item_id"],
                                          "\t".join("%.9g" % c[n] for c in cols)))


def shared_table_seed(seed, steps):
    """The synth seed whose table stream starts where the stream of @seed stands after @steps
    weights: ((S ^ MIX) + steps * GAMMA mod 2^64) ^ MIX."""
    state = ((seed ^ SYNTH_SEED_MIX) + steps * SYNTH_GAMMA) & 0xFFFFFFFFFFFFFFFF
    return state ^ SYNTH_SEED_MIX


def params_before(path, name):
    """How many float weights an ONNX model's initializers hold before the one called @name (the
    weights synth drew before it: its initializers are in the order it drew them)."""
    buf = open(path, "rb").read()
    total = 0
    for field, wire, val in proto_fields(buf, 0, len(buf)):
        if field != 7 or wire != 2:  # ModelProto.graph
            continue
        for gfield, gwire, gval in proto_fields(buf, *val):
            if gfield != 5 or gwire != 2:  # GraphProto.initializer
                continue
            dims, dtype, tname = [], 0, None
            for tfield, twire, tval in proto_fields(buf, *gval):
                if tfield == 1 and twire == 0:  # TensorProto.dims
                    dims.append(tval)
                elif tfield == 1 and twire == 2:  # packed
                    pos, end = tval
                    while pos < end:
                        d, pos = read_varint(buf, pos)
                        dims.append(d)
                elif tfield == 2 and twire == 0:
                    dtype = tval
                elif tfield == 8 and twire == 2:
                    tname = buf[tval[0]:tval[1]].decode()
            if tname == name:
                return total
            if dtype == 1:
                total += math.prod(dims)
    raise SystemExit("gen.py: %s: no initializer '%s'" % (path, name))


def proto_fields(buf, pos, end):
    """The fields of the protobuf message buf[pos:end]: (field, wire type, value), the value of a
    length-delimited field its (start, end) in buf."""
    while pos < end:
        key, pos = read_varint(buf, pos)
        field, wire = key >> 3, key & 7
        if wire == 0:
            val, pos = read_varint(buf, pos)
        elif wire == 1:
            val, pos = buf[pos:pos + 8], pos + 8
        elif wire == 5:
            val, pos = buf[pos:pos + 4], pos + 4
        elif wire == 2:
            n, pos = read_varint(buf, pos)
            val, pos = (pos, pos + n), pos + n
        else:
            raise SystemExit("gen.py: unexpected wire type %d" % wire)
        yield field, wire, val


def cube_meta(cube):
    """A cube's meta file as a dict (the `key: value` lines)."""
    meta = {}
    for line in open(os.path.join(cube, "meta")):
        k, sep, v = line.partition(": ")
        if sep:
            meta[k] = v.strip()
    return meta


def same_cube(want, got):
    """Fails unless cube @got holds the bytes of cube @want: the same files, index and value
    blocks byte for byte, and the same meta but for the name, the time stamps and the meta's own
    checksum over them."""
    files = sorted(os.listdir(want))
    if sorted(os.listdir(got)) != files:
        raise SystemExit("gen.py: %s has the files %s, %s has %s" %
                         (got, sorted(os.listdir(got)), want, files))
    for f in files:
        if f != "meta" and open(os.path.join(want, f), "rb").read() != \
                open(os.path.join(got, f), "rb").read():
            raise SystemExit("gen.py: %s/%s differs from %s/%s: the model's embedding tables are "
                             "not the dlrm's" % (got, f, want, f))
    mw, mg = cube_meta(want), cube_meta(got)
    for m in (mw, mg):
        for k in ("name", "version", "created", "checksum"):
            m.pop(k, None)
    if mw != mg:
        raise SystemExit("gen.py: the meta of %s differs from %s's: %s, %s" % (got, want, mg, mw))
    print("%s: the same tables as %s (%s values of dim %s, index %s)" %
          (got, want, mg["count"], mg["dim"], mg["index_checksum"]))


def synth_and_split(sedp, out, synth_args):
    """model.onnx from `sedp model synth`, split into dense.onnx and cube/ (split.txt keeps what
    the split printed: the cube_accessor options)."""
    model = os.path.join(out, "model.onnx")
    run([sedp, "model", "synth"] + synth_args + ["-o", model])
    split = subprocess.run([sedp, "model", "split", model, "--dense",
                            os.path.join(out, "dense.onnx"), "--cube", os.path.join(out, "cube")],
                           check=True, capture_output=True, text=True).stdout
    sys.stdout.write(split)
    open(os.path.join(out, "split.txt"), "w").write(split)
    return model


def din_requests(rng, p, n_req, items_lo, items_hi):
    """Users with a profile (slot_0 … slot_3) and clicks (1 to p["clicks"] catalogue ids, oldest
    first, more than SEQ_LEN for many); distinct candidate items per request, each its catalogue
    id and 13 dense features. Catalogue ids are 1 … rows − 1 (0 is the padding id), Zipf."""
    rows = p["rows"]
    zipf = [Zipf(rng, rows) for _ in range(DIN_SLOTS)]
    catalogue = Zipf(rng, rows - 1)
    reqs = []
    for q in range(n_req):
        user = {"user_id": 1000 + q}
        for k in range(DIN_SLOTS):
            user["slot_%d" % k] = [zipf[k].draw() for _ in range(p["ids"])]
        user["clicks"] = [1 + catalogue.draw() for _ in range(rng.randint(1, p["clicks"]))]
        n_items = rng.randint(items_lo, items_hi) if items_hi > items_lo else items_lo
        items, seen = [], set()
        while len(items) < n_items:
            iid = 1 + catalogue.draw()
            if iid not in seen:
                seen.add(iid)
                items.append({"item_id": iid,
                              "dense": [round(rng.gauss(0.0, 1.0), 4) for _ in range(DENSE)]})
        reqs.append({"id": "d%d" % q, "user": user, "items": items})
    return reqs


def din_inputs(rows_all, ids):
    """The unsplit DIN model's inputs for every item row: dense, slot_0 … slot_3, item, hist (the
    last SEQ_LEN clicks, right-padded with 0: what feature_processor's sequence = hist=clicks:50
    makes of them)."""
    batch = len(rows_all)
    inputs = [tensor_proto("dense", [batch, DENSE], 1,
                           struct.pack("<%df" % (batch * DENSE),
                                       *[v for _, it in rows_all for v in it["dense"]]))]
    for k in range(DIN_SLOTS):
        vals = [v for r, _ in rows_all for v in r["user"]["slot_%d" % k]]
        inputs.append(tensor_proto("slot_%d" % k, [batch, ids], 7, struct.pack("<%dq" % len(vals), *vals)))
    items = [it["item_id"] for _, it in rows_all]
    inputs.append(tensor_proto("item", [batch, 1], 7, struct.pack("<%dq" % batch, *items)))
    hist = []
    for r, _ in rows_all:
        kept = r["user"]["clicks"][-SEQ_LEN:]
        hist += kept + [0] * (SEQ_LEN - len(kept))
    inputs.append(tensor_proto("hist", [batch, SEQ_LEN], 7, struct.pack("<%dq" % len(hist), *hist)))
    return inputs


def main_din(a):
    """--din: the DIN model, its cube and dense model, users with clicks, the request files."""
    preset = "small" if a.small else "realistic"
    p = DIN_PRESETS[preset]
    n_req = a.requests or p["requests"]
    items_lo, items_hi = a.items or (p["items"], p["items"])
    if os.path.isdir(a.out):
        shutil.rmtree(a.out)
    os.makedirs(a.out)
    model = synth_and_split(a.sedp, a.out, [
        "--arch", "din", "--preset", preset, "--slots", str(DIN_SLOTS), "--dense", str(DENSE),
        "--ids-per-slot", str(p["ids"]), "--rows", str(p["rows"]), "--dim", str(p["dim"]),
        "--seq-len", str(SEQ_LEN), "--seed", str(a.model_seed)])
    rng = random.Random(a.seed)
    reqs = din_requests(rng, p, n_req, items_lo, items_hi)
    rows_all = [(r, it) for r in reqs for it in r["items"]]
    scores = eval_scores(a.sedp, model, a.out, din_inputs(rows_all, p["ids"]), len(rows_all))
    write_expected_and_requests(rng, a.out, reqs, rows_all, scores)
    shutil.rmtree(os.path.join(a.out, "eval-in"))
    print("wrote %s: din %s model, %d requests of %s items, up to %d clicks per user" %
          (a.out, preset, n_req, items_lo if items_lo == items_hi else "%d-%d" % (items_lo, items_hi),
           p["clicks"]))


def eval_scores(sedp, model, out, inputs, batch):
    """The unsplit model's scores of every item: `sedp model eval` on the TensorProtos @inputs
    (written to out/eval-in), output 0 read back from out/eval-out."""
    return eval_outputs(sedp, model, out, inputs, batch, 1, "eval-out")[0]


def eval_outputs(sedp, model, out, inputs, batch, n_outputs, ev_name):
    """The first @n_outputs outputs of the unsplit model (each [batch, 1]) for every item: `sedp
    model eval` on the TensorProtos @inputs (written to out/eval-in), read back from out/@ev_name."""
    ev_in = os.path.join(out, "eval-in")
    os.makedirs(ev_in, exist_ok=True)
    args = []
    for k, t in enumerate(inputs):
        path = os.path.join(ev_in, "input_%d.pb" % k)
        open(path, "wb").write(t)
        args += ["-i", path]
    ev_out = os.path.join(out, ev_name)
    run([sedp, "model", "eval", model] + args + ["-o", ev_out])
    results = []
    for k in range(n_outputs):
        scores = read_float_tensor(os.path.join(ev_out, "output_%d.pb" % k))
        if len(scores) != batch:
            raise SystemExit("gen.py: %s: output %d has %d scores for %d items" %
                             (model, k, len(scores), batch))
        results.append(scores)
    return results


def write_expected_and_requests(rng, out, reqs, rows_all, scores):
    """expected.tsv (the unsplit model's scores), each item's escore, and the request files."""
    # escore: the recall stage's guess, the model's logit plus Gaussian noise of 1.1 times the
    # logits' spread: a rank correlation of about 0.65 with the model's score (for normal logits,
    # (6/π)·asin(ρ/2) with ρ = 1/√(1 + 1.1²)), between the 0.5 and 0.8 of a useful but imperfect
    # recall stage (docs/load-shedding.md#benchmark).
    clipped = [min(max(s, 1e-6), 1 - 1e-6) for s in scores]
    logits = [math.log(s / (1 - s)) for s in clipped]
    mean = sum(logits) / len(logits)
    spread = math.sqrt(sum((x - mean) ** 2 for x in logits) / len(logits))
    with open(os.path.join(out, "expected.tsv"), "w") as exp:
        for (r, it), s, logit in zip(rows_all, clipped, logits):
            it["escore"] = round(1 / (1 + math.exp(-(logit + rng.gauss(0.0, 1.1 * spread)))), 6)
            exp.write("%s\t%d\t%.9g\n" % (r["id"], it["item_id"], s))

    write_requests(out, reqs)


def write_requests(out, reqs):
    """requests.run.jsonl, requests.jsonl and requests.pb: the same requests, three ways. Id
    lists are user or item features named slot_K or clicks; dense is a float list."""
    # requests.run.jsonl: what `sedp run` reads (core/io/request-file.c): features by name.
    with open(os.path.join(out, "requests.run.jsonl"), "w") as f:
        for r in reqs:
            f.write(json.dumps(r, separators=(",", ":")) + "\n")
    # requests.jsonl: one PredictRequest per line in its JSON form, as POST …:predict takes it;
    # requests.pb: the same PredictRequests serialized, each preceded by its length as a varint
    # (the protobuf request log that `sedp run` replays, see docs/request-files.md).
    with open(os.path.join(out, "requests.jsonl"), "w") as f, \
            open(os.path.join(out, "requests.pb"), "wb") as pb:
        for r in reqs:
            user = {"id": r["user"]["user_id"],
                    "features": {k: {"ids": v} for k, v in r["user"].items() if k != "user_id"}}
            items = []
            for it in r["items"]:
                feats = {"dense": {"floats": it["dense"]}}
                feats.update({k: {"ids": v} for k, v in it.items() if k.startswith("slot_")})
                items.append({"id": it["item_id"], "escore": it["escore"], "features": feats})
            f.write(json.dumps({"request_id": r["id"], "top_k": 10, "user": user,
                                "items": items}, separators=(",", ":")) + "\n")
            msg = predict_request(
                r["id"], 10, user["id"],
                {k: feature_ids(v["ids"]) for k, v in user["features"].items()},
                [(it["id"], it["escore"],
                  {k: feature_floats(v["floats"]) if "floats" in v else feature_ids(v["ids"])
                   for k, v in it["features"].items()}) for it in items])
            pb.write(varint(len(msg)) + msg)


def train_shedder(sedp, out):
    """The pruning DNN of pipelines/ctr-shed.pipeline (docs/load-shedding.md), trained on these
    requests: only for the default data folder, which that pipeline names."""
    here = os.path.dirname(os.path.abspath(__file__))
    if os.path.abspath(out) != os.path.join(here, "data"):
        return
    pipeline = os.path.join(here, "..", "..", "pipelines", "ctr-shed.pipeline")
    run([sedp, "shed", "train", pipeline, "--requests", os.path.join(out, "requests.jsonl"),
         "--requests-format", "predict-jsonl", "-o", os.path.join(out, "shedder.onnx"),
         "--report", os.path.join(out, "shedder-report.txt")])


if __name__ == "__main__":
    main()
