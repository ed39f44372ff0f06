#!/usr/bin/env bash
# Fills the model repository ($FASHIOND_MODELS_DIR, default data/models) from
# a mirror directory ($FASHIOND_MODELS_MIRROR, default ../shared/models when it
# exists), verifying every file against the SHA-256 in its committed manifest
# (models/manifests/*.json). Idempotent: verified files are left alone.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dest="${FASHIOND_MODELS_DIR:-${FASHIOND_DATA_DIR:-$root/data}/models}"
mirror="${FASHIOND_MODELS_MIRROR:-}"
if [ -z "$mirror" ] && [ -d "$root/../shared/models" ]; then mirror="$root/../shared/models"; fi
mkdir -p "$dest"
status=0
for m in "$root"/models/manifests/*.json; do
  file=$(sed -n 's/^ *"file": *"\([^"]*\)".*/\1/p' "$m" | head -n1)
  sum=$(sed -n 's/^ *"sha256": *"\([0-9a-f]*\)".*/\1/p' "$m" | head -n1)
  optional=$(grep -q '"optional": *true' "$m" && echo 1 || echo 0)
  [ -n "$file" ] && [ -n "$sum" ] || { echo "setup-models: $m lacks file or sha256" >&2; exit 1; }
  if [ -f "$dest/$file" ] && echo "$sum  $dest/$file" | sha256sum -c --status; then continue; fi
  src=""
  if [ -n "$mirror" ] && [ -f "$mirror/$file" ]; then src="$mirror/$file"; fi
  if [ -z "$src" ] && [ -n "${FASHIOND_MODELS_URL:-}" ]; then
    curl -fsSL --retry 2 -o "$dest/$file.part" "${FASHIOND_MODELS_URL%/}/$file" && src="$dest/$file.part"
  fi
  if [ -z "$src" ]; then
    if [ "$optional" = 1 ]; then continue; fi
    echo "setup-models: model $(basename "$m" .json): $file not found in mirror '${mirror:-unset}' (set FASHIOND_MODELS_MIRROR or FASHIOND_MODELS_URL)" >&2
    status=1; continue
  fi
  if ! echo "$sum  $src" | sha256sum -c --status; then
    echo "setup-models: model $(basename "$m" .json): $src does not match SHA-256 $sum" >&2
    rm -f "$dest/$file.part"; status=1; continue
  fi
  if [ "$src" = "$dest/$file.part" ]; then mv "$src" "$dest/$file"; else cp "$src" "$dest/$file.tmp" && mv "$dest/$file.tmp" "$dest/$file"; fi
  echo "setup-models: installed $file" >&2
done
exit $status
