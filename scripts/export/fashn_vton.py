#!/usr/bin/env python3
"""Export FASHN VTON v1.5's TryOnModel to a fashiond `fashn-vton` folder.

usage:
  fashn_vton.py --src REPO/src --weights model.safetensors --out DIR [--dtype fp16|fp32]
  fashn_vton.py --src REPO/src --random full|small [--seed N] --out DIR [--dtype fp16|fp32]

REPO is a checkout of github.com/fashn-AI/fashn-vton-1.5 (Apache-2.0; read at
commit 7c0f10a): the model class is imported from it, not copied. --weights is
the operator's copy of the authors' model.safetensors (huggingface.co/fashn-ai/
fashn-vton-1.5; bf16 or fp32 tensors). --random exports random weights instead:
"full" is the released architecture (hidden 1280, 10 heads, 4 patch-mixer, 8
double and 16 single blocks, 576x864 at patch 12; for benchmarks), "small" the
same block types at hidden 64, 2 heads, one block of each kind, 48x72 (for
tests). A random-weight folder says "weights": "random" in fashiond.json and
its pictures are noise.

The folder written:
  DIR/fashiond.json                layout, weights, size, patch, steps, guidance, mu, categories
  DIR/transformer/model.onnx       TryOnModel.forward, opset 17, batch dimension "B"
  DIR/transformer/model.onnx.data  the weights (external data, one file)

Graph: x, times, ca_images, garment_images, person_poses, garment_poses
(float, [B,C,H,W] / [B]) and garment_categories (int64 [B]) -> velocity
[B,3,H,W]. The conditional-dropout mask is left at "keep": fashiond feeds the
unconditional rows of classifier-free guidance zero images and class 0, which
is exactly what the mask does. --dtype fp16 (the default) converts every
float (bf16 weights via fp32) to fp16 and refuses weights beyond fp16's range;
RMSNorm, RoPE and the timestep embedding compute in fp32 inside the graph, as
in the reference.

Needs torch (2.x, the TorchScript exporter), einops, safetensors, onnx and,
for the check at the end, onnxruntime. The repository's package imports cv2,
torchvision, matplotlib and fashn_human_parser at import time; where one is
missing a stub that raises on use is installed, since the model class uses
none of them.
"""
import argparse
import importlib
import json
import os
import shutil
import sys
import tempfile
import types

SMALL = dict(input_shape=(72, 48), hidden_size=64, n_heads=2, double_blocks_depth=1, single_blocks_depth=1,
             patch_mixer_depth=1, axes_dim=(8, 12, 12))
FULL = dict()  # TryOnModel's defaults are the released architecture
FP16_MAX = 65504.0
INPUTS = ["x", "times", "ca_images", "garment_images", "person_poses", "garment_poses", "garment_categories"]
CATEGORIES = {"tops": 1, "bottoms": 2, "one-pieces": 3}
# The graph is traced on TRACE_BATCH rows of TRACE_GRID patches (rows,
# columns): the smallest input where no axis is 1, so no size is special.
TRACE_GRID = (3, 2)
TRACE_BATCH = 2
IMAGE_AXES = {0: "B", 2: "H", 3: "W"}
DYNAMIC_AXES = {"x": IMAGE_AXES, "times": {0: "B"}, "ca_images": IMAGE_AXES, "garment_images": IMAGE_AXES,
                "person_poses": IMAGE_AXES, "garment_poses": IMAGE_AXES, "garment_categories": {0: "B"},
                "velocity": IMAGE_AXES}


def _stub(name):
    """A module whose attributes raise when used (for unused imports)."""
    mod = types.ModuleType(name)

    class Missing(dict):
        # Empty as a constant (iterable, .get), raising when called.
        def __init__(self, attr):
            super().__init__()
            self.attr = attr

        def __call__(self, *a, **k):
            raise RuntimeError(f"{name}.{self.attr} is a stub installed by fashiond's export script")

    def missing(attr):
        return Missing(attr)

    def getattr_(attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return missing(attr)

    mod.__getattr__ = getattr_
    mod.__path__ = []
    return mod


def import_fashn(src):
    """Imports fashn_vton from src, stubbing unavailable import-time deps."""
    sys.path.insert(0, os.path.abspath(src))
    for name in ["cv2", "matplotlib", "matplotlib.colors", "torchvision", "torchvision.transforms",
                 "torchvision.transforms.functional", "fashn_human_parser", "onnxruntime", "tqdm", "tqdm.auto"]:
        try:
            importlib.import_module(name)
        except ImportError:
            sys.modules[name] = _stub(name)
    return importlib.import_module("fashn_vton")


class Export:
    """Builds the torch.nn.Module wrapper lazily (torch imported late)."""

    @staticmethod
    def wrap(model):
        import torch

        class Wrapper(torch.nn.Module):
            def __init__(self, m):
                super().__init__()
                self.model = m

            def forward(self, x, times, ca_images, garment_images, person_poses, garment_poses, garment_categories):
                # TryOnModel shapes its output grid from input_shape; taken
                # from x, the traced graph's output follows the input size.
                declared = self.model.input_shape
                self.model.input_shape = (x.shape[2], x.shape[3])
                try:
                    return self.model(x, times, ca_images=ca_images, garment_images=garment_images,
                                      person_poses=person_poses, garment_poses=garment_poses,
                                      garment_categories=garment_categories)["x"]
                finally:
                    self.model.input_shape = declared

        return Wrapper(model).eval()


def example_inputs(model, batch, dtype, seed=0, size=None):
    """Random inputs at size (height, width; default the model's)."""
    import torch
    g = torch.Generator().manual_seed(seed)
    h, w = size or model.input_shape
    c = model.channels_in

    def img(ch):
        return (torch.rand((batch, ch, h, w), generator=g) * 2 - 1).to(dtype)

    times = torch.rand((batch,), generator=g).to(dtype)
    cats = torch.arange(batch, dtype=torch.int64) % 4
    return (img(c), times, img(c), img(c), img(1), img(1), cats)


def load_weights(model, path):
    """Loads model.safetensors (bf16/fp16/fp32) into the fp32 model."""
    import torch
    from safetensors.torch import load_file
    sd = load_file(path, device="cpu")
    sd = {k: v.to(torch.float32) if v.is_floating_point() else v for k, v in sd.items()}
    model.load_state_dict(sd, strict=True)
    return sd


def check_fp16_range(model):
    import torch
    for name, p in list(model.named_parameters()) + list(model.named_buffers()):
        if p.is_floating_point() and p.numel() and float(p.detach().abs().max()) > FP16_MAX:
            raise SystemExit(f"{name}: values up to {float(p.abs().max())} exceed float16's range ({FP16_MAX}); export with --dtype fp32")
    return torch.float16


def grid_positions(model):
    """Replaces model.pe_embedder by a lookup in its output for the model's
    declared grid.

    The rotary embedding of a token depends only on its grid position
    (row i, column j), the same for both streams; the reference computes it
    in float64 (torch.einsum promotes), which the TorchScript exporter writes
    as an Einsum of mixed types and float64 Cos/Sin that ONNX Runtime's CPU
    kernels lack. The reference EmbedND computes the table once here, for
    every position of the declared grid (from the ids the model itself
    passes it, captured by a hook on a batch-1 call); the graph carries the
    float32 table as a constant and gathers row i*W'+j for each token from
    the ids the model builds for its input, so a token gets the reference's
    value at any input size up to the declared one, and the graph can be
    traced on a small input. The result broadcasts over the batch exactly
    as the reference's batch-repeated copy does."""
    import torch
    captured = {}

    class Captured(Exception):
        pass

    def hook(_mod, args):
        captured["ids"] = args[0][:1].clone()
        raise Captured  # the rest of the forward pass is not needed

    handle = model.pe_embedder.register_forward_pre_hook(hook)
    try:
        with torch.inference_mode():
            Export.wrap(model)(*example_inputs(model, 1, next(model.parameters()).dtype))
    except Captured:
        pass
    finally:
        handle.remove()
    ids = captured["ids"][0]
    grid_w = model.input_shape[1] // model.patch_size
    expect = torch.stack([torch.zeros_like(ids[:, 0]), torch.div(torch.arange(len(ids)), grid_w, rounding_mode="floor"),
                          torch.arange(len(ids)) % grid_w], dim=-1).to(ids.dtype)
    if not torch.equal(ids, expect):
        raise SystemExit("the model's position ids are not (0, row, column) in row-major order: the rotary table cannot be indexed")
    with torch.inference_mode():
        table = model.pe_embedder(captured["ids"]).float().clone()[0, 0]  # [L, D/2, 2, 2]

    class GridPE(torch.nn.Module):
        def forward(self, ids):
            index = (ids[0, :, 1] * grid_w + ids[0, :, 2]).to(torch.int64)
            return table.index_select(0, index)[None, None]

    model.pe_embedder = GridPE()


def export(model, out, dtype_name, weights_kind, opset=17, batch=2, reference=True, check_size=None):
    """Writes out/ (fashiond.json, transformer/model.onnx + .data) and
    returns example_inputs(batch, seed 0) at check_size (height, width;
    default the model's size), with reference torch's output for them (a
    full forward pass: hours at full size and fp16 on a CPU) and the
    largest difference of onnxruntime's (None without reference or
    onnxruntime).

    The graph is traced on a TRACE_GRID input (seconds to minutes at any
    model size) with height and width as dynamic axes (the position table
    and the output grid follow the input); the check runs that traced graph
    at check_size, so a check at another size than the trace's shows the
    graph is not bound to the trace's. The folder's graph then declares the
    model's own size on its inputs and output (declare_size)."""
    import onnx
    import torch
    grid_positions(model)
    dtype = torch.float32
    if dtype_name == "fp16":
        dtype = check_fp16_range(model)
    wrapper = Export.wrap(model).to(dtype)
    p = model.patch_size
    trace = example_inputs(model, TRACE_BATCH, dtype, seed=1, size=(TRACE_GRID[0] * p, TRACE_GRID[1] * p))
    args = example_inputs(model, batch, dtype, size=check_size)
    ref = None
    if reference:
        with torch.inference_mode():
            ref = wrapper(*args).float()
    os.makedirs(os.path.join(out, "transformer"), exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="fashn-export-")
    diff = None
    try:
        path = os.path.join(tmp, "model.onnx")
        with torch.no_grad():
            torch.onnx.export(wrapper, trace, path, input_names=INPUTS, output_names=["velocity"],
                              dynamic_axes=DYNAMIC_AXES,
                              opset_version=opset, do_constant_folding=True, dynamo=False)
        if reference:
            diff = verify(path, args, ref)
        m = onnx.load(path, load_external_data=True)
        declare_size(m, model.input_shape, model.channels_in)
        dst = os.path.join(out, "transformer", "model.onnx")
        for f in ("model.onnx", "model.onnx.data"):
            if os.path.exists(os.path.join(out, "transformer", f)):
                os.remove(os.path.join(out, "transformer", f))
        onnx.save_model(m, dst, save_as_external_data=True, all_tensors_to_one_file=True,
                        location="model.onnx.data", size_threshold=1024)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    h, w = model.input_shape
    layout = {"layout": "fashn-vton", "weights": weights_kind, "width": w, "height": h, "patch_size": model.patch_size,
              "steps": 30, "guidance": 1.5, "mu": 1.5, "skip_guidance_last": 1, "categories": CATEGORIES}
    with open(os.path.join(out, "fashiond.json"), "w") as fh:
        json.dump(layout, fh, indent=2)
        fh.write("\n")
    return args, ref, diff


def declare_size(m, size, channels):
    """Declares the model's own size (and the output's channels) on the
    graph's image inputs and output: the traced graph computes at any size,
    but the folder is for one, and fashiond refuses a fashiond.json whose
    size differs from the graph's."""
    h, w = size
    for v in list(m.graph.input) + list(m.graph.output):
        dims = v.type.tensor_type.shape.dim
        if len(dims) != 4:
            continue
        if v.name == "velocity":
            dims[1].dim_value = channels
        dims[2].dim_value, dims[3].dim_value = h, w


def verify(path, args, ref):
    """Runs the graph at path on onnxruntime and prints its difference
    from torch (skipped when onnxruntime is missing)."""
    try:
        import onnxruntime as ort
    except ImportError:
        print("onnxruntime missing: graph not checked", file=sys.stderr)
        return None
    feeds = {n: a.numpy() for n, a in zip(INPUTS, args)}
    try:
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        got = sess.run(["velocity"], feeds)[0].astype("float32")
    except Exception as e:  # e.g. a float16 kernel missing on the CPU
        print(f"onnxruntime could not run the graph here: {e}", file=sys.stderr)
        return None
    diff = float(abs(got - ref.numpy()).max())
    print(f"onnxruntime vs torch: max |diff| {diff:.3g} over {got.size} values", file=sys.stderr)
    return diff


def parse_size(ap, text):
    """WxH -> (height, width)."""
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        ap.error(f"--check-size {text!r}: want WxH, e.g. 24x36")
    return h, w


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--src", required=True, help="the fashn-vton-1.5 repository's src/ folder")
    ap.add_argument("--weights", help="model.safetensors (the authors' weights)")
    ap.add_argument("--random", choices=["full", "small"], help="random weights instead")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dtype", choices=["fp16", "fp32"], default="fp16")
    ap.add_argument("--out", required=True)
    ap.add_argument("--no-verify", action="store_true",
                    help="skip the torch-vs-onnxruntime check (two more forward passes at --check-size)")
    ap.add_argument("--check-size", metavar="WxH",
                    help="size of the torch-vs-onnxruntime check (default the model's: hours at full size and fp16 "
                         "on a CPU; e.g. 24x36, a multiple of the patch up to the model's size)")
    a = ap.parse_args()
    if bool(a.weights) == bool(a.random):
        ap.error("give exactly one of --weights and --random")
    check_size = parse_size(ap, a.check_size) if a.check_size else None
    fv = import_fashn(a.src)
    import torch
    torch.manual_seed(a.seed)
    model = fv.TryOnModel(**(SMALL if a.random == "small" else FULL)).eval()
    if check_size and any(n < 1 or n > m or n % model.patch_size for n, m in zip(check_size, model.input_shape)):
        ap.error(f"--check-size {a.check_size}: sides must be multiples of {model.patch_size} up to "
                 f"{model.input_shape[1]}x{model.input_shape[0]}")
    if a.weights:
        load_weights(model, a.weights)
    verify_it = not a.no_verify
    export(model, a.out, a.dtype, "random" if a.random else "released",
           batch=2 if verify_it else 1, reference=verify_it, check_size=check_size)
    print(f"wrote {a.out} ({a.dtype}, {'random ' + a.random if a.random else 'released'} weights)", file=sys.stderr)


if __name__ == "__main__":
    main()
