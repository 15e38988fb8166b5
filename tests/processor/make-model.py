#!/usr/bin/python3
"""Writes the processor test's model with python3-onnx: x float [N, 3] -> logits = x W + B
(Gemm) -> prob = sigmoid(logits), both [N, 2] outputs. test-processor.c computes the expected
outputs by hand from the same W and B (keep them equal)."""
import sys

import onnx
from onnx import TensorProto, helper

W = [[0.5, -1.0], [0.25, 2.0], [-0.75, 0.125]]
B = [0.1, -0.2]

x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3])
logits = helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 2])
prob = helper.make_tensor_value_info("prob", TensorProto.FLOAT, ["N", 2])
w = helper.make_tensor("W", TensorProto.FLOAT, [3, 2], [v for row in W for v in row])
b = helper.make_tensor("B", TensorProto.FLOAT, [2], B)
graph = helper.make_graph(
    [helper.make_node("Gemm", ["x", "W", "B"], ["logits"]),
     helper.make_node("Sigmoid", ["logits"], ["prob"])],
    "processor_test", [x], [logits, prob], initializer=[w, b])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
model.ir_version = 7
onnx.checker.check_model(model)
onnx.save(model, sys.argv[1])
