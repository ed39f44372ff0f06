"""Writes diffusion/testdata/flow/flux-shift.json: FLUX's resolution-dependent time grids as diffusers
computes them, for diffusion.ResolutionShift's test.

Run in the reference environment (scripts/reference/setup.sh):
    scripts/reference/run.sh scripts/reference/flux_shift.py

For each (steps, image tokens) case, diffusers' FluxPipeline.calculate_shift gives mu from the image sequence
length (base_image_seq_len 256, max_image_seq_len 4096, base_shift 0.5, max_shift 1.15: FLUX.1's scheduler
config), and FlowMatchEulerDiscreteScheduler(use_dynamic_shifting=True) .set_timesteps(sigmas=linspace(1, 1/n, n),
mu=mu) gives the sigmas (noise level, 1 = noise), as FluxPipeline calls it. The file stores mu and the sigmas
(float32, n+1 values with the terminal 0); fashiond's time runs the other way (t = 1 - sigma).
"""
import json
import os

import numpy as np
from diffusers import FlowMatchEulerDiscreteScheduler
from diffusers.pipelines.flux.pipeline_flux import calculate_shift

CONFIG = dict(base_image_seq_len=256, max_image_seq_len=4096, base_shift=0.5, max_shift=1.15)
# (steps, image tokens): FLUX at 256², 512², 1024², 1024x1536 (packed 2x2 latent patches), and FASHN VTON's
# 72x48 token grid; one step; a length past max_image_seq_len (the line is extrapolated, not clamped).
CASES = [(4, 256), (28, 1024), (28, 4096), (50, 6144), (30, 3456), (1, 4096), (8, 16384)]


def main():
    out = []
    for steps, tokens in CASES:
        sched = FlowMatchEulerDiscreteScheduler(use_dynamic_shifting=True, **CONFIG)
        mu = calculate_shift(tokens, CONFIG["base_image_seq_len"], CONFIG["max_image_seq_len"],
                             CONFIG["base_shift"], CONFIG["max_shift"])
        sched.set_timesteps(sigmas=np.linspace(1.0, 1 / steps, steps), mu=mu)
        out.append({"steps": steps, "tokens": tokens, "mu": mu, "sigmas": [float(s) for s in sched.sigmas.numpy()]})
    path = os.path.join("diffusion", "testdata", "flow", "flux-shift.json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as fh:
        json.dump({"config": CONFIG, "cases": out}, fh, indent=1)
        fh.write("\n")
    print(f"wrote {path}: {len(out)} cases")


if __name__ == "__main__":
    main()
