#!/usr/bin/env bash
# Builds the S3 server the storage tests run against: versitygw (an S3
# gateway with a POSIX backend, Apache-2.0) from its Go module, pinned by
# version (the module proxy's checksum database verifies the source), into
# .deps/versitygw/<version>/versitygw. Idempotent: does nothing when that
# binary is there (it is moved into place only after a complete build). About
# 1.5 minutes of build on 2 cores the first time.
set -euo pipefail
VGW_VERSION="v1.8.0"
root="$(cd "$(dirname "$0")/.." && pwd)"
dest="$root/.deps/versitygw/$VGW_VERSION"
bin="$dest/versitygw"
if [ -x "$bin" ]; then exit 0; fi
command -v go >/dev/null || { echo "setup-s3-test: go is required" >&2; exit 1; }
echo "setup-s3-test: building versitygw@$VGW_VERSION (S3 server for the storage tests)" >&2
mkdir -p "$dest"
tmp="$(mktemp -d "$dest/.build-XXXXXX")"; trap 'rm -rf "$tmp"' EXIT
# Outside the project's module: its GOFLAGS (-mod=mod) must not apply.
(cd "$tmp" && GOFLAGS= GOBIN="$tmp" go install "github.com/versity/versitygw/cmd/versitygw@$VGW_VERSION")
mv "$tmp/versitygw" "$bin"
echo "setup-s3-test: installed $bin" >&2
