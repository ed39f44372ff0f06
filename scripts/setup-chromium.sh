#!/usr/bin/env bash
# Installs Debian's chromium, the headless browser the playground test
# (cmd/fashiond/playground_e2e_test.go) drives through chromedp. Idempotent:
# does nothing when /usr/bin/chromium is there.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then exit 0; fi
echo "setup-chromium: installing chromium (headless browser for the playground test)" >&2
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq chromium >/dev/null
echo "setup-chromium: installed /usr/bin/chromium" >&2
