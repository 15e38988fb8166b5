#!/usr/bin/env python3
"""Checks the answers of a pipeline with several models over the CTR example's cube
(pipelines/multi-model.pipeline, pipelines/ab.pipeline) against the unsplit models' outputs that
prepare --multi-model wrote (`sedp model eval` of model.onnx, model-dcn.onnx and model-mmoe.onnx:
expected.tsv, expected-dcn.tsv, expected-mmoe.tsv):

- every request ok, every item scored;
- each head (a column a model_inference stage writes, `outputs = MODEL_OUTPUT=COLUMN`) within 1e-5
  relative of that output of the stage's model, unsplit, on the same item; a stage on a router's
  branch (`after = ab:control`) only for the requests whose answer names that branch in `routes`
  (one branch of each router);
- with the responder's `combine = COLUMN = FORMULA`, the column equal to the formula computed
  here in double precision from the heads the pipeline answered, within 1e-5 relative;
- `sedp run`: rank and top_k consistent with the responder's first score column (its `top_k`);
  `sedp serve`: each item's scores the float columns of `[pipeline] outputs` in that order, and
  the answer's top_k the client's top_k best items by the first of them.

The heads, the formula and the columns are read from PIPELINE.
Usage: multi_check.py PIPELINE DATA run RUN-OUTPUT.jsonl
       multi_check.py PIPELINE DATA serve URL      (POSTs every line of DATA/requests.jsonl)"""
import ast
import configparser
import json
import math
import os
import sys
import urllib.request

# The dense model a stage runs → the file of its unsplit model's outputs, and their names in
# graph-output order (the columns of that file after request id and item id).
EXPECTED = {
    "dense.onnx": ("expected.tsv", ("prob",)),
    "dense-dcn.onnx": ("expected-dcn.tsv", ("prob",)),
    "dense-mmoe.onnx": ("expected-mmoe.tsv", ("ctr", "cvr")),
}
FUNCTIONS = {
    "pow": math.pow, "exp": math.exp, "log": math.log, "sqrt": math.sqrt, "min": min, "max": max,
    "sigmoid": lambda x: 1.0 / (1.0 + math.exp(-x)),
}


def formula(text):
    """The combine formula's expression as a function of a dict of column values (double)."""
    tree = ast.parse(text.strip(), mode="eval")

    def ev(node, cols):
        if isinstance(node, ast.Expression):
            return ev(node.body, cols)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return float(node.value)
        if isinstance(node, ast.Name):
            return cols[node.id]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            v = ev(node.operand, cols)
            return -v if isinstance(node.op, ast.USub) else v
        if isinstance(node, ast.BinOp):
            a, b = ev(node.left, cols), ev(node.right, cols)
            ops = {ast.Add: lambda: a + b, ast.Sub: lambda: a - b, ast.Mult: lambda: a * b,
                   ast.Div: lambda: a / b}
            if type(node.op) in ops:
                return ops[type(node.op)]()
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id in FUNCTIONS and not node.keywords:
            return FUNCTIONS[node.func.id](*[ev(x, cols) for x in node.args])
        raise SystemExit("multi_check: the formula '%s' has what this check does not evaluate: %s"
                         % (text, ast.dump(node)))

    names = sorted({n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} - set(FUNCTIONS))
    return (lambda cols: ev(tree, cols)), names


def read_pipeline(path, data):
    """From the pipeline file: the heads [(branch or None, column, {(request id, item id): value})]
    (the branch `STAGE:BRANCH` of a stage whose after names one), the routers, the combine
    (column, function, names) or None, the responder's first score column and top_k, and
    [pipeline] outputs."""
    ini = configparser.ConfigParser(delimiters=("=",), comment_prefixes=("#",),
                                    inline_comment_prefixes=None, interpolation=None, strict=True)
    ini.optionxform = str
    ini.read(path)
    heads, routers, combine, rank_col, top_k = [], set(), None, "score", 0
    for sec in ini.sections():
        s = ini[sec]
        after = [a.strip() for a in s.get("after", "").split(",") if a.strip()]
        branches = [a for a in after if ":" in a]
        if len(branches) > 1:
            raise SystemExit("multi_check: [%s] takes %s: one branch at most" % (sec, branches))
        routers |= {b.split(":")[0] for b in branches}
        if s.get("plugin") == "model_inference":
            model = os.path.basename(s["model"])
            if model not in EXPECTED:
                raise SystemExit("multi_check: [%s] runs %s: no expected outputs for it" %
                                 (sec, model))
            exp_file, names = EXPECTED[model]
            expected = {}
            for line in open(os.path.join(data, exp_file)):
                f = line.rstrip("\n").split("\t")
                expected[(f[0], int(f[1]))] = [float(x) for x in f[2:]]
            for item in s.get("outputs", ",".join(names)).split(","):
                out, _, col = item.strip().partition("=")
                col = col.strip() or out
                if out not in names:
                    raise SystemExit("multi_check: [%s] outputs: %s has no output '%s'" %
                                     (sec, model, out))
                k = names.index(out)
                heads.append((branches[0] if branches else None, col,
                              {key: v[k] for key, v in expected.items()}))
        elif s.get("plugin") == "responder":
            rank_col = s.get("score_columns", "score").split(",")[0].strip()
            top_k = int(s.get("top_k", "0"))
            if "combine" in s:
                col, _, expr = s["combine"].partition("=")
                fn, names = formula(expr)
                combine = (col.strip(), fn, names, expr.strip())
    outputs = [c.strip() for c in ini["pipeline"]["outputs"].split(",")]
    return heads, routers, combine, rank_col, top_k, outputs


class Checker:
    def __init__(self, pipeline, data):
        (self.heads, self.routers, self.combine, self.rank_col, self.top_k,
         self.outputs) = read_pipeline(pipeline, data)
        order = [col for _, col, _ in self.heads]
        self.columns = sorted(set(order), key=order.index)
        if self.combine:
            missing = [n for n in self.combine[2] if n not in self.columns]
            if missing:
                raise SystemExit("multi_check: the formula names %s, which no model writes" %
                                 missing)
        self.errors, self.n_items, self.worst, self.worst_combine = [], 0, 0.0, 0.0
        self.seen, self.arms = set(), {}

    def rel(self, got, want):
        return abs(got - want) / max(abs(want), 1e-12)

    def taken(self, rid, routes):
        """The heads of a request that took @routes (the answer's STAGE:BRANCH list), or None."""
        for router in sorted(self.routers):
            mine = [r for r in routes if r.split(":")[0] == router]
            if len(mine) != 1:
                self.errors.append("%s: routes %s, want one branch of stage '%s'" %
                                   (rid, routes, router))
                return None
        self.arms[tuple(sorted(routes))] = self.arms.get(tuple(sorted(routes)), 0) + 1
        return [(col, exp) for branch, col, exp in self.heads if branch is None or branch in routes]

    def item(self, rid, item_id, cols, heads):
        """Checks one scored item's columns {name: value} against @heads [(column, expected)];
        returns False on an error."""
        key = (rid, item_id)
        ok = True
        for col, expected in heads:
            if key not in expected:
                self.errors.append("%s item %s: not in the expected outputs" % key)
                return False
            if col not in cols:
                self.errors.append("%s item %s: no %s" % (key + (col,)))
                ok = False
                continue
            r = self.rel(cols[col], expected[key])
            self.worst = max(self.worst, r)
            if not r <= 1e-5:
                self.errors.append("%s item %s: %s %.9g, the unsplit model gives %.9g" %
                                   (key + (col, cols[col], expected[key])))
                ok = False
        if self.combine and ok:
            col, fn, names, expr = self.combine
            want = fn({n: cols[n] for n in names})
            if col not in cols:
                self.errors.append("%s item %s: no %s" % (key + (col,)))
                return False
            r = self.rel(cols[col], want)
            self.worst_combine = max(self.worst_combine, r)
            if not r <= 1e-5:
                self.errors.append("%s item %s: %s %.9g, %s of its heads gives %.9g" %
                                   (key + (col, cols[col], expr, want)))
                ok = False
        self.seen.add(key)
        self.n_items += 1
        return ok

    def finish(self, what):
        missing = set(self.heads[0][2]) - self.seen
        if missing:
            self.errors.append("%d items were not answered, e.g. %s %s" %
                               ((len(missing),) + sorted(missing)[0]))
        for e in self.errors[:20]:
            print("multi_check: " + e, file=sys.stderr)
        print("multi_check: %d items %s%s, heads %s: max relative error %.3g%s%s" %
              (self.n_items, what, " (%s)" % ", ".join("%s: %d requests" % (",".join(k), n)
                                                     for k, n in sorted(self.arms.items()))
               if self.routers else "", ", ".join(self.columns), self.worst,
               "; %s = %s: max relative error %.3g" % (self.combine[0], self.combine[3],
                                                       self.worst_combine)
               if self.combine else "; no combine",
               ", %d errors" % len(self.errors) if self.errors else ""))
        return 1 if self.errors else 0


def check_run(c, out_path):
    for line in open(out_path):
        res = json.loads(line)
        rid = res["id"]
        if res["status"] != "ok":
            c.errors.append("%s: status %s %s" % (rid, res["status"], res.get("message", "")))
            continue
        heads = c.taken(rid, res.get("routes", []))
        if heads is None:
            continue
        items = res["items"]
        for i, it in enumerate(items):
            if it["status"] != "scored":
                c.errors.append("%s item %d: %s" % (rid, i, it["status"]))
                continue
            c.item(rid, it.get("item_id"), it, heads)
        order = sorted(range(len(items)), key=lambda i: (-items[i].get(c.rank_col, -math.inf), i))
        k = c.top_k if 0 < c.top_k < len(items) else len(items)
        for pos, i in enumerate(order):
            if items[i].get("rank") != pos or items[i].get("top_k") != (1 if pos < k else 0):
                c.errors.append("%s item %d: rank %s top_k %s, want %d %d (by %s)" %
                                (rid, i, items[i].get("rank"), items[i].get("top_k"), pos,
                                 pos < k, c.rank_col))
    return c.finish("scored")


def check_serve(c, url, requests_path):
    floats = set(c.columns) | ({c.combine[0]} if c.combine else set())
    score_cols = [col for col in c.outputs if col in floats]
    for line in open(requests_path):
        req = json.loads(line)
        rid = req["request_id"]
        http = urllib.request.Request(url, data=line.encode(), method="POST",
                                      headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(http, timeout=30) as resp:
            ans = json.loads(resp.read())
        if ans.get("status") != "OK":
            c.errors.append("%s: status %s %s" % (rid, ans.get("status"), ans.get("message", "")))
            continue
        heads = c.taken(rid, ans.get("routes", []))
        if heads is None:
            continue
        items = ans["items"]
        if len(items) != len(req["items"]):
            c.errors.append("%s: %d items answered of %d" % (rid, len(items), len(req["items"])))
        first = []
        for it in items:
            scores = it.get("scores", [])
            if it.get("status") != "SCORED" or len(scores) != len(score_cols):
                c.errors.append("%s item %s: %s, scores %s (want %s)" %
                                (rid, it.get("id"), it.get("status"), scores, score_cols))
                first.append(-math.inf)
                continue
            first.append(scores[0])
            c.item(rid, it["id"], dict(zip(score_cols, scores)), heads)
        k = min(req.get("top_k", 0) or len(items), len(items))
        best = sorted(range(len(items)), key=lambda i: (-first[i], i))[:k]
        if req.get("top_k") and ans.get("top_k") != best:
            c.errors.append("%s: top_k %s, want %s (by %s)" % (rid, ans.get("top_k"), best,
                                                              score_cols[0]))
    return c.finish("scored over HTTP")


def main():
    if len(sys.argv) != 5 or sys.argv[3] not in ("run", "serve"):
        sys.exit(__doc__.split("Usage: ")[1])
    pipeline, data, mode, arg = sys.argv[1:5]
    c = Checker(pipeline, data)
    if mode == "run":
        sys.exit(check_run(c, arg))
    sys.exit(check_serve(c, arg, os.path.join(data, "requests.jsonl")))


if __name__ == "__main__":
    main()
