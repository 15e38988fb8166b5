#!/usr/bin/env /usr/bin/python3
"""The Python client's hand-written FileDescriptorProto (examples/clients/python/sedp_client.py)
against core/proto/sedp.proto, read with a small parser of the .proto's own lines: every message,
field (name, number, type, label, packed, oneof, map), nested enum and enum value must agree, in
both directions, so that neither can change without the other.

Usage: test_proto_sync.py SOURCE_ROOT"""

import os
import re
import sys
import unittest

SRC = sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
sys.path.insert(0, os.path.join(SRC, "examples", "clients", "python"))
import sedp_client  # noqa: E402
from google.protobuf import descriptor_pb2  # noqa: E402

F = descriptor_pb2.FieldDescriptorProto
TYPES = {F.TYPE_UINT64: "uint64", F.TYPE_INT64: "int64", F.TYPE_UINT32: "uint32",
         F.TYPE_FLOAT: "float", F.TYPE_STRING: "string"}

FIELD = re.compile(r"^(repeated\s+)?([\w.]+)\s+(\w+)\s*=\s*(\d+)\s*(\[\s*packed\s*=\s*true\s*\])?;$")
MAP = re.compile(r"^map<\s*(\w+)\s*,\s*([\w.]+)\s*>\s+(\w+)\s*=\s*(\d+)\s*;$")
VALUE = re.compile(r"^(\w+)\s*=\s*(\d+)\s*;$")
OPEN = re.compile(r"^(message|enum|oneof)\s+(\w+)\s*\{$")


def parse_proto(text):
    """{"messages": {name: {field: (number, type, repeated, packed, oneof)}},
        "enums": {"Message.Enum": {value: number}}, "package": …} from the .proto text."""
    out = {"messages": {}, "enums": {}, "package": None}
    stack = []  # (kind, name)
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.split("//")[0].strip()
        if not line or line.startswith("syntax"):
            continue
        m = re.match(r"^package\s+([\w.]+);$", line)
        if m:
            out["package"] = m.group(1)
            continue
        m = OPEN.match(line)
        if m:
            stack.append((m.group(1), m.group(2)))
            if m.group(1) == "message":
                out["messages"][m.group(2)] = {}
            elif m.group(1) == "enum":
                out["enums"][stack[-2][1] + "." + m.group(2)] = {}
            continue
        if line == "}":
            stack.pop()
            continue
        kind, name = stack[-1]
        message = next(s[1] for s in reversed(stack) if s[0] == "message")
        oneof = name if kind == "oneof" else None
        if kind == "enum":
            m = VALUE.match(line)
            assert m, "sedp.proto:%d: not an enum value: %s" % (n, raw)
            out["enums"][message + "." + name][m.group(1)] = int(m.group(2))
            continue
        m = MAP.match(line)
        if m:
            out["messages"][message][m.group(3)] = (int(m.group(4)), "map<%s,%s>" % m.group(1, 2),
                                                     True, False, None)
            continue
        m = FIELD.match(line)
        assert m, "sedp.proto:%d: a line this parser does not know: %s" % (n, raw)
        out["messages"][message][m.group(3)] = (int(m.group(4)), m.group(2), bool(m.group(1)),
                                                 bool(m.group(5)), oneof)
    assert not stack, "sedp.proto: unbalanced braces"
    return out


def short(type_name, package):
    """".sedp.serving.ItemResult.Status" → "Status" within ItemResult, "Feature" etc."""
    return type_name[len(package) + 2:].split(".")[-1]


def from_descriptor(fd):
    """The same structure as parse_proto() from the client's FileDescriptorProto."""
    out = {"messages": {}, "enums": {}, "package": fd.package}
    for msg in fd.message_type:
        entries = {e.name: e for e in msg.nested_type if e.options.map_entry}
        assert len(entries) == len(msg.nested_type), msg.name + ": a nested message not a map entry"
        fields = out["messages"][msg.name] = {}
        for f in msg.field:
            oneof = msg.oneof_decl[f.oneof_index].name if f.HasField("oneof_index") else None
            if f.type == F.TYPE_MESSAGE and short(f.type_name, fd.package) in entries:
                e = entries[short(f.type_name, fd.package)]
                key, value = e.field[0], e.field[1]
                vtype = TYPES.get(value.type) or short(value.type_name, fd.package)
                ftype = "map<%s,%s>" % (TYPES[key.type], vtype)
            else:
                ftype = TYPES.get(f.type) or short(f.type_name, fd.package)
            fields[f.name] = (f.number, ftype, f.label == F.LABEL_REPEATED,
                              f.options.packed, oneof)
        for e in msg.enum_type:
            out["enums"][msg.name + "." + e.name] = {v.name: v.number for v in e.value}
    return out


class ProtoSync(unittest.TestCase):
    def setUp(self):
        with open(os.path.join(SRC, "core", "proto", "sedp.proto"), encoding="utf-8") as f:
            self.proto = parse_proto(f.read())
        self.client = from_descriptor(sedp_client.file_descriptor_proto())

    def test_package(self):
        self.assertEqual(self.proto["package"], "sedp.serving")
        self.assertEqual(self.client["package"], self.proto["package"])

    def test_same_messages(self):
        self.assertEqual(sorted(self.client["messages"]), sorted(self.proto["messages"]))

    def test_same_fields(self):
        for name, fields in self.proto["messages"].items():
            with self.subTest(message=name):
                self.assertEqual(self.client["messages"].get(name), fields)

    def test_same_enums(self):
        self.assertEqual(self.client["enums"], self.proto["enums"])

    def test_parser_sees_the_known_fields(self):
        """The parser itself: fields the protocol documents, read as docs/protocol.md gives them."""
        msgs = self.proto["messages"]
        self.assertEqual(msgs["Item"]["escore"], (3, "float", False, False, "escore_present"))
        self.assertEqual(msgs["User"]["features"], (2, "map<string,Feature>", True, False, None))
        self.assertEqual(msgs["PredictResponse"]["top_k"], (6, "uint32", True, True, None))
        self.assertEqual(self.proto["enums"]["ItemResult.Status"]["SHED"], 5)

    def test_a_drift_is_seen(self):
        """A changed field number in the descriptor makes the comparison fail."""
        fd = sedp_client.file_descriptor_proto()
        fd.message_type[0].field[0].number = 9
        self.assertNotEqual(from_descriptor(fd)["messages"]["IdList"],
                            self.proto["messages"]["IdList"])

    def test_classes_round_trip(self):
        """The classes built from the descriptor encode and decode a request."""
        req = sedp_client.build_request(7, {"age": 31}, [{"id": 5, "escore": 0.5}], top_k=1)
        back = sedp_client.PredictRequest.FromString(req.SerializeToString())
        self.assertEqual(back.user.features["age"].int_value, 31)
        self.assertTrue(back.items[0].HasField("escore"))
        self.assertEqual(back.top_k, 1)


if __name__ == "__main__":
    unittest.main(verbosity=2)
