#!/usr/bin/env bash
# Installs Debian's redis-sentinel, the Sentinel the Redis high-availability
# test (jobs/sentinel_test.go) starts three of, next to a master and a
# replica redis-server. Idempotent: does nothing when redis-sentinel is on
# the PATH. The package's own service is stopped and disabled: the test
# starts its sentinels itself, on free ports under a temporary directory.
set -euo pipefail
if command -v redis-sentinel >/dev/null 2>&1; then exit 0; fi
echo "setup-redis-sentinel: installing redis-sentinel (for the Sentinel failover test)" >&2
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
# policy-rc.d 101: the package must not start a system sentinel on :26379.
POLICY=/usr/sbin/policy-rc.d
ADDED_POLICY=""
if [ ! -e "$POLICY" ]; then
  printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$POLICY" >/dev/null
  $SUDO chmod +x "$POLICY"
  ADDED_POLICY=1
fi
cleanup() { if [ -n "$ADDED_POLICY" ]; then $SUDO rm -f "$POLICY"; fi; }
trap cleanup EXIT
if ! $SUDO apt-get install -y -qq redis-sentinel >/dev/null 2>&1; then
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq redis-sentinel >/dev/null
fi
echo "setup-redis-sentinel: installed $(command -v redis-sentinel)" >&2
