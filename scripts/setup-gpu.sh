#!/usr/bin/env bash
# Installs the ONNX Runtime GPU runtime (Linux x64, CUDA 13) from the npm
# registry, beside the CPU runtime (scripts/setup-ort.sh):
#
#   .deps/onnxruntime-gpu/1.29.0/libonnxruntime.so[.1]              ORT 1.29.0 core (a CPU build)
#   .deps/onnxruntime-gpu/1.29.0/libonnxruntime_providers_shared.so
#   .deps/onnxruntime-gpu/1.29.0/libonnxruntime_providers_cuda.so   the CUDA execution provider
#
# from com.github.asus4.onnxruntime@0.4.9 and
# com.github.asus4.onnxruntime.linux-x64-gpu@0.4.9. Each tarball is pinned by
# npm's integrity string (sha512, the check `fashiond models install` makes on
# npm origins, models/origin_npm.go) and each installed file by SHA-256; a
# tarball that does not match is deleted and refused. The CUDA provider sits
# beside the core library, so fashiond reaches it as a plugin execution
# provider (docs/GPU.md): point FASHIOND_ORT_LIB at the core library printed at
# the end. The CUDA 13 user-space libraries are NOT installed here (docs/GPU.md
# says which and where from); the last lines say which of them this node lacks.
#
# Idempotent: quiet and quick when the verified files are already there.
# Tarballs are kept in $FASHIOND_NPM_CACHE (default .deps/npm-cache) so a
# reinstall does not download again. NPM overrides the npm command;
# FASHIOND_DEPS_DIR the .deps directory.
set -euo pipefail
ORT_GPU_VERSION="1.29.0"
PKG_VERSION="0.4.9"
CORE_PKG="com.github.asus4.onnxruntime"
CORE_INTEGRITY="sha512-BkzxduSZ9IkeDP6Q8lz2TFU2ie7hSSvS7ZIfzMooExoq0CNzJnuuGaUJ7IsojBgqO4ouD1jXah8OYyJbCN29Fg=="
CUDA_PKG="com.github.asus4.onnxruntime.linux-x64-gpu"
CUDA_INTEGRITY="sha512-FopIhNE/Ng+v2X65wVc9clPCBCvhvA53Hxo2U0Kf5fGdVsC7iCA+mZ0KLWggcQAj7TIZ6pNidR4AC10g74Xo6w=="
PLUGIN_DIR="package/Plugins/Linux/x64"
# file  package  sha256
FILES=(
  "libonnxruntime.so $CORE_PKG 5715f06d8992ca8eeeddcce43df3a7d38f97d537052126f558e912cb312460ca"
  "libonnxruntime_providers_shared.so $CUDA_PKG c6a12593396095f5670160e284c35d1700b7708cf3037b7042e2a5200ccae772"
  "libonnxruntime_providers_cuda.so $CUDA_PKG 56cf3254b118ad837ccc4ed8f6d1b23504bbf7ef91b34cbc0b289cb7f10b3037"
)
# NEEDED by the provider, plus what it opens at run time (dlopen).
CUDA_LIBS="libcudart.so.13 libcublas.so.13 libcublasLt.so.13 libcurand.so.10 libcudnn.so libnvrtc.so.13 libcuda.so.1"

root="$(cd "$(dirname "$0")/.." && pwd)"
deps="${FASHIOND_DEPS_DIR:-$root/.deps}"
dest="$deps/onnxruntime-gpu/$ORT_GPU_VERSION"
cache="${FASHIOND_NPM_CACHE:-$deps/npm-cache}"
npm="${NPM:-npm}"
say() { echo "setup-gpu: $*" >&2; }

installed() {
  local f
  for f in "${FILES[@]}"; do
    set -- $f
    [ -f "$dest/$1" ] && echo "$3  $dest/$1" | sha256sum -c --status || return 1
  done
}

# integrity FILE: npm's integrity string of FILE.
integrity() { printf 'sha512-%s' "$(openssl dgst -sha512 -binary "$1" | base64 -w0)"; }

# tarball PKG WANT: path of the verified tarball of PKG@PKG_VERSION in the
# cache, fetching it with `npm pack` when absent or not matching.
tarball() {
  local pkg="$1" want="$2" tgz got
  tgz="$cache/$pkg-$PKG_VERSION.tgz"
  if [ -f "$tgz" ] && [ "$(integrity "$tgz")" = "$want" ]; then echo "$tgz"; return; fi
  command -v "$npm" >/dev/null || { say "npm is required to fetch $pkg@$PKG_VERSION (apt-get install npm)"; return 1; }
  say "fetching $pkg@$PKG_VERSION from the npm registry"
  (cd "$cache" && "$npm" pack --silent "$pkg@$PKG_VERSION" >/dev/null) || { say "npm pack $pkg@$PKG_VERSION failed"; return 1; }
  [ -f "$tgz" ] || { say "npm pack $pkg@$PKG_VERSION wrote no $tgz"; return 1; }
  got="$(integrity "$tgz")"
  if [ "$got" != "$want" ]; then
    rm -f "$tgz"
    say "npm pack $pkg@$PKG_VERSION: tarball integrity $got, want $want: refused"
    return 1
  fi
  echo "$tgz"
}

# missing_cuda_libs: the CUDA libraries the dynamic loader cannot find here
# (LD_LIBRARY_PATH, the ORT directory, ldconfig's cache).
missing_cuda_libs() {
  local lib d found out=""
  local cached; cached="$(ldconfig -p 2>/dev/null || true)"
  for lib in $CUDA_LIBS; do
    found=""
    for d in $(echo "${LD_LIBRARY_PATH:-}" | tr ':' ' ') "$dest"; do
      [ -e "$d/$lib" ] && { found=1; break; }
    done
    [ -n "$found" ] || grep -q " $lib " <<<"$cached" || out="$out $lib"
  done
  echo "${out# }"
}

if ! installed; then
  mkdir -p "$cache"
  core_tgz="$(tarball "$CORE_PKG" "$CORE_INTEGRITY")"
  cuda_tgz="$(tarball "$CUDA_PKG" "$CUDA_INTEGRITY")"
  tmp="$(mktemp -d "$deps/.setup-gpu.XXXXXX")"; trap 'rm -rf "$tmp"' EXIT
  mkdir -p "$tmp/core" "$tmp/cuda" "$dest"
  tar --no-same-owner -xzf "$core_tgz" -C "$tmp/core" "$PLUGIN_DIR/libonnxruntime.so"
  tar --no-same-owner -xzf "$cuda_tgz" -C "$tmp/cuda" "$PLUGIN_DIR/libonnxruntime_providers_shared.so" "$PLUGIN_DIR/libonnxruntime_providers_cuda.so"
  for f in "${FILES[@]}"; do
    set -- $f
    src="$tmp/core/$PLUGIN_DIR/$1"; [ "$2" = "$CUDA_PKG" ] && src="$tmp/cuda/$PLUGIN_DIR/$1"
    echo "$3  $src" | sha256sum -c --status || { say "$1 from $2@$PKG_VERSION: SHA-256 mismatch: refused"; exit 1; }
    chmod 0755 "$src"
    mv -f "$src" "$dest/$1"
  done
  ln -sf libonnxruntime.so "$dest/libonnxruntime.so.1"
  say "installed ONNX Runtime $ORT_GPU_VERSION with the CUDA execution provider in $dest"
fi
missing="$(missing_cuda_libs)"
if [ -n "$missing" ]; then
  say "this node lacks $missing: CUDA sessions cannot start here until they are on LD_LIBRARY_PATH (docs/GPU.md)"
fi
say "use it with FASHIOND_ORT_LIB=$dest/libonnxruntime.so"
