#!/usr/bin/env python3
"""Checks `sedp run` of pipelines/cascade.pipeline (a light model prunes, a heavy one re-ranks)
against the unsplit models' outputs that prepare --multi-model wrote: in every request the items
scored are exactly the KEEP best by the light model's expected score (dlrm, expected.tsv), the
others dropped; each kept item's ctr_light and ctr_heavy within 1e-5 relative of the dlrm's and
the dcn's (expected-dcn.tsv); ranks 0..KEEP-1 by ctr_heavy.
Usage: cascade_check.py DATA RUN-OUTPUT.jsonl KEEP"""
import json
import sys


def expected(path):
    out = {}
    for line in open(path):
        f = line.rstrip("\n").split("\t")
        out[(f[0], int(f[1]))] = float(f[2])
    return out


def main():
    data, run, keep = sys.argv[1], sys.argv[2], int(sys.argv[3])
    light, heavy = expected(data + "/expected.tsv"), expected(data + "/expected-dcn.tsv")
    errors, worst, n_req = [], 0.0, 0
    for line in open(run):
        r = json.loads(line)
        n_req += 1
        rid = r["id"]
        ids = [k[1] for k in light if k[0] == rid]
        best = set(sorted(ids, key=lambda i: -light[(rid, i)])[:keep])
        scored = [it for it in r["items"] if it["status"] == "scored"]
        dropped = [it for it in r["items"] if it["status"] == "dropped"]
        if r["status"] != "ok" or len(scored) != min(keep, len(ids)) or \
                len(scored) + len(dropped) != len(ids):
            errors.append("%s: status %s, %d scored, %d dropped of %d" %
                          (rid, r["status"], len(scored), len(dropped), len(ids)))
            continue
        if {it["item_id"] for it in scored} != best:
            errors.append("%s: the items kept are not the %d best by the light model" % (rid, keep))
        for it in scored:
            key = (rid, it["item_id"])
            for col, ref in (("ctr_light", light), ("ctr_heavy", heavy)):
                e = abs(it[col] - ref[key]) / max(abs(ref[key]), 1e-12)
                worst = max(worst, e)
                if e > 1e-5:
                    errors.append("%s item %d: %s %.9g, expected %.9g" % (rid, key[1], col, it[col], ref[key]))
        order = sorted(scored, key=lambda it: -it["ctr_heavy"])
        if [it["rank"] for it in order] != list(range(len(order))):
            errors.append("%s: rank does not follow ctr_heavy" % rid)
    if errors or n_req == 0:
        print("cascade_check: %d errors in %d requests:\n  %s" % (len(errors), n_req, "\n  ".join(errors[:20])))
        sys.exit(1)
    print("cascade_check: %d requests, %d best kept of each, worst relative error %.3g" %
          (n_req, keep, worst))


main()
