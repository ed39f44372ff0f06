#!/usr/bin/env bash
# Fetches the ONNX Runtime CPU shared library (Linux x64) reproducibly from the
# npm package onnxruntime-node, pinned by version and SHA-256, into .deps/.
# Idempotent: does nothing when the verified library is already there.
set -euo pipefail
ORT_VERSION="1.30.0"
TGZ_SHA256="6e3390d6b783e7be946fad629292799da28d0b42f84856e50d2c1b0383291e75"
LIB_SHA256="ffb75a925ba05e47b235bb66e3e3911714a80b328a9c9425539feb204aa32a23"
root="$(cd "$(dirname "$0")/.." && pwd)"
dest="$root/.deps/onnxruntime/$ORT_VERSION"
lib="$dest/libonnxruntime.so.1"
if [ -f "$lib" ] && echo "$LIB_SHA256  $lib" | sha256sum -c --status; then exit 0; fi
command -v npm >/dev/null || { echo "setup-ort: npm is required (apt-get install npm)" >&2; exit 1; }
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
echo "setup-ort: fetching onnxruntime-node@$ORT_VERSION" >&2
(cd "$tmp" && npm pack --silent "onnxruntime-node@$ORT_VERSION" >/dev/null 2>&1)
tgz="$tmp/onnxruntime-node-$ORT_VERSION.tgz"
echo "$TGZ_SHA256  $tgz" | sha256sum -c --status || { echo "setup-ort: tarball SHA-256 mismatch for onnxruntime-node@$ORT_VERSION" >&2; exit 1; }
tar -xzf "$tgz" -C "$tmp" package/bin/napi-v6/linux/x64/libonnxruntime.so.1
mkdir -p "$dest"
cp "$tmp/package/bin/napi-v6/linux/x64/libonnxruntime.so.1" "$lib.tmp"
echo "$LIB_SHA256  $lib.tmp" | sha256sum -c --status || { echo "setup-ort: library SHA-256 mismatch" >&2; exit 1; }
mv "$lib.tmp" "$lib"
ln -sf libonnxruntime.so.1 "$dest/libonnxruntime.so"
echo "setup-ort: installed $lib" >&2
