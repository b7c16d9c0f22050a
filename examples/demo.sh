#!/usr/bin/env bash
# End to end, as a user would: install nvcc-opt, build the example through the launcher, import a
# rewrite, review it, rebuild (exactly one object recompiles), and run the program where a GPU is.
# Uses a private store under build/demo/ so it never touches your own (~/.local/share/nvcc-opt).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
example="$root/examples/saxpy-stencil"
work="$root/build/demo"
generator="${GENERATOR:-Ninja}"

NVCC_OPT_MODELS=0 bash "$root/tests/setup_env.sh"  # the demo needs no model
nvcc_opt="$root/.venv/bin/nvcc-opt"
export NVCC_OPT_STORE="$work/store.db"
rm -rf "$work"
mkdir -p "$work"

step() { printf '\n== %s\n' "$*"; }

step "configure and build through the launcher ($generator)"
cmake -S "$example" -B "$work/build" -G "$generator" \
  -DCMAKE_CUDA_COMPILER_LAUNCHER="$nvcc_opt" >"$work/configure.log"
cmake --build "$work/build" -j 2

step "what the build has seen"
"$nvcc_opt" status

step "import a rewrite (arrives as proposed) and review it"
"$nvcc_opt" import "$example/rewrites.json" --root "$example"
"$nvcc_opt" review --list
id="$("$nvcc_opt" review --list --json | "$root/.venv/bin/python" -c \
  'import json, sys; print(json.load(sys.stdin)[0]["id"])')"
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi >/dev/null 2>&1; then
  step "verify it here: fresh builds, checks, paired timing, fresh inputs, compute-sanitizer"
  "$nvcc_opt" verify "$id"
  "$nvcc_opt" review --accept "$id" --reason "demo: reviewed the diff and the verification"
else
  step "no GPU here: the rewrite cannot be verified, so accepting it needs --force (recorded)"
  "$nvcc_opt" review --accept "$id" --force --reason "demo without a GPU: not verified"
fi

step "rebuild: only the translation unit holding the region recompiles"
cmake --build "$work/build" -j 2 -- $([ "$generator" = Ninja ] && echo -v || echo VERBOSE=1) \
  | grep -E 'nvcc-opt|Linking|\.cu\.o' || true
"$nvcc_opt" explain "$example/src/stencil.cu"

if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi >/dev/null 2>&1; then
  step "run the application and check its result"
  python3 "$example/check.py" "$work/build"
else
  step "no GPU here: the program was built but not run"
fi
