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
                return self.model(x, times, ca_images=ca_images, garment_images=garment_images, person_poses=person_poses,
                                  garment_poses=garment_poses, garment_categories=garment_categories)["x"]

        return Wrapper(model).eval()


def example_inputs(model, batch, dtype, seed=0):
    import torch
    g = torch.Generator().manual_seed(seed)
    h, w = model.input_shape
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


def constant_positions(model):
    """Replaces model.pe_embedder by its output for the model's fixed grid.

    The rotary embedding depends only on the token grid, which is the same
    for every call and both streams; the reference computes it in float64
    (torch.einsum promotes), which the TorchScript exporter writes as an
    Einsum of mixed types and float64 Cos/Sin that ONNX Runtime's CPU
    kernels lack. The reference EmbedND computes it once here (from the ids
    the model itself passes it, captured by a hook on a batch-1 call) and
    the graph carries the float32 result as a constant, broadcast over the
    batch exactly as the reference's batch-repeated copy is."""
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
    with torch.inference_mode():
        pe = model.pe_embedder(captured["ids"]).float().clone()

    class ConstantPE(torch.nn.Module):
        def forward(self, ids):
            return pe

    model.pe_embedder = ConstantPE()


def export(model, out, dtype_name, weights_kind, opset=17, batch=2, reference=True):
    """Writes out/ (fashiond.json, transformer/model.onnx + .data) and
    returns example_inputs(batch, seed 0) and, with reference, torch's
    output for them (a full forward pass: minutes at full size on a CPU)."""
    import onnx
    import torch
    constant_positions(model)
    dtype = torch.float32
    if dtype_name == "fp16":
        dtype = check_fp16_range(model)
    wrapper = Export.wrap(model).to(dtype)
    args = example_inputs(model, batch, dtype)
    ref = None
    if reference:
        with torch.inference_mode():
            ref = wrapper(*args).float()
    os.makedirs(os.path.join(out, "transformer"), exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="fashn-export-")
    try:
        path = os.path.join(tmp, "model.onnx")
        with torch.no_grad():
            torch.onnx.export(wrapper, args, path, input_names=INPUTS, output_names=["velocity"],
                              dynamic_axes={n: {0: "B"} for n in INPUTS + ["velocity"]},
                              opset_version=opset, do_constant_folding=True, dynamo=False)
        m = onnx.load(path, load_external_data=True)
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
    return args, ref


def verify(out, args, ref):
    """Runs the written graph on onnxruntime and prints its difference
    from torch (skipped when onnxruntime is missing)."""
    try:
        import onnxruntime as ort
    except ImportError:
        print("onnxruntime missing: graph not checked", file=sys.stderr)
        return None
    feeds = {n: a.numpy() for n, a in zip(INPUTS, args)}
    try:
        sess = ort.InferenceSession(os.path.join(out, "transformer", "model.onnx"), providers=["CPUExecutionProvider"])
        got = sess.run(["velocity"], feeds)[0].astype("float32")
    except Exception as e:  # e.g. a float16 kernel missing on the CPU
        print(f"onnxruntime could not run the graph here: {e}", file=sys.stderr)
        return None
    diff = float(abs(got - ref.numpy()).max())
    print(f"onnxruntime vs torch: max |diff| {diff:.3g} over {got.size} values", file=sys.stderr)
    return diff


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--src", required=True, help="the fashn-vton-1.5 repository's src/ folder")
    ap.add_argument("--weights", help="model.safetensors (the authors' weights)")
    ap.add_argument("--random", choices=["full", "small"], help="random weights instead")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dtype", choices=["fp16", "fp32"], default="fp16")
    ap.add_argument("--out", required=True)
    ap.add_argument("--no-verify", action="store_true",
                    help="skip the torch-vs-onnxruntime check (two more forward passes; minutes at full size on a CPU)")
    a = ap.parse_args()
    if bool(a.weights) == bool(a.random):
        ap.error("give exactly one of --weights and --random")
    fv = import_fashn(a.src)
    import torch
    torch.manual_seed(a.seed)
    model = fv.TryOnModel(**(SMALL if a.random == "small" else FULL)).eval()
    if a.weights:
        load_weights(model, a.weights)
    verify_it = not a.no_verify
    args, ref = export(model, a.out, a.dtype, "random" if a.random else "released",
                       batch=2 if verify_it else 1, reference=verify_it)
    if verify_it:
        verify(a.out, args, ref)
    print(f"wrote {a.out} ({a.dtype}, {'random ' + a.random if a.random else 'released'} weights)", file=sys.stderr)


if __name__ == "__main__":
    main()
