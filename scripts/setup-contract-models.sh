#!/usr/bin/env bash
# Makes the diffusion engine's contract models (small ONNX test models in
# Optimum's Stable-Diffusion layout, see diffusion/testdata/README.md) in
# diffusion/testdata/contract/ with scripts/contract_models.py, and checks
# every file against the committed diffusion/testdata/contract.sha256.
#
#   scripts/setup-contract-models.sh                 check, regenerate if needed
#   scripts/setup-contract-models.sh --update-sums   regenerate and rewrite the sums
#
# Idempotent: when every file listed in the sums exists with its SHA-256 and
# nothing else is there, it does nothing. Otherwise it generates into a
# staging folder (contract/.staging) and installs only when the generated
# files are exactly the ones the sums list, with those hashes; a mismatch
# (changed generator, different onnx version) fails loudly and installs
# nothing. Needs bash, coreutils and /usr/bin/python3 with python3-onnx and
# python3-numpy ($FASHIOND_PYTHON overrides), plus the CLIP BPE file
# ($FASHIOND_CLIP_BPE, default ../shared/testdata/clip/bpe_simple_vocab_16e6.txt.gz).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$root/diffusion/testdata/contract"
sums="$root/diffusion/testdata/contract.sha256"
stage="$out/.staging"
python="${FASHIOND_PYTHON:-/usr/bin/python3}"
bpe="${FASHIOND_CLIP_BPE:-$root/../shared/testdata/clip/bpe_simple_vocab_16e6.txt.gz}"
update=0
case "${1:-}" in
  "") ;;
  --update-sums) update=1 ;;
  *) echo "usage: $0 [--update-sums]" >&2; exit 2 ;;
esac
die() { echo "setup-contract-models: $*" >&2; exit 1; }

# listed DIR: the files under DIR (relative, sorted), staging excluded.
listed() { (cd "$1" && find . -path ./.staging -prune -o -type f -print | sed 's|^\./||' | LC_ALL=C sort); }
# matches DIR: DIR holds exactly the files in the sums, with their hashes.
matches() {
  [ -d "$1" ] && [ -s "$sums" ] || return 1
  (cd "$1" && sha256sum -c --status --strict "$sums" 2>/dev/null) || return 1
  [ "$(listed "$1")" = "$(cut -c67- "$sums" | LC_ALL=C sort)" ]
}

if [ "$update" = 0 ]; then
  matches "$out" && exit 0
  [ -s "$sums" ] || die "$sums is missing; run $0 --update-sums"
fi
"$python" -c 'import onnx, numpy' 2>/dev/null ||
  die "$python lacks onnx/numpy (apt-get install python3-onnx python3-numpy, or set FASHIOND_PYTHON)"
[ -f "$bpe" ] || die "CLIP BPE file $bpe not found (set FASHIOND_CLIP_BPE)"
rm -rf "$stage"
mkdir -p "$stage"
trap 'rm -rf "$stage"' EXIT
"$python" "$root/scripts/contract_models.py" --bpe "$bpe" "$stage" || die "scripts/contract_models.py failed"
if [ "$update" = 1 ]; then
  (cd "$stage" && listed . | xargs -d '\n' sha256sum) >"$sums.tmp"
  mv "$sums.tmp" "$sums"
  echo "setup-contract-models: wrote $(wc -l <"$sums") sums to ${sums#"$root"/}" >&2
elif ! matches "$stage"; then
  echo "setup-contract-models: generated files differ from ${sums#"$root"/}:" >&2
  (cd "$stage" && sha256sum -c --quiet "$sums" 2>&1 | sed 's/^/  /' >&2) || true
  diff <(cut -c67- "$sums" | LC_ALL=C sort) <(listed "$stage") | sed -n 's/^\([<>]\)/  \1/p' >&2 || true
  die "mismatch (onnx $("$python" -c 'import onnx; print(onnx.__version__)')); if the generator changed on purpose, run $0 --update-sums and commit the sums"
fi
# Install: replace every variant folder, drop anything stale.
find "$out" -mindepth 1 -maxdepth 1 ! -name .staging -exec rm -rf {} +
for d in "$stage"/*; do mv "$d" "$out/"; done
matches "$out" || die "installed files do not match ${sums#"$root"/} (concurrent run?)"
echo "setup-contract-models: made $(wc -l <"$sums") files in ${out#"$root"/}" >&2
