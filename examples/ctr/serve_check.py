#!/usr/bin/env python3
"""Sends every request of requests.jsonl to a running `sedp serve` (POST …/v1/pipelines/NAME:predict,
JSON) and checks the answers against expected.tsv: status OK, every item SCORED with the unsplit
model's score within 1e-5 relative, and top_k the best items by score, best first.
Usage: serve_check.py URL EXPECTED.tsv REQUESTS.jsonl"""
import json
import sys
import urllib.request


def main():
    url, exp_path, req_path = sys.argv[1:4]
    expected = {}
    for line in open(exp_path):
        rid, item, score = line.split("\t")
        expected[(rid, int(item))] = float(score)
    errors, n_items, worst = [], 0, 0.0
    for line in open(req_path):
        req = json.loads(line)
        rid = req["request_id"]
        http = urllib.request.Request(url, data=line.encode(), method="POST",
                                      headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(http, timeout=30) as resp:
            ans = json.loads(resp.read())
        if ans.get("status") != "OK":
            errors.append("%s: status %s %s" % (rid, ans.get("status"), ans.get("message", "")))
            continue
        items = ans["items"]
        if len(items) != len(req["items"]):
            errors.append("%s: %d items answered of %d" % (rid, len(items), len(req["items"])))
        scores = []
        for it in items:
            want = expected.get((rid, it["id"]))
            if it.get("status") != "SCORED" or want is None or not it.get("scores"):
                errors.append("%s item %s: %s" % (rid, it.get("id"), it.get("status")))
                scores.append(float("-inf"))
                continue
            got = it["scores"][0]
            scores.append(got)
            n_items += 1
            rel = abs(got - want) / max(abs(want), 1e-12)
            worst = max(worst, rel)
            if not rel <= 1e-5:
                errors.append("%s item %s: score %.9g, the unsplit model gives %.9g" %
                              (rid, it["id"], got, want))
        k = min(req.get("top_k", 0) or len(items), len(items))
        best = sorted(range(len(items)), key=lambda i: (-scores[i], i))[:k]
        if req.get("top_k") and ans.get("top_k") != best:
            errors.append("%s: top_k %s, want %s" % (rid, ans.get("top_k"), best))
    for e in errors[:20]:
        print("serve_check: " + e, file=sys.stderr)
    print("serve_check: %d items scored over HTTP, max relative error %.3g%s" %
          (n_items, worst, ", %d errors" % len(errors) if errors else ""))
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
