#!/usr/bin/python3
"""Writes the small ONNX models that onnxedit's tests adapt and run.

Run from this directory with Debian's python3-onnx (1.12):
    /usr/bin/python3 make_models.py
The outputs are committed next to this script, so the Go tests need no Python.
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 13
IR_VERSION = 8
FP16 = TensorProto.FLOAT16
FP32 = TensorProto.FLOAT


def save(graph, path, **kwargs):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="fashiond-onnxedit-tests")
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model)
    onnx.save_model(model, path, **kwargs)


def const16(name, values, dims):
    return numpy_helper.from_array(np.array(values, dtype=np.float16).reshape(dims), name)


def scalar_mul():
    """y = float(x * 2) with a rank-0 float16 input x, like an SD UNet timestep."""
    nodes = [
        helper.make_node("Mul", ["x", "two"], ["x2"], name="mul"),
        helper.make_node("Cast", ["x2"], ["y"], name="to_float", to=FP32),
    ]
    graph = helper.make_graph(
        nodes, "scalar_mul",
        [helper.make_tensor_value_info("x", FP16, [])],
        [helper.make_tensor_value_info("y", FP32, [])],
        initializer=[const16("two", [2.0], [])])
    save(graph, "scalar_mul.onnx")


def multi_use():
    """x (float16 [n]) feeds two nodes and is also a graph output itself."""
    nodes = [
        helper.make_node("Mul", ["x", "two"], ["doubled"], name="mul"),
        helper.make_node("Add", ["one", "x"], ["plus_one"], name="add"),
        helper.make_node("Cast", ["doubled"], ["ya"], name="cast_a", to=FP32),
        helper.make_node("Cast", ["plus_one"], ["yb"], name="cast_b", to=FP32),
    ]
    graph = helper.make_graph(
        nodes, "multi_use",
        [helper.make_tensor_value_info("x", FP16, ["n"])],
        [helper.make_tensor_value_info("ya", FP32, ["n"]),
         helper.make_tensor_value_info("yb", FP32, ["n"]),
         helper.make_tensor_value_info("x", FP16, ["n"])],
        initializer=[const16("two", [2.0], []), const16("one", [1.0], [])],
        value_info=[helper.make_tensor_value_info("doubled", FP16, ["n"])])
    save(graph, "multi_use.onnx")


def external():
    """y = float(x + w) with w (1024 float16 values) in external/weights.pb."""
    os.makedirs("external", exist_ok=True)
    w = (np.arange(1024) % 64 * 0.5).astype(np.float16)
    nodes = [
        helper.make_node("Add", ["x", "w"], ["sum"], name="add"),
        helper.make_node("Cast", ["sum"], ["y"], name="to_float", to=FP32),
    ]
    graph = helper.make_graph(
        nodes, "external",
        [helper.make_tensor_value_info("x", FP16, [1])],
        [helper.make_tensor_value_info("y", FP32, [1024])],
        initializer=[numpy_helper.from_array(w, "w")])
    save(graph, "external/model.onnx", save_as_external_data=True,
         all_tensors_to_one_file=True, location="weights.pb", size_threshold=1024)


def subgraph():
    """y = float(x * 2) if x > 0 else float(x): both If branches read the
    outer-scope input x (float16 [1])."""
    then_branch = helper.make_graph(
        [helper.make_node("Mul", ["x", "two"], ["t2"], name="then_mul"),
         helper.make_node("Cast", ["t2"], ["then_y"], name="then_cast", to=FP32)],
        "then", [], [helper.make_tensor_value_info("then_y", FP32, [1])])
    else_branch = helper.make_graph(
        [helper.make_node("Cast", ["x"], ["else_y"], name="else_cast", to=FP32)],
        "else", [], [helper.make_tensor_value_info("else_y", FP32, [1])])
    nodes = [
        helper.make_node("Greater", ["x", "zero"], ["positive"], name="greater"),
        helper.make_node("Squeeze", ["positive"], ["cond"], name="squeeze"),
        helper.make_node("If", ["cond"], ["y"], name="if",
                         then_branch=then_branch, else_branch=else_branch),
    ]
    graph = helper.make_graph(
        nodes, "subgraph",
        [helper.make_tensor_value_info("x", FP16, [1])],
        [helper.make_tensor_value_info("y", FP32, [1])],
        initializer=[const16("two", [2.0], []), const16("zero", [0.0], [])])
    save(graph, "subgraph.onnx")


if __name__ == "__main__":
    scalar_mul()
    multi_use()
    external()
    subgraph()
