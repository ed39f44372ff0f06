#!/usr/bin/env bash
# Installs the Debian packages fashiond needs when they are missing.
# Idempotent and quiet when everything is present.
set -euo pipefail
need=()
have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
for p in libopencv-dev opencv-data ffmpeg redis-server pkg-config python3-onnx python3-numpy; do
  have_pkg "$p" || need+=("$p")
done
# npm fetches the ONNX Runtime library (scripts/setup-ort.sh); curl is used by
# the README examples and scripts/contact-sheet.sh.
command -v npm >/dev/null 2>&1 || need+=(npm)
command -v curl >/dev/null 2>&1 || need+=(curl)
if [ ${#need[@]} -eq 0 ]; then exit 0; fi
echo "setup-system: installing ${need[*]}" >&2
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
# redis-server's Debian package starts a system instance; fashiond runs its own.
