"""Makes fashiond's diffusion parity fixtures (diffusion/testdata/parity/) from diffusers' own pipelines.

Run in the reference environment:
    scripts/reference/setup.sh
    go run ./scripts/reference/noise ...   (only when seeds change: see NOISE below; the files are committed)
    scripts/reference/run.sh scripts/reference/make_fixtures.py

Small networks of the real architectures (diffusers' UNet2DConditionModel and AutoencoderKL with SD's block
types, transformers' CLIPTextModel), random weights from fixed seeds, are exported to ONNX in Optimum's layout
(scripts/export/sd_onnx.py) under parity/models/. Each case runs diffusers' pipeline on the same PyTorch modules
with fashiond's noise for the case's seed (parity/noise/seed-N.f32, written by scripts/reference/noise from
diffusion.Noise) fed in the order fashiond draws it, and stores the decoded pixels as a 16-bit PNG under
parity/expected/. diffusion/parity_test.go runs the engine on the exported folders and compares.
"""
import copy
import importlib.util
import json
import os
import sys

import cv2
import numpy as np
import torch

REPO = os.getcwd()
sys.path.insert(0, os.path.join(REPO, "scripts", "export"))
import catvton  # noqa: E402
import sd  # noqa: E402
import sd_onnx  # noqa: E402

from diffusers import (AutoencoderKL, DDIMScheduler, DPMSolverMultistepScheduler,  # noqa: E402
                       EulerAncestralDiscreteScheduler, EulerDiscreteScheduler, LatentConsistencyModelPipeline,
                       LCMScheduler, PNDMScheduler, StableDiffusionImg2ImgPipeline, StableDiffusionInpaintPipeline,
                       StableDiffusionPipeline, UNet2DConditionModel)
from diffusers.models.attention_processor import AttnProcessor  # noqa: E402
from transformers import CLIPTextConfig, CLIPTextModel  # noqa: E402
from PIL import Image  # noqa: E402

OUT = os.path.join(REPO, "diffusion", "testdata", "parity")
SCRIPT = "scripts/reference/make_fixtures.py"
DIFFUSERS_COMMIT = "58eb52c"
BPE = os.path.join(REPO, "..", "shared", "testdata", "clip", "bpe_simple_vocab_16e6.txt.gz")
MODEL_SEED = 20261127
SIZE = 64  # pixels; latents 8x8 (VAE factor 8)
LATENT = SIZE // 8
HIDDEN = 8  # text encoder width = the UNet's cross-attention width (SD-1.5: 768); small keeps the fixtures small
NOISE_FLOATS = 6144  # per seed file: two encodes, the start and the steps of every case (checked when read)
TOL_FP32 = 1e-3
TOL_FP16 = 1e-2

PROMPT = "a linen shirt on a hanger, studio photo"
NEGATIVE = "blurry, low quality"

# SD-1.5's scheduler config as published (no timestep_spacing key: each class takes its own default).
SD15_SCHEDULER = {"_class_name": "PNDMScheduler", "_diffusers_version": "0.6.0", "beta_end": 0.012,
                  "beta_schedule": "scaled_linear", "beta_start": 0.00085, "num_train_timesteps": 1000,
                  "set_alpha_to_one": False, "skip_prk_steps": True, "steps_offset": 1, "trained_betas": None,
                  "clip_sample": False}
# SD-2.1 (768-v): Euler with v-prediction and trailing spacing, as fashiond's oracle-vpred.
VPRED_SCHEDULER = {"_class_name": "EulerDiscreteScheduler", "beta_end": 0.012, "beta_schedule": "scaled_linear",
                   "beta_start": 0.00085, "num_train_timesteps": 1000, "prediction_type": "v_prediction",
                   "set_alpha_to_one": False, "steps_offset": 1, "timestep_spacing": "trailing",
                   "trained_betas": None, "clip_sample": False}
# LCM-Dreamshaper-v7's LCMScheduler config.
LCM_SCHEDULER = {"_class_name": "LCMScheduler", "beta_end": 0.012, "beta_schedule": "scaled_linear",
                 "beta_start": 0.00085, "clip_sample": False, "clip_sample_range": 1.0, "num_train_timesteps": 1000,
                 "original_inference_steps": 50, "prediction_type": "epsilon", "rescale_betas_zero_snr": False,
                 "set_alpha_to_one": True, "steps_offset": 1, "thresholding": False, "timestep_scaling": 10.0,
                 "timestep_spacing": "leading", "trained_betas": None}
# SD-1.5-inpainting's DDIM config, as CatVTON uses it.
CATVTON_SCHEDULER = dict(SD15_SCHEDULER, _class_name="DDIMScheduler")

SCHEDULER_CLASSES = {"pndm": PNDMScheduler, "euler": EulerDiscreteScheduler, "euler-a": EulerAncestralDiscreteScheduler,
                     "ddim": DDIMScheduler, "dpm++2m": DPMSolverMultistepScheduler, "lcm": LCMScheduler}
CLASS_KIND = {c.__name__: k for k, c in SCHEDULER_CLASSES.items()}


# ---------------------------------------------------------------- tokenizer (OpenAI's reference, committed)
def _tokenizer():
    path = os.path.join(REPO, "diffusion", "clip", "testdata", "reference_tokenizer.py")
    spec = importlib.util.spec_from_file_location("reference_tokenizer", path)
    mod = importlib.util.module_from_spec(spec)
    sys.argv, argv = [path, BPE], sys.argv  # the module reads argv only under __main__
    spec.loader.exec_module(mod)
    sys.argv = argv
    return mod.SimpleTokenizer(BPE)


TOK = None


def ids(text, pad=49407, length=77):
    """SD's tokenizer call: bos, BPE ids truncated to 75, eos, padded with pad (eos for SD-1.5)."""
    body = TOK.encode(text)[:length - 2]
    row = [49406] + body + [49407]
    return row + [pad] * (length - len(row))


# ---------------------------------------------------------------- models
def make_text_encoder(used_ids):
    cfg = CLIPTextConfig(vocab_size=49408, hidden_size=HIDDEN, intermediate_size=2 * HIDDEN, num_hidden_layers=2,
                         num_attention_heads=2, max_position_embeddings=77, hidden_act="quick_gelu",
                         bos_token_id=49406, eos_token_id=49407, pad_token_id=49407, projection_dim=HIDDEN)
    cfg._attn_implementation = "eager"
    text = CLIPTextModel(cfg).eval()
    with torch.no_grad():  # rows no fixture prompt uses are zeroed, so git stores the table in a few KB
        emb = text.text_model.embeddings.token_embedding.weight
        keep = torch.zeros(emb.shape[0], dtype=torch.bool)
        keep[sorted(used_ids)] = True
        emb[~keep] = 0
    return text


def make_unet(in_channels=4, time_cond_proj_dim=None):
    return UNet2DConditionModel(
        sample_size=LATENT, in_channels=in_channels, out_channels=4, layers_per_block=1,
        block_out_channels=(8, 8, 16, 16), norm_num_groups=4,
        down_block_types=("CrossAttnDownBlock2D",) * 3 + ("DownBlock2D",),
        up_block_types=("UpBlock2D",) + ("CrossAttnUpBlock2D",) * 3,
        cross_attention_dim=HIDDEN, attention_head_dim=2, time_cond_proj_dim=time_cond_proj_dim).eval()


def make_vae():
    return AutoencoderKL(in_channels=3, out_channels=3, latent_channels=4, block_out_channels=(8, 8, 16, 16),
                         down_block_types=("DownEncoderBlock2D",) * 4, up_block_types=("UpDecoderBlock2D",) * 4,
                         layers_per_block=1, norm_num_groups=4, sample_size=SIZE, scaling_factor=0.18215).eval()


def plain_attention(unet):
    unet.set_attn_processor(AttnProcessor())  # the eager processor: same maths as SDPA, exports cleanly
    return unet


# ---------------------------------------------------------------- noise: fashiond's stream, diffusers' call order
def noise_stream(seed):
    path = os.path.join(OUT, "noise", f"seed-{seed}.f32")
    return np.fromfile(path, dtype="<f4")


class NoiseFeed:
    """Serves diffusers' randn_tensor calls from fashiond's stream. fashiond draws, in order: the VAE encoder's
    sampling noise per encoded image (masked image, then image/garment), the initial latent noise, then the
    scheduler's per-step noise. Each role is a FIFO of slices of that stream, served to the diffusers module
    that draws it (the VAE's DiagonalGaussianDistribution, the pipeline, the scheduler)."""

    MODULES = {"vae": ["diffusers.models.autoencoders.vae"],
               "init": ["diffusers.pipelines.stable_diffusion.pipeline_stable_diffusion",
                        "diffusers.pipelines.stable_diffusion.pipeline_stable_diffusion_img2img",
                        "diffusers.pipelines.stable_diffusion.pipeline_stable_diffusion_inpaint",
                        "diffusers.pipelines.latent_consistency_models.pipeline_latent_consistency_text2img"],
               "step": ["diffusers.schedulers.scheduling_euler_ancestral_discrete", "diffusers.schedulers.scheduling_ddim",
                        "diffusers.schedulers.scheduling_lcm"]}

    def __init__(self, seed, n, vae_order, step_draws):
        s = noise_stream(seed)
        self.pos = 0
        self.stream = s
        encodes = {name: self.take(n) for name in vae_order["fashiond"]}
        encodes["unused"] = np.zeros(n, np.float32)
        self.fifo = {"vae": [encodes[k] for k in vae_order["diffusers"]], "init": [self.take(n)],
                     "step": [self.take(n) for _ in range(step_draws)]}
        self.draws = {"encodes": vae_order["fashiond"], "values_per_draw": n, "step_draws": step_draws}

    def take(self, n):
        v = self.stream[self.pos:self.pos + n]
        if len(v) != n:
            raise SystemExit(f"noise file too short: need {self.pos + n} values")
        self.pos += n
        return v

    def __enter__(self):
        self.saved = []
        for role, mods in self.MODULES.items():
            for name in mods:
                mod = sys.modules.get(name) or importlib.import_module(name)
                self.saved.append((mod, mod.randn_tensor))
                mod.randn_tensor = self._serve(role)
        return self

    def _serve(self, role):
        def randn_tensor(shape, generator=None, device=None, dtype=None, layout=None):
            if not self.fifo[role]:
                raise RuntimeError(f"diffusers drew more {role} noise than fashiond does")
            v = self.fifo[role].pop(0)
            if int(np.prod(shape)) != v.size:
                raise RuntimeError(f"{role} draw of shape {tuple(shape)} but fashiond draws {v.size} values")
            return torch.from_numpy(v.copy()).reshape(tuple(shape)).to(dtype or torch.float32)
        return randn_tensor

    def __exit__(self, *exc):
        for mod, fn in self.saved:
            mod.randn_tensor = fn
        if exc[0] is None:
            left = {k: len(v) for k, v in self.fifo.items() if v and k != "step"}
            if left:
                raise RuntimeError(f"diffusers drew less noise than fashiond: {left} left")
        return False


# ---------------------------------------------------------------- inputs
def make_inputs():
    d = os.path.join(OUT, "inputs")
    os.makedirs(d, exist_ok=True)
    y, x = np.mgrid[0:SIZE, 0:SIZE].astype(np.float64)
    image = np.stack([128 + 100 * np.sin(x / 9.0), 128 + 90 * np.cos(y / 7.0), 40 + 3 * (x + y) % 200], -1)
    garment = np.stack([200 - 2 * y, 60 + 0 * x, 90 + 2 * x], -1)
    person = np.stack([150 + 60 * np.sin((x + y) / 11.0), 110 + 0.5 * y, 170 - x], -1)
    mask = np.zeros((SIZE, SIZE), np.uint8)
    mask[12:52, 20:56] = 255
    pm = np.zeros((SIZE, SIZE), np.uint8)
    pm[16:60, 8:56] = 255
    files = {"image.png": image, "garment.png": garment, "person.png": person}
    for name, arr in files.items():
        Image.fromarray(np.clip(np.round(arr), 0, 255).astype(np.uint8), "RGB").save(os.path.join(d, name))
    Image.fromarray(mask, "L").save(os.path.join(d, "mask.png"))
    Image.fromarray(pm, "L").save(os.path.join(d, "person-mask.png"))


def load_input(name):
    img = Image.open(os.path.join(OUT, "inputs", name))
    img.load()
    return img


def save_expected(name, pixels):
    """pixels [3,H,W] in [0,1] -> 16-bit RGB PNG (cv2 writes BGR order)."""
    q = np.round(np.clip(pixels, 0, 1) * 65535).astype(np.uint16).transpose(1, 2, 0)[:, :, ::-1]
    path = os.path.join(OUT, "expected", name + ".png")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    cv2.imwrite(path, np.ascontiguousarray(q))
    return os.path.relpath(path, OUT)


# ---------------------------------------------------------------- the parts
class Parts:
    def __init__(self):
        torch.manual_seed(MODEL_SEED)
        prompts = [PROMPT, NEGATIVE, "", "a red dress"]
        used = {i for p in prompts for i in ids(p)}
        self.text = make_text_encoder(used)
        self.vae = make_vae()
        self.unet = plain_attention(make_unet())
        self.unet_inpaint = plain_attention(make_unet(in_channels=9))
        self.unet_lcm = plain_attention(make_unet(time_cond_proj_dim=16))
        self.unet_catvton = catvton.catvton_structure(make_unet(in_channels=9))

    @torch.no_grad()
    def embed(self, text):
        return self.text(input_ids=torch.tensor([ids(text)]))[0]


# ---------------------------------------------------------------- export
def export_models(p):
    """parity/models/sd is what scripts/export/sd.py makes of a diffusers folder holding these modules."""
    root = os.path.join(OUT, "models")
    sd_dir = os.path.join(root, "sd")
    src = "/tmp/fashiond-parity-diffusers"
    save_diffusers_folder(p, src)
    sd.export(src, sd_dir, latent=LATENT)
    link_tokenizer(sd_dir)
    parts = ["text_encoder", "unet", "vae_encoder", "vae_decoder"]

    def shared(name, own, scheduler, klass, pipeline="OnnxStableDiffusionPipeline"):
        d = os.path.join(root, name)
        os.makedirs(d, exist_ok=True)
        for part in parts + ["tokenizer"]:
            if part not in own:
                relink(os.path.join(d, part), os.path.join("..", "sd", part))
        sd_onnx.write_scheduler(d, scheduler)
        sd_onnx.write_index(d, pipeline, klass, parts)
        return d

    shared("sd-vpred", [], VPRED_SCHEDULER, "EulerDiscreteScheduler")
    d = shared("sd-inpaint", ["unet"], SD15_SCHEDULER, "PNDMScheduler", "OnnxStableDiffusionInpaintPipeline")
    sd_onnx.export_unet(p.unet_inpaint, d, latent=LATENT)
    d = shared("sd-lcm", ["unet"], LCM_SCHEDULER, "LCMScheduler", "OnnxLatentConsistencyModelPipeline")
    sd_onnx.export_unet(p.unet_lcm, d, latent=LATENT)
    d = shared("sd-fp16", ["unet", "vae_encoder", "vae_decoder"], SD15_SCHEDULER, "PNDMScheduler")
    sd_onnx.export_unet(p.unet, d, fp16=True, latent=LATENT)
    sd_onnx.export_vae(p.vae, d, fp16=True, size=SIZE)
    export_catvton(p, os.path.join(root, "catvton"))


def export_catvton(p, d):
    catvton.export_folder(p.unet_catvton, p.vae, d, CATVTON_SCHEDULER, person=(SIZE, SIZE), steps=8, guidance=2.5,
                          latent=LATENT)


def save_diffusers_folder(p, src):
    import shutil
    shutil.rmtree(src, ignore_errors=True)
    p.unet.save_pretrained(os.path.join(src, "unet"))
    p.vae.save_pretrained(os.path.join(src, "vae"))
    p.text.save_pretrained(os.path.join(src, "text_encoder"))
    sd_onnx.write_scheduler(src, SD15_SCHEDULER)
    tok = os.path.join(src, "tokenizer")
    os.makedirs(tok)
    vocab, merges = clip_vocab()
    with open(os.path.join(tok, "vocab.json"), "w") as f:
        json.dump(vocab, f)
    with open(os.path.join(tok, "merges.txt"), "w") as f:
        f.write("#version: 0.2\n" + "\n".join(merges) + "\n")


def clip_vocab():
    """CLIP's vocab.json and merges.txt from OpenAI's BPE file (as scripts/contract_models.py builds them)."""
    import gzip
    lines = gzip.open(BPE).read().decode("utf-8").split("\n")
    merges = lines[1:49152 - 256 - 2 + 1]
    symbols = list(TOK.byte_encoder.values())
    vocab = symbols + [v + "</w>" for v in symbols] + ["".join(m.split()) for m in merges]
    vocab += ["<|startoftext|>", "<|endoftext|>"]
    return {v: i for i, v in enumerate(vocab)}, merges


def link_tokenizer(d):
    # The CLIP vocabulary (1.4 MB) is not committed twice: the contract models' copy is made by `make setup`.
    relink(os.path.join(d, "tokenizer"), os.path.join("..", "..", "..", "contract", "oracle-t2i", "tokenizer"))


def relink(path, target):
    if os.path.islink(path) or os.path.exists(path):
        if os.path.isdir(path) and not os.path.islink(path):
            import shutil
            shutil.rmtree(path)
        else:
            os.remove(path)
    os.symlink(target, path)


# ---------------------------------------------------------------- cases
def scheduler_for(case):
    cfg = case["scheduler_config"]
    kind = case.get("method") or CLASS_KIND[cfg["_class_name"]]
    return SCHEDULER_CLASSES[kind].from_config(cfg)


def step_draws(kind, calls, eta):
    return {"euler-a": calls, "ddim": calls if eta > 0 else 0, "lcm": max(calls - 1, 0)}.get(kind, 0)


def run_case(p, case):
    kind = case["method"]
    sched = scheduler_for(case)
    g = case["guidance"]
    cfg = g > 1 and case["model"] != "sd-lcm"
    pe = p.embed(case["prompt"])
    kw = dict(prompt_embeds=pe, num_inference_steps=case["steps"], guidance_scale=g, output_type="np",
              height=SIZE, width=SIZE)
    if cfg:
        kw["negative_prompt_embeds"] = p.embed(case.get("negative_prompt", ""))
    mode = case["mode"]
    unet = {"sd": p.unet, "sd-vpred": p.unet, "sd-fp16": p.unet, "sd-inpaint": p.unet_inpaint, "sd-lcm": p.unet_lcm}[case["model"]]
    common = dict(vae=p.vae, text_encoder=p.text, tokenizer=None, unet=unet, scheduler=sched, safety_checker=None,
                  feature_extractor=None, requires_safety_checker=False)
    if mode == "text-to-image":
        pipe = (LatentConsistencyModelPipeline if kind == "lcm" else StableDiffusionPipeline)(**common)
        order = {"fashiond": [], "diffusers": []}
    elif mode == "img2img":
        pipe = StableDiffusionImg2ImgPipeline(**common)
        kw.update(image=load_input(case["image"]), strength=case["strength"])
        kw.pop("height"), kw.pop("width")
        order = {"fashiond": ["image"], "diffusers": ["image"]}
    else:
        pipe = StableDiffusionInpaintPipeline(**common)
        kw.update(image=load_input(case["image"]), mask_image=load_input(case["mask"]), strength=case["strength"])
        nine = case["model"] == "sd-inpaint"
        # diffusers encodes the image first (only when it needs it: 4-channel UNets, or strength < 1), then the
        # masked image (9-channel UNets); fashiond encodes the masked image first, then the image, always.
        # With a 4-channel UNet diffusers still encodes the masked image (prepare_mask_latents) and drops it: that
        # draw gets zeros ("unused").
        diff = (["image"] if (not nine or case["strength"] < 1) else []) + (["masked"] if nine else ["unused"])
        order = {"fashiond": (["masked"] if nine else []) + ["image"], "diffusers": diff}
    if kind == "ddim":
        kw["eta"] = case.get("eta", 0.0)
    pipe.set_progress_bar_config(disable=True)
    calls = calls_of(sched, case)
    n = 4 * LATENT * LATENT
    with torch.no_grad(), NoiseFeed(case["seed"], n, order, step_draws(kind, calls, case.get("eta", 0.0))) as feed:
        out = pipe(**kw).images[0]
    case["noise_draws"] = feed.draws
    case["unet_calls"] = calls
    return out.transpose(2, 0, 1)


def calls_of(sched, case):
    s = copy.deepcopy(sched)
    s.set_timesteps(case["steps"])
    n = len(s.timesteps)
    if case["mode"] != "text-to-image" and case["strength"] < 1:
        init = min(int(case["steps"] * case["strength"]), case["steps"])
        n = len(s.timesteps[max(case["steps"] - init, 0) * s.order:])
    return n


def cases():
    base = dict(prompt=PROMPT, negative_prompt="", guidance=7.5, steps=8, eta=0.0, seed=7, strength=1.0,
                mode="text-to-image", model="sd", tolerance=TOL_FP32)
    out = []

    def add(name, **kw):
        c = dict(base, name=name, **kw)
        out.append(c)

    add("t2i-pndm", method="pndm")
    add("t2i-pndm-negative", method="pndm", negative_prompt=NEGATIVE, guidance=5.0, seed=11)
    add("t2i-pndm-guidance1", method="pndm", guidance=1.0)
    add("t2i-euler-guidance0.5", method="euler", guidance=0.5, seed=11)
    add("t2i-euler", method="euler")
    add("t2i-euler-a", method="euler-a", seed=13)
    add("t2i-ddim", method="ddim")
    add("t2i-ddim-eta0.6", method="ddim", eta=0.6, seed=13)
    add("t2i-dpm++2m", method="dpm++2m", steps=10)
    add("t2i-vpred-euler-trailing", model="sd-vpred", method="euler")
    add("t2i-vpred-ddim-trailing", model="sd-vpred", method="ddim", seed=11)
    add("t2i-lcm", model="sd-lcm", method="lcm", steps=4, guidance=8.5)
    add("t2i-lcm-guidance1", model="sd-lcm", method="lcm", steps=4, guidance=1.0, seed=11)
    for s in (0.3, 0.6, 1.0):
        add(f"img2img-euler-{s}", mode="img2img", method="euler", strength=s, image="image.png", seed=17)
    add("img2img-ddim-0.5", mode="img2img", method="ddim", strength=0.5, image="image.png", prompt="a red dress")
    add("img2img-dpm++2m-0.7", mode="img2img", method="dpm++2m", strength=0.7, image="image.png", seed=13)
    add("img2img-pndm-0.5", mode="img2img", method="pndm", strength=0.5, image="image.png",
        documented_difference="PNDM img2img: diffusers slices PNDM's call list (which repeats a timestep) by the "
        "step count, which starts PLMS one grid point too high and then feeds it samples one level off; fashiond "
        "keeps the lowest int(steps*strength) grid points and builds the PLMS call list on them "
        "(diffusion/scheduler/doc.go). The engine must differ from this image by more than the tolerance.")
    add("inpaint9-pndm-1.0", mode="inpainting", model="sd-inpaint", method="pndm", image="image.png", mask="mask.png")
    add("inpaint9-ddim-0.75", mode="inpainting", model="sd-inpaint", method="ddim", strength=0.75,
        image="image.png", mask="mask.png", seed=11)
    add("inpaint4-euler-1.0", mode="inpainting", method="euler", image="image.png", mask="mask.png", seed=17)
    add("inpaint4-ddim-0.6", mode="inpainting", method="ddim", strength=0.6, image="image.png", mask="mask.png")
    add("fp16-t2i-pndm", model="sd-fp16", method="pndm", tolerance=TOL_FP16)
    add("fp16-t2i-euler-a", model="sd-fp16", method="euler-a", seed=13, tolerance=TOL_FP16)
    for c in out:
        c["scheduler_config"] = {"sd-vpred": VPRED_SCHEDULER, "sd-lcm": LCM_SCHEDULER}.get(c["model"], SD15_SCHEDULER)
        if c["mode"] == "text-to-image":
            c.pop("strength")
    return out


def main():
    global TOK
    TOK = _tokenizer()
    torch.set_num_threads(max(1, min(4, os.cpu_count() or 1)))
    # Debian 13's torch 2.6 computes some Conv2d wrongly through oneDNN at batch 2 (24 input channels at 2x2 or
    # 4x4: errors of 0.5 against batch 1 and against the plain kernel; 16, 32, 48 channels are right). The
    # guided pipelines run the UNet at batch 2, so the reference uses PyTorch's own kernels.
    torch.backends.mkldnn.enabled = False
    os.makedirs(OUT, exist_ok=True)
    make_inputs()
    p = Parts()
    export_models(p)
    results = []
    for c in cases():
        px = run_case(p, c)
        c["expected"] = save_expected(c["name"], px)
        c.pop("scheduler_config")
        results.append(c)
        print(f"{c['name']}: {c['unet_calls']} UNet calls, pixel mean {px.mean():.4f} std {px.std():.4f}", flush=True)
    for c in catvton_cases():
        px = catvton.reference_tryon(p.unet_catvton, p.vae, CATVTON_SCHEDULER, load_input(c["person"]),
                                     load_input(c["garment"]), load_input(c["mask"]), c["steps"], c["guidance"], c["eta"],
                                     noise_stream(c["seed"]))
        c["expected"] = save_expected(c["name"], px)
        results.append(c)
        print(f"{c['name']}: pixel mean {px.mean():.4f} std {px.std():.4f}", flush=True)
    meta = {"diffusers_commit": DIFFUSERS_COMMIT, "script": SCRIPT, "versions": versions(),
            "model_seed": MODEL_SEED, "size": SIZE, "noise": "noise/seed-N.f32: diffusion.Noise(N, %d)" % NOISE_FLOATS,
            "cases": results}
    sd_onnx.write_json(os.path.join(OUT, "fixtures.json"), meta)


def catvton_cases():
    base = dict(mode="try-on", model="catvton", person="person.png", garment="garment.png", mask="person-mask.png",
                method="ddim", tolerance=TOL_FP32)
    return [dict(base, name="catvton-ddim-guidance2.5-eta1", steps=8, guidance=2.5, eta=1.0, seed=19),
            dict(base, name="catvton-ddim-guidance1-eta0", steps=8, guidance=1.0, eta=0.0, seed=23)]


def versions():
    import diffusers
    import onnx
    import transformers
    v = {"torch": torch.__version__, "numpy": np.__version__, "onnx": onnx.__version__,
         "diffusers": diffusers.__version__, "transformers": transformers.__version__}
    try:
        with open("/opt/fashiond-ref/VERSIONS") as f:
            v["sources"] = f.read().strip().splitlines()
    except OSError:
        pass
    return v


if __name__ == "__main__":
    main()
