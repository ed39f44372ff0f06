#!/usr/bin/python3
"""Convert MediaPipe's BlazePose landmark TFLite models into ONNX.

Usage: tflite2onnx.py MODEL.tflite OUT.onnx

Reads the flatbuffer with tflite_reader.py (no flatbuffers package needed)
and emits an opset-13 graph that keeps TFLite's NHWC input and output
layouts at its edges (a Transpose in, a Transpose or Identity out) and works
in NCHW inside. fp16 weights (the DEQUANTIZE ops of a float16 model) are
widened to float32. Only the operators of pose_landmark_full/lite.tflite are
mapped: PAD, DEQUANTIZE, CONV_2D, DEPTHWISE_CONV_2D, ADD, MAX_POOL_2D,
RESIZE_BILINEAR, RESHAPE, LOGISTIC, with no activation or a fused RELU6. Any
other operator is an error naming it. Needs python3-onnx and numpy only.
"""
import os
import struct
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tflite_reader as tfl  # noqa: E402

OPSET = 13
IR_VERSION = 7
PRODUCER = "tflite2onnx-min-scratch"
GRAPH_NAME = "tflite2onnx_min"
TO_NCHW = [0, 3, 1, 2]
TO_NHWC = [0, 2, 3, 1]
NP_TYPES = {tfl.FLOAT32: "<f4", tfl.FLOAT16: "<f2", tfl.INT32: "<i4"}


class ConvertError(Exception):
    """A model this converter cannot translate faithfully."""


def same_pads(in_size, k, stride):
    """TensorFlow SAME padding (begin, end) along one axis."""
    out = -(-in_size // stride)
    total = max((out - 1) * stride + k - in_size, 0)
    return total // 2, total - total // 2


class Converter:
    """Walks the TFLite operators in order, emitting ONNX nodes; names are
    <kind>_<n> from one running counter."""

    def __init__(self, model):
        self.m = model
        self.t = model["tensors"]
        self.count = 0
        self.nodes = []
        self.inits = []
        self.names = {}   # TFLite tensor index -> ONNX tensor name (NCHW inside)
        self.consts = {}  # TFLite tensor index -> numpy value (dequantized weights)

    def fresh(self, kind):
        self.count += 1
        return "%s_%d" % (kind, self.count)

    def init(self, kind, array):
        name = self.fresh(kind)
        self.inits.append(numpy_helper.from_array(array, name))
        return name

    def const(self, idx):
        if idx in self.consts:
            return self.consts[idx]
        t = self.t[idx]
        if t["type"] not in NP_TYPES or not t["data"]:
            raise ConvertError("tensor %s is not a constant this converter reads" % t["name"])
        return np.frombuffer(t["data"], dtype=NP_TYPES[t["type"]]).reshape(t["shape"])

    def node(self, op, inputs, kind, **attrs):
        out = self.fresh(kind)
        self.nodes.append(helper.make_node(op, inputs, [out], **attrs))
        return out

    def activation(self, x, act):
        """The fused activation: a number is always taken; RELU6 is a Clip."""
        name = self.fresh("act")
        if act == tfl.ACT_NONE:
            return x
        if act != tfl.ACT_RELU6:
            raise ConvertError("fused activation %d is not supported (only NONE and RELU6)" % act)
        lo = self.init("lo", np.array([0.0], dtype=np.float32))
        hi = self.init("hi", np.array([6.0], dtype=np.float32))
        self.nodes.append(helper.make_node("Clip", [x, lo, hi], [name]))
        return name

    def conv(self, op, depthwise):
        o = op["options"]
        x_idx, w_idx, b_idx = op["inputs"]
        # Conv2DOptions: padding, stride_w, stride_h, activation (slot 3);
        # DepthwiseConv2DOptions: the same with depth_multiplier at 3, activation at 4.
        padding, sw, sh = o.scalar(0, "b"), o.scalar(1, "i"), o.scalar(2, "i")
        act = o.scalar(4 if depthwise else 3, "b")
        dil = (o.scalar(5 if depthwise else 4, "i", 1), o.scalar(6 if depthwise else 5, "i", 1))
        if dil != (1, 1):
            raise ConvertError("dilated convolutions are not supported")
        w = self.const(w_idx).astype(np.float32)
        in_h, in_w = self.t[x_idx]["shape"][1:3]
        kh, kw = w.shape[1:3]
        pads = [0, 0, 0, 0]
        if padding == tfl.SAME:
            (pt, pb), (pl, pr) = same_pads(in_h, kh, sh), same_pads(in_w, kw, sw)
            pads = [pt, pl, pb, pr]
        out = self.fresh("depthwise_conv_2d" if depthwise else "conv_2d")
        attrs = dict(dilations=[1, 1], kernel_shape=[kh, kw], pads=pads, strides=[sh, sw])
        if depthwise:
            if o.scalar(3, "i", 1) != 1:
                raise ConvertError("depth multipliers other than 1 are not supported")
            attrs["group"] = w.shape[3]
            wname = self.init("dw", np.ascontiguousarray(w.transpose(3, 0, 1, 2)))
        else:
            wname = self.init("w", np.ascontiguousarray(w.transpose(0, 3, 1, 2)))
        bname = self.init("b", self.const(b_idx).astype(np.float32))
        self.nodes.append(helper.make_node("Conv", [self.names[x_idx], wname, bname], [out], **attrs))
        return self.activation(out, act)

    def pad(self, op):
        p = self.const(op["inputs"][1]).astype(np.int64)
        out = self.fresh("pad")
        pads = self.init("pads", np.array([p[i][0] for i in TO_NCHW] + [p[i][1] for i in TO_NCHW], dtype=np.int64))
        self.nodes.append(helper.make_node("Pad", [self.names[op["inputs"][0]], pads], [out], mode="constant"))
        return out

    def add(self, op):
        out = self.node("Add", [self.names[i] for i in op["inputs"]], "add")
        return self.activation(out, op["options"].scalar(0, "b"))

    def max_pool(self, op):
        o = op["options"]
        padding, sw, sh, fw, fh, act = (o.scalar(0, "b"), o.scalar(1, "i"), o.scalar(2, "i"),
                                        o.scalar(3, "i"), o.scalar(4, "i"), o.scalar(5, "b"))
        x_idx = op["inputs"][0]
        pads = [0, 0, 0, 0]
        if padding == tfl.SAME:
            in_h, in_w = self.t[x_idx]["shape"][1:3]
            (pt, pb), (pl, pr) = same_pads(in_h, fh, sh), same_pads(in_w, fw, sw)
            pads = [pt, pl, pb, pr]
        out = self.node("MaxPool", [self.names[x_idx]], "max_pool_2d",
                        kernel_shape=[fh, fw], pads=pads, strides=[sh, sw])
        return self.activation(out, act)

    def resize(self, op):
        o = op["options"]
        align, half = o.scalar(2, "?", False), o.scalar(3, "?", False)
        mode = "align_corners" if align else "half_pixel" if half else "asymmetric"
        oh, ow = (int(v) for v in self.const(op["inputs"][1]))
        c = self.t[op["inputs"][0]]["shape"][3]
        out = self.fresh("resize_bilinear")
        sizes = self.init("sizes", np.array([1, c, oh, ow], dtype=np.int64))
        self.nodes.append(helper.make_node("Resize", [self.names[op["inputs"][0]], "", "", sizes], [out],
                                           coordinate_transformation_mode=mode, mode="linear"))
        return out

    def reshape(self, op):
        self.fresh("const")
        nhwc = self.node("Transpose", [self.names[op["inputs"][0]]], "to_nhwc", perm=TO_NHWC)
        out = self.fresh("reshape")
        shape = self.init("shape", np.array(self.t[op["outputs"][0]]["shape"], dtype=np.int64))
        self.nodes.append(helper.make_node("Reshape", [nhwc, shape], [out]))
        return out

    def dequantize(self, op):
        self.fresh("dequantize")
        self.consts[op["outputs"][0]] = self.const(op["inputs"][0]).astype(np.float32)

    def run(self, op):
        kind = op["op"]
        handlers = {
            "PAD": self.pad, "ADD": self.add, "MAX_POOL_2D": self.max_pool,
            "RESIZE_BILINEAR": self.resize, "RESHAPE": self.reshape,
            "CONV_2D": lambda o: self.conv(o, False), "DEPTHWISE_CONV_2D": lambda o: self.conv(o, True),
            "LOGISTIC": lambda o: self.node("Sigmoid", [self.names[o["inputs"][0]]], "logistic"),
        }
        if kind == "DEQUANTIZE":
            return self.dequantize(op)
        if kind not in handlers:
            raise ConvertError("unsupported TFLite operator %s" % kind)
        self.names[op["outputs"][0]] = handlers[kind](op)

    def convert(self):
        (in_idx,) = self.m["inputs"]
        tin = self.t[in_idx]
        self.names[in_idx] = self.node("Transpose", [tin["name"]], "in_nchw", perm=TO_NCHW)
        for op in self.m["ops"]:
            self.run(op)
        outputs = []
        for idx in self.m["outputs"]:
            t = self.t[idx]
            if len(t["shape"]) == 4:
                self.nodes.append(helper.make_node("Transpose", [self.names[idx]], [t["name"]], perm=TO_NHWC))
            else:
                self.nodes.append(helper.make_node("Identity", [self.names[idx]], [t["name"]]))
            outputs.append(helper.make_tensor_value_info(t["name"], TensorProto.FLOAT, t["shape"]))
        graph = helper.make_graph(
            self.nodes, GRAPH_NAME,
            [helper.make_tensor_value_info(tin["name"], TensorProto.FLOAT, tin["shape"])],
            outputs, initializer=self.inits)
        model = helper.make_model(graph, producer_name=PRODUCER, opset_imports=[helper.make_opsetid("", OPSET)])
        model.ir_version = IR_VERSION
        onnx.checker.check_model(model)
        return model


def main(argv):
    if len(argv) != 3:
        sys.stderr.write("usage: tflite2onnx.py MODEL.tflite OUT.onnx\n")
        return 2
    with open(argv[1], "rb") as f:
        buf = f.read()
    try:
        model = Converter(tfl.read_model(buf)).convert()
    except (ConvertError, tfl.FlatbufferError, ValueError, KeyError, IndexError, struct.error,
            onnx.checker.ValidationError) as e:
        sys.stderr.write("tflite2onnx: %s: %s\n" % (argv[1], e))
        return 1
    with open(argv[2], "wb") as f:
        f.write(model.SerializeToString())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
