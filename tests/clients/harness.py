"""tests/clients: a real `sedp serve` on a free loopback port, and the reference requests the
clients' answers are compared with (raw HTTP with http.client, hand-written JSON bodies, parsed
with json: no code of the clients).

Under `meson test --setup valgrind` (SEDP_VALGRIND=1) the server and the C client run under
valgrind (the Python interpreter does not: the test scripts start through env(1), which valgrind
does not follow)."""

import http.client
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import tempfile
import threading

VALGRIND = os.environ.get("SEDP_VALGRIND") == "1"
SRC = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SLOW = 20 if VALGRIND else 1  # timeouts' factor

# Scores: synthetic_work's pseudo-score, then item columns the client sent (docs/protocol.md:
# `scores` are the values of the pipeline's outputs), so that the features the clients encode
# come back in the answer.
CTR_PIPELINE = """[pipeline]
name = ctr
deadline_ms = 10000
outputs = score, ctr, escore, emb
[stage reader]
plugin = data_reader
[stage score]
plugin = synthetic_work
after = reader
output = score
"""

# A request-scope router on the user's string feature `tenant`: the answer's routes name the arm.
AB_PIPELINE = """[pipeline]
name = ab
deadline_ms = 10000
[stage reader]
plugin = data_reader
[stage ab]
plugin = ab_router
after = reader
by = value
key = tenant
arms = a:50, b:50
[stage x]
plugin = synthetic_work
after = ab:a
output = score
[stage y]
plugin = synthetic_work
after = ab:b
output = score
seed = 7
[stage out]
plugin = passthrough
after = x, y
"""


# Every request outlives a short deadline: 504 with the partial answer (items PENDING).
SLOW_PIPELINE = """[pipeline]
name = slow
deadline_ms = 10000
[stage reader]
plugin = data_reader
[stage score]
plugin = synthetic_work
after = reader
output = score
sleep_us = 400000
"""


def valgrind_prefix():
    if not VALGRIND:
        return []
    return ["valgrind", "--quiet", "--error-exitcode=99", "--leak-check=full",
            "--errors-for-leak-kinds=definite", "--show-leak-kinds=definite", "--num-callers=30",
            "--suppressions=" + os.path.join(SRC, "tests", "valgrind.supp")]


def f32(x):
    """@x as the float32 the server holds (and answers)."""
    return struct.unpack("<f", struct.pack("<f", float(x)))[0]


class Server:
    """sedp serve on 127.0.0.1:0 with the given pipeline texts and the further arguments @args
    (`--model NAME=FILE.onnx`); stop() checks it exits 0."""

    def __init__(self, sedp, *pipelines, args=()):
        self.dir = tempfile.mkdtemp(prefix="sedp-clients-")
        files = []
        for i, text in enumerate(pipelines):
            files.append(os.path.join(self.dir, "p%d.pipeline" % i))
            with open(files[-1], "w", encoding="utf-8") as f:
                f.write(text)
        env = dict(os.environ, G_SLICE="always-malloc")
        self.proc = subprocess.Popen(valgrind_prefix() + [sedp, "serve"] + files
                                     + list(args) + ["--listen", "127.0.0.1:0"],
                                     stderr=subprocess.PIPE, env=env, text=True)
        self.log = []
        self.port = None
        for line in self.proc.stderr:
            self.log.append(line)
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
            if m:
                self.port = int(m.group(1))
                break
        if self.port is None:
            self.proc.wait()
            raise RuntimeError("sedp serve did not start:\n" + "".join(self.log))
        self.reader = threading.Thread(target=lambda: self.log.extend(self.proc.stderr),
                                       daemon=True)
        self.reader.start()
        self.url = "http://127.0.0.1:%d" % self.port

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(timeout=60 * SLOW)
        self.reader.join(timeout=10)
        shutil.rmtree(self.dir, ignore_errors=True)
        if rc != 0:
            raise AssertionError("sedp serve exited %d:\n%s" % (rc, "".join(self.log)))

    def raw(self, method, path, body=None, ctype=None):
        """(status, content type, body bytes) of one request over http.client."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30 * SLOW)
        try:
            headers = {"Content-Type": ctype} if ctype else {}
            conn.request(method, path, body=body, headers=headers)
            resp = conn.getresponse()
            return resp.status, resp.getheader("Content-Type", ""), resp.read()
        finally:
            conn.close()

    def reference(self, pipeline, body):
        """The server's answer to the JSON text @body: (status, parsed JSON)."""
        status, ctype, data = self.raw("POST", "/v1/pipelines/%s:predict" % pipeline,
                                       body.encode(), "application/json")
        assert ctype.startswith("application/json"), (status, ctype, data)
        return status, json.loads(data)


def reference_items(answer):
    """[(id, status, [float32 scores])] of a JSON PredictResponse."""
    return [(int(it["id"]), it["status"], [f32(s) for s in it["scores"]])
            for it in answer["items"]]
