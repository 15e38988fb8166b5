#!/usr/bin/python3
"""sedp_client: a small client of `sedp serve` (docs/serving.md, docs/protocol.md).

Standard library plus Debian's python3-protobuf. There is no protoc step: the message classes of
core/proto/sedp.proto are built at import time from a FileDescriptorProto written out below
(tests/clients/test_proto_sync.py checks it against the .proto field by field).

    from sedp_client import Client, SedpError
    client = Client("http://127.0.0.1:8080", "ctr")             # format="protobuf" or "json"
    result = client.predict(42, {"age": 31}, [1001, {"id": 1002, "escore": 0.3}], top_k=1)
    for item in result.best():
        print(item.id, item.scores)

Command line: post each PredictRequest of a JSON Lines file and print the best items of each
answer:

    /usr/bin/python3 sedp_client.py --url http://127.0.0.1:8080 --pipeline ctr --requests r.jsonl
"""

import argparse
import json
import struct
import sys
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

__all__ = ["Client", "SedpError", "PredictResult", "ItemResult", "PredictRequest",
           "PredictResponse", "file_descriptor_proto", "request_from_json", "parse_metrics"]

CONTENT_TYPES = {"protobuf": "application/x-protobuf", "json": "application/json"}

# ---- the messages of core/proto/sedp.proto ----

_F = descriptor_pb2.FieldDescriptorProto
_SCALARS = {"uint64": _F.TYPE_UINT64, "int64": _F.TYPE_INT64, "uint32": _F.TYPE_UINT32,
            "float": _F.TYPE_FLOAT, "string": _F.TYPE_STRING}


def _field(msg, name, number, type_name, repeated=False, packed=False, oneof=None):
    """Adds a field to the DescriptorProto @msg: a scalar type (_SCALARS), or a message or enum
    type's full name with a leading dot (".sedp.serving.Feature"; "enum:" prefix for an enum)."""
    f = msg.field.add(name=name, number=number)
    f.label = _F.LABEL_REPEATED if repeated else _F.LABEL_OPTIONAL
    if type_name in _SCALARS:
        f.type = _SCALARS[type_name]
    elif type_name.startswith("enum:"):
        f.type, f.type_name = _F.TYPE_ENUM, type_name[5:]
    else:
        f.type, f.type_name = _F.TYPE_MESSAGE, type_name
    if packed:
        f.options.packed = True
    if oneof is not None:
        f.oneof_index = oneof
    return f


def _map_field(msg, name, number, value_type):
    """A `map<string, VALUE> name = number;` field: proto3's nested NameEntry message."""
    entry = msg.nested_type.add(name="".join(p.capitalize() for p in name.split("_")) + "Entry")
    entry.options.map_entry = True
    _field(entry, "key", 1, "string")
    _field(entry, "value", 2, value_type)
    _field(msg, name, number, ".sedp.serving.%s.%s" % (msg.name, entry.name), repeated=True)


def _enum(msg, name, values):
    e = msg.enum_type.add(name=name)
    for number, value in enumerate(values):
        e.value.add(name=value, number=number)


def file_descriptor_proto():
    """sedp.proto as a FileDescriptorProto (what protoc would make of it)."""
    fd = descriptor_pb2.FileDescriptorProto(name="sedp.proto", package="sedp.serving",
                                            syntax="proto3")
    m = fd.message_type.add(name="IdList")
    _field(m, "ids", 1, "uint64", repeated=True, packed=True)
    m = fd.message_type.add(name="FloatList")
    _field(m, "values", 1, "float", repeated=True, packed=True)
    m = fd.message_type.add(name="Feature")
    m.oneof_decl.add(name="value")
    _field(m, "int_value", 1, "int64", oneof=0)
    _field(m, "float_value", 2, "float", oneof=0)
    _field(m, "string_value", 3, "string", oneof=0)
    _field(m, "ids", 4, ".sedp.serving.IdList", oneof=0)
    _field(m, "floats", 5, ".sedp.serving.FloatList", oneof=0)
    m = fd.message_type.add(name="User")
    _field(m, "id", 1, "uint64")
    _map_field(m, "features", 2, ".sedp.serving.Feature")
    m = fd.message_type.add(name="Item")
    _field(m, "id", 1, "uint64")
    _map_field(m, "features", 2, ".sedp.serving.Feature")
    m.oneof_decl.add(name="escore_present")
    _field(m, "escore", 3, "float", oneof=0)
    m = fd.message_type.add(name="PredictRequest")
    _field(m, "request_id", 1, "string")
    _field(m, "user", 2, ".sedp.serving.User")
    _field(m, "items", 3, ".sedp.serving.Item", repeated=True)
    _field(m, "deadline_ms", 4, "uint32")
    _field(m, "top_k", 5, "uint32")
    m = fd.message_type.add(name="ItemResult")
    _enum(m, "Status", ["SCORED", "DROPPED", "CACHED", "FAILED", "PENDING", "SHED"])
    _field(m, "id", 1, "uint64")
    _field(m, "scores", 2, "float", repeated=True, packed=True)
    _field(m, "status", 3, "enum:.sedp.serving.ItemResult.Status")
    _field(m, "message", 4, "string")
    m = fd.message_type.add(name="PredictResponse")
    _enum(m, "Status", ["OK", "PARTIAL", "FAILED", "TIMEOUT", "OVERLOADED", "INVALID"])
    _field(m, "request_id", 1, "string")
    _field(m, "status", 2, "enum:.sedp.serving.PredictResponse.Status")
    _field(m, "message", 3, "string")
    _field(m, "model_version", 4, "string")
    _field(m, "items", 5, ".sedp.serving.ItemResult", repeated=True)
    _field(m, "top_k", 6, "uint32", repeated=True, packed=True)
    _field(m, "shed_items", 7, "uint32")
    _field(m, "routes", 8, "string", repeated=True)
    return fd


def _message_classes():
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file_descriptor_proto())
    classes = {}
    for name in ("IdList", "FloatList", "Feature", "User", "Item", "PredictRequest", "ItemResult",
                 "PredictResponse"):
        desc = pool.FindMessageTypeByName("sedp.serving." + name)
        if hasattr(message_factory, "GetMessageClass"):  # protobuf >= 4.22
            classes[name] = message_factory.GetMessageClass(desc)
        else:
            classes[name] = message_factory.MessageFactory(pool).GetPrototype(desc)
    return classes


_CLASSES = _message_classes()
PredictRequest = _CLASSES["PredictRequest"]
PredictResponse = _CLASSES["PredictResponse"]

# ---- results and errors ----


class SedpError(Exception):
    """An answer other than 200: @status is the HTTP status (0: no answer at all), @message the
    server's message (its `{"error": {"message": …}}`, TF Serving's `{"error": "…"}`, or the
    response's own message for a 504, whose partial PredictResponse is in @result)."""

    def __init__(self, status, message, result=None):
        super().__init__("HTTP %d: %s" % (status, message) if status else message)
        self.status = status
        self.message = message
        self.result = result


def _float32(x):
    """@x rounded to the float32 it was printed from (JSON scores are float32 values)."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


@dataclass
class ItemResult:
    id: int
    scores: List[float]
    status: str            # SCORED, DROPPED, CACHED, FAILED, PENDING or SHED
    message: str = ""


@dataclass
class PredictResult:
    """A PredictResponse, the same whichever the encoding (scores are float32 values)."""
    request_id: str
    status: str            # OK, PARTIAL, FAILED, TIMEOUT, OVERLOADED or INVALID
    message: str
    model_version: str
    items: List[ItemResult]
    top_k: List[int]       # indexes into items, best first
    routes: List[str] = field(default_factory=list)
    shed_items: int = 0
    http_status: int = 200

    def best(self):
        """The items of the top-K list, best first; without one (top_k=0 asked), the scored and
        cached items by their first score, highest first."""
        if self.top_k:
            return [self.items[i] for i in self.top_k]
        ranked = [it for it in self.items if it.status in ("SCORED", "CACHED") and it.scores]
        return sorted(ranked, key=lambda it: -it.scores[0])

    @classmethod
    def from_protobuf(cls, data, http_status=200):
        m = PredictResponse()
        m.ParseFromString(data)
        item_status = PredictResponse.DESCRIPTOR.fields_by_name["items"].message_type \
            .enum_types_by_name["Status"]
        items = [ItemResult(it.id, list(it.scores), item_status.values_by_number[it.status].name,
                            it.message) for it in m.items]
        status = PredictResponse.DESCRIPTOR.enum_types_by_name["Status"]
        return cls(m.request_id, status.values_by_number[m.status].name, m.message,
                   m.model_version, items, list(m.top_k), list(m.routes), m.shed_items,
                   http_status)

    @classmethod
    def from_json(cls, o, http_status=200):
        items = [ItemResult(int(it["id"]), [_float32(float(s)) for s in it.get("scores", [])],
                            it.get("status", "SCORED"), it.get("message", ""))
                 for it in o.get("items", [])]
        return cls(o.get("request_id", ""), o.get("status", "OK"), o.get("message", ""),
                   o.get("model_version", ""), items, [int(i) for i in o.get("top_k", [])],
                   list(o.get("routes", [])), int(o.get("shed_items", 0)), http_status)


# ---- building requests ----

_FEATURE_KINDS = ("int_value", "float_value", "string_value", "ids", "floats")


def _set_feature(feature, name, value):
    """Fills the Feature message @feature from @value: an explicit oneof as a one-member dict
    ({"int_value": 3}, {"ids": [1, 2]}, proto3's {"ids": {"ids": [...]}}), or a bare value typed as
    the server types one (docs/protocol.md): int → int_value, float → float_value, str →
    string_value, list of ints → ids, list with a float → floats."""
    if isinstance(value, dict):
        if len(value) != 1 or next(iter(value)) not in _FEATURE_KINDS:
            raise ValueError("feature %s: expected one of %s, got %s"
                             % (name, ", ".join(_FEATURE_KINDS), json.dumps(value)))
        kind, v = next(iter(value.items()))
        if kind == "ids":
            feature.ids.ids.extend(int(x) for x in (v["ids"] if isinstance(v, dict) else v))
        elif kind == "floats":
            feature.floats.values.extend(float(x) for x in
                                         (v["values"] if isinstance(v, dict) else v))
        else:
            setattr(feature, kind, {"int_value": int, "float_value": float,
                                    "string_value": str}[kind](v))
    elif isinstance(value, bool) or value is None:
        raise ValueError("feature %s: %r is neither a number, a string nor a list" % (name, value))
    elif isinstance(value, int):
        feature.int_value = value
    elif isinstance(value, float):
        feature.float_value = value
    elif isinstance(value, str):
        feature.string_value = value
    elif isinstance(value, (list, tuple)) and value:
        if all(isinstance(x, int) and not isinstance(x, bool) for x in value):
            feature.ids.ids.extend(value)
        else:
            feature.floats.values.extend(float(x) for x in value)
    else:
        raise ValueError("feature %s: an empty list has no type: write {\"ids\": []} or "
                         "{\"floats\": []}" % name)


def _set_features(target, features, where):
    for name, value in (features or {}).items():
        _set_feature(target[name], "%s.%s" % (where, name), value)


def build_request(user_id, user_features, items, top_k=0, deadline_ms=0, request_id=None):
    """A PredictRequest message. @items: item ids, or dicts with "id" and optionally "features"
    and "escore"."""
    req = PredictRequest(top_k=top_k, deadline_ms=deadline_ms, request_id=request_id or "")
    req.user.id = user_id or 0
    _set_features(req.user.features, user_features, "user.features")
    for i, spec in enumerate(items):
        item = req.items.add()
        if isinstance(spec, dict):
            unknown = set(spec) - {"id", "features", "escore"}
            if unknown:
                raise ValueError("items[%d].%s: unknown field (expected id, features, escore)"
                                 % (i, sorted(unknown)[0]))
            item.id = int(spec.get("id", 0))
            _set_features(item.features, spec.get("features"), "items[%d].features" % i)
            if "escore" in spec:
                item.escore = float(spec["escore"])
        else:
            item.id = int(spec)
    return req


def request_json(req):
    """The JSON form of a PredictRequest message (docs/protocol.md: the .proto's field names;
    64-bit integers past 2^53 as strings of digits, as proto3's JSON mapping writes them)."""
    def num(x):
        return x if abs(x) <= 2 ** 53 else str(x)

    def features(fs):
        out = {}
        for name, f in fs.items():
            kind = f.WhichOneof("value")
            if kind == "ids":
                out[name] = {"ids": [num(x) for x in f.ids.ids]}
            elif kind == "floats":
                out[name] = {"floats": list(f.floats.values)}
            elif kind == "int_value":
                out[name] = {"int_value": num(f.int_value)}
            elif kind is not None:
                out[name] = {kind: getattr(f, kind)}
        return out

    o = {}
    if req.request_id:
        o["request_id"] = req.request_id
    if req.deadline_ms:
        o["deadline_ms"] = req.deadline_ms
    if req.top_k:
        o["top_k"] = req.top_k
    o["user"] = {"id": num(req.user.id), "features": features(req.user.features)}
    o["items"] = []
    for it in req.items:
        item = {"id": num(it.id), "features": features(it.features)}
        if it.HasField("escore"):
            item["escore"] = it.escore
        o["items"].append(item)
    return json.dumps(o, separators=(",", ":")).encode()


def request_from_json(o):
    """The keyword arguments of Client.predict() for a PredictRequest in its JSON form (a line of
    a JSON Lines request file)."""
    if not isinstance(o, dict):
        raise ValueError("a request must be a JSON object")
    unknown = set(o) - {"request_id", "user", "items", "deadline_ms", "top_k"}
    if unknown:
        raise ValueError("%s: unknown field (expected request_id, user, items, deadline_ms, top_k)"
                         % sorted(unknown)[0])
    user = o.get("user") or {}
    return {"user_id": int(user.get("id", 0)), "user_features": user.get("features", {}),
            "items": o.get("items", []), "top_k": int(o.get("top_k", 0)),
            "deadline_ms": int(o.get("deadline_ms", 0)), "request_id": o.get("request_id")}


def parse_metrics(text):
    """Prometheus text (GET /metrics) → {"name{labels}": value}; comments left out."""
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            sample, _, value = line.rpartition(" ")
            out[sample] = float(value)
    return out


# ---- the client ----


def _error_message(body):
    """The message of an error body: sedp's {"error": {"code", "message"}}, TF Serving's
    {"error": "…"}, else the body as text."""
    try:
        o = json.loads(body)
        e = o["error"]
        return e["message"] if isinstance(e, dict) else str(e)
    except (ValueError, KeyError, TypeError):
        return body.decode("utf-8", "replace").strip()


class Client:
    """A client of one `sedp serve` (@url: "http://HOST:PORT") and one of its pipelines.
    @format: "protobuf" or "json", the encoding of predict requests and responses; @timeout:
    seconds per HTTP request. Not thread-safe per instance (it keeps no connection: one per call)."""

    def __init__(self, url, pipeline=None, format="protobuf", timeout=10.0):
        if format not in CONTENT_TYPES:
            raise ValueError("format %r: expected protobuf or json" % format)
        self.url = url.rstrip("/")
        self.pipeline = pipeline
        self.format = format
        self.timeout = timeout

    def _http(self, method, path, body=None, content_type=None):
        """(status, headers, body) of one HTTP exchange; SedpError(0, …) when nothing answers."""
        req = urllib.request.Request(self.url + path, data=body, method=method)
        if content_type:
            req.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                return resp.status, resp.headers, resp.read()
        except urllib.error.HTTPError as e:
            with e:
                return e.code, e.headers, e.read()
        except (urllib.error.URLError, OSError) as e:
            raise SedpError(0, "%s %s: %s" % (method, self.url + path,
                                              getattr(e, "reason", e))) from e

    def predict(self, user_id, user_features, items, top_k=0, deadline_ms=0, request_id=None):
        """Scores @items for the user: POST /v1/pipelines/PIPELINE:predict. @user_features and each
        item's "features": {name: value}, typed as _set_feature() says. Returns a PredictResult
        (status OK or PARTIAL); raises SedpError on any other answer (a 504's partial result is
        its .result) and ValueError on a request it cannot encode."""
        if not self.pipeline:
            raise ValueError("predict: this Client has no pipeline (Client(url, pipeline))")
        req = build_request(user_id, user_features, items, top_k, deadline_ms, request_id)
        body = req.SerializeToString() if self.format == "protobuf" else request_json(req)
        path = "/v1/pipelines/%s:predict" % urllib.parse.quote(self.pipeline, safe="")
        status, headers, data = self._http("POST", path, body, CONTENT_TYPES[self.format])
        ctype = (headers.get("Content-Type") or "").split(";")[0].strip()
        if status in (200, 504) and ctype == "application/x-protobuf":
            result = PredictResult.from_protobuf(data, status)
        elif status in (200, 504) and ctype == "application/json":
            result = PredictResult.from_json(json.loads(data), status)
        else:
            raise SedpError(status, _error_message(data))
        if status != 200:
            raise SedpError(status, result.message, result)
        return result

    def health(self):
        """True when GET /healthz answers 200, False on 503 (warming up, shutting down); raises
        SedpError on anything else."""
        status, _, data = self._http("GET", "/healthz")
        if status in (200, 503):
            return status == 200
        raise SedpError(status, _error_message(data))

    def metrics(self):
        """GET /metrics: the Prometheus text (parse_metrics() makes a dict of it)."""
        status, _, data = self._http("GET", "/metrics")
        if status != 200:
            raise SedpError(status, _error_message(data))
        return data.decode()

    def predict_tfs(self, model, instances=None, inputs=None, signature_name=None, version=None):
        """TF Serving's REST predict, POST /v1/models/MODEL[/versions/V]:predict in JSON: exactly
        one of @instances (the row format: a list, one entry per batch element; returns the
        answer's "predictions") or @inputs (the columnar format: returns "outputs"). Raises
        SedpError with the HTTP status and the answer's "error" on failure."""
        if (instances is None) == (inputs is None):
            raise ValueError("predict_tfs: give exactly one of instances and inputs")
        o = {"instances": instances} if instances is not None else {"inputs": inputs}
        if signature_name:
            o["signature_name"] = signature_name
        path = "/v1/models/" + urllib.parse.quote(model, safe="")
        if version is not None:
            path += "/versions/%d" % int(version)
        status, _, data = self._http("POST", path + ":predict", json.dumps(o).encode(),
                                     "application/json")
        if status != 200:
            raise SedpError(status, _error_message(data))
        answer = json.loads(data)
        key = "predictions" if instances is not None else "outputs"
        if key not in answer:
            raise SedpError(status, "the answer has no %r: %s" % (key, data[:200].decode(
                "utf-8", "replace")))
        return answer[key]


# ---- command line ----


def format_result(result, show):
    """One line: REQUEST_ID STATUS, then up to @show best items as ID:SCORE (%.9g: the float32
    exactly)."""
    best = result.best()[:show] if show else result.best()
    items = " ".join("%d:%s" % (it.id, ",".join("%.9g" % s for s in it.scores)) for it in best)
    line = "%s %s best %s" % (result.request_id, result.status, items or "-")
    return line + (" model_version=%s" % result.model_version if result.model_version else "")


def main(argv=None):
    ap = argparse.ArgumentParser(description="Post each PredictRequest of a JSON Lines file to "
                                 "sedp serve and print each answer's best items.")
    ap.add_argument("--url", default="http://127.0.0.1:8080")
    ap.add_argument("--pipeline", required=True)
    ap.add_argument("--requests", required=True, help="JSON Lines, one PredictRequest per line")
    ap.add_argument("--format", choices=sorted(CONTENT_TYPES), default="protobuf")
    ap.add_argument("--show", type=int, default=0, help="best items to print (0: all)")
    ap.add_argument("--timeout", type=float, default=10.0)
    args = ap.parse_args(argv)
    client = Client(args.url, args.pipeline, args.format, args.timeout)
    failed = 0
    with open(args.requests, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            try:
                result = client.predict(**request_from_json(json.loads(line)))
                print(format_result(result, args.show), flush=True)
            except (ValueError, SedpError) as e:
                print("%s:%d: %s" % (args.requests, n, e), file=sys.stderr, flush=True)
                failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
