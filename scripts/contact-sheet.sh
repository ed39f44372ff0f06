#!/usr/bin/env bash
# Regenerates docs/contact-*.png and docs/CONTACT_SHEET.md: starts a private
# `fashiond serve` (own data dir, own Redis, a throw-away key), submits every
# model and style through the public HTTP API with ../shared/testdata, and
# composes the outputs. Usage:
#   scripts/contact-sheet.sh [-only SHEETS] [-jpeg] [-photos six|other|all] [-save DIR] [-out DIR]
# -photos picks the photos of the photos-* sheets: six (default: the six
# issue-9 photos), other (the seven other shared photos of a person), all;
# -save DIR also keeps every output at full size (go run ./cmd/contactsheet -h).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
make -s setup build
tmp="$(mktemp -d)"
port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
key="fsk_contactsheet_$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
export FASHIOND_DATA_DIR="$tmp" FASHIOND_MODELS_DIR="$root/data/models" FASHIOND_ADDR="127.0.0.1:$port" \
       FASHIOND_API_KEYS="$key:100000" FASHIOND_CONCURRENCY=2 FASHIOND_LOG_LEVEL=warn
cp -r "$root/data/presets" "$tmp/presets" 2>/dev/null || true
./bin/fashiond serve >"$tmp/serve.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$tmp"' EXIT
for _ in $(seq 1 600); do
  curl -fsS "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break
  kill -0 $pid 2>/dev/null || { cat "$tmp/serve.log"; exit 1; }
  sleep 0.2
done
go run ./cmd/contactsheet -base "http://127.0.0.1:$port" -key "$key" -testdata "$root/../shared/testdata" -out "$root/docs" "$@"
