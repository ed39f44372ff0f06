#!/usr/bin/python3
"""Generate the diffusion engine's contract models (small ONNX test models).

usage: contract_models.py OUTDIR [--bpe PATH] [--only NAME[,NAME...]] [--no-check]

Run with Debian's /usr/bin/python3 (python3-onnx >= 1.12, python3-numpy); no
torch, no onnxruntime. Writes one folder per variant under OUTDIR, each in
Hugging Face Optimum's ONNX Stable-Diffusion layout (model_index.json,
scheduler/, tokenizer/, text_encoder/, unet/, vae_encoder/, vae_decoder/).
The "oracle-*" variants compute a closed form whose constants are written to
fashiond_oracle.json, so Go tests can predict every output; the "shape-*"
variants have SD-1.5's real tensor signature with small random bodies.
diffusion/testdata/README.md documents every variant and the formulas.

Offline and deterministic: fixed numpy seeds, protobuf serialised with
deterministic=True, so the same onnx version writes the same bytes (their
SHA-256 sums are committed in diffusion/testdata/contract.sha256 and checked
by scripts/setup-contract-models.sh). Unless --no-check is given, every graph
written is reloaded from disk, passed through onnx.checker and strict shape
inference, and executed by the small numpy interpreter below (this onnx has no
onnx.reference) on a 64x64-pixel / 8x8-latent input; oracle outputs must
match the closed form computed independently in float64.
"""
import argparse
import functools
import gzip
import hashlib
import json
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, mapping, numpy_helper

OPSET = 17
IR_VERSION = 8
PRODUCER = "fashiond scripts/contract_models.py"
PRODUCER_VERSION = "1"
DIFFUSERS_VERSION = "0.30.0"

SEQ_LEN = 77
VOCAB_SIZE = 49408
BOS_ID, EOS_ID = 49406, 49407
BPE_MERGES = 49152 - 256 - 2  # merges used by CLIP: lines 1..48894
BPE_SHA256 = "924691ac288e54409236115652ad4aa250f48203de50a9e4722a6ecd48d6804a"

TRAIN_STEPS = 1000
BETA_START, BETA_END = 0.00085, 0.012
SCALING_FACTOR = 0.18215
LATENT_CHANNELS = 4
VAE_FACTOR = 8  # pixels per latent cell along each axis
VAE_BLOCKS = [128, 256, 512, 512]  # 4 entries: 2**(4-1) = VAE_FACTOR

# Oracle constants (see README): seed, sizes and ranges.
ORACLE_SEED = 20240611
ORACLE_HIDDEN = 8
ORACLE_AMP = 0.8
ORACLE_LOGVAR = -30.0
ORACLE_VAE_ROW_L1 = 0.2  # sum_c |A[r,c]|: |A z + b| < 1 for |z| <= AMP/SCALING_FACTOR
ORACLE_VAE_BIAS_MAX = 0.05
LCM_COND_DIM = 256
LCM_K = 0.5

# oracle-catvton: the UNet's encoder_hidden_states width (SD-1.5's; the
# engine feeds zeros of the declared shape) and fashiond.json's person size
# and sampling defaults (guidance 1: with guidance w the oracle's try-on
# region decodes to bias + w*(garment mean - bias), see README).
CATVTON_HIDDEN = 768
CATVTON_PERSON = (192, 256)  # width, height in pixels
CATVTON_STEPS = 30
CATVTON_GUIDANCE = 1.0

# shape-sd15 sizes.
SHAPE_SEED = 15
SHAPE_HIDDEN = 768
SHAPE_TABLE = 1024
SHAPE_WIDTH = 64
SHAPE_MID_CONVS = 3
SHAPE_TIME_FREQS = 32
SHAPE_SAMPLE_SIZE = 64
SHAPE_LN_EPS = 1e-5
SHAPE_VAE_CHANNELS = [32, 16, 8]  # decoder widths at x1, x2, x4; mirrored in the encoder
SHAPE_LOGVAR_BIAS = -10.0

SELFTEST_BATCH = 2
SELFTEST_LATENT = 8

F32 = TensorProto.FLOAT
F16 = TensorProto.FLOAT16
I64 = TensorProto.INT64
I32 = TensorProto.INT32


# ---------------------------------------------------------------- variants

def variant_table():
    """The eleven variants: directory name -> options (see README.md)."""
    base = dict(kind="oracle", pipeline="StableDiffusionPipeline", ids=I64,
                t_type=F32, t_rank=0, in_channels=4, encoder_out="latent_parameters",
                fp16=False, scheduler="pndm", prediction="epsilon", pad="<|endoftext|>",
                lcm=False, external=False)
    table = [
        ("oracle-t2i", dict(external=True)),
        ("oracle-legacy", dict(ids=I32, t_type=I64, t_rank=1, encoder_out="latent_sample", scheduler="ddim")),
        ("oracle-floatb", dict(t_rank=1, scheduler="euler")),
        ("oracle-inpaint", dict(pipeline="StableDiffusionInpaintPipeline", in_channels=9, t_rank=1)),
        ("oracle-fp16", dict(fp16=True, t_type=F16, t_rank=1)),
        ("oracle-fp16-scalar", dict(fp16=True, t_type=F16, t_rank=0)),
        ("oracle-vpred", dict(scheduler="euler-vpred", prediction="v_prediction", pad="!")),
        ("oracle-lcm", dict(pipeline="LatentConsistencyModelPipeline", lcm=True, t_type=I64, t_rank=1, scheduler="lcm")),
        ("shape-sd15", dict(kind="shape")),
        ("shape-sd15-inpaint", dict(kind="shape", pipeline="StableDiffusionInpaintPipeline", in_channels=9)),
        ("oracle-catvton", dict(kind="catvton", pipeline="CatVTONPipeline", in_channels=9, t_rank=1, scheduler="ddim")),
    ]
    out = []
    for name, opts in table:
        v = dict(base)
        v.update(opts)
        v["name"] = name
        out.append(v)
    return out


# ---------------------------------------------------------------- schedule

def sigma_table():
    """sigma_k = sqrt((1-ab_k)/ab_k) for SD's scaled_linear betas, as float32."""
    betas = np.linspace(BETA_START ** 0.5, BETA_END ** 0.5, TRAIN_STEPS, dtype=np.float64) ** 2
    ab = np.cumprod(1.0 - betas)
    return np.sqrt((1.0 - ab) / ab).astype(np.float32)


# ---------------------------------------------------------------- constants

def oracle_constants():
    """Every constant of the oracle graphs, rounded to float32."""
    rng = np.random.default_rng(ORACLE_SEED)
    f32 = lambda a: np.asarray(a, dtype=np.float32)  # noqa: E731
    c = {}
    c["f"] = f32(rng.uniform(1e-3, 1e-2, ORACLE_HIDDEN))
    c["phi"] = f32(rng.uniform(-np.pi, np.pi, ORACLE_HIDDEN))
    c["W"] = f32(rng.normal(0.0, 0.8, (LATENT_CHANNELS, ORACLE_HIDDEN)))
    c["a"] = f32(rng.uniform(0.5, 1.5, LATENT_CHANNELS))
    c["u"] = f32(rng.uniform(0.05, 0.5, LATENT_CHANNELS))
    c["v"] = f32(rng.uniform(0.05, 0.5, LATENT_CHANNELS))
    c["psi"] = f32(rng.uniform(-np.pi, np.pi, LATENT_CHANNELS))
    c["q"] = f32(rng.normal(0.0, 1.0 / 16.0, LCM_COND_DIM))
    c["k"] = f32(LCM_K)
    c["amp"] = f32(ORACLE_AMP)
    while True:
        mag = rng.uniform(0.5, 1.5, (3, LATENT_CHANNELS))
        sign = rng.choice([-1.0, 1.0], (3, LATENT_CHANNELS))
        A = sign * mag / mag.sum(axis=1, keepdims=True) * ORACLE_VAE_ROW_L1
        if np.linalg.cond(A) < 10.0:
            break
    c["A"] = f32(A)
    c["bias"] = f32(rng.uniform(-ORACLE_VAE_BIAS_MAX, ORACLE_VAE_BIAS_MAX, 3))
    c["A_pinv"] = f32(np.linalg.pinv(c["A"].astype(np.float64)))
    c["sigmas"] = sigma_table()
    return c


# ---------------------------------------------------------------- graph building

class Graph:
    """A small ONNX graph builder: named initializers, auto-named node outputs."""

    def __init__(self, name):
        self.name = name
        self.nodes, self.inits, self.inputs, self.outputs = [], [], [], []
        self.consts = {}
        self.count = 0

    def const(self, name, value, dtype=np.float32):
        """Adds initializer name (once; a repeated name must repeat the value)."""
        arr = np.asarray(value, dtype=dtype)
        if name in self.consts:
            if not np.array_equal(self.consts[name], arr):
                raise ValueError("initializer %s redefined with another value" % name)
            return name
        self.consts[name] = arr
        self.inits.append(numpy_helper.from_array(arr, name))
        return name

    def op(self, op_type, inputs, out=None, **attrs):
        self.count += 1
        if out is None:
            out = "%s_%d" % (op_type.lower(), self.count)
        self.nodes.append(helper.make_node(op_type, list(inputs), [out], name="%s_%d" % (op_type, self.count), **attrs))
        return out

    def input(self, name, elem, shape):
        self.inputs.append(helper.make_tensor_value_info(name, elem, shape))
        return name

    def output(self, name, elem, shape):
        self.outputs.append(helper.make_tensor_value_info(name, elem, shape))

    def silu(self, x):
        return self.op("Mul", [x, self.op("Sigmoid", [x])])

    def model(self):
        graph = helper.make_graph(self.nodes, self.name, self.inputs, self.outputs, self.inits)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name=PRODUCER, producer_version=PRODUCER_VERSION)
        m.ir_version = IR_VERSION
        return m


def float_in(g, name, fp16, shape):
    """Declares a float input; returns the float32 tensor the body uses."""
    g.input(name, F16 if fp16 else F32, shape)
    return g.op("Cast", [name], to=F32) if fp16 else name


def float_out(g, x, name, fp16, shape):
    """Routes float32 tensor x to graph output name (cast to fp16 if asked)."""
    g.op("Cast", [x], out=name, to=F16) if fp16 else g.op("Identity", [x], out=name)
    g.output(name, F16 if fp16 else F32, shape)


def ids_input(g, v):
    g.input("input_ids", v["ids"], ["batch", SEQ_LEN])
    return "input_ids"


def text_outputs(g, v, hidden, width):
    float_out(g, hidden, "last_hidden_state", v["fp16"], ["batch", SEQ_LEN, width])
    pooled = g.op("ReduceMean", [hidden], axes=[1], keepdims=0)
    float_out(g, pooled, "pooler_output", v["fp16"], ["batch", width])


def timestep_input(g, v):
    """Declares `timestep`; returns it as float32 (rank 0 or [batch])."""
    shape = [] if v["t_rank"] == 0 else ["batch"]
    g.input("timestep", v["t_type"], shape)
    return "timestep" if v["t_type"] == F32 else g.op("Cast", ["timestep"], to=F32)


def unet_inputs(g, v, width):
    """Declares the UNet inputs; returns float32 (sample, t, ehs, tcond-or-None)."""
    sample = float_in(g, "sample", v["fp16"], ["batch", v["in_channels"], "height", "width"])
    t = timestep_input(g, v)
    ehs = float_in(g, "encoder_hidden_states", v["fp16"], ["batch", SEQ_LEN, width])
    tcond = float_in(g, "timestep_cond", v["fp16"], ["batch", LCM_COND_DIM]) if v["lcm"] else None
    return sample, t, ehs, tcond


def unet_output(g, v, x):
    float_out(g, x, "out_sample", v["fp16"], ["batch", LATENT_CHANNELS, "height", "width"])


# ---------------------------------------------------------------- oracle graphs

def oracle_text_encoder(v, c):
    g = Graph("oracle_text_encoder")
    ids = g.op("Cast", [ids_input(g, v)], to=F32)
    col = g.op("Unsqueeze", [ids, g.const("axis2", [2], np.int64)])
    arg = g.op("Add", [g.op("Mul", [col, g.const("f", c["f"])]), g.const("phi", c["phi"])])
    text_outputs(g, v, g.op("Sin", [arg]), ORACLE_HIDDEN)
    return g.model()


def oracle_sigma(g, t, c):
    """sqrt(ab(t)) and sqrt(1-ab(t)) as [n,1,1,1], n = 1 (rank-0 t) or batch."""
    tc = g.op("Clip", [t, g.const("t_min", 0.0), g.const("t_max", float(TRAIN_STEPS - 1))])
    fl = g.op("Min", [g.op("Floor", [tc]), g.const("idx_max", float(TRAIN_STEPS - 2))])
    frac = g.op("Sub", [tc, fl])
    idx = g.op("Cast", [fl], to=I64)
    table = g.const("sigmas", c["sigmas"])
    s0 = g.op("Gather", [table, idx], axis=0)
    s1 = g.op("Gather", [table, g.op("Add", [idx, g.const("one_i64", 1, np.int64)])], axis=0)
    sig = g.op("Add", [s0, g.op("Mul", [frac, g.op("Sub", [s1, s0])])])
    sig4 = g.op("Reshape", [sig, g.const("shape_n111", [-1, 1, 1, 1], np.int64)])
    one = g.const("one", 1.0)
    sqrt_ab = g.op("Reciprocal", [g.op("Sqrt", [g.op("Add", [one, g.op("Mul", [sig4, sig4])])])])
    return sqrt_ab, g.op("Mul", [sig4, sqrt_ab])


def oracle_pattern(g, sample, c):
    """P[c,i,j] = a[c]*sin(u[c]*i + v[c]*j + psi[c]) for the sample's h, w."""
    shp = g.op("Shape", [sample])
    zero, step = g.const("zero_i64", 0, np.int64), g.const("step_i64", 1, np.int64)

    def coords(axis, target):
        n = g.op("Gather", [shp, g.const("dim%d" % axis, axis, np.int64)], axis=0)
        r = g.op("Cast", [g.op("Range", [zero, n, step])], to=F32)
        return g.op("Reshape", [r, g.const("shape_%s" % target, {"row": [1, -1, 1], "col": [1, 1, -1]}[target], np.int64)])

    c3 = lambda name: g.const(name, c[name].reshape(-1, 1, 1))  # noqa: E731
    arg = g.op("Add", [g.op("Mul", [c3("u"), coords(2, "row")]), g.op("Mul", [c3("v"), coords(3, "col")])])
    return g.op("Mul", [c3("a"), g.op("Sin", [g.op("Add", [arg, c3("psi")])])])


def oracle_unet(v, c):
    g = Graph("oracle_unet")
    sample, t, ehs, tcond = unet_inputs(g, v, ORACLE_HIDDEN)
    m = g.op("ReduceMean", [ehs], axes=[1], keepdims=0)
    wm = g.op("MatMul", [m, g.const("W_T", c["W"].T)])
    gsum = g.op("Add", [g.op("Unsqueeze", [wm, g.const("axes23", [2, 3], np.int64)]), oracle_pattern(g, sample, c)])
    if tcond is not None:
        s = g.op("Mul", [g.op("MatMul", [tcond, g.const("q", c["q"])]), g.const("k", c["k"])])
        gsum = g.op("Add", [gsum, g.op("Reshape", [s, g.const("shape_n111c", [-1, 1, 1, 1], np.int64)])])
    x0 = g.op("Mul", [g.op("Tanh", [gsum]), g.const("amp", c["amp"])])
    x_t = sample
    if v["in_channels"] == 9:
        cut = lambda lo, hi: g.op("Slice", [sample, g.const("s%d" % lo, [lo], np.int64), g.const("e%d" % hi, [hi], np.int64), g.const("ax1", [1], np.int64)])  # noqa: E731
        x_t, mask, masked = cut(0, 4), cut(4, 5), cut(5, 9)
        keep = g.op("Sub", [g.const("one_m", 1.0), mask])
        x0 = g.op("Add", [g.op("Mul", [mask, x0]), g.op("Mul", [keep, masked])])
    sqrt_ab, sqrt_1mab = oracle_sigma(g, t, c)
    eps = g.op("Div", [g.op("Sub", [x_t, g.op("Mul", [sqrt_ab, x0])]), sqrt_1mab])
    out = eps
    if v["prediction"] == "v_prediction":
        out = g.op("Sub", [g.op("Mul", [sqrt_ab, eps]), g.op("Mul", [sqrt_1mab, x0])])
    unet_output(g, v, out)
    return g.model()


def oracle_catvton_unet(v, c):
    """The try-on oracle: x0 = mask*(mean of the garment half of the
    masked-image latents + mean(ehs)) + (1-mask)*masked-image latents."""
    g = Graph("oracle_catvton_unet")
    sample, t, ehs, _ = unet_inputs(g, v, CATVTON_HIDDEN)
    cut = lambda lo, hi: g.op("Slice", [sample, g.const("s%d" % lo, [lo], np.int64), g.const("e%d" % hi, [hi], np.int64), g.const("ax1", [1], np.int64)])  # noqa: E731
    x_t, mask, masked = cut(0, 4), cut(4, 5), cut(5, 9)
    height = g.op("Gather", [g.op("Shape", [sample]), g.const("dim2_1d", [2], np.int64)], axis=0)
    half = g.op("Div", [height, g.const("two_i64", [2], np.int64)])
    garment = g.op("Slice", [masked, half, g.const("i64_max", [np.iinfo(np.int64).max], np.int64), g.const("ax2", [2], np.int64)])
    gmean = g.op("ReduceMean", [garment], axes=[2, 3], keepdims=1)
    e = g.op("Reshape", [g.op("ReduceMean", [ehs], axes=[1, 2], keepdims=0), g.const("shape_n111", [-1, 1, 1, 1], np.int64)])
    keep = g.op("Sub", [g.const("one_m", 1.0), mask])
    x0 = g.op("Add", [g.op("Mul", [mask, g.op("Add", [gmean, e])]), g.op("Mul", [keep, masked])])
    sqrt_ab, sqrt_1mab = oracle_sigma(g, t, c)
    unet_output(g, v, g.op("Div", [g.op("Sub", [x_t, g.op("Mul", [sqrt_ab, x0])]), sqrt_1mab]))
    return g.model()


def nearest_up(g, x, factor):
    scales = g.const("scales_x%d_%d" % (factor, g.count), [1, 1, factor, factor])
    return g.op("Resize", [x, "", scales], mode="nearest",
                coordinate_transformation_mode="asymmetric", nearest_mode="floor")


def oracle_vae_decoder(v, c):
    g = Graph("oracle_vae_decoder")
    z = float_in(g, "latent_sample", v["fp16"], ["batch", LATENT_CHANNELS, "latent_height", "latent_width"])
    y = g.op("Conv", [z, g.const("A", c["A"].reshape(3, LATENT_CHANNELS, 1, 1)), g.const("bias0", c["bias"])])
    float_out(g, nearest_up(g, y, VAE_FACTOR), "sample", v["fp16"], ["batch", 3, "height", "width"])
    return g.model()


def oracle_vae_encoder(v, c):
    g = Graph("oracle_vae_encoder")
    x = float_in(g, "sample", v["fp16"], ["batch", 3, "height", "width"])
    avg = g.op("AveragePool", [x], kernel_shape=[VAE_FACTOR, VAE_FACTOR], strides=[VAE_FACTOR, VAE_FACTOR])
    w = c["A_pinv"].astype(np.float32)
    b = (-(c["A_pinv"].astype(np.float64) @ c["bias"].astype(np.float64))).astype(np.float32)
    channels = LATENT_CHANNELS
    if v["encoder_out"] == "latent_parameters":
        w = np.concatenate([w, np.zeros_like(w)])
        b = np.concatenate([b, np.full(LATENT_CHANNELS, ORACLE_LOGVAR, np.float32)])
        channels *= 2
    c["encoder_bias"] = b
    z = g.op("Conv", [avg, g.const("Apinv", w.reshape(channels, 3, 1, 1)), g.const("bias_enc", b)])
    float_out(g, z, v["encoder_out"], v["fp16"], ["batch", channels, "latent_height", "latent_width"])
    return g.model()


# ---------------------------------------------------------------- shape-sd15 graphs

def conv_weight(rng, cout, cin, k, gain=1.0):
    return (rng.normal(0.0, gain / np.sqrt(cin * k * k), (cout, cin, k, k))).astype(np.float32)


def conv3(g, rng, x, cin, cout, tag, gain=1.0, stride=1):
    w = g.const("%s.weight" % tag, conv_weight(rng, cout, cin, 3, gain))
    b = g.const("%s.bias" % tag, rng.normal(0.0, 0.02, cout))
    return g.op("Conv", [x, w, b], kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[stride, stride])


def shape_text_encoder(v, rng):
    g = Graph("shape_text_encoder")
    ids = g.op("Mod", [ids_input(g, v), g.const("table_size", SHAPE_TABLE, np.int64)], fmod=0)
    table = g.const("token_embedding", rng.normal(0.0, 0.5, (SHAPE_TABLE, SHAPE_HIDDEN)))
    emb = g.op("Gather", [table, ids], axis=0)
    scale = g.const("ln.weight", rng.uniform(0.5, 1.5, SHAPE_HIDDEN))
    bias = g.const("ln.bias", rng.normal(0.0, 0.1, SHAPE_HIDDEN))
    hidden = g.op("LayerNormalization", [emb, scale, bias], axis=-1, epsilon=SHAPE_LN_EPS)
    text_outputs(g, v, hidden, SHAPE_HIDDEN)
    return g.model()


def shape_time_embedding(g, rng, t):
    freqs = np.exp(-np.log(10000.0) * np.arange(SHAPE_TIME_FREQS) / SHAPE_TIME_FREQS)
    arg = g.op("Mul", [g.op("Reshape", [t, g.const("shape_n1", [-1, 1], np.int64)]),
                       g.const("time_freqs", freqs.reshape(1, -1))])
    emb = g.op("Concat", [g.op("Sin", [arg]), g.op("Cos", [arg])], axis=1)
    w = g.const("time_proj.weight", rng.normal(0.0, 1.0 / np.sqrt(2 * SHAPE_TIME_FREQS), (2 * SHAPE_TIME_FREQS, SHAPE_WIDTH)))
    b = g.const("time_proj.bias", rng.normal(0.0, 0.02, SHAPE_WIDTH))
    proj = g.silu(g.op("Add", [g.op("MatMul", [emb, w]), b]))
    return g.op("Reshape", [proj, g.const("shape_nc11", [-1, SHAPE_WIDTH, 1, 1], np.int64)])


def shape_text_projection(g, rng, ehs):
    m = g.op("ReduceMean", [ehs], axes=[1], keepdims=0)
    w = g.const("text_proj.weight", rng.normal(0.0, 1.0 / np.sqrt(SHAPE_HIDDEN), (SHAPE_HIDDEN, SHAPE_WIDTH)))
    proj = g.op("MatMul", [m, w])
    return g.op("Reshape", [proj, g.const("shape_nc11_text", [-1, SHAPE_WIDTH, 1, 1], np.int64)])


def shape_unet(v, rng):
    g = Graph("shape_unet")
    sample, t, ehs, _ = unet_inputs(g, v, SHAPE_HIDDEN)
    h = conv3(g, rng, sample, v["in_channels"], SHAPE_WIDTH, "conv_in")
    h = g.op("Add", [g.op("Add", [h, shape_time_embedding(g, rng, t)]), shape_text_projection(g, rng, ehs)])
    for i in range(SHAPE_MID_CONVS):
        h = g.op("Add", [h, conv3(g, rng, g.silu(h), SHAPE_WIDTH, SHAPE_WIDTH, "mid.%d" % i, gain=0.5)])
    unet_output(g, v, conv3(g, rng, g.silu(h), SHAPE_WIDTH, LATENT_CHANNELS, "conv_out"))
    return g.model()


def shape_vae_decoder(v, rng):
    g = Graph("shape_vae_decoder")
    z = float_in(g, "latent_sample", v["fp16"], ["batch", LATENT_CHANNELS, "latent_height", "latent_width"])
    widths = [LATENT_CHANNELS] + SHAPE_VAE_CHANNELS
    h = z
    for i in range(len(SHAPE_VAE_CHANNELS)):
        h = nearest_up(g, g.silu(conv3(g, rng, h, widths[i], widths[i + 1], "up.%d" % i)), 2)
    float_out(g, conv3(g, rng, h, widths[-1], 3, "conv_out"), "sample", v["fp16"], ["batch", 3, "height", "width"])
    return g.model()


def shape_vae_encoder(v, rng):
    g = Graph("shape_vae_encoder")
    x = float_in(g, "sample", v["fp16"], ["batch", 3, "height", "width"])
    widths = [3] + SHAPE_VAE_CHANNELS[::-1]
    h = x
    for i in range(len(SHAPE_VAE_CHANNELS)):
        h = g.silu(conv3(g, rng, h, widths[i], widths[i + 1], "down.%d" % i, stride=2))
    params = conv3(g, rng, h, widths[-1], 2 * LATENT_CHANNELS, "conv_out")
    shift = np.concatenate([np.zeros(LATENT_CHANNELS), np.full(LATENT_CHANNELS, SHAPE_LOGVAR_BIAS)]).reshape(1, -1, 1, 1)
    params = g.op("Add", [params, g.const("logvar_shift", shift)])
    float_out(g, params, "latent_parameters", v["fp16"], ["batch", 2 * LATENT_CHANNELS, "latent_height", "latent_width"])
    return g.model()


# ---------------------------------------------------------------- configs

def scheduler_config(kind):
    """scheduler_config.json for kind: pndm, ddim, euler, euler-vpred, lcm."""
    common = {"_diffusers_version": DIFFUSERS_VERSION, "beta_end": BETA_END, "beta_schedule": "scaled_linear",
              "beta_start": BETA_START, "num_train_timesteps": TRAIN_STEPS, "prediction_type": "epsilon",
              "steps_offset": 1, "timestep_spacing": "leading", "trained_betas": None}
    extra = {
        "pndm": {"_class_name": "PNDMScheduler", "clip_sample": False, "set_alpha_to_one": False, "skip_prk_steps": True},
        "ddim": {"_class_name": "DDIMScheduler", "clip_sample": False, "clip_sample_range": 1.0,
                 "dynamic_thresholding_ratio": 0.995, "rescale_betas_zero_snr": False, "sample_max_value": 1.0,
                 "set_alpha_to_one": False, "thresholding": False},
        "euler": {"_class_name": "EulerDiscreteScheduler", "interpolation_type": "linear", "use_karras_sigmas": False,
                  "timestep_type": "discrete", "rescale_betas_zero_snr": False, "final_sigmas_type": "zero"},
        "lcm": {"_class_name": "LCMScheduler", "clip_sample": False, "clip_sample_range": 1.0,
                "dynamic_thresholding_ratio": 0.995, "original_inference_steps": 50, "rescale_betas_zero_snr": False,
                "sample_max_value": 1.0, "set_alpha_to_one": True, "thresholding": False, "timestep_scaling": 10.0},
    }
    if kind == "euler-vpred":
        cfg = dict(common, **extra["euler"])
        cfg.update(prediction_type="v_prediction", timestep_spacing="trailing")
    else:
        cfg = dict(common, **extra[kind])
    return dict(sorted(cfg.items()))


def model_index(v):
    index = {
        "_class_name": v["pipeline"], "_diffusers_version": DIFFUSERS_VERSION,
        "scheduler": ["diffusers", scheduler_config(v["scheduler"])["_class_name"]],
        "text_encoder": ["transformers", "CLIPTextModel"], "tokenizer": ["transformers", "CLIPTokenizer"],
        "unet": ["diffusers", "UNet2DConditionModel"],
        "vae_encoder": ["diffusers", "AutoencoderKL"], "vae_decoder": ["diffusers", "AutoencoderKL"],
    }
    if v["kind"] == "catvton":  # CatVTON has no text encoder
        del index["text_encoder"], index["tokenizer"]
    return index


def catvton_layout():
    """fashiond.json of the try-on oracle (docs/GENERATIVE.md, CatVTON)."""
    return {"layout": "catvton", "concat_axis": "height", "text_encoder": False,
            "person_width": CATVTON_PERSON[0], "person_height": CATVTON_PERSON[1],
            "steps": CATVTON_STEPS, "guidance": CATVTON_GUIDANCE}


def component_configs(v, width):
    dtype = "float16" if v["fp16"] else "float32"
    text = {"_name_or_path": "fashiond-contract/" + v["name"], "architectures": ["CLIPTextModel"],
            "model_type": "clip_text_model", "hidden_size": width, "max_position_embeddings": SEQ_LEN,
            "vocab_size": VOCAB_SIZE, "bos_token_id": BOS_ID, "eos_token_id": EOS_ID, "torch_dtype": dtype}
    unet = {"_class_name": "UNet2DConditionModel", "_diffusers_version": DIFFUSERS_VERSION,
            "in_channels": v["in_channels"], "out_channels": LATENT_CHANNELS, "sample_size": SHAPE_SAMPLE_SIZE,
            "cross_attention_dim": width, "time_cond_proj_dim": LCM_COND_DIM if v["lcm"] else None}
    vae = {"_class_name": "AutoencoderKL", "_diffusers_version": DIFFUSERS_VERSION, "in_channels": 3,
           "out_channels": 3, "latent_channels": LATENT_CHANNELS, "scaling_factor": SCALING_FACTOR,
           "block_out_channels": VAE_BLOCKS, "sample_size": SHAPE_SAMPLE_SIZE * VAE_FACTOR}
    return {"text_encoder": text, "unet": unet, "vae_encoder": vae, "vae_decoder": vae}


# ---------------------------------------------------------------- tokenizer

def bytes_to_unicode():
    """GPT-2's reversible byte -> printable unicode map, in CLIP's vocab order."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return [chr(x) for x in cs]


def tokenizer_files(bpe_gz):
    """name -> bytes of vocab.json and merges.txt built from OpenAI's BPE file."""
    digest = hashlib.sha256(bpe_gz).hexdigest()
    if digest != BPE_SHA256:
        raise SystemExit("contract_models: BPE file has SHA-256 %s, want %s" % (digest, BPE_SHA256))
    lines = gzip.decompress(bpe_gz).decode("utf-8").split("\n")
    merges = lines[1:BPE_MERGES + 1]
    symbols = bytes_to_unicode()
    vocab = symbols + [s + "</w>" for s in symbols] + ["".join(m.split()) for m in merges]
    vocab += ["<|startoftext|>", "<|endoftext|>"]
    ids = {tok: i for i, tok in enumerate(vocab)}
    if len(ids) != VOCAB_SIZE or ids["<|endoftext|>"] != EOS_ID:
        raise SystemExit("contract_models: vocabulary has %d entries, want %d" % (len(ids), VOCAB_SIZE))
    # Reference ids from OpenAI's tokenizer (shared/testdata/clip/README.md).
    for tok, want in (("a</w>", 320), ("photo</w>", 1125), ("cat</w>", 2368), ("dog</w>", 1929)):
        if ids[tok] != want:
            raise SystemExit("contract_models: %s has id %d, want %d" % (tok, ids[tok], want))
    return {
        "vocab.json": json.dumps(ids, ensure_ascii=False, separators=(",", ":")).encode("utf-8"),
        "merges.txt": ("#version: 0.2\n" + "\n".join(merges) + "\n").encode("utf-8"),
    }


def added_token(content):
    return {"content": content, "lstrip": False, "normalized": True, "rstrip": False, "single_word": False}


def tokenizer_configs(pad):
    """tokenizer_config.json and special_tokens_map.json as SD-1.5's export has them."""
    bos, eos = added_token("<|startoftext|>"), added_token("<|endoftext|>")
    special = {"bos_token": bos, "eos_token": eos, "pad_token": pad, "unk_token": eos}
    typed = lambda t: dict({"__type": "AddedToken"}, **t)  # noqa: E731
    config = {"add_prefix_space": False, "bos_token": typed(bos), "do_lower_case": True, "eos_token": typed(eos),
              "errors": "replace", "model_max_length": SEQ_LEN, "pad_token": pad,
              "tokenizer_class": "CLIPTokenizer", "unk_token": typed(eos)}
    return config, special


# ---------------------------------------------------------------- writing

def write_bytes(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def write_json(path, obj):
    write_bytes(path, (json.dumps(obj, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))


def write_model(path, model, external):
    """Checks and writes model; external: every tensor into model.onnx_data beside it."""
    onnx.checker.check_model(model)
    onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if external:
        data = os.path.join(os.path.dirname(path), "model.onnx_data")
        if os.path.exists(data):
            os.remove(data)  # onnx appends to an existing data file
        from onnx import external_data_helper as ext
        # Every float tensor goes out; integer tensors (shapes, axes, indices)
        # stay inline: ORT's load-time shape inference cannot read a Reshape
        # target shape from external data ("Cannot parse data from external
        # tensors"), so an all-external file would not load.
        for tensor in model.graph.initializer:
            if tensor.data_type == F32:
                ext.set_external_data(tensor, location="model.onnx_data")
        ext.write_external_data_tensors(model, os.path.dirname(path))
    write_bytes(path, model.SerializeToString(deterministic=True))


def json_floats(a):
    """float32 array -> nested lists of Python floats (exact float32 values)."""
    return np.asarray(a, dtype=np.float32).astype(np.float64).tolist()


def oracle_json(v, c):
    """fashiond_oracle.json: every constant of the closed form, exactly as in the graphs."""
    dtype_name = {F32: "float32", F16: "float16", I64: "int64", I32: "int32"}
    out = {
        "format": "fashiond contract oracle v1",
        "variant": v["name"],
        "seed": ORACLE_SEED,
        "prediction_type": v["prediction"],
        "seq_len": SEQ_LEN, "hidden_size": ORACLE_HIDDEN, "latent_channels": LATENT_CHANNELS,
        "unet_in_channels": v["in_channels"], "vae_factor": VAE_FACTOR, "scaling_factor": SCALING_FACTOR,
        "io": {"input_ids": dtype_name[v["ids"]], "timestep": dtype_name[v["t_type"]],
               "timestep_rank": v["t_rank"], "float": "float16" if v["fp16"] else "float32",
               "vae_encoder_output": v["encoder_out"], "timestep_cond": v["lcm"]},
        "text": {"f": json_floats(c["f"]), "phi": json_floats(c["phi"])},
        "unet": {"W": json_floats(c["W"]), "a": json_floats(c["a"]), "u": json_floats(c["u"]),
                 "v": json_floats(c["v"]), "psi": json_floats(c["psi"]), "amp": float(c["amp"]),
                 "lcm_k": float(c["k"]) if v["lcm"] else None, "lcm_q": json_floats(c["q"]) if v["lcm"] else None},
        "timestep": {"t_min": 0.0, "t_max": float(TRAIN_STEPS - 1), "index_max": TRAIN_STEPS - 2},
        "sigmas": json_floats(c["sigmas"]),
        "vae": {"A": json_floats(c["A"]), "bias": json_floats(c["bias"]), "A_pinv": json_floats(c["A_pinv"]),
                "encoder_bias": json_floats(c["encoder_bias"][:LATENT_CHANNELS]), "logvar": ORACLE_LOGVAR},
        "formulas": {
            "text": "hidden[b,p,d] = sin(float32(id[b,p]) * f[d] + phi[d]); pooler_output[b,d] = mean_p hidden[b,p,d]",
            "unet_x0": "m[b,d] = mean_p ehs[b,p,d]; P[c,i,j] = a[c]*sin(u[c]*i + v[c]*j + psi[c]); "
                       "g = sum_d W[c,d]*m[b,d] + P[c,i,j] (+ lcm_k * sum_e timestep_cond[b,e]*lcm_q[e]); x0 = tanh(g)*amp; "
                       "9 channels: x0 = mask*x0 + (1-mask)*masked_image_latents",
            "unet_sigma": "tc = clip(float(t), t_min, t_max); k = min(floor(tc), index_max); "
                          "sigma = sigmas[k] + (tc-k)*(sigmas[k+1]-sigmas[k]); ab = 1/(1+sigma^2)",
            "unet_out": "eps = (x_t - sqrt(ab)*x0)/sqrt(1-ab); v_prediction: sqrt(ab)*eps - sqrt(1-ab)*x0",
            "vae_decoder": "y = A z + bias per latent cell, nearest-upsampled x vae_factor",
            "vae_encoder": "z = A_pinv (avgpool_8x8(img) - bias) = A_pinv avgpool(img) + encoder_bias; logvar channels = logvar",
        },
    }
    if v["kind"] == "catvton":
        out["formulas"]["unet_x0"] = ("mask = sample[:,4]; masked = sample[:,5:9]; gmean[b,c] = mean over the bottom half "
                                      "(rows height/2..) of masked[b,c]; x0 = mask*(gmean + mean(ehs[b])) + (1-mask)*masked")
        out["formulas"]["text"] = "none (no text encoder; encoder_hidden_states [batch,77,%d] enters only as its mean)" % CATVTON_HIDDEN
        out["hidden_size"] = CATVTON_HIDDEN
        del out["text"], out["unet"], out["io"]["input_ids"]
    return out


def build_variant(out, v, c, tok):
    """Writes variant v's folder under out; returns {component: onnx path}."""
    root = os.path.join(out, v["name"])
    width = {"oracle": ORACLE_HIDDEN, "catvton": CATVTON_HIDDEN}.get(v["kind"], SHAPE_HIDDEN)
    if v["kind"] == "oracle":
        graphs = {"text_encoder": oracle_text_encoder(v, c), "unet": oracle_unet(v, c),
                  "vae_encoder": oracle_vae_encoder(v, c), "vae_decoder": oracle_vae_decoder(v, c)}
    elif v["kind"] == "catvton":
        graphs = {"unet": oracle_catvton_unet(v, c),
                  "vae_encoder": oracle_vae_encoder(v, c), "vae_decoder": oracle_vae_decoder(v, c)}
        write_json(os.path.join(root, "fashiond.json"), catvton_layout())
    else:
        rng = np.random.default_rng([SHAPE_SEED, v["in_channels"]])
        graphs = {"text_encoder": shape_text_encoder(v, rng), "unet": shape_unet(v, rng),
                  "vae_encoder": shape_vae_encoder(v, rng), "vae_decoder": shape_vae_decoder(v, rng)}
    write_json(os.path.join(root, "model_index.json"), model_index(v))
    write_json(os.path.join(root, "scheduler", "scheduler_config.json"), scheduler_config(v["scheduler"]))
    if "text_encoder" in graphs:
        for name, data in tok.items():
            write_bytes(os.path.join(root, "tokenizer", name), data)
        tcfg, special = tokenizer_configs(v["pad"])
        write_json(os.path.join(root, "tokenizer", "tokenizer_config.json"), tcfg)
        write_json(os.path.join(root, "tokenizer", "special_tokens_map.json"), special)
    paths = {}
    for comp, cfg in component_configs(v, width).items():
        if comp not in graphs:
            continue
        write_json(os.path.join(root, comp, "config.json"), cfg)
        paths[comp] = os.path.join(root, comp, "model.onnx")
        write_model(paths[comp], graphs[comp], v["external"] and comp == "unet")
    if v["kind"] != "shape":
        write_json(os.path.join(root, "fashiond_oracle.json"), oracle_json(v, c))
    return paths


# ---------------------------------------------------------------- numpy interpreter

def _np_type(elem):
    return mapping.TENSOR_TYPE_TO_NP_TYPE[elem]


def _conv(x, w, b=None, strides=(1, 1), pads=(0, 0, 0, 0), **_):
    kh, kw = w.shape[2], w.shape[3]
    xp = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    win = np.lib.stride_tricks.sliding_window_view(xp, (kh, kw), axis=(2, 3))[:, :, ::strides[0], ::strides[1]]
    y = np.einsum("nchwij,ocij->nohw", win, w, optimize=True)
    if b is not None:
        y = y + b.reshape(1, -1, 1, 1)
    return y.astype(x.dtype)


def _avgpool(x, kernel_shape, strides, **_):
    if list(kernel_shape) != list(strides):
        raise NotImplementedError("AveragePool with overlapping windows")
    n, ch, h, w = x.shape
    k0, k1 = kernel_shape
    return x.reshape(n, ch, h // k0, k0, w // k1, k1).mean(axis=(3, 5), dtype=np.float64).astype(x.dtype)


def _resize(x, roi, scales, sizes=None, mode=b"nearest", coordinate_transformation_mode=b"", nearest_mode=b"", **_):
    if (mode, coordinate_transformation_mode, nearest_mode) != (b"nearest", b"asymmetric", b"floor"):
        raise NotImplementedError("Resize mode")
    for axis, s in enumerate(scales):
        if s != int(s):
            raise NotImplementedError("non-integer Resize scale")
        x = np.repeat(x, int(s), axis=axis)
    return x


def _layernorm(x, scale, bias, axis=-1, epsilon=1e-5, **_):
    mean = x.mean(axis=axis, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axis, keepdims=True)
    return ((x - mean) / np.sqrt(var + np.float32(epsilon)) * scale + bias).astype(x.dtype)


def _reshape(x, shape, **_):
    shape = [x.shape[i] if s == 0 else int(s) for i, s in enumerate(shape)]
    return x.reshape(shape)


def _slice(x, starts, ends, axes, steps=None, **_):
    idx = [slice(None)] * x.ndim
    steps = steps if steps is not None else [1] * len(starts)
    for s, e, a, st in zip(starts, ends, axes, steps):
        idx[int(a)] = slice(int(s), int(e), int(st))
    return x[tuple(idx)]


def _keep(dtype_of):
    return lambda f: (lambda x, *rest, **_: f(x, *rest).astype(dtype_of(x)))


_same = _keep(lambda x: x.dtype)

NP_OPS = {
    "Add": lambda a, b, **_: a + b, "Sub": lambda a, b, **_: a - b,
    "Mul": lambda a, b, **_: a * b,
    "Div": lambda a, b, **_: a // b if np.issubdtype(np.asarray(a).dtype, np.integer) else a / b,
    "Sin": _same(np.sin), "Cos": _same(np.cos), "Tanh": _same(np.tanh), "Sqrt": _same(np.sqrt),
    "Floor": _same(np.floor), "Reciprocal": _same(np.reciprocal),
    "Sigmoid": _same(lambda x: 1.0 / (1.0 + np.exp(-x))),
    "Identity": lambda x, **_: x, "Shape": lambda x, **_: np.array(x.shape, np.int64),
    "Cast": lambda x, to, **_: x.astype(_np_type(to)),
    "Clip": lambda x, lo, hi, **_: np.minimum(np.maximum(x, lo), hi),
    "Min": lambda *xs, **_: functools.reduce(np.minimum, xs),
    "Mod": lambda a, b, fmod=0, **_: np.mod(a, b),
    "Gather": lambda d, i, axis=0, **_: np.take(d, i, axis=axis),
    "Range": lambda s, e, d, **_: np.arange(s, e, d, dtype=s.dtype),
    "Unsqueeze": lambda x, axes, **_: np.expand_dims(x, tuple(int(a) for a in axes)),
    "Reshape": _reshape, "Slice": _slice,
    "Concat": lambda *xs, axis, **_: np.concatenate(xs, axis=axis),
    "ReduceMean": lambda x, axes, keepdims=1, **_: x.mean(axis=tuple(axes), keepdims=bool(keepdims), dtype=np.float64).astype(x.dtype),
    "MatMul": lambda a, b, **_: np.matmul(a, b),
    "Conv": _conv, "AveragePool": _avgpool, "Resize": _resize, "LayerNormalization": _layernorm,
}


def run_graph(model, feeds):
    """Executes model (topologically ordered, ops in NP_OPS) on feeds -> outputs dict."""
    env = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    env.update(feeds)
    for node in model.graph.node:
        args = [env[n] if n else None for n in node.input]
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        env[node.output[0]] = np.asarray(NP_OPS[node.op_type](*args, **attrs))
    return {o.name: env[o.name] for o in model.graph.output}


# ---------------------------------------------------------------- self-test

def closed_text(c, ids):
    h = np.sin(ids.astype(np.float64)[..., None] * c["f"].astype(np.float64) + c["phi"].astype(np.float64))
    return h, h.mean(axis=1)


def closed_unet(v, c, sample, t, ehs, tcond):
    d = lambda k: c[k].astype(np.float64)  # noqa: E731
    h, w = sample.shape[2:]
    i, j = np.arange(h)[:, None], np.arange(w)[None, :]
    P = d("a")[:, None, None] * np.sin(d("u")[:, None, None] * i + d("v")[:, None, None] * j + d("psi")[:, None, None])
    g = (ehs.mean(axis=1) @ d("W").T)[:, :, None, None] + P[None]
    if tcond is not None:
        g = g + float(c["k"]) * (tcond @ d("q"))[:, None, None, None]
    x0 = np.tanh(g) * float(c["amp"])
    x_t = sample[:, :LATENT_CHANNELS]
    if v["in_channels"] == 9:
        mask, masked = sample[:, 4:5], sample[:, 5:9]
        x0 = mask * x0 + (1 - mask) * masked
    tc = np.clip(np.asarray(t, np.float64), 0, TRAIN_STEPS - 1)
    k = np.minimum(np.floor(tc), TRAIN_STEPS - 2).astype(np.int64)
    s = d("sigmas")
    sig = (s[k] + (tc - k) * (s[k + 1] - s[k])).reshape(-1, 1, 1, 1)
    ab = 1.0 / (1.0 + sig ** 2)
    eps = (x_t - np.sqrt(ab) * x0) / np.sqrt(1 - ab)
    if v["prediction"] == "v_prediction":
        return np.sqrt(ab) * eps - np.sqrt(1 - ab) * x0
    return eps


def closed_catvton_unet(c, sample, t, ehs):
    """The try-on oracle's closed form (see oracle_catvton_unet)."""
    x_t, mask, masked = sample[:, :4], sample[:, 4:5], sample[:, 5:9]
    half = sample.shape[2] // 2
    gmean = masked[:, :, half:, :].mean(axis=(2, 3), keepdims=True)
    x0 = mask * (gmean + ehs.mean(axis=(1, 2)).reshape(-1, 1, 1, 1)) + (1 - mask) * masked
    tc = np.clip(np.asarray(t, np.float64), 0, TRAIN_STEPS - 1)
    k = np.minimum(np.floor(tc), TRAIN_STEPS - 2).astype(np.int64)
    s = c["sigmas"].astype(np.float64)
    sig = (s[k] + (tc - k) * (s[k + 1] - s[k])).reshape(-1, 1, 1, 1)
    ab = 1.0 / (1.0 + sig ** 2)
    return (x_t - np.sqrt(ab) * x0) / np.sqrt(1 - ab)


def closed_decoder(c, z):
    y = np.einsum("rc,nchw->nrhw", c["A"].astype(np.float64), z) + c["bias"].astype(np.float64)[None, :, None, None]
    return y.repeat(VAE_FACTOR, axis=2).repeat(VAE_FACTOR, axis=3)


def pooled(img):
    n, ch, h, w = img.shape
    return img.reshape(n, ch, h // VAE_FACTOR, VAE_FACTOR, w // VAE_FACTOR, VAE_FACTOR).mean(axis=(3, 5))


def selftest_feeds(v, rng, width):
    """Random inputs for one variant at 8x8 latents, batch 2 (float64 masters)."""
    b, n = SELFTEST_BATCH, SELFTEST_LATENT
    ids = rng.integers(0, BOS_ID, (b, SEQ_LEN))
    ids[:, 0], ids[:, 7:] = BOS_ID, EOS_ID
    if v["t_type"] == I64:
        t = np.array([999, 1])
    else:
        t = np.array([999.0, 537.5]) if v["t_rank"] else np.array(261.25)
    sample = rng.normal(0.0, 1.0, (b, v["in_channels"], n, n))
    if v["in_channels"] == 9:
        sample[:, 4:5] = (rng.random((b, 1, n, n)) > 0.5).astype(np.float64)
    z = rng.uniform(-ORACLE_AMP, ORACLE_AMP, (b, LATENT_CHANNELS, n, n)) / SCALING_FACTOR
    img = rng.uniform(-1.0, 1.0, (b, 3, n * VAE_FACTOR, n * VAE_FACTOR))
    tcond = rng.uniform(-1.0, 1.0, (b, LCM_COND_DIM)) if v["lcm"] else None
    ehs = rng.normal(0.0, 1.0, (b, SEQ_LEN, width))
    return ids, t, sample, z, img, tcond, ehs


def close(name, got, want, fp16):
    got = got.astype(np.float64)
    rtol, atol = (4e-3, 4e-3) if fp16 else (2e-5, 2e-4)
    if got.shape != want.shape:
        raise SystemExit("self-test %s: shape %s, want %s" % (name, got.shape, want.shape))
    if not np.allclose(got, want, rtol=rtol, atol=atol):
        raise SystemExit("self-test %s: max error %g" % (name, np.abs(got - want).max()))


def check_finite(name, arrays, shapes):
    for key, shape in shapes.items():
        a = arrays[key]
        if a.shape != shape or not np.isfinite(a.astype(np.float64)).all():
            raise SystemExit("self-test %s.%s: shape %s (want %s) or non-finite values" % (name, key, a.shape, shape))


def selftest_variant(v, c, paths):
    """Reloads the variant's graphs from disk and checks them (see module doc)."""
    models = {}
    for comp, path in paths.items():
        onnx.checker.check_model(path)
        models[comp] = onnx.load(path)
    width = {"oracle": ORACLE_HIDDEN, "catvton": CATVTON_HIDDEN}.get(v["kind"], SHAPE_HIDDEN)
    rng = np.random.default_rng(7)
    ids, t, sample, z, img, tcond, ehs = selftest_feeds(v, rng, width)
    ft = np.float16 if v["fp16"] else np.float32
    name = v["name"]
    if v["kind"] == "catvton":
        ehs = ehs * 0.1  # a non-zero mean shows the term is there
        unet = run_graph(models["unet"], {"sample": sample.astype(ft), "timestep": t.astype(ft), "encoder_hidden_states": ehs.astype(ft)})
        close(name + " unet.out_sample", unet["out_sample"], closed_catvton_unet(c, sample, t, ehs), False)
        close(name + " vae_decoder.sample", run_graph(models["vae_decoder"], {"latent_sample": z.astype(ft)})["sample"], closed_decoder(c, z), False)
        return
    text = run_graph(models["text_encoder"], {"input_ids": ids.astype(_np_type(v["ids"]))})
    unet_feeds = {"sample": sample.astype(ft), "timestep": t.astype(_np_type(v["t_type"])),
                  "encoder_hidden_states": ehs.astype(ft)}
    if tcond is not None:
        unet_feeds["timestep_cond"] = tcond.astype(ft)
    unet = run_graph(models["unet"], unet_feeds)["out_sample"]
    dec = run_graph(models["vae_decoder"], {"latent_sample": z.astype(ft)})["sample"]
    enc = run_graph(models["vae_encoder"], {"sample": img.astype(ft)})[v["encoder_out"]]
    for arr in [unet, dec, enc] + list(text.values()):
        if arr.dtype != ft:
            raise SystemExit("self-test %s: output dtype %s, want %s" % (name, arr.dtype, np.dtype(ft)))
    b, n, big = SELFTEST_BATCH, SELFTEST_LATENT, SELFTEST_LATENT * VAE_FACTOR
    if v["kind"] == "shape":
        check_finite(name, dict(text, unet=unet, dec=dec, enc=enc), {
            "last_hidden_state": (b, SEQ_LEN, width), "pooler_output": (b, width), "unet": (b, LATENT_CHANNELS, n, n),
            "dec": (b, 3, big, big), "enc": (b, 2 * LATENT_CHANNELS, n, n)})
        return
    rd = lambda a: a.astype(ft).astype(np.float64)  # noqa: E731  inputs as the graph saw them
    hidden, pooler = closed_text(c, ids)
    close(name + " text_encoder.last_hidden_state", text["last_hidden_state"], hidden, v["fp16"])
    close(name + " text_encoder.pooler_output", text["pooler_output"], pooler, v["fp16"])
    want = closed_unet(v, c, rd(sample), rd(t) if v["fp16"] else t, rd(ehs), None if tcond is None else rd(tcond))
    close(name + " unet.out_sample", unet, want, v["fp16"])
    close(name + " vae_decoder.sample", dec, closed_decoder(c, rd(z)), v["fp16"])
    mean = enc[:, :LATENT_CHANNELS].astype(np.float64)
    close(name + " vae_encoder.mean", mean,
          np.einsum("cr,nrhw->nchw", c["A_pinv"].astype(np.float64), pooled(rd(img)) - c["bias"].astype(np.float64)[None, :, None, None]), v["fp16"])
    if v["encoder_out"] == "latent_parameters" and not (enc[:, LATENT_CHANNELS:] == ORACLE_LOGVAR).all():
        raise SystemExit("self-test %s: logvar channels are not %g" % (name, ORACLE_LOGVAR))
    if not v["fp16"]:
        # decode(encode(img)) == 8x8-averaged img, as the README promises.
        close(name + " vae round trip", run_graph(models["vae_decoder"], {"latent_sample": mean.astype(np.float32)})["sample"],
              pooled(img).repeat(VAE_FACTOR, axis=2).repeat(VAE_FACTOR, axis=3), False)


# ---------------------------------------------------------------- main

def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", help="directory to write the variant folders into")
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--bpe", default=os.path.join(here, "..", "..", "shared", "testdata", "clip", "bpe_simple_vocab_16e6.txt.gz"),
                    help="OpenAI's CLIP bpe_simple_vocab_16e6.txt.gz")
    ap.add_argument("--only", default="", help="comma-separated variant names (default: all)")
    ap.add_argument("--no-check", action="store_true", help="skip the reload + numpy self-test")
    args = ap.parse_args(argv[1:])
    with open(args.bpe, "rb") as f:
        tok = tokenizer_files(f.read())
    c = oracle_constants()
    variants = variant_table()
    if args.only:
        wanted = set(args.only.split(","))
        unknown = wanted - {v["name"] for v in variants}
        if unknown:
            raise SystemExit("contract_models: unknown variant(s) %s" % ", ".join(sorted(unknown)))
        variants = [v for v in variants if v["name"] in wanted]
    for v in variants:
        paths = build_variant(args.out, v, c, tok)
        if not args.no_check:
            selftest_variant(v, c, paths)
        sys.stderr.write("contract_models: wrote %s%s\n" % (v["name"], "" if args.no_check else " (self-test ok)"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
