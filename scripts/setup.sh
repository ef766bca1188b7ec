#!/usr/bin/env bash
# Installs the pinned toolchain on a fresh machine: Deno (from npm, into tools/) and the
# project's npm dependencies (cached by Deno from deno.lock). Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x tools/node_modules/.bin/deno ]; then
  (cd tools && npm install --no-audit --no-fund --loglevel=error)
fi
tools/node_modules/.bin/deno install --quiet
tools/node_modules/.bin/deno --version | head -1
