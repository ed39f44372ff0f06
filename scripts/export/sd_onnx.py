"""Exports Stable-Diffusion-family PyTorch modules (diffusers' UNet2DConditionModel and AutoencoderKL,
transformers' CLIPTextModel) to ONNX in Hugging Face Optimum's folder layout, the layout fashiond's
diffusion engine loads (docs/GENERATIVE.md). Used by scripts/export/sd.py, scripts/export/catvton.py
and scripts/reference/make_fixtures.py; runs in the reference environment (scripts/reference/setup.sh)
or anywhere with torch >= 2.6, onnx, diffusers and transformers.

Graphs (Optimum's names):
  text_encoder  input_ids [B,77] int64 -> last_hidden_state [B,77,D], pooler_output [B,D]
  unet          sample [B,C,h,w], timestep [B] float32, encoder_hidden_states [B,77,D]
                (+ timestep_cond [B,E] for LCM UNets) -> out_sample [B,4,h,w]
  vae_encoder   sample [B,3,H,W] -> latent_parameters [B,8,h,w] (mean || logvar)
  vae_decoder   latent_sample [B,4,h,w] -> sample [B,3,H,W]
fp16 exports convert the UNet and the VAE (their float inputs and outputs become float16); the text
encoder stays float32 (ONNX Runtime refuses a float16 CLIP export: LayerNormalization's type check).
"""
import copy
import json
import os
import shutil

import onnx
import torch

OPSET = 17
# Protobuf cannot hold a file over 2 GiB: larger graphs keep their tensors in model.onnx_data.
EXTERNAL_DATA_BYTES = 2_000_000_000
# Tensors smaller than this stay inside model.onnx when the data goes to model.onnx_data (ONNX
# Runtime's load-time shape inference needs Reshape's shape constants inline).
EXTERNAL_DATA_THRESHOLD = 1024


class TextEncoderGraph(torch.nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, input_ids):
        o = self.m(input_ids=input_ids)
        return o.last_hidden_state, o.pooler_output


class UNetGraph(torch.nn.Module):
    def __init__(self, u):
        super().__init__()
        self.u = u

    def forward(self, sample, timestep, encoder_hidden_states, timestep_cond=None):
        return self.u(sample, timestep, encoder_hidden_states, timestep_cond=timestep_cond, return_dict=False)[0]


class VAEEncoderGraph(torch.nn.Module):
    def __init__(self, v):
        super().__init__()
        self.v = v

    def forward(self, sample):
        return self.v.encode(sample).latent_dist.parameters


class VAEDecoderGraph(torch.nn.Module):
    def __init__(self, v):
        super().__init__()
        self.v = v

    def forward(self, latent_sample):
        return self.v.decode(latent_sample, return_dict=False)[0]


def _save(path, src):
    """Loads the graph at src (with its external data), writes it as path = model.onnx, or model.onnx +
    model.onnx_data when it is too large for one protobuf, and removes src's folder."""
    d = os.path.dirname(path)
    m = onnx.load(src, load_external_data=True)
    big = sum(t.ByteSize() for t in m.graph.initializer) > EXTERNAL_DATA_BYTES
    for f in ("model.onnx", "model.onnx_data"):
        if os.path.exists(os.path.join(d, f)):
            os.remove(os.path.join(d, f))
    if big:
        onnx.save_model(m, path, save_as_external_data=True, all_tensors_to_one_file=True,
                        location="model.onnx_data", size_threshold=EXTERNAL_DATA_THRESHOLD)
    else:
        onnx.save_model(m, path)
    shutil.rmtree(os.path.dirname(src))
    onnx.checker.check_model(path)


def export_graph(module, args, path, inputs, outputs, dynamic):
    """torch.onnx.export (TorchScript exporter, opset 17) into a fresh folder, then _save."""
    tmp = os.path.join(os.path.dirname(path), ".export", "model.onnx")
    shutil.rmtree(os.path.dirname(tmp), ignore_errors=True)
    os.makedirs(os.path.dirname(tmp))
    with torch.no_grad():
        torch.onnx.export(module, args, tmp, input_names=inputs, output_names=outputs,
                          dynamic_axes=dynamic, opset_version=OPSET, dynamo=False, do_constant_folding=True)
    _save(path, tmp)


def export_text_encoder(text, out, seq_len=77):
    t = copy.deepcopy(text).float().eval()
    export_graph(TextEncoderGraph(t), (torch.ones(1, seq_len, dtype=torch.int64),),
                 f"{out}/text_encoder/model.onnx", ["input_ids"], ["last_hidden_state", "pooler_output"],
                 {"input_ids": {0: "batch"}, "last_hidden_state": {0: "batch"}, "pooler_output": {0: "batch"}})
    cfg = text.config.to_dict()
    cfg["architectures"] = ["CLIPTextModel"]
    cfg["torch_dtype"] = "float32"
    write_json(f"{out}/text_encoder/config.json", cfg)


def export_unet(unet, out, fp16=False, latent=8, seq_len=77):
    u = copy.deepcopy(unet).eval()
    dt = torch.float16 if fp16 else torch.float32
    u = u.to(dt)
    c, d = unet.config.in_channels, unet.config.cross_attention_dim
    args = [torch.randn(2, c, latent, latent, dtype=dt), torch.tensor([500.0, 500.0], dtype=dt),
            torch.randn(2, seq_len, d, dtype=dt)]
    names = ["sample", "timestep", "encoder_hidden_states"]
    dyn = {"sample": {0: "batch", 2: "height", 3: "width"}, "timestep": {0: "batch"},
           "encoder_hidden_states": {0: "batch"}, "out_sample": {0: "batch", 2: "height", 3: "width"}}
    if unet.config.time_cond_proj_dim:
        args.append(torch.randn(2, unet.config.time_cond_proj_dim, dtype=dt))
        names.append("timestep_cond")
        dyn["timestep_cond"] = {0: "batch"}
    export_graph(UNetGraph(u), tuple(args), f"{out}/unet/model.onnx", names, ["out_sample"], dyn)
    write_json(f"{out}/unet/config.json", dict(unet.config))


def export_vae(vae, out, fp16=False, size=64):
    v = copy.deepcopy(vae).eval()
    dt = torch.float16 if fp16 else torch.float32
    v = v.to(dt)
    f = 2 ** (len(vae.config.block_out_channels) - 1)
    export_graph(VAEEncoderGraph(v), (torch.randn(1, 3, size, size, dtype=dt),), f"{out}/vae_encoder/model.onnx",
                 ["sample"], ["latent_parameters"],
                 {"sample": {0: "batch", 2: "height", 3: "width"},
                  "latent_parameters": {0: "batch", 2: "latent_height", 3: "latent_width"}})
    export_graph(VAEDecoderGraph(v), (torch.randn(1, 4, size // f, size // f, dtype=dt),), f"{out}/vae_decoder/model.onnx",
                 ["latent_sample"], ["sample"],
                 {"latent_sample": {0: "batch", 2: "latent_height", 3: "latent_width"},
                  "sample": {0: "batch", 2: "height", 3: "width"}})
    for part in ("vae_encoder", "vae_decoder"):
        write_json(f"{out}/{part}/config.json", dict(vae.config))


def write_json(path, obj):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(obj, f, indent=1, sort_keys=True, default=_json_default)
        f.write("\n")


def _json_default(o):
    if isinstance(o, (tuple, set)):
        return list(o)
    raise TypeError(f"cannot write {type(o)} as JSON")


def write_index(out, pipeline_class, scheduler_class, parts):
    idx = {"_class_name": pipeline_class, "_diffusers_version": "0.40.0",
           "scheduler": ["diffusers", scheduler_class], "tokenizer": ["transformers", "CLIPTokenizer"]}
    for p in parts:
        idx[p] = ["onnxruntime", "ORTModel"]
    write_json(f"{out}/model_index.json", idx)


def write_scheduler(out, config):
    write_json(f"{out}/scheduler/scheduler_config.json", config)


def optimize(out, level):
    """Rewrites every graph of the folder with ONNX Runtime's offline optimiser at level "basic" (portable
    constant folding and redundant-node removal, safe for any execution provider) or "extended" (adds
    fusions that may tie the graph to the CPU provider of this onnxruntime version)."""
    import onnxruntime as ort
    levels = {"basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
              "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED}
    for part in ("text_encoder", "unet", "vae_encoder", "vae_decoder"):
        path = f"{out}/{part}/model.onnx"
        if not os.path.exists(path):
            continue
        so = ort.SessionOptions()
        so.graph_optimization_level = levels[level]
        tmp = f"{out}/{part}/.optimized/model.onnx"
        os.makedirs(os.path.dirname(tmp), exist_ok=True)
        so.optimized_model_filepath = tmp
        so.add_session_config_entry("session.optimized_model_external_initializers_file_name", "model.onnx_data")
        so.add_session_config_entry("session.optimized_model_external_initializers_min_size_in_bytes",
                                    str(EXTERNAL_DATA_THRESHOLD))
        ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        _save(path, tmp)
