#!/usr/bin/python3
"""Write DWPose *contract* graphs: tiny ONNX files with the tensor signature
of yolox_l.onnx and dw-ll_ucoco_384.onnx and closed-form outputs, for
fashiond's install and runner tests. They are NOT DWPose.

usage: dwpose_contract.py OUTDIR      (Debian's /usr/bin/python3 with python3-onnx)

yolox_l.onnx: images [1,3,640,640] -> output [1,8400,85]: zeros except row
  ROW (stride-8 cell gx=26, gy=40) = (0.625, 0, ln 37.5, ln 70, 0.9, 0.9, 0...),
  i.e. one person box centred at (213, 320) of 300x560 in the 640 input.
dw-ll_ucoco_384.onnx: input [1,3,384,288] -> simcc_x [1,133,576],
  simcc_y [1,133,768]: one-hot peaks of 0.9 at bins BX[k], BY[k]; keypoints
  5..10 (shoulders, elbows, wrists) strong, the rest at 0.2 (hidden).
Both outputs add 0·mean(input) so the input is consumed.
"""
import math
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROW = 40 * 80 + 26
K = 133
BX = [(37 * k) % 500 + 40 for k in range(K)]
BY = [(53 * k) % 700 + 30 for k in range(K)]
PEAK = [0.9 if 5 <= k <= 10 else 0.2 for k in range(K)]


def zero_of_input(n, name):
    return [n("ReduceMean", [name], ["m"], keepdims=0), n("Mul", ["m", "zero"], ["z"])]


def detector():
    n = helper.make_node
    row = np.zeros((1, 1, 85), np.float32)
    row[0, 0, :6] = [0.625, 0.0, math.log(37.5), math.log(70.0), 0.9, 0.9]
    inits = [numpy_helper.from_array(row, "row"), numpy_helper.from_array(np.array(0, np.float32), "zero"),
             numpy_helper.from_array(np.array([0, ROW, 0, 0, 8400 - ROW - 1, 0], np.int64), "pads")]
    nodes = zero_of_input(n, "images") + [n("Pad", ["row", "pads"], ["padded"]), n("Add", ["padded", "z"], ["output"])]
    g = helper.make_graph(nodes, "yolox_contract",
                          [helper.make_tensor_value_info("images", TensorProto.FLOAT, [1, 3, 640, 640])],
                          [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 8400, 85])], inits)
    return g


def pose():
    n = helper.make_node
    inits = [numpy_helper.from_array(np.array(0, np.float32), "zero"),
             numpy_helper.from_array(np.array(BX, np.int64), "bx"), numpy_helper.from_array(np.array(BY, np.int64), "by"),
             numpy_helper.from_array(np.array(576, np.int64), "dx"), numpy_helper.from_array(np.array(768, np.int64), "dy"),
             numpy_helper.from_array(np.array([0, 1], np.float32), "onoff"),
             numpy_helper.from_array(np.array(PEAK, np.float32).reshape(1, K, 1), "peak"),
             numpy_helper.from_array(np.array([0], np.int64), "axis0")]
    nodes = zero_of_input(n, "input") + [
        n("OneHot", ["bx", "dx", "onoff"], ["hx"], axis=-1), n("OneHot", ["by", "dy", "onoff"], ["hy"], axis=-1),
        n("Unsqueeze", ["hx", "axis0"], ["hx1"]), n("Unsqueeze", ["hy", "axis0"], ["hy1"]),
        n("Mul", ["hx1", "peak"], ["px"]), n("Mul", ["hy1", "peak"], ["py"]),
        n("Add", ["px", "z"], ["simcc_x"]), n("Add", ["py", "z"], ["simcc_y"])]
    g = helper.make_graph(nodes, "dwpose_contract",
                          [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 384, 288])],
                          [helper.make_tensor_value_info("simcc_x", TensorProto.FLOAT, [1, K, 576]),
                           helper.make_tensor_value_info("simcc_y", TensorProto.FLOAT, [1, K, 768])], inits)
    return g


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    os.makedirs(sys.argv[1], exist_ok=True)
    for name, g in [("yolox_l.onnx", detector()), ("dw-ll_ucoco_384.onnx", pose())]:
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], producer_name="fashiond scripts/export/dwpose_contract.py")
        m.ir_version = 8
        onnx.checker.check_model(m)
        onnx.save_model(m, os.path.join(sys.argv[1], name))


if __name__ == "__main__":
    main()
