#!/usr/bin/env /usr/bin/python3
"""The Python client (examples/clients/python/sedp_client.py) against a real sedp serve, in both
formats: every answer compared, as parsed values, with the server's answer to a hand-written JSON
request sent over http.client, and with the values the request carried (the pipeline answers the
item columns it got: docs/protocol.md's outputs); errors (400 with the server's message, 404, no
server); health and metrics; the command line; the TF Serving helper against a local stub that
answers TF Serving's documented REST format.

Usage: test_python_client.py SEDP_BINARY"""

import http.server
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import unittest

SEDP = sys.argv.pop(1) if len(sys.argv) > 1 else "build/core/sedp"
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (AB_PIPELINE, CTR_PIPELINE, SLOW, SLOW_PIPELINE, SRC, Server,  # noqa: E402
                     f32, reference_items)

CLIENT_DIR = os.path.join(SRC, "examples", "clients", "python")
sys.path.insert(0, CLIENT_DIR)
import sedp_client  # noqa: E402
from sedp_client import Client, SedpError  # noqa: E402

FORMATS = ("protobuf", "json")
BIG = 2 ** 63 - 1  # the largest id the int64 item_id column holds; past 2^53: a string in JSON

# One request three ways: the client's arguments, the same request as hand-written JSON, and the
# values its items carry (what the ctr pipeline answers after its own score).
ITEMS = [{"id": 100, "escore": 0.5, "features": {"ctr": 0.031, "emb": [0.5, -1.25]}},
         {"id": 101, "escore": 0.25, "features": {"ctr": {"float_value": 0.012},
                                                   "emb": {"floats": [1.5, 2]}}},
         {"id": BIG, "escore": 0.75, "features": {"ctr": 0.5, "emb": [3, 4.5]}}]
ITEMS_JSON = ('[{"id": 100, "escore": 0.5, "features": {"ctr": {"float_value": 0.031}, '
              '"emb": {"floats": [0.5, -1.25]}}}, '
              '{"id": 101, "escore": 0.25, "features": {"ctr": {"float_value": 0.012}, '
              '"emb": {"floats": [1.5, 2]}}}, '
              '{"id": "9223372036854775807", "escore": 0.75, "features": {"ctr": '
              '{"float_value": 0.5}, "emb": {"floats": [3, 4.5]}}}]')
CARRIED = [[0.031, 0.5, 0.5, -1.25], [0.012, 0.25, 1.5, 2], [0.5, 0.75, 3, 4.5]]


class Live(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server(SEDP, CTR_PIPELINE, AB_PIPELINE, SLOW_PIPELINE)

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def client(self, fmt, pipeline="ctr"):
        return Client(self.server.url, pipeline, format=fmt, timeout=30 * SLOW)

    def assert_same(self, result, answer):
        """@result (the client's) equals the server's JSON @answer, value for value."""
        self.assertEqual(result.http_status, 200)
        self.assertEqual(result.request_id, answer["request_id"])
        self.assertEqual(result.status, answer["status"])
        self.assertEqual(result.model_version, answer["model_version"])
        self.assertEqual([(it.id, it.status, it.scores) for it in result.items],
                         reference_items(answer))
        self.assertEqual(result.top_k, answer.get("top_k", []))
        self.assertEqual(result.routes, answer.get("routes", []))

    def test_predict_matches_the_server(self):
        for fmt in FORMATS:
            with self.subTest(format=fmt):
                rid = "py-" + fmt
                result = self.client(fmt).predict(7, {"age": 31, "clicked": [17, 3]}, ITEMS,
                                                  top_k=2, deadline_ms=5000, request_id=rid)
                status, answer = self.server.reference(
                    "ctr", '{"request_id": "%s", "deadline_ms": 5000, "top_k": 2, "user": {"id": 7, '
                    '"features": {"age": {"int_value": 31}, "clicked": {"ids": [17, 3]}}}, '
                    '"items": %s}' % (rid, ITEMS_JSON))
                self.assertEqual(status, 200)
                self.assert_same(result, answer)
                # What the items carried comes back after the pipeline's score, as float32.
                self.assertEqual([it.scores[1:] for it in result.items],
                                 [[f32(v) for v in row] for row in CARRIED])
                self.assertEqual([it.id for it in result.items], [100, 101, BIG])
                self.assertEqual(len(result.top_k), 2)
                # best(): the top-K list, best first by the pipeline's score.
                ranked = sorted(result.items, key=lambda it: -it.scores[0])[:2]
                self.assertEqual([it.id for it in result.best()], [it.id for it in ranked])

    def test_routes_and_string_features(self):
        for fmt in FORMATS:
            for tenant in ("a", "b"):
                with self.subTest(format=fmt, tenant=tenant):
                    rid = "ab-%s-%s" % (fmt, tenant)
                    result = self.client(fmt, "ab").predict(3, {"tenant": tenant}, [1, 2, 3],
                                                            request_id=rid)
                    _, answer = self.server.reference(
                        "ab", '{"request_id": "%s", "user": {"id": 3, "features": {"tenant": '
                        '{"string_value": "%s"}}}, "items": [{"id": 1}, {"id": 2}, {"id": 3}]}'
                        % (rid, tenant))
                    self.assert_same(result, answer)
                    self.assertEqual(result.routes, ["ab:" + tenant])
                    self.assertEqual(result.top_k, [])

    def test_invalid_requests_raise_400_with_the_servers_message(self):
        cases = [  # client arguments, the same request in JSON, the field's message (protocol.md)
            ({"items": [1], "deadline_ms": 99999999},
             '{"deadline_ms": 99999999, "user": {"id": 1}, "items": [{"id": 1}]}',
             "deadline_ms: 99999999 is more than 3600000"),
            ({"items": []}, '{"user": {"id": 1}, "items": []}',
             "items: a request needs at least one item"),
            ({"items": [2 ** 64 - 1]},
             '{"user": {"id": 1}, "items": [{"id": "18446744073709551615"}]}',
             "items[0].id: 18446744073709551615 does not fit the int64 column item_id"),
            ({"items": [{"id": 1, "features": {"x": 3}}, {"id": 2, "features": {"x": "s"}}]},
             '{"user": {"id": 1}, "items": [{"id": 1, "features": {"x": {"int_value": 3}}}, '
             '{"id": 2, "features": {"x": {"string_value": "s"}}}]}',
             "items[1].x: a string, but items[0] has an integer"),
        ]
        for kwargs, body, field in cases:
            status, answer = self.server.reference("ctr", body)
            self.assertEqual(status, 400)
            expected = answer["error"]["message"]
            self.assertIn("stage 'reader': invalid request: " + field, expected)
            for fmt in FORMATS:
                with self.subTest(format=fmt, field=field):
                    with self.assertRaises(SedpError) as cm:
                        self.client(fmt).predict(1, {}, **kwargs)
                    self.assertEqual(cm.exception.status, 400)
                    if fmt == "json":
                        self.assertEqual(cm.exception.message, expected)
                    else:
                        self.assertIn("stage 'reader': invalid request: " + field,
                                      cm.exception.message)
                    self.assertIn("HTTP 400: ", str(cm.exception))

    def test_deadline_passed_raises_504_with_the_partial_answer(self):
        status, answer = self.server.reference(
            "slow", '{"request_id": "late", "deadline_ms": 100, "items": [{"id": 1}, {"id": 2}]}')
        self.assertEqual(status, 504)
        self.assertEqual(answer["status"], "TIMEOUT")
        for fmt in FORMATS:
            with self.subTest(format=fmt):
                with self.assertRaises(SedpError) as cm:
                    self.client(fmt, "slow").predict(0, {}, [1, 2], deadline_ms=100,
                                                     request_id="late")
                e = cm.exception
                self.assertEqual(e.status, 504)
                late = r"^deadline of 100 ms passed with 0 of \d+ items finished$"
                self.assertRegex(answer["message"], late)
                self.assertRegex(e.message, late)
                self.assertEqual(e.message, e.result.message)
                self.assertEqual(e.result.http_status, 504)
                self.assertEqual(e.result.status, "TIMEOUT")
                # How far a request got by its deadline depends on timing (under valgrind not
                # even its items may be known): every item it knows is unfinished.
                self.assertEqual(e.result.request_id, "late")
                self.assertEqual([(it.status, it.scores) for it in e.result.items],
                                 [("PENDING", [])] * len(e.result.items))

    def test_unknown_pipeline_and_no_server(self):
        status, ctype, data = self.server.raw("POST", "/v1/pipelines/nope:predict",
                                              b'{"items": [{"id": 1}]}', "application/json")
        self.assertEqual(status, 404)
        for fmt in FORMATS:
            with self.assertRaises(SedpError) as cm:
                self.client(fmt, "nope").predict(1, {}, [1])
            self.assertEqual(cm.exception.status, 404)
            self.assertEqual(cm.exception.message, json.loads(data)["error"]["message"])
        with self.assertRaises(SedpError) as cm:
            Client("http://127.0.0.1:1", "ctr", timeout=5).predict(1, {}, [1])
        self.assertEqual(cm.exception.status, 0)
        self.assertIn("127.0.0.1:1", cm.exception.message)

    def test_requests_the_client_cannot_encode(self):
        c = self.client("protobuf")
        for features, what in (({"x": None}, "feature user.features.x"),
                               ({"x": []}, "an empty list has no type"),
                               ({"x": {"int": 3}}, "expected one of int_value")):
            with self.assertRaises(ValueError) as cm:
                c.predict(1, features, [1])
            self.assertIn(what, str(cm.exception))
        with self.assertRaises(ValueError) as cm:
            c.predict(1, {}, [{"id": 1, "score": 2}])
        self.assertIn("items[0].score: unknown field", str(cm.exception))
        with self.assertRaises(ValueError):
            Client(self.server.url, "ctr", format="xml")

    def test_health_and_metrics(self):
        status, _, body = self.server.raw("GET", "/healthz")
        self.assertEqual((status, body.strip()), (200, b"ok"))
        self.assertIs(self.client("json").health(), True)
        self.client("json").predict(1, {}, [1, 2])
        text = self.client("json").metrics()
        _, _, raw = self.server.raw("GET", "/metrics")
        self.assertIn("# TYPE sedp_data_reader_requests_total counter", text)
        samples = sedp_client.parse_metrics(text)
        key = 'sedp_data_reader_requests_total{pipeline="ctr",stage="reader"}'
        self.assertGreaterEqual(samples[key], 1)
        # The same counter in a scrape of our own, read with a plain split (never fewer later).
        line = next(l for l in raw.decode().splitlines() if l.startswith(key + " "))
        self.assertGreaterEqual(float(line.split()[-1]), samples[key])

    def test_command_line(self):
        lines = ['# two requests, a blank line, one the server refuses',
                 '{"request_id": "cli-1", "top_k": 2, "user": {"id": 9}, "items": %s}' % ITEMS_JSON,
                 '',
                 '{"request_id": "cli-2", "user": {"id": 9}, "items": [{"id": 5}, {"id": 6}]}',
                 '{"request_id": "cli-3", "items": []}']
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
            f.write("\n".join(lines) + "\n")
        try:
            for fmt in FORMATS:
                with self.subTest(format=fmt):
                    p = subprocess.run(["/usr/bin/python3", os.path.join(CLIENT_DIR, "sedp_client.py"),
                                        "--url", self.server.url, "--pipeline", "ctr", "--format",
                                        fmt, "--requests", f.name], capture_output=True, text=True,
                                       timeout=60 * SLOW)
                    self.assertEqual(p.returncode, 1, p.stderr)  # cli-3 failed
                    out = p.stdout.splitlines()
                    self.assertEqual(len(out), 2, p.stdout)
                    for line, n in zip(out, (1, 3)):
                        _, answer = self.server.reference("ctr", lines[n])
                        self.assertEqual(line, self.expected_line(answer))
                    self.assertEqual(p.stderr.strip(), "%s:5: HTTP 400: stage 'reader': invalid "
                                     "request: items: a request needs at least one item" % f.name)
        finally:
            os.unlink(f.name)

    def test_the_example_requests_file(self):
        """examples/clients/requests.jsonl, as the README runs it: every line answered."""
        path = os.path.join(SRC, "examples", "clients", "requests.jsonl")
        p = subprocess.run(["/usr/bin/python3", os.path.join(CLIENT_DIR, "sedp_client.py"),
                            "--url", self.server.url, "--pipeline", "ctr", "--requests", path],
                           capture_output=True, text=True, timeout=60 * SLOW)
        self.assertEqual((p.returncode, p.stderr), (0, ""))
        with open(path, encoding="utf-8") as f:
            records = [l for l in f.read().splitlines() if l.strip() and not l.startswith("#")]
        self.assertEqual(len(records), 2)
        expected = [self.expected_line(self.server.reference("ctr", r)[1]) for r in records]
        self.assertEqual(p.stdout.splitlines(), expected)

    @staticmethod
    def expected_line(answer):
        """The CLI's line for a JSON answer: REQUEST_ID STATUS best ID:SCORES… (top-K order, else
        by first score), scores as %.9g."""
        items = answer["items"]
        order = answer.get("top_k") or sorted(range(len(items)), key=lambda i: -items[i]["scores"][0])
        best = " ".join("%s:%s" % (items[i]["id"], ",".join("%.9g" % f32(s) for s in
                                                            items[i]["scores"])) for i in order)
        return "%s %s best %s" % (answer["request_id"], answer["status"], best)


# ---- the TF Serving REST helper, against a stub of TF Serving's documented format ----


class TfsStub(http.server.BaseHTTPRequestHandler):
    """POST /v1/models/NAME[/versions/N]:predict: {"instances": [[…], …]} → {"predictions": [sum
    of each instance]}; {"inputs": {"x": [[…], …]}} → {"outputs": {"y": [sum of each row]}};
    model "missing" → 404 {"error": "Servable not found …"}; a body without either → 400."""
    seen = []

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        TfsStub.seen.append((self.path, self.headers["Content-Type"], json.loads(body)))
        o = json.loads(body)
        if self.path.startswith("/v1/models/missing"):
            self.answer(404, {"error": "Servable not found for request: Latest(missing)"})
        elif "instances" in o:
            self.answer(200, {"predictions": [sum(row) for row in o["instances"]]})
        elif "inputs" in o:
            self.answer(200, {"outputs": {"y": [sum(row) for row in o["inputs"]["x"]]}})
        else:
            self.answer(400, {"error": "Missing 'inputs' or 'instances' key"})

    def answer(self, status, o):
        data = json.dumps(o).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


class TfsHelper(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.httpd = http.server.HTTPServer(("127.0.0.1", 0), TfsStub)
        cls.thread = threading.Thread(target=cls.httpd.serve_forever, daemon=True)
        cls.thread.start()
        cls.client = Client("http://127.0.0.1:%d" % cls.httpd.server_address[1], timeout=10)

    @classmethod
    def tearDownClass(cls):
        cls.httpd.shutdown()
        cls.httpd.server_close()

    def setUp(self):
        TfsStub.seen.clear()

    def test_instances(self):
        self.assertEqual(self.client.predict_tfs("ctr", instances=[[1, 2], [3, 4.5]]), [3, 7.5])
        self.assertEqual(TfsStub.seen, [("/v1/models/ctr:predict", "application/json",
                                         {"instances": [[1, 2], [3, 4.5]]})])

    def test_inputs_signature_and_version(self):
        out = self.client.predict_tfs("ctr", inputs={"x": [[1, 1], [2, 2]]},
                                      signature_name="serving_default", version=3)
        self.assertEqual(out, {"y": [2, 4]})
        self.assertEqual(TfsStub.seen, [("/v1/models/ctr/versions/3:predict", "application/json",
                                         {"inputs": {"x": [[1, 1], [2, 2]]},
                                          "signature_name": "serving_default"})])

    def test_errors(self):
        with self.assertRaises(SedpError) as cm:
            self.client.predict_tfs("missing", instances=[[1]])
        self.assertEqual(cm.exception.status, 404)
        self.assertEqual(cm.exception.message, "Servable not found for request: Latest(missing)")
        for kwargs in ({}, {"instances": [[1]], "inputs": {"x": [[1]]}}):
            with self.assertRaises(ValueError):
                self.client.predict_tfs("ctr", **kwargs)
        self.assertEqual(TfsStub.seen, [("/v1/models/missing:predict", "application/json",
                                         {"instances": [[1]]})])


# ---- the TF Serving REST helper against a real sedp serve --model ----

# tests/processor/make-model.py's model and weights: x float [N, 3] -> logits = x W + B [N, 2]
# -> prob = sigmoid(logits) [N, 2]. The expected answers are computed here from W and B.
MAKE_MODEL = os.path.join(SRC, "tests", "processor", "make-model.py")
W = [[0.5, -1.0], [0.25, 2.0], [-0.75, 0.125]]
B = [0.1, -0.2]
ROWS = [[0.5, -1, 2], [1.5, 0.25, -0.75], [-2, 3, 0.125], [0, 0, 0]]


def expected_row(row):
    """(logits, prob) of one row of x, computed by hand."""
    logits = [B[o] + sum(row[c] * W[c][o] for c in range(3)) for o in range(2)]
    return logits, [1 / (1 + math.exp(-v)) for v in logits]


class TfsLive(unittest.TestCase):
    """predict_tfs against `sedp serve --model m=MODEL.onnx` (docs/compat.md): the row and the
    columnar formats, the version route, and the server's refusals as SedpError."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="sedp-clients-tfs-")
        model = os.path.join(cls.dir, "model.onnx")
        subprocess.run(["/usr/bin/python3", MAKE_MODEL, model], check=True, timeout=120)
        cls.server = Server(SEDP, args=["--model", "m=" + model])
        cls.client = Client(cls.server.url, timeout=30 * SLOW)

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def assert_close(self, got, want):
        self.assertEqual(len(got), len(want))
        for g, w in zip(got, want):
            self.assertAlmostEqual(g, w, delta=1e-6 * max(1, abs(w)))

    def test_instances(self):
        for instances in (ROWS, [{"x": row} for row in ROWS]):
            for version in (None, 1):
                with self.subTest(instances=instances[0], version=version):
                    out = self.client.predict_tfs("m", instances=instances, version=version)
                    self.assertEqual(len(out), len(ROWS))
                    for answer, row in zip(out, ROWS):
                        self.assertEqual(sorted(answer), ["logits", "prob"])
                        logits, prob = expected_row(row)
                        self.assert_close(answer["logits"], logits)
                        self.assert_close(answer["prob"], prob)

    def test_inputs(self):
        for inputs in ({"x": ROWS}, ROWS):
            with self.subTest(named=isinstance(inputs, dict)):
                out = self.client.predict_tfs("m", inputs=inputs,
                                              signature_name="serving_default")
                self.assertEqual(sorted(out), ["logits", "prob"])
                self.assertEqual(len(out["logits"]), len(ROWS))
                self.assertEqual(len(out["prob"]), len(ROWS))
                for i, row in enumerate(ROWS):
                    logits, prob = expected_row(row)
                    self.assert_close(out["logits"][i], logits)
                    self.assert_close(out["prob"][i], prob)

    def test_errors(self):
        cases = [  # arguments, status, the start of the server's message
            ({"model": "m", "instances": [[1, 2]]}, 400,
             "invalid request: instances[0]: 2 values, the signature's width for x is 3"),
            ({"model": "m", "inputs": {"y": ROWS}}, 400,
             "invalid request: inputs.y: not an input of the signature serving_default"),
            ({"model": "m", "instances": ROWS, "signature_name": "other"}, 400,
             "invalid request: signature_name: 'other' is not a signature of this model"),
            ({"model": "m", "instances": ROWS, "version": 2}, 404,
             "version '2' of model 'm' is not served (it serves version 1)"),
            ({"model": "nope", "instances": ROWS}, 404, "no such endpoint: /v1/models/nope:predict"),
        ]
        for kwargs, status, message in cases:
            with self.subTest(**{k: str(v) for k, v in kwargs.items()}):
                with self.assertRaises(SedpError) as cm:
                    self.client.predict_tfs(**kwargs)
                self.assertEqual(cm.exception.status, status)
                self.assertTrue(cm.exception.message.startswith(message), cm.exception.message)
        # The server still answers.
        out = self.client.predict_tfs("m", instances=ROWS[:1])
        self.assert_close(out[0]["prob"], expected_row(ROWS[0])[1])


if __name__ == "__main__":
    unittest.main(verbosity=2)
