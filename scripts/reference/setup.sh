#!/usr/bin/env bash
# Builds the reference environment for fashiond's parity fixtures and export scripts: a Debian 13
# ("trixie") root made with debootstrap, with Debian's PyTorch 2.6 (CPU), numpy, onnx, onnxruntime
# and friends from Debian's archive, and three Python sources pinned by hash or commit:
#   diffusers        ../shared/gpu/diffusers-src-58eb52c.tar.xz (commit 58eb52c, SHA-256 below)
#   transformers     commit 6301b5034d4e14043a543b3228860331eea773a6 (5.0.1.dev0)
#   huggingface_hub  commit b2da2d442c4165d9082a198cf247df3569140aee (tag v1.28.0)
# The two git sources are read from local git directories (public snapshots of
# github.com/huggingface/transformers and github.com/huggingface/huggingface_hub, or any clone or
# fork holding those commits): REF_TRANSFORMERS_GIT and REF_HF_HUB_GIT name them.
#
# Usage: scripts/reference/setup.sh [ROOT]     (ROOT defaults to .deps/reference)
# Idempotent: when ROOT/COMPLETE holds this script's pin line it does nothing. Needs root (debootstrap,
# chroot, mount in a private mount namespace) and Debian's archive; takes minutes and ~2.5 GB. Nothing is
# installed on the host except the debootstrap package. Not part of `make test`.
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
dest="${1:-$repo/.deps/reference}"
rootfs="$dest/root"
suite=trixie
mirror="${REF_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
diffusers_tar="${REF_DIFFUSERS_TAR:-$repo/../shared/gpu/diffusers-src-58eb52c.tar.xz}"
diffusers_sha=62a8cd3eb6d5fb6b47ff0f4a3de8cc073f1a645ddb2c661c0a50b57528fc7989
diffusers_version=0.40.0.dev0
transformers_git="${REF_TRANSFORMERS_GIT:-/work/.mirror/NielsRogge+transformers/repo}"
transformers_commit=6301b5034d4e14043a543b3228860331eea773a6
transformers_version=5.0.1.dev0
hub_git="${REF_HF_HUB_GIT:-/work/.mirror/huggingface+huggingface_hub/repo}"
hub_commit=b2da2d442c4165d9082a198cf247df3569140aee
hub_version=1.28.0
packages=(python3 python3-torch python3-numpy python3-onnx python3-onnxruntime python3-safetensors
  python3-einops python3-regex python3-yaml python3-requests python3-filelock python3-packaging
  python3-tqdm python3-opencv python3-pil python3-httpx python3-fsspec python3-click
  python3-typing-extensions)
pin="suite=$suite diffusers=$diffusers_sha transformers=$transformers_commit hub=$hub_commit packages=${packages[*]}"

if [ -f "$dest/COMPLETE" ] && [ "$(cat "$dest/COMPLETE")" = "$pin" ]; then exit 0; fi
[ "$(id -u)" = 0 ] || { echo "reference/setup: must run as root (debootstrap and chroot)" >&2; exit 1; }
echo "$diffusers_sha  $diffusers_tar" | sha256sum -c --status ||
  { echo "reference/setup: $diffusers_tar missing or not SHA-256 $diffusers_sha" >&2; exit 1; }
for pair in "$transformers_git:$transformers_commit" "$hub_git:$hub_commit"; do
  git --git-dir="${pair%%:*}" cat-file -e "${pair##*:}^{commit}" 2>/dev/null || {
    echo "reference/setup: git directory ${pair%%:*} lacks commit ${pair##*:} (set REF_TRANSFORMERS_GIT / REF_HF_HUB_GIT to a snapshot of the public repository)" >&2
    exit 1; }
done
command -v debootstrap >/dev/null || apt-get install -y debootstrap >&2

mkdir -p "$dest"
rm -f "$dest/COMPLETE"
if [ ! -f "$rootfs/.debootstrap-done" ]; then
  rm -rf "$rootfs"
  echo "reference/setup: debootstrap $suite into $rootfs" >&2
  debootstrap --variant=minbase "$suite" "$rootfs" "$mirror" >&2
  touch "$rootfs/.debootstrap-done"
fi
echo "deb $mirror $suite main" >"$rootfs/etc/apt/sources.list"
cp /etc/resolv.conf "$rootfs/etc/resolv.conf" 2>/dev/null || true
echo "reference/setup: apt-get install ${packages[*]}" >&2
unshare -m bash -c '
  set -e
  mount -t proc proc "$1/proc"
  mount --rbind /dev "$1/dev"
  shift_root="$1"; shift
  chroot "$shift_root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
    sh -c "apt-get update -q && apt-get install -y -q --no-install-recommends $*"
' _ "$rootfs" "${packages[@]}" >&2

# Python sources on PYTHONPATH=/opt/fashiond-ref/site, each with a minimal .dist-info so that
# importlib.metadata (diffusers' and transformers' availability and version checks) finds them.
site="$rootfs/opt/fashiond-ref/site"
rm -rf "$site"; mkdir -p "$site"
tar -xJf "$diffusers_tar" -C "$site"
git --git-dir="$transformers_git" archive "$transformers_commit" src/transformers | tar -x -C "$site" --strip-components=1
git --git-dir="$hub_git" archive "$hub_commit" src/huggingface_hub | tar -x -C "$site" --strip-components=1
dist_info() { # name version source
  mkdir -p "$site/$1-$2.dist-info"
  printf 'Metadata-Version: 2.1\nName: %s\nVersion: %s\nSummary: source from %s\n' "$1" "$2" "$3" >"$site/$1-$2.dist-info/METADATA"
  echo "fashiond-reference" >"$site/$1-$2.dist-info/INSTALLER"
}
dist_info diffusers "$diffusers_version" "diffusers commit 58eb52c ($diffusers_sha)"
dist_info transformers "$transformers_version" "huggingface/transformers commit $transformers_commit"
dist_info huggingface_hub "$hub_version" "huggingface/huggingface_hub commit $hub_commit"
mkdir -p "$site/tokenizers"  # a stand-in: see scripts/reference/tokenizers_stub.py
cp "$repo/scripts/reference/tokenizers_stub.py" "$site/tokenizers/__init__.py"
dist_info tokenizers "0.22.0+fashiond.stub" "a stand-in (scripts/reference/tokenizers_stub.py), not the Rust package"
cat >"$rootfs/opt/fashiond-ref/VERSIONS" <<EOF
diffusers $diffusers_version commit 58eb52c sha256 $diffusers_sha
transformers $transformers_version commit $transformers_commit
huggingface_hub $hub_version commit $hub_commit
EOF

echo "reference/setup: smoke test" >&2
"$repo/scripts/reference/run.sh" --root "$dest" - <<'EOF'
import torch, numpy, onnx, onnxruntime, diffusers, transformers
from diffusers import StableDiffusionPipeline, UNet2DConditionModel, AutoencoderKL
from transformers import CLIPTextModel, CLIPTextConfig
print("torch", torch.__version__, "numpy", numpy.__version__, "onnx", onnx.__version__,
      "onnxruntime", onnxruntime.__version__, "diffusers", diffusers.__version__, "transformers", transformers.__version__)
EOF
echo "$pin" >"$dest/COMPLETE"
echo "reference/setup: ready in $dest" >&2
