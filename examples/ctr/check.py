#!/usr/bin/env python3
"""Checks a `sedp run` output of the CTR example against expected.tsv (the unsplit model's scores
from `sedp model eval`, written by prepare): every request ok, every item scored, each score
within 1e-5 relative of the unsplit model's, and rank/top_k consistent with the scores.
Usage: check.py EXPECTED.tsv RUN-OUTPUT.jsonl [TOP_K]"""
import json
import math
import sys


def main():
    expected = {}
    for line in open(sys.argv[1]):
        rid, item, score = line.split("\t")
        expected[(rid, int(item))] = float(score)
    top_k = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    errors, n_items, worst = [], 0, 0.0
    seen = set()
    for line in open(sys.argv[2]):
        res = json.loads(line)
        rid = res["id"]
        if res["status"] != "ok":
            errors.append("%s: status %s" % (rid, res["status"]))
            continue
        items = res["items"]
        for i, it in enumerate(items):
            key = (rid, it.get("item_id"))
            if it["status"] != "scored" or "score" not in it:
                errors.append("%s item %d: %s, no score" % (rid, i, it["status"]))
                continue
            if key not in expected:
                errors.append("%s item %s: not in the expected scores" % key)
                continue
            seen.add(key)
            n_items += 1
            want, got = expected[key], it["score"]
            rel = abs(got - want) / max(abs(want), 1e-12)
            worst = max(worst, rel)
            if not rel <= 1e-5:
                errors.append("%s item %s: score %.9g, the unsplit model gives %.9g" % (key + (got, want)))
        order = sorted(range(len(items)), key=lambda i: (-items[i].get("score", -math.inf), i))
        k = top_k if 0 < top_k < len(items) else len(items)
        for pos, i in enumerate(order):
            if items[i].get("rank") != pos or items[i].get("top_k") != (1 if pos < k else 0):
                errors.append("%s item %d: rank %s top_k %s, want %d %d" %
                              (rid, i, items[i].get("rank"), items[i].get("top_k"), pos, pos < k))
    missing = set(expected) - seen
    if missing:
        errors.append("%d items were not answered, e.g. %s %s" % ((len(missing),) + sorted(missing)[0]))
    for e in errors[:20]:
        print("check: " + e, file=sys.stderr)
    print("check: %d items scored, max relative error %.3g%s" %
          (n_items, worst, ", %d errors" % len(errors) if errors else ""))
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
