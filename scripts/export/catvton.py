"""Exports a CatVTON try-on model to the folder fashiond installs (Optimum's layout + fashiond.json, layout
"catvton"; docs/GENERATIVE.md section 6), and holds CatVTON's sampling loop as the reference the parity
fixtures compare the engine with.

    python3 scripts/export/catvton.py --base SD15_INPAINT_DIR --attention CATVTON_ATTN OUT
        [--fp16] [--optimize basic|extended] [--person 768x1024] [--steps 50] [--guidance 2.5]

--base is a diffusers folder of Stable Diffusion 1.5 inpainting (unet/, vae/, scheduler/); --attention is
CatVTON's attention checkpoint (a model.safetensors, or the `attention` folder holding it, e.g.
mix-48k-1024/attention). CatVTON's structure: the SD-1.5 inpainting UNet (9 channels) with every
cross-attention (attn2) replaced by a processor that returns its input (SkipAttnProcessor: no text), and its
self-attention weights (every module whose name contains "attn1", in named_modules order) loaded from the
checkpoint. The exported UNet keeps an encoder_hidden_states input [batch, 77, cross_attention_dim] that it
ignores (fashiond feeds zeros). Then: fashiond models install --name vton OUT
"""
import argparse
import os
import sys

import numpy as np
import onnx
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sd_onnx  # noqa: E402


class SkipAttnProcessor(torch.nn.Module):
    """CatVTON's cross-attention replacement: the block's attn2 returns its (normed) input."""

    def __call__(self, attn, hidden_states, encoder_hidden_states=None, attention_mask=None, temb=None, **kw):
        return hidden_states


def catvton_structure(unet):
    from diffusers.models.attention_processor import AttnProcessor
    unet.set_attn_processor({n: SkipAttnProcessor() if n.endswith("attn2.processor") else AttnProcessor()
                             for n in unet.attn_processors})
    return unet


def attention_modules(unet):
    """The module list CatVTON's checkpoint was saved from: every module whose name contains attn1."""
    return torch.nn.ModuleList([m for name, m in unet.named_modules() if "attn1" in name])


def load_attention(unet, path):
    """Loads CatVTON's attention checkpoint into the UNet's self-attention modules. The module list holds each
    attn1 and also its children, so one tensor has several names (0.to_q.weight and 1.weight); the checkpoint,
    saved without duplicates, carries one of them. Every tensor must be found under one of its names, and
    every name in the file must be one of the list's."""
    from safetensors.torch import load_file
    if os.path.isdir(path):
        path = os.path.join(path, "model.safetensors")
    state = load_file(path)
    own = attention_modules(unet).state_dict(keep_vars=True)
    aliases = {}
    for name, t in own.items():
        aliases.setdefault(t.data_ptr(), []).append(name)
    missing = []
    with torch.no_grad():
        for names in aliases.values():
            hit = [n for n in names if n in state]
            if not hit:
                missing.append(names[0])
                continue
            src = state[hit[0]]
            if src.shape != own[names[0]].shape:
                raise SystemExit(f"catvton.py: {path}: {hit[0]} has shape {tuple(src.shape)}, the UNet's {tuple(own[names[0]].shape)}")
            own[names[0]].copy_(src)
    unexpected = [k for k in state if k not in own]
    if missing or unexpected:
        raise SystemExit(f"catvton.py: {path} does not fit the UNet's self-attention modules: "
                         f"{len(missing)} missing tensors (e.g. {missing[:3]}), {len(unexpected)} unexpected (e.g. {unexpected[:3]})")
    print(f"loaded {len(aliases)} self-attention tensors from {path}", flush=True)


def keep_hidden_states_input(path, dim, seq_len=77):
    """SkipAttnProcessor leaves encoder_hidden_states unused, so the exporter drops it; declare it again
    (an unused graph input) so the graph has the Optimum UNet signature fashiond feeds zeros to."""
    m = onnx.load(path, load_external_data=False)
    names = [i.name for i in m.graph.input]
    if "encoder_hidden_states" in names:
        return
    elem = m.graph.input[0].type.tensor_type.elem_type
    vi = onnx.helper.make_tensor_value_info("encoder_hidden_states", elem, ["batch", seq_len, dim])
    m.graph.input.insert(2, vi)
    onnx.save_model(m, path)
    onnx.checker.check_model(path)


def export_folder(unet, vae, out, scheduler, person=(768, 1024), steps=50, guidance=2.5, fp16=False, latent=None):
    w, h = person
    lat = latent or 8
    sd_onnx.export_unet(unet, out, fp16=fp16, latent=lat)
    keep_hidden_states_input(f"{out}/unet/model.onnx", unet.config.cross_attention_dim)
    sd_onnx.export_vae(vae, out, fp16=fp16, size=lat * 2 ** (len(vae.config.block_out_channels) - 1))
    sd_onnx.write_scheduler(out, scheduler)
    sd_onnx.write_index(out, "CatVTONPipeline", scheduler["_class_name"], ["unet", "vae_encoder", "vae_decoder"])
    sd_onnx.write_json(f"{out}/fashiond.json", {"layout": "catvton", "concat_axis": "height", "text_encoder": False,
                                                 "person_width": w, "person_height": h, "steps": steps,
                                                 "guidance": guidance})


# ---------------------------------------------------------------- the reference sampling loop
def _planes(img):
    a = np.asarray(img.convert("RGB"), dtype=np.float32)
    return torch.from_numpy(a / 127.5 - 1).permute(2, 0, 1)[None]


def _mask(img):
    a = np.asarray(img.convert("L"), dtype=np.float32) / 255
    return torch.from_numpy((a >= 0.5).astype(np.float32))[None, None]


@torch.no_grad()
def reference_tryon(unet, vae, scheduler_config, person, garment, mask, steps, guidance, eta, noise):
    """CatVTON's public pipeline behaviour: the masked person and the garment VAE-encoded separately and
    joined along the latent height, the mask on the person half (zeros below), noise over the joined
    latents; with guidance > 1 an unconditional row first whose garment half is zeroed, output
    uncond + g (cond - uncond); no text (encoder_hidden_states None, cross-attention skipped); DDIM with eta;
    the top (person) half decoded. noise is fashiond's stream for the seed: the masked person's encoder
    sample, the garment's, the initial noise, then DDIM's variance noise per step (eta > 0)."""
    from diffusers import DDIMScheduler
    sched = DDIMScheduler.from_config(scheduler_config)
    pos = [0]

    def take(shape):
        n = int(np.prod(shape))
        v = torch.from_numpy(noise[pos[0]:pos[0] + n].copy()).reshape(shape)
        pos[0] += n
        return v

    def encode(x):
        dist = vae.encode(x).latent_dist
        return (dist.mean + dist.std * take(dist.mean.shape)) * vae.config.scaling_factor

    image, cloth, m = _planes(person), _planes(garment), _mask(mask)
    masked = image * (m < 0.5)
    masked_latent = encode(masked)
    condition_latent = encode(cloth)
    mask_latent = torch.nn.functional.interpolate(m, size=masked_latent.shape[-2:], mode="nearest")
    masked_concat = torch.cat([masked_latent, condition_latent], dim=-2)
    mask_concat = torch.cat([mask_latent, torch.zeros_like(mask_latent)], dim=-2)
    latents = take(masked_concat.shape) * sched.init_noise_sigma
    sched.set_timesteps(steps)
    cfg = guidance > 1
    if cfg:
        masked_concat = torch.cat([torch.cat([masked_latent, torch.zeros_like(condition_latent)], dim=-2), masked_concat])
        mask_concat = torch.cat([mask_concat] * 2)
    for t in sched.timesteps:
        x = torch.cat([latents] * 2) if cfg else latents
        x = sched.scale_model_input(x, t)
        x = torch.cat([x, mask_concat, masked_concat], dim=1)
        pred = unet(x, t, encoder_hidden_states=None, return_dict=False)[0]
        if cfg:
            uncond, cond = pred.chunk(2)
            pred = uncond + guidance * (cond - uncond)
        kw = {"variance_noise": take(latents.shape)} if eta > 0 else {}
        latents = sched.step(pred, t, latents, eta=eta, **kw).prev_sample
    latents = latents.split(latents.shape[-2] // 2, dim=-2)[0]
    img = vae.decode(latents / vae.config.scaling_factor, return_dict=False)[0]
    return (img / 2 + 0.5).clamp(0, 1)[0].float().numpy()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--base", required=True, help="diffusers folder of SD-1.5 inpainting")
    ap.add_argument("--attention", required=True, help="CatVTON's attention model.safetensors (or its folder)")
    ap.add_argument("--fp16", action="store_true")
    ap.add_argument("--optimize", choices=["basic", "extended"])
    ap.add_argument("--person", default="768x1024", help="WIDTHxHEIGHT the model runs at")
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--guidance", type=float, default=2.5)
    a = ap.parse_args(argv)
    import json
    from diffusers import AutoencoderKL, UNet2DConditionModel
    unet = UNet2DConditionModel.from_pretrained(a.base, subfolder="unet").eval()
    if unet.config.in_channels != 9:
        raise SystemExit(f"catvton.py: {a.base}/unet has in_channels {unet.config.in_channels}; CatVTON needs SD-1.5 inpainting (9)")
    vae = AutoencoderKL.from_pretrained(a.base, subfolder="vae").eval()
    catvton_structure(unet)
    load_attention(unet, a.attention)
    with open(os.path.join(a.base, "scheduler", "scheduler_config.json")) as f:
        sched = json.load(f)
    sched["_class_name"] = "DDIMScheduler"  # CatVTON samples with DDIM on SD-1.5-inpainting's config
    w, h = (int(v) for v in a.person.lower().split("x"))
    export_folder(unet, vae, a.out, sched, person=(w, h), steps=a.steps, guidance=a.guidance, fp16=a.fp16, latent=h // 8)
    if a.optimize:
        sd_onnx.optimize(a.out, a.optimize)
    print(f"exported CatVTON ({a.base} + {a.attention}) -> {a.out}", flush=True)


if __name__ == "__main__":
    main()
