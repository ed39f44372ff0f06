"""Exports a Stable Diffusion checkpoint to the ONNX folder fashiond installs (Hugging Face Optimum's layout).

    python3 scripts/export/sd.py SRC OUT [--fp16] [--optimize basic|extended] [--config DIR]

SRC is a diffusers folder (model_index.json with unet/, vae/, text_encoder/, tokenizer/, scheduler/) or a
single-file checkpoint (.safetensors / .ckpt, SD-1.x/2.x; --config names a diffusers folder of the same
architecture whose *.json configs and tokenizer are used, since no hub is reached). The UNet's in_channels
decides text-to-image (4) or inpainting (9); an LCM UNet (time_cond_proj_dim) keeps its timestep_cond input.
Graphs over 2 GB keep their weights in model.onnx_data. --fp16 converts the UNet and the VAE (the text encoder
stays float32); fp16 graphs are for GPUs. --optimize runs ONNX Runtime's offline graph optimiser on each graph.

Then: fashiond models install --name NAME OUT
To check the export against PyTorch: --reference DIR --seed N --noise FILE (see `fashiond models verify`).
Needs torch >= 2.6, onnx, diffusers and transformers (scripts/reference/setup.sh builds such an environment).
"""
import argparse
import glob
import json
import os
import shutil
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sd_onnx  # noqa: E402

PIPELINES = {4: "OnnxStableDiffusionPipeline", 9: "OnnxStableDiffusionInpaintPipeline"}


def load(src, config):
    from diffusers import AutoencoderKL, UNet2DConditionModel
    from transformers import CLIPTextModel
    if os.path.isdir(src):
        unet = UNet2DConditionModel.from_pretrained(src, subfolder="unet")
        vae = AutoencoderKL.from_pretrained(src, subfolder="vae")
        text = CLIPTextModel.from_pretrained(os.path.join(src, "text_encoder"))
        return unet, vae, text, src
    if not config:
        raise SystemExit("sd.py: a single-file checkpoint needs --config DIR (a diffusers folder of the same architecture)")
    from diffusers import StableDiffusionPipeline
    pipe = StableDiffusionPipeline.from_single_file(src, config=config, local_files_only=True,
                                                    safety_checker=None, requires_safety_checker=False)
    return pipe.unet, pipe.vae, pipe.text_encoder, config


def export(src, out, fp16=False, optimize=None, config=None, latent=64):
    unet, vae, text, cfgdir = load(src, config)
    for m in (unet, vae, text):
        m.eval()
    text.config._attn_implementation = "eager"
    os.makedirs(out, exist_ok=True)
    sd_onnx.export_text_encoder(text, out)
    sd_onnx.export_unet(unet, out, fp16=fp16, latent=latent)
    sd_onnx.export_vae(vae, out, fp16=fp16, size=latent * 2 ** (len(vae.config.block_out_channels) - 1))
    with open(os.path.join(cfgdir, "scheduler", "scheduler_config.json")) as f:
        sched = json.load(f)
    sd_onnx.write_scheduler(out, sched)
    tok = os.path.join(cfgdir, "tokenizer")
    if not os.path.isdir(tok):
        raise SystemExit(f"sd.py: {tok} is missing (CLIP's vocab.json and merges.txt)")
    dst = os.path.join(out, "tokenizer")
    if os.path.islink(dst):
        os.remove(dst)
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(tok, os.path.join(out, "tokenizer"))
    pipeline = PIPELINES.get(unet.config.in_channels)
    if pipeline is None:
        raise SystemExit(f"sd.py: UNet in_channels {unet.config.in_channels} is neither 4 nor 9")
    if unet.config.time_cond_proj_dim:
        pipeline = "OnnxLatentConsistencyModelPipeline"
    sd_onnx.write_index(out, pipeline, sched["_class_name"], ["text_encoder", "unet", "vae_encoder", "vae_decoder"])
    if optimize:
        sd_onnx.optimize(out, optimize)
    return unet, vae, text


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("src")
    ap.add_argument("out")
    ap.add_argument("--fp16", action="store_true", help="float16 UNet and VAE (for GPUs)")
    ap.add_argument("--optimize", choices=["basic", "extended"], help="ONNX Runtime offline graph optimisation")
    ap.add_argument("--config", help="diffusers folder with the configs and tokenizer of a single-file checkpoint")
    ap.add_argument("--latent", type=int, default=64, help="latent side of the export's example inputs (dims stay dynamic)")
    ap.add_argument("--reference", help="also write a reference image folder for `fashiond models verify --reference`")
    ap.add_argument("--noise", help="fashiond's noise for --seed (fashiond models noise --seed N --count C FILE)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--prompt", default="a linen shirt on a hanger, studio photo")
    ap.add_argument("--negative-prompt", default="")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--guidance", type=float, default=7.5)
    ap.add_argument("--size", type=int, default=512, help="reference image side in pixels")
    a = ap.parse_args(argv)
    torch.manual_seed(0)
    unet, vae, text = export(a.src, a.out, a.fp16, a.optimize, a.config, a.latent)
    print(f"exported {a.src} -> {a.out} ({'fp16' if a.fp16 else 'fp32'}):", ", ".join(
        f"{p} {sum(os.path.getsize(f) for f in glob.glob(os.path.join(a.out, p, 'model.onnx*'))) / 1e6:.1f} MB"
        for p in ("text_encoder", "unet", "vae_encoder", "vae_decoder")), flush=True)
    if a.reference:
        import reference
        if not a.noise:
            raise SystemExit("sd.py: --reference needs --noise (fashiond's noise for --seed)")
        reference.write_reference(a.reference, a.out, unet, vae, text, seed=a.seed, noise_file=a.noise,
                                  prompt=a.prompt, negative_prompt=a.negative_prompt, steps=a.steps,
                                  guidance=a.guidance, size=a.size)
        print(f"reference written to {a.reference}", flush=True)


if __name__ == "__main__":
    main()
