#!/usr/bin/env bash
# The GPU check in one go (docs/GPU.md). Two halves, because GPU nodes often
# reach nothing outside:
#
#   scripts/gpu-check.sh pack DIR [SM]   here: a payload of at most 64 MiB in DIR
#   scripts/gpu-check.sh run DIR         on the NVIDIA node (Python + PyTorch +
#                                        transformers, CUDA 13 libraries from
#                                        PyTorch's nvidia-* wheels or the system)
#   scripts/gpu-check.sh table FILE      the table of a run's RESULT lines
#
# pack builds the OpenCV-free measurement binary (cmd/gpucheck; `go list
# -deps` shows no gocv), takes the npm GPU runtime (scripts/setup-gpu.sh),
# keeps only the card's architecture in the CUDA provider's fat binary
# (../shared/gpu/fatbin.py prune, default sm_90) and xz-packs it, and adds the
# SD-1.5-architecture export script with diffusers' pinned source
# (58eb52c), CLIP's tokenizer files and the perception models that fit.
# run provisions that runtime, probes every run kind on CUDA (each in its
# own process: a crash is named), exports the random-weight SD-1.5 modules
# and times diffusers on them (the anchor), times fashiond's engine on the
# same export at 1 and 8 concurrent jobs, the engine's CPU-vs-CUDA agreement
# on one seeded image, SR 1000² -> 4000² and every
# perception model on CUDA and on the CPU, and prints one table with the
# ratios. Random weights: these are speed figures, never quality results.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
KIT="${GPU_KIT:-$root/../shared/gpu}"
MAX_PAYLOAD=$((64 * 1024 * 1024))
ORT_GPU="${FASHIOND_DEPS_DIR:-$root/.deps}/onnxruntime-gpu/1.29.0"
MODELS="${FASHIOND_MODELS_DIR:-$root/data/models}"
# The perception models that fit the payload beside the 46 MB runtime
# (realesrgan_x4plus, 67 MB, does not; blazepose and the clothes parser
# would take it over 64 MiB).
PAYLOAD_MODELS="realesr_general_x4v3 selfie_segmentation tcmonodepth_small ultraface_rfb320 yunet"
STEPS="${GPU_CHECK_STEPS:-20}"
say() { echo "gpu-check: $*" >&2; }

pack() {
  local out="$1" sm="${2:-90}"
  mkdir -p "$out/ort" "$out/models" "$out/kit"
  "$root/scripts/setup-gpu.sh"
  say "building cmd/gpucheck"
  (cd "$root" && CGO_ENABLED=1 go build -trimpath -o "$out/gpucheck" ./cmd/gpucheck)
  if (cd "$root" && go list -deps ./cmd/gpucheck | grep -q gocv); then say "cmd/gpucheck links gocv: refused"; return 1; fi
  python3 "$KIT/fatbin.py" prune "$ORT_GPU/libonnxruntime_providers_cuda.so" "$out/ort/libonnxruntime_providers_cuda.so" "$sm"
  cp "$ORT_GPU/libonnxruntime.so" "$ORT_GPU/libonnxruntime_providers_shared.so" "$out/ort/"
  xz -T0 -6 -f "$out/ort/libonnxruntime_providers_cuda.so" "$out/ort/libonnxruntime.so"
  xz -T0 -6 -f "$out/gpucheck"
  cp "$KIT/export_sd.py" "$KIT/diffusers-src-58eb52c.tar.xz" "$KIT/diffusers-LICENSE" "$out/kit/"
  cp -r "$root/diffusion/testdata/contract/shape-sd15/tokenizer" "$out/kit/tokenizer"
  local m
  for m in $PAYLOAD_MODELS; do cp "$MODELS/$m.onnx" "$out/models/"; done
  cp "$0" "$out/gpu-check.sh"
  local n; n=$(du -sb "$out" | cut -f1)
  say "payload $out: $((n / 1024 / 1024)) MiB (sm_$sm)"
  [ "$n" -le "$MAX_PAYLOAD" ] || { say "payload is over 64 MiB"; return 1; }
}

# cuda_env DIR: LD_LIBRARY_PATH with the ORT folder and PyTorch's nvidia-*
# wheels, and the unversioned libcudnn.so the provider opens.
cuda_env() {
  local ort="$1" site lib
  export LD_LIBRARY_PATH="$ort${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  site=$(python3 -c 'import nvidia, os; print(os.path.dirname(list(nvidia.__path__)[0]))' 2>/dev/null || true)
  if [ -n "$site" ]; then
    for lib in "$site"/nvidia/*/lib; do LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$lib"; done
    [ -e "$ort/libcudnn.so" ] || ln -sf "$(ls "$site"/nvidia/cudnn/lib/libcudnn.so.9 2>/dev/null | head -n1)" "$ort/libcudnn.so"
  fi
  export FASHIOND_ORT_LIB="$ort/libonnxruntime.so"
}

run() {
  local dir; dir="$(cd "$1" && pwd)"
  local res="$dir/results.txt" export="$dir/sd15-random" g="$dir/gpucheck"
  [ -e /proc/driver/nvidia/version ] || command -v nvidia-smi >/dev/null || { say "no NVIDIA driver on this node"; return 1; }
  [ -x "$g" ] || xz -dkf "$g.xz"
  for f in "$dir"/ort/*.xz; do [ -e "$f" ] && xz -dkf "$f"; done
  ln -sf libonnxruntime.so "$dir/ort/libonnxruntime.so.1"
  cuda_env "$dir/ort"
  : >"$res"
  export FASHIOND_DEVICE=cuda
  say "probe: every run kind on CUDA"
  "$g" probe | tee -a "$res" || say "some run kinds failed on CUDA (see the table)"
  if [ ! -f "$export/unet/model.onnx" ]; then
    mkdir -p "$dir/diffusers" && tar -xJf "$dir/kit/diffusers-src-58eb52c.tar.xz" -C "$dir/diffusers"
    local src; src=$(dirname "$(find "$dir/diffusers" -maxdepth 3 -type d -name diffusers -path '*src*' | head -n1)")
    say "export + diffusers anchor ($STEPS steps, 512²)"
    PYTHONPATH="$src" python3 "$dir/kit/export_sd.py" "$export" "$dir/kit/tokenizer" "$STEPS" 2>&1 | tee "$dir/export.log" | grep '^RESULT' >>"$res" || true
  fi
  say "fashiond engine on CUDA"
  "$g" diffusion -folder "$export" -steps "$STEPS" -jobs 1,8 2>&1 | tee -a "$res" || say "the engine failed on CUDA"
  say "CPU vs CUDA agreement of the engine (256², 2 steps, seed 7)"
  { "$g" diffusion -folder "$export" -size 256 -steps 2 -save "$dir/cuda.f32" >/dev/null \
    && FASHIOND_DEVICE=cpu "$g" diffusion -folder "$export" -size 256 -steps 2 -save "$dir/cpu.f32" >/dev/null \
    && "$g" compare "$dir/cpu.f32" "$dir/cuda.f32" | tee -a "$res"; } || say "agreement not measured"
  "$g" sr -models "$dir/models" -size 1000 | tee -a "$res" || true
  "$g" models -models "$dir/models" | tee -a "$res" || true
  say "the same on the CPU"
  FASHIOND_DEVICE=cpu "$g" sr -models "$dir/models" -size 1000 -iters 1 | tee -a "$res" || true
  FASHIOND_DEVICE=cpu "$g" models -models "$dir/models" -iters 2 | tee -a "$res" || true
  nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv,noheader >>"$dir/gpu.txt" 2>/dev/null || true
  table "$res"
}

# table FILE: one table from the RESULT lines.
table() {
  python3 - "$1" <<'EOF'
import re, sys
rows = [dict(re.findall(r'(\S+?)=("[^"]*"|\S+)', l[len("RESULT "):])) | {"_who": l.split()[1]}
        for l in open(sys.argv[1]) if l.startswith("RESULT ")]
num = lambda v: float(re.sub(r'[^0-9.]', '', v)) if v else None
print("\n== probe (run kinds on CUDA)")
for r in rows:
    if r["_who"] == "probe":
        print(f"  {r['kind']:<22} {r['status'].strip(chr(34))}  {r.get('detail','').strip(chr(34))[:90]}")
print("\n== diffusion, SD-1.5 architecture, random weights, 512², same card")
print(f"  {'jobs':>4}  {'diffusers img/s':>15}  {'fashiond img/s':>14}  {'ratio':>6}")
anchor = {r["images"]: num(r["images/s"]) for r in rows if r["_who"] == "diffusers" and "images" in r}
for r in rows:
    if r["_who"] == "fashiond" and "images" in r:
        a, f = anchor.get(r["images"]), num(r["images/s"])
        print(f"  {r['images']:>4}  {a if a else '-':>15}  {f:>14.3f}  {f / a if a else float('nan'):>6.2f}")
for r in rows:
    if r["_who"] == "agreement":
        print(f"  CPU vs CUDA, 256², 2 steps: max {r['max_levels']} / mean {r['mean_levels']} 8-bit levels")
print("\n== models, one call (ms)")
by = {}
for r in rows:
    if r["_who"] == "model" and "ms" in r:
        by.setdefault(r["model"], {})[r["device"]] = num(r["ms"])
print(f"  {'model':<24} {'cpu ms':>10} {'cuda ms':>10} {'cpu/cuda':>9}")
for m, d in by.items():
    c, g = d.get("cpu"), d.get("cuda")
    print(f"  {m:<24} {c if c else '-':>10} {g if g else '-':>10} {c / g if c and g else float('nan'):>9.1f}")
EOF
}

case "${1:-}" in
  pack) shift; pack "${1:?pack DIR [SM]}" "${2:-90}" ;;
  run) shift; run "${1:?run DIR}" ;;
  table) shift; table "${1:?table FILE}" ;;
  *) sed -n '2,24p' "$0" >&2; exit 2 ;;
esac
