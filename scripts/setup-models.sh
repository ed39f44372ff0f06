#!/usr/bin/env bash
# Fills the model repository ($FASHIOND_MODELS_DIR, default data/models) from
# a mirror directory ($FASHIOND_MODELS_MIRROR, default ../shared/models when it
# exists) or a base URL ($FASHIOND_MODELS_URL), verifying every file against
# the SHA-256 in its committed manifest (perception/manifests/*.json). Then makes
# the batch rewrites (<name>.batch.onnx, scripts/rewrite_batch.py) the
# manifests declare and checks their recorded SHA-256.
# Idempotent: verified files are left alone. Needs only bash, coreutils,
# sed and (for the rewrites) /usr/bin/python3 with python3-onnx, so it works
# before the Go binary exists. Optional slots (no file) are skipped.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dest="${FASHIOND_MODELS_DIR:-${FASHIOND_DATA_DIR:-$root/data}/models}"
mirror="${FASHIOND_MODELS_MIRROR:-}"
if [ -z "$mirror" ] && [ -d "$root/../shared/models" ]; then mirror="$root/../shared/models"; fi
python="${FASHIOND_PYTHON:-/usr/bin/python3}"
mkdir -p "$dest"
status=0
field() { sed -n "s/^ *\"$1\": *\"\([^\"]*\)\".*/\1/p" "$2" | head -n1; }
verified() { [ -f "$1" ] && echo "$2  $1" | sha256sum -c --status; }
for m in "$root"/perception/manifests/*.json; do
  name=$(basename "$m" .json)
  file=$(field file "$m"); sum=$(field sha256 "$m")
  bfile=$(field batch_file "$m"); bsum=$(field batch_sha256 "$m")
  optional=$(grep -q '"optional": *true' "$m" && echo 1 || echo 0)
  if [ -z "$file" ]; then
    [ "$optional" = 1 ] && continue
    echo "setup-models: model $name: manifest $m names no file" >&2; exit 1
  fi
  [ -n "$sum" ] || { echo "setup-models: model $name: manifest $m lacks sha256" >&2; exit 1; }
  if ! verified "$dest/$file" "$sum"; then
    src=""
    if [ -n "$mirror" ] && [ -f "$mirror/$file" ]; then src="$mirror/$file"; fi
    if [ -z "$src" ] && [ -n "${FASHIOND_MODELS_URL:-}" ]; then
      curl -fsSL --retry 2 -o "$dest/$file.part" "${FASHIOND_MODELS_URL%/}/$file" && src="$dest/$file.part"
    fi
    if [ -z "$src" ]; then
      [ "$optional" = 1 ] && continue
      echo "setup-models: model $name: $file not found in mirror '${mirror:-unset}' (set FASHIOND_MODELS_MIRROR or FASHIOND_MODELS_URL)" >&2
      status=1; continue
    fi
    if ! echo "$sum  $src" | sha256sum -c --status; then
      echo "setup-models: model $name: $src does not match SHA-256 $sum" >&2
      rm -f "$dest/$file.part"; status=1; continue
    fi
    if [ "$src" = "$dest/$file.part" ]; then mv "$src" "$dest/$file"; else cp "$src" "$dest/$file.tmp" && mv "$dest/$file.tmp" "$dest/$file"; fi
    echo "setup-models: installed $file" >&2
  fi
  # Batch rewrite: a missing or mismatching rewrite is a warning only (the
  # runtime then serves the model from a session pool), never a failure.
  [ -n "$bfile" ] || continue
  verified "$dest/$bfile" "$bsum" && continue
  if [ -n "$mirror" ] && verified "$mirror/$bfile" "$bsum"; then
    cp "$mirror/$bfile" "$dest/$bfile.tmp" && mv "$dest/$bfile.tmp" "$dest/$bfile"
    echo "setup-models: installed $bfile" >&2; continue
  fi
  if ! "$python" -c 'import onnx, numpy' 2>/dev/null; then
    echo "setup-models: warning: model $name: cannot make $bfile ($python lacks onnx/numpy: apt-get install python3-onnx python3-numpy); it will run unbatched" >&2
    continue
  fi
  if ! "$python" "$root/scripts/rewrite_batch.py" "$dest/$file" "$dest/$bfile.tmp" 2>/dev/null; then
    echo "setup-models: warning: model $name: scripts/rewrite_batch.py failed; it will run unbatched" >&2
    rm -f "$dest/$bfile.tmp"; continue
  fi
  if verified "$dest/$bfile.tmp" "$bsum"; then
    mv "$dest/$bfile.tmp" "$dest/$bfile"
    echo "setup-models: made $bfile" >&2
  else
    echo "setup-models: warning: model $name: rewrite gave SHA-256 $(sha256sum "$dest/$bfile.tmp" | cut -d' ' -f1), manifest wants $bsum (different onnx version?); it will run unbatched" >&2
    rm -f "$dest/$bfile.tmp"
  fi
done
exit $status
