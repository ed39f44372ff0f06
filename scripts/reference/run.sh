#!/usr/bin/env bash
# Runs a Python script inside the reference environment made by scripts/reference/setup.sh:
#   scripts/reference/run.sh [--root DIR] SCRIPT|- [ARGS...]
# SCRIPT is a path relative to the repository root (or absolute inside it); "-" reads the script from
# standard input. The repository is bind-mounted read-write at its own absolute path and ../shared
# read-only at its own, in a private mount namespace (nothing stays mounted afterwards); the script
# runs with the repository root as working directory, Debian 13's python3, and PYTHONPATH set to the
# pinned diffusers / transformers / huggingface_hub sources. Needs root.
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
dest="$repo/.deps/reference"
if [ "${1:-}" = --root ]; then dest="$2"; shift 2; fi
[ $# -ge 1 ] || { echo "usage: scripts/reference/run.sh [--root DIR] SCRIPT|- [ARGS...]" >&2; exit 2; }
rootfs="$dest/root"
[ -x "$rootfs/usr/bin/python3" ] || { echo "reference/run: no reference root at $rootfs (run scripts/reference/setup.sh)" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "reference/run: must run as root (chroot)" >&2; exit 1; }
shared="$(cd "$repo/.." && pwd)/shared"
exec unshare -m bash -c '
  set -e
  rootfs="$1" repo="$2" shared="$3"; shift 3
  mount --make-rprivate /
  mount -t proc proc "$rootfs/proc"
  mount --rbind /dev "$rootfs/dev"
  mkdir -p "$rootfs$repo"
  mount --bind "$repo" "$rootfs$repo"
  if [ -d "$shared" ]; then
    mkdir -p "$rootfs$shared"; mount --bind "$shared" "$rootfs$shared"; mount -o remount,bind,ro "$rootfs$shared"
  fi
  cd "$rootfs$repo"
  exec chroot "$rootfs" /usr/bin/env -i PATH=/usr/bin:/bin HOME=/tmp LANG=C.UTF-8 PYTHONHASHSEED=0 \
    PYTHONPATH=/opt/fashiond-ref/site PYTHONDONTWRITEBYTECODE=1 HF_HUB_OFFLINE=1 \
    DIFFUSERS_NO_ADVISORY_WARNINGS=1 TRANSFORMERS_NO_ADVISORY_WARNINGS=1 \
    sh -c "cd \"\$0\" && exec python3 \"\$@\"" "$repo" "$@"
' _ "$rootfs" "$repo" "$shared" "$@"
