"""Writes a reference folder for `fashiond models verify --reference DIR --name NAME`: the picture diffusers'
StableDiffusionPipeline makes from the original PyTorch modules of an export, sampled with fashiond's noise for a
seed (written by `fashiond models noise --seed N FILE`), so an operator can check that fashiond samples their
ONNX export as diffusers samples the weights it came from. Used by scripts/export/sd.py --reference.

Folder: reference.json (prompt, settings, seed, tolerance, provenance), expected.png (16-bit RGB), noise.f32
(the noise file it used; fashiond refuses one that is not its own stream for the seed).
"""
import importlib.util
import json
import os
import shutil

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
TOLERANCE_FP32 = 2e-2


def tokenizer(folder):
    """OpenAI CLIP's tokenizer (diffusion/clip/testdata/reference_tokenizer.py) on the export's merges.txt: the
    same ids transformers' CLIPTokenizer gives, without the Rust tokenizers package. Returns ids(text)."""
    path = os.path.join(REPO, "diffusion", "clip", "testdata", "reference_tokenizer.py")
    spec = importlib.util.spec_from_file_location("reference_tokenizer", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    tok = mod.SimpleTokenizer(os.path.join(folder, "tokenizer", "merges.txt"))
    pad = 49407
    try:
        with open(os.path.join(folder, "tokenizer", "special_tokens_map.json")) as f:
            p = json.load(f).get("pad_token")
        if (p.get("content") if isinstance(p, dict) else p) == "!":
            pad = 0
    except (OSError, AttributeError, ValueError):
        pass

    def ids(text, length=77):
        row = [49406] + tok.encode(text)[:length - 2] + [49407]
        return row + [pad] * (length - len(row))
    return ids


def scheduler(folder):
    import diffusers
    with open(os.path.join(folder, "scheduler", "scheduler_config.json")) as f:
        cfg = json.load(f)
    return getattr(diffusers, cfg["_class_name"]).from_config(cfg)


class _Feed:
    """Serves the pipeline's initial latents and the scheduler's per-step noise from fashiond's stream."""

    MODULES = ["diffusers.schedulers.scheduling_euler_ancestral_discrete", "diffusers.schedulers.scheduling_ddim",
               "diffusers.schedulers.scheduling_lcm"]

    def __init__(self, stream, start):
        self.stream, self.pos = stream, start

    def take(self, shape):
        n = int(np.prod(shape))
        if self.pos + n > len(self.stream):
            raise SystemExit(f"noise file too short: need more than {len(self.stream)} values")
        v = torch.from_numpy(self.stream[self.pos:self.pos + n].copy()).reshape(tuple(shape))
        self.pos += n
        return v

    def __enter__(self):
        import importlib
        self.saved = []
        for name in self.MODULES:
            mod = importlib.import_module(name)
            self.saved.append((mod, mod.randn_tensor))
            mod.randn_tensor = lambda shape, generator=None, device=None, dtype=None, layout=None: \
                self.take(shape).to(dtype or torch.float32)
        return self

    def __exit__(self, *exc):
        for mod, fn in self.saved:
            mod.randn_tensor = fn
        return False


@torch.no_grad()
def write_reference(out, folder, unet, vae, text, seed, noise_file, prompt, negative_prompt="", steps=20,
                    guidance=7.5, size=512, tolerance=TOLERANCE_FP32):
    from diffusers import LatentConsistencyModelPipeline, StableDiffusionPipeline
    import cv2
    import diffusers
    # Debian 13's torch 2.6 computed some Conv2d wrongly through oneDNN at batch 2 (see
    # scripts/reference/make_fixtures.py); a reference run takes PyTorch's own kernels.
    torch.backends.mkldnn.enabled = False
    stream = np.fromfile(noise_file, dtype="<f4")
    ids = tokenizer(folder)
    emb = lambda t: text(input_ids=torch.tensor([ids(t)]))[0]  # noqa: E731
    sched = scheduler(folder)
    lcm = bool(unet.config.time_cond_proj_dim)
    cls = LatentConsistencyModelPipeline if lcm else StableDiffusionPipeline
    pipe = cls(vae=vae, text_encoder=text, tokenizer=None, unet=unet, scheduler=sched, safety_checker=None,
               feature_extractor=None, requires_safety_checker=False)
    pipe.set_progress_bar_config(disable=True)
    f = 2 ** (len(vae.config.block_out_channels) - 1)
    feed = _Feed(stream, 0)
    latents = feed.take((1, 4, size // f, size // f))
    kw = dict(prompt_embeds=emb(prompt), num_inference_steps=steps, guidance_scale=guidance, height=size, width=size,
              latents=latents, output_type="np")
    if guidance > 1 and not lcm:
        kw["negative_prompt_embeds"] = emb(negative_prompt)
    with feed:
        img = pipe(**kw).images[0]
    os.makedirs(out, exist_ok=True)
    q = np.round(np.clip(img, 0, 1) * 65535).astype(np.uint16)[:, :, ::-1]
    cv2.imwrite(os.path.join(out, "expected.png"), np.ascontiguousarray(q))
    shutil.copyfile(noise_file, os.path.join(out, "noise.f32"))
    ref = {"mode": "text-to-image", "prompt": prompt, "negative_prompt": negative_prompt, "guidance": guidance,
           "steps": steps, "seed": seed, "width": size, "height": size, "tolerance": tolerance,
           "expected": "expected.png", "noise": "noise.f32",
           "made_by": f"diffusers {diffusers.__version__} {cls.__name__}, torch {torch.__version__}, scripts/export/reference.py"}
    with open(os.path.join(out, "reference.json"), "w") as fh:
        json.dump(ref, fh, indent=1)
        fh.write("\n")
