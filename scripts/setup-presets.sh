#!/usr/bin/env bash
# Installs the preset model library: copies the person photos named in the
# committed manifest (pipelines/capability/presets/presets.json) from the shared test
# images ($FASHIOND_PRESETS_SRC, default ../shared/testdata/images) into
# ${FASHIOND_DATA_DIR:-data}/presets/ (or $FASHIOND_PRESETS_DIR), verifying
# each copy's SHA-256, and writes the manifest there as builtin.json.
# Operators add their own models by dropping images plus entries in
# presets.json in that directory (created empty here, never overwritten).
# Idempotent: verified copies are left alone. Needs bash, coreutils and sed.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
src="${FASHIOND_PRESETS_SRC:-$root/../shared/testdata/images}"
dest="${FASHIOND_PRESETS_DIR:-${FASHIOND_DATA_DIR:-$root/data}/presets}"
manifest="$root/pipelines/capability/presets/presets.json"
mkdir -p "$dest"
verified() { [ -f "$1" ] && echo "$2  $1" | sha256sum -c --status; }
status=0
n=0
# One "file" and one "sha256" line per entry, in order.
paste -d' ' \
  <(sed -n 's/^ *"file": *"\([^"]*\)".*/\1/p' "$manifest") \
  <(sed -n 's/^ *"sha256": *"\([0-9a-f]*\)".*/\1/p' "$manifest") |
{
  while read -r file sum; do
    [ -n "$file" ] && [ -n "$sum" ] || { echo "setup-presets: $manifest: every entry needs file and sha256" >&2; exit 1; }
    case "$file" in */*|..*) echo "setup-presets: bad file name $file" >&2; exit 1 ;; esac
    if verified "$dest/$file" "$sum"; then n=$((n+1)); continue; fi
    if [ ! -f "$src/$file" ]; then
      echo "setup-presets: $file not found in $src (set FASHIOND_PRESETS_SRC)" >&2; status=1; continue
    fi
    cp -f "$src/$file" "$dest/$file.part"
    if ! verified "$dest/$file.part" "$sum"; then
      rm -f "$dest/$file.part"
      echo "setup-presets: $src/$file does not match the manifest's sha256" >&2; status=1; continue
    fi
    chmod 0644 "$dest/$file.part"
    mv -f "$dest/$file.part" "$dest/$file"
    n=$((n+1))
  done
  exit $status
} || status=$?
if ! cmp -s "$manifest" "$dest/builtin.json"; then
  cp -f "$manifest" "$dest/builtin.json.part" && chmod 0644 "$dest/builtin.json.part" && mv -f "$dest/builtin.json.part" "$dest/builtin.json"
fi
[ -f "$dest/presets.json" ] || printf '{\n  "presets": []\n}\n' > "$dest/presets.json"
if [ "$status" -ne 0 ]; then exit "$status"; fi
echo "setup-presets: preset library ready in $dest"
