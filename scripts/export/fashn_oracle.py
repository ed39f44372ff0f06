#!/usr/bin/python3
"""Write the fashn-vton *oracle* folder: a tiny closed-form graph with the
signature of scripts/export/fashn_vton.py's export, for the engine's tests.

usage: fashn_oracle.py OUTDIR

Run with Debian's /usr/bin/python3 (python3-onnx, python3-numpy); no torch.
The graph is NOT FASHN VTON: its velocity is the exact rectified-flow field
towards a known point,

    d = 0.5·ca_images + 0.25·garment_images
        + 0.125·person_poses + 0.0625·garment_poses + 0.01·garment_categories
    velocity = (d − x) / (1 − times)

so Euler on any time grid lands on d (Go tests predict every output), and
each input's wiring shows in the result. The weights are initializers saved
as external data (transformer/model.onnx.data), as a real export's are.
Size 24×36 at patch 12.
"""
import json
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

W, H, PATCH = 24, 36, 12


def graph():
    f = TensorProto.FLOAT
    img = lambda name, c: helper.make_tensor_value_info(name, f, ["B", c, H, W])
    inputs = [img("x", 3), helper.make_tensor_value_info("times", f, ["B"]),
              img("ca_images", 3), img("garment_images", 3), img("person_poses", 1), img("garment_poses", 1),
              helper.make_tensor_value_info("garment_categories", TensorProto.INT64, ["B"])]
    out = img("velocity", 3)
    inits = [numpy_helper.from_array(np.array([v], np.float32), name) for name, v in
             [("w_ca", 0.5), ("w_g", 0.25), ("w_pp", 0.125), ("w_gp", 0.0625), ("w_cat", 0.01), ("one", 1.0)]]
    n = helper.make_node
    # The reshape target is a Constant node: shape inputs cannot live in
    # external data.
    nodes = [
        n("Constant", [], ["col"], value=numpy_helper.from_array(np.array([-1, 1, 1, 1], np.int64))),
        n("Mul", ["ca_images", "w_ca"], ["a"]),
        n("Mul", ["garment_images", "w_g"], ["b"]),
        n("Mul", ["person_poses", "w_pp"], ["c"]),
        n("Mul", ["garment_poses", "w_gp"], ["e"]),
        n("Cast", ["garment_categories"], ["catf"], to=TensorProto.FLOAT),
        n("Reshape", ["catf", "col"], ["cat4"]),
        n("Mul", ["cat4", "w_cat"], ["k"]),
        n("Add", ["a", "b"], ["ab"]),
        n("Add", ["ab", "c"], ["abc"]),   # [B,3,H,W] + [B,1,H,W]
        n("Add", ["abc", "e"], ["abce"]),
        n("Add", ["abce", "k"], ["d"]),
        n("Sub", ["d", "x"], ["num"]),
        n("Sub", ["one", "times"], ["rest"]),
        n("Reshape", ["rest", "col"], ["rest4"]),
        n("Div", ["num", "rest4"], ["velocity"]),
    ]
    g = helper.make_graph(nodes, "fashn_oracle", inputs, [out], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], producer_name="fashiond scripts/export/fashn_oracle.py")
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(os.path.join(out, "transformer"), exist_ok=True)
    onnx.save_model(graph(), os.path.join(out, "transformer", "model.onnx"), save_as_external_data=True,
                    all_tensors_to_one_file=True, location="model.onnx.data", size_threshold=0)
    layout = {"layout": "fashn-vton", "weights": "random", "width": W, "height": H, "patch_size": PATCH,
              "steps": 4, "guidance": 1.5, "mu": 1.5, "skip_guidance_last": 1,
              "categories": {"tops": 1, "bottoms": 2, "one-pieces": 3}}
    with open(os.path.join(out, "fashiond.json"), "w") as fh:
        json.dump(layout, fh, indent=2)
        fh.write("\n")


if __name__ == "__main__":
    main()
