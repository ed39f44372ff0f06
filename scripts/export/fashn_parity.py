#!/usr/bin/env python3
"""Parity fixtures for fashiond's FASHN VTON path, made by the reference code.

usage: fashn_parity.py --src REPO/src --out diffusion/testdata/fashn

Run in the reference environment (Debian 13, torch 2.6 CPU, opencv, onnx,
onnxruntime). REPO is github.com/fashn-AI/fashn-vton-1.5 at 7c0f10a. Writes:

  tiny/                 the small random-weight TryOnModel (seed 0), exported
                        by scripts/export/fashn_vton.py at fp32
  sampler.json + .f32   two jobs sampled by the repository's own
                        TryOnPipeline._sample from fixed noise: job A (tops,
                        2 samples), job B (one-pieces, 1 sample), 6 steps,
                        mu 1.5, guidance 1.5, CFG skipped on the last step;
                        plus one TryOnModel.forward call and get_rf_schedule
                        for 30 steps
  pose.json + pose-*.png  dwpose's Wholebody/DWposeDetector post-processing
                        (neck, OpenPose order, thresholds, best candidate) on
                        fixed SimCC outputs and boxes, and draw_pose(grayscale)
                        on the result, on the dummy flat-lay keypoints and on a
                        hand-made pose
  detector.json + .f32.gz  YOLOX post-processing (demo_postprocess, NMS,
                        filters) on a fixed sparse raw output
  resize-*.png          ResizePad to 576x864: pose-manual.png (nearest exact,
                        enlarged) and a 720x960 block pattern (INTER_AREA);
                        resize-pre.png: the pattern pre-resized by PIL LANCZOS

Regenerate (after merging scripts/reference/ from the parity branch):
  git --git-dir=<mirror of fashn-AI/fashn-vton-1.5> archive 7c0f10a src | tar -x -C tmp/fashn-src
  scripts/reference/run.sh scripts/export/fashn_parity.py --src tmp/fashn-src/src --out diffusion/testdata/fashn
(the source must lie inside the repository: run.sh binds only it and ../shared). The
committed fixtures were made this way with a runner binding this worktree.

The .f32 files are little-endian float32 arrays, concatenated; the JSON
index gives each array's name, offset (in floats) and shape. torch.randn is
replaced by the fixed noise while _sample runs, and tensor_to_pil by the
identity so the clamped float output is kept.
"""
import argparse
import gzip
import importlib.util
import json
import os
import sys

import numpy as np

# scripts/export/fashn_vton.py, loaded under another name: "fashn_vton" is
# the repository's package.
_spec = importlib.util.spec_from_file_location("fashn_export", os.path.join(os.path.dirname(os.path.abspath(__file__)), "fashn_vton.py"))
exporter = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(exporter)

STEPS, MU, GUIDANCE, SKIP = 6, 1.5, 1.5, 1


class Blob:
    """Concatenated float32 arrays with a JSON index."""

    def __init__(self):
        self.parts, self.index, self.n = [], {}, 0

    def add(self, name, a):
        a = np.ascontiguousarray(np.asarray(a, dtype="<f4"))
        self.index[name] = {"offset": self.n, "shape": list(a.shape)}
        self.parts.append(a.ravel())
        self.n += a.size

    def write(self, path, meta, gz=False):
        data = np.concatenate(self.parts).astype("<f4").tobytes() if self.parts else b""
        opener = gzip.open if gz else open
        with opener(path + (".f32.gz" if gz else ".f32"), "wb") as fh:
            fh.write(data)
        meta = dict(meta, arrays=self.index)
        with open(path + ".json", "w") as fh:
            json.dump(meta, fh, indent=1)
            fh.write("\n")


def sampler_fixture(fv, out):
    import torch
    from fashn_vton import pipeline as pl
    torch.manual_seed(0)
    model = fv.TryOnModel(**exporter.SMALL).eval()
    args, ref, diff = exporter.export(model, os.path.join(out, "tiny"), "fp32", "random")
    h, w = model.input_shape
    rng = np.random.default_rng(20260127)
    blob = Blob()
    # One forward call, as the engine's first transformer call would be.
    for name, a in zip(exporter.INPUTS, args):
        blob.add("forward/" + name, a.numpy().astype(np.float32))
    blob.add("forward/velocity", ref.numpy())
    sched = fv.utils.get_rf_schedule(num_steps=30, mu=MU)
    blob.add("schedule30", np.array(sched))
    pipe = pl.TryOnPipeline.__new__(pl.TryOnPipeline)
    pipe.tryon_model = model
    pl.tensor_to_pil = lambda img, unnormalize=False: img.clone()
    jobs = {"A": ("tops", 2), "B": ("one-pieces", 1)}
    for job, (cat, n) in jobs.items():
        ca = rng.uniform(-1, 1, (1, 3, h, w)).astype(np.float32)
        g = rng.uniform(-1, 1, (1, 3, h, w)).astype(np.float32)
        pp = np.where(rng.uniform(0, 1, (1, 1, h, w)) < 0.8, -1, rng.uniform(-1, 1, (1, 1, h, w))).astype(np.float32)
        gp = np.where(rng.uniform(0, 1, (1, 1, h, w)) < 0.8, -1, rng.uniform(-1, 1, (1, 1, h, w))).astype(np.float32)
        noise = rng.standard_normal((n, 3, h, w)).astype(np.float32)
        real_randn = torch.randn

        def fixed_randn(*size, **kw):
            shape = size[0] if len(size) == 1 and isinstance(size[0], (tuple, list, torch.Size)) else size
            assert tuple(shape) == noise.shape, (shape, noise.shape)
            return torch.from_numpy(noise.copy()).to(kw.get("dtype") or torch.float32)

        torch.randn = fixed_randn
        try:
            rep = lambda a: torch.from_numpy(a).repeat(n, 1, 1, 1)
            imgs = pipe._sample(ca_images=rep(ca), garment_images=rep(g), person_poses=rep(pp), garment_poses=rep(gp),
                                garment_categories=torch.tensor([pl.TryOnPipeline.CATEGORY_TO_LABEL[cat]] * n),
                                num_timesteps=STEPS, time_shift_mu=MU, guidance_scale=GUIDANCE,
                                skip_cfg_last_n_steps=SKIP, use_tqdm=False)
        finally:
            torch.randn = real_randn
        for k, a in [("person", ca[0]), ("garment", g[0]), ("person_pose", pp[0]), ("garment_pose", gp[0]), ("noise", noise),
                     ("output", np.stack([i.numpy() for i in imgs]))]:
            blob.add(f"{job}/{k}", a)
    meta = {"steps": STEPS, "mu": MU, "guidance": GUIDANCE, "skip_guidance_last": SKIP, "width": w, "height": h,
            "jobs": {k: {"category": c, "samples": n} for k, (c, n) in jobs.items()},
            "export_check_max_abs_diff": diff, "torch": torch.__version__,
            "source": "github.com/fashn-AI/fashn-vton-1.5@7c0f10a TryOnPipeline._sample, TryOnModel(seed 0, SMALL)"}
    blob.write(os.path.join(out, "sampler"), meta)


def pose_fixture(fv, out):
    """DWPose post-processing and draw_pose on fixed model outputs."""
    import cv2
    from fashn_vton.dwpose import dwpose as dw, wholebody as wb, onnxpose as op
    rng = np.random.default_rng(7)
    H, W = 300, 200
    boxes = np.array([[30.0, 20.0, 170.0, 290.0], [5.0, 150.0, 60.0, 240.0]])
    K, WX, WY = 133, 288 * 2, 384 * 2
    # SimCC logits: a peak per keypoint at a chosen bin, noise elsewhere;
    # some keypoints weak (hidden) and some negative (undetected).
    outputs, blob = [], Blob()
    for b in range(len(boxes)):
        sx = rng.normal(0, 0.05, (1, K, WX)).astype(np.float32)
        sy = rng.normal(0, 0.05, (1, K, WY)).astype(np.float32)
        px = rng.integers(40, WX - 40, K)
        py = rng.integers(40, WY - 40, K)
        peak = rng.choice([0.9, 0.6, 0.25, -0.1], K, p=[0.55, 0.2, 0.15, 0.1]).astype(np.float32)
        if b == 1:
            peak *= 0.5
        sx[0, np.arange(K), px] = peak
        sy[0, np.arange(K), py] = peak + rng.uniform(-0.05, 0.05, K).astype(np.float32)
        outputs.append([sx, sy])
        blob.add(f"simcc_x/{b}", sx[0])
        blob.add(f"simcc_y/{b}", sy[0])
    op_inference = op.inference
    wb.inference_detector = lambda sess, img: boxes
    op.inference = lambda sess, imgs: outputs

    class Sess:
        def get_inputs(self):
            return [type("I", (), {"shape": [1, 3, 384, 288]})()]

    body = wb.Wholebody.__new__(wb.Wholebody)
    body.session_det, body.session_pose = None, Sess()
    img = np.zeros((H, W, 3), np.uint8)
    kp, sc = body(img)
    det = dw.DWposeDetector.__new__(dw.DWposeDetector)
    det.pose_estimation = body
    pose = det(img)
    op.inference = op_inference
    # Poses go to the JSON in float64 (draw_pose truncates x·W to ints:
    # float32 would move pixels).
    f64 = lambda a: np.asarray(a, dtype=np.float64).tolist()
    detected = {"keypoints": f64(kp), "scores": f64(sc), "candidate": f64(pose["bodies"]["candidate"]),
                "subset": f64(pose["bodies"]["subset"]), "hands": f64(pose["hands"]), "faces": f64(pose["faces"])}
    cv2.imwrite(os.path.join(out, "pose-detected.png"), dw.draw_pose(pose, H, W, grayscale=True))
    flat = fv.utils.get_dummy_dw_keypoints()
    cv2.imwrite(os.path.join(out, "pose-flatlay.png"), dw.draw_pose(flat, 90, 60, grayscale=True))
    # A hand-made pose with limbs at many angles, points on the border and
    # a hand partly off the canvas.
    cand = np.array([[0.5, 0.1], [0.5, 0.2], [0.35, 0.22], [0.2, 0.35], [0.05, 0.5], [0.65, 0.22], [0.8, 0.33],
                     [0.99, 0.45], [0.42, 0.55], [0.41, 0.75], [0.4, 0.97], [0.58, 0.55], [0.62, 0.76], [0.7, 0.999],
                     [0.47, 0.08], [0.53, 0.08], [0.44, 0.09], [0.56, 0.09]])
    subset = np.arange(18, dtype=float)[None]
    subset[0, 9] = -1
    hands = rng.uniform(0, 1.02, (2, 21, 2))
    faces = rng.uniform(0.3, 0.6, (1, 68, 2))
    faces[0, :5] = -1
    manual = {"bodies": {"candidate": cand, "subset": subset}, "hands": hands, "faces": faces}
    cv2.imwrite(os.path.join(out, "pose-manual.png"), dw.draw_pose(manual, 257, 193, grayscale=True))
    manual_json = {"candidate": f64(cand), "subset": f64(subset), "hands": f64(hands), "faces": f64(faces)}
    meta = {"detected": detected, "manual": manual_json, "width": W, "height": H, "boxes": boxes.tolist(), "pose_input": [288, 384], "simcc_split_ratio": 2.0,
            "manual_size": [193, 257], "flatlay_size": [60, 90], "opencv": cv2.__version__,
            "source": "github.com/fashn-AI/fashn-vton-1.5@7c0f10a dwpose (Wholebody, DWposeDetector, draw_pose)"}
    blob.write(os.path.join(out, "pose"), meta)


def detector_fixture(out):
    from fashn_vton.dwpose import onnxdet as od
    rng = np.random.default_rng(11)
    raw = np.zeros((1, 8400, 85), np.float32)
    rows = rng.choice(8400, 40, replace=False)
    raw[0, rows, 0:2] = rng.uniform(-2, 2, (40, 2))
    raw[0, rows, 2:4] = rng.uniform(-1, 2.5, (40, 2))
    raw[0, rows, 4] = rng.uniform(0, 1, 40)
    raw[0, rows, 5:] = rng.uniform(0, 0.3, (40, 80))
    raw[0, rows[:25], 5] = rng.uniform(0.2, 1, 25)  # person class
    # Near-duplicates so NMS has work: copy some rows to their neighbours.
    for r in rows[:8]:
        n = (r + 1) % 8400
        raw[0, n] = raw[0, r]
        raw[0, n, 0] += 0.1
        raw[0, n, 4] *= 0.9
    blob = Blob()
    blob.add("raw", raw[0])
    img_h, img_w = 480, 333
    r = min(640 / img_h, 640 / img_w)
    # inference_detector's steps after the session, verbatim order.
    predictions = od.demo_postprocess(raw.copy(), (640, 640))[0]
    boxes = predictions[:, :4]
    scores = predictions[:, 4:5] * predictions[:, 5:]
    xyxy = np.ones_like(boxes)
    xyxy[:, 0] = boxes[:, 0] - boxes[:, 2] / 2.0
    xyxy[:, 1] = boxes[:, 1] - boxes[:, 3] / 2.0
    xyxy[:, 2] = boxes[:, 0] + boxes[:, 2] / 2.0
    xyxy[:, 3] = boxes[:, 1] + boxes[:, 3] / 2.0
    xyxy /= r
    dets = od.multiclass_nms(xyxy, scores, nms_thr=0.45, score_thr=0.1)
    final = dets[:, :4][(dets[:, 4] > 0.3) & (dets[:, 5] == 0)] if dets is not None else np.zeros((0, 4))
    blob.add("boxes", final)
    meta = {"image": [img_w, img_h], "ratio": r, "source": "github.com/fashn-AI/fashn-vton-1.5@7c0f10a dwpose/onnxdet.py"}
    blob.write(os.path.join(out, "detector"), meta, gz=True)


def resize_fixture(out):
    """The pipeline's ResizePad(576x864) as the reference calls it: a pose
    map with INTER_NEAREST_EXACT (enlarged), an RGB block pattern with the
    default (INTER_AREA when shrinking)."""
    import cv2
    from fashn_vton.preprocessing import ResizePad
    rp = ResizePad((576, 864), backend="opencv")
    pose = cv2.imread(os.path.join(out, "pose-manual.png"), cv2.IMREAD_GRAYSCALE)
    cv2.imwrite(os.path.join(out, "resize-pose.png"), rp(pose, interpolation=cv2.INTER_NEAREST_EXACT))
    # Blocks of 13x17 pixels from an 8-colour palette: edges at every
    # phase of the 0.8 scale, and a PNG of a few kB.
    y, x = np.mgrid[0:960, 0:720]
    palette = np.array([[230, 30, 40], [20, 200, 90], [40, 60, 220], [250, 250, 250],
                        [10, 10, 10], [200, 180, 20], [120, 40, 160], [90, 160, 200]], np.uint8)
    rgb = palette[((x // 13) * 3 + (y // 17) * 5) % 8]
    cv2.imwrite(os.path.join(out, "resize-photo-in.png"), rgb[..., ::-1])
    cv2.imwrite(os.path.join(out, "resize-photo.png"), rp(rgb)[..., ::-1])
    # The pipeline's pre-resize (PIL LANCZOS, fit 864x864, never enlarging)
    # of the same pattern: 720x960 -> 648x864.
    from PIL import Image
    from fashn_vton.preprocessing import AspectPreserveResize
    pre = AspectPreserveResize(target_size=(864, 864), mode="fit", backend="pil")
    pre(Image.fromarray(rgb), allow_upsampling=False).save(os.path.join(out, "resize-pre.png"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--src", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", default="sampler,pose,detector,resize")
    a = ap.parse_args()
    fv = exporter.import_fashn(a.src)
    os.makedirs(a.out, exist_ok=True)
    parts = a.only.split(",")
    if "sampler" in parts:
        sampler_fixture(fv, a.out)
    if "pose" in parts:
        pose_fixture(fv, a.out)
    if "detector" in parts:
        detector_fixture(a.out)
    if "resize" in parts:
        resize_fixture(a.out)


if __name__ == "__main__":
    main()
