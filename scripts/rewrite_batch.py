#!/usr/bin/python3
"""Rewrite an ONNX graph exported with batch 1 so that it runs at any batch.

usage: rewrite_batch.py IN.onnx OUT.onnx

Run with Debian's /usr/bin/python3 (python3-onnx, python3-numpy). What it does:
  * the first dimension of every graph input and output becomes the symbolic
    dimension "batch"; graph.value_info (batch-1 shape hints) is dropped;
  * Reshape nodes with a constant target shape get the leading entry replaced by
    -1 (the batch-1 export wrote 1, or batch*k for a folded channel shuffle);
  * Resize nodes with a constant `sizes` input [1, C, H, W] get constant
    `scales` instead (sizes / the input's static shape from onnx shape
    inference) when those give back the same sizes, so ORT runs the same
    kernel (bit-identical results); otherwise the batch entry of `sizes` is
    taken from the runtime shape of the input (Shape -> Slice -> Concat);
    constant `scales` need nothing;
  * Split nodes on axis 0 with a fixed equal `split` attribute lose it (equal
    split of the doubled batch);
  * initializers no longer used are removed.
The output is deterministic (same input bytes and onnx version -> same bytes),
so its SHA-256 is recorded in the model manifest (batch_sha256). Numerical
equality with single-image runs is checked by the Go test
inference/rewrite_test.go. Exits non-zero, writing nothing, when a node pins
the batch in a way this script does not know how to lift.
"""
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper

BATCH = "batch"


def constant_values(graph):
    """name -> numpy array for initializers and Constant node outputs."""
    vals = {init.name: numpy_helper.to_array(init) for init in graph.initializer}
    for node in graph.node:
        if node.op_type == "Constant":
            for a in node.attribute:
                if a.name == "value":
                    vals[node.output[0]] = numpy_helper.to_array(a.t)
    return vals


def inferred_shapes(model):
    """name -> static shape (list of ints, 0 when unknown) at batch 1."""
    inferred = onnx.shape_inference.infer_shapes(model)
    out = {}
    for vi in list(inferred.graph.value_info) + list(inferred.graph.input):
        dims = vi.type.tensor_type.shape.dim
        out[vi.name] = [d.dim_value if d.HasField("dim_value") else 0 for d in dims]
    return out


def set_batch_dim(value_info):
    dims = value_info.type.tensor_type.shape.dim
    if len(dims) == 0:
        raise SystemExit("rewrite_batch: %s has no shape" % value_info.name)
    d = dims[0]
    if d.HasField("dim_value") and d.dim_value != 1:
        raise SystemExit("rewrite_batch: %s has batch %d, not 1" % (value_info.name, d.dim_value))
    d.Clear()
    d.dim_param = BATCH


def rewrite(model):
    g = model.graph
    consts = constant_values(g)
    static_shapes = inferred_shapes(model)
    initializer_names = {i.name for i in g.initializer}
    graph_inputs = {i.name for i in g.input}
    # Weights listed as graph inputs (IR < 4 style) keep their shapes.
    for vi in g.input:
        if vi.name not in initializer_names:
            set_batch_dim(vi)
    for vi in g.output:
        set_batch_dim(vi)
    # Batch-1 shape hints go: with them (even with dim 0 unknown) ORT fuses
    # tcmonodepth's channel-shuffle Reshapes into batch-1 shapes.
    del g.value_info[:]

    new_inits = {}
    new_nodes = []
    changes = 0
    for node in g.node:
        if node.op_type == "Reshape" and len(node.input) > 1 and node.input[1] in consts:
            if node.input[0] in consts:
                new_nodes.append(node)  # reshape of a constant: not batch data
                continue
            shape = consts[node.input[1]].astype(np.int64).copy()
            if shape.ndim != 1 or shape.size == 0:
                raise SystemExit("rewrite_batch: Reshape %s has shape %r" % (node.name, shape))
            if shape[0] == 0:
                new_nodes.append(node)  # already copies the batch
                continue
            if (shape[1:] == -1).any():
                raise SystemExit("rewrite_batch: Reshape %s infers a non-leading dim (%r); cannot lift batch" % (node.name, shape.tolist()))
            if shape[0] != -1:
                shape[0] = -1
                name = node.input[1] + "__symbatch"
                if name not in new_inits:
                    new_inits[name] = numpy_helper.from_array(shape, name)
                node.input[1] = name
                changes += 1
            new_nodes.append(node)
            continue
        if node.op_type == "Resize" and len(node.input) > 3 and node.input[3] in consts:
            sizes = consts[node.input[3]].astype(np.int64)
            if sizes.ndim != 1 or sizes.size < 2 or sizes[0] != 1:
                raise SystemExit("rewrite_batch: Resize %s has sizes %r; cannot lift batch" % (node.name, sizes.tolist()))
            in_shape = static_shapes.get(node.input[0])
            if in_shape is not None and len(in_shape) == sizes.size and all(d > 0 for d in in_shape):
                scales = (sizes.astype(np.float64) / np.array(in_shape, np.float64)).astype(np.float32)
                # Exact when ORT's floor(in * scale) gives back every size:
                # then the kernel is the one a constant-size graph runs.
                if all(int(np.floor(np.float32(d) * s)) == int(z) for d, s, z in zip(in_shape, scales, sizes)):
                    name = (node.name or node.output[0]) + "__symbatch_scales"
                    new_inits[name] = numpy_helper.from_array(scales, name)
                    x, roi = node.input[0], node.input[1]
                    del node.input[:]
                    node.input.extend([x, roi, name])
                    new_nodes.append(node)
                    changes += 1
                    continue
            # Otherwise keep the sizes and take the batch entry from the
            # input's runtime shape.
            base = node.name or node.output[0]
            tail = base + "__symbatch_tail"
            starts, ends = base + "__symbatch_start", base + "__symbatch_end"
            new_inits[tail] = numpy_helper.from_array(sizes[1:].copy(), tail)
            new_inits[starts] = numpy_helper.from_array(np.array([0], np.int64), starts)
            new_inits[ends] = numpy_helper.from_array(np.array([1], np.int64), ends)
            shape_out, batch_out, sizes_out = base + "__symbatch_shape", base + "__symbatch_n", base + "__symbatch_sizes"
            new_nodes.append(helper.make_node("Shape", [node.input[0]], [shape_out], name=base + "__symbatch_Shape"))
            new_nodes.append(helper.make_node("Slice", [shape_out, starts, ends], [batch_out], name=base + "__symbatch_Slice"))
            new_nodes.append(helper.make_node("Concat", [batch_out, tail], [sizes_out], axis=0, name=base + "__symbatch_Concat"))
            node.input[3] = sizes_out
            new_nodes.append(node)
            changes += 1
            continue
        if node.op_type == "Resize" and len(node.input) > 2 and node.input[2] in consts:
            scales = consts[node.input[2]]
            if scales.size and scales[0] != 1:
                raise SystemExit("rewrite_batch: Resize %s scales the batch (%r)" % (node.name, scales.tolist()))
        if node.op_type == "Split":
            attrs = {a.name: a for a in node.attribute}
            axis = helper.get_attribute_value(attrs["axis"]) if "axis" in attrs else 0
            if axis == 0 and "split" in attrs:
                split = list(helper.get_attribute_value(attrs["split"]))
                if len(set(split)) != 1 or len(split) != len(node.output):
                    raise SystemExit("rewrite_batch: Split %s on the batch axis with unequal parts %r" % (node.name, split))
                node.attribute.remove(attrs["split"])
                changes += 1
            elif axis == 0 and len(node.input) > 1 and node.input[1]:
                raise SystemExit("rewrite_batch: Split %s on the batch axis with a split input" % node.name)
        new_nodes.append(node)

    del g.node[:]
    g.node.extend(new_nodes)
    for name in sorted(new_inits):
        g.initializer.append(new_inits[name])
    used = set()
    for node in g.node:
        used.update(node.input)
        for a in node.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                raise SystemExit("rewrite_batch: subgraphs (%s) are not supported" % node.name)
    used.update(o.name for o in g.output)
    keep = [i for i in g.initializer if i.name in used or i.name in graph_inputs]
    del g.initializer[:]
    g.initializer.extend(keep)
    meta = {p.key: p for p in model.metadata_props}
    if "fashiond.rewrite" not in meta:
        p = model.metadata_props.add()
        p.key = "fashiond.rewrite"
        p.value = "symbolic batch (scripts/rewrite_batch.py v1)"
    return changes


def main(argv):
    if len(argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    src, dst = argv[1], argv[2]
    model = onnx.load(src)
    changes = rewrite(model)
    onnx.checker.check_model(model)
    data = model.SerializeToString(deterministic=True)
    tmp = dst + ".part"
    with open(tmp, "wb") as f:
        f.write(data)
    import os
    os.replace(tmp, dst)
    sys.stderr.write("rewrite_batch: %s -> %s (%d nodes rewritten)\n" % (src, dst, changes))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
