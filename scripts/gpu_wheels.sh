#!/usr/bin/env bash
# The wheels the GPU machine lacks (its image has torch, transformers, accelerate, peft, pyarrow,
# pandas, xxhash, aiohttp, fsspec, click, filelock, pytest, pytest-xdist: KINDS.md's package
# list), downloaded here into .whl/ (git-ignored) at the versions this checkout's .venv runs, so
# the device installs what the tests ran against. Carry `.whl`; gpu_batch.sh and gpu_env.sh install
# it into /tmp/site. About 12 MB (nvcc-opt's own needs) plus 5 MB for the training package.
# Usage: bash scripts/gpu_wheels.sh [DIR]   (run after tests/setup_env.sh)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="${1:-$root/.whl}"
pip="$root/.venv/bin/python -m pip"
names=(sqlalchemy pydantic pydantic-core annotated-types typing-inspection typing-extensions
  tree-sitter tree-sitter-cuda trl datasets dill multiprocess gguf)
pins=()
for n in "${names[@]}"; do
  v="$($pip show "$n" 2>/dev/null | sed -n "s/^Version: //p" || true)"
  [ -n "$v" ] || { echo "gpu_wheels: $n is not installed in $root/.venv (run tests/setup_env.sh)" >&2; exit 1; }
  pins+=("$n==$v")
done
mkdir -p "$dest"
$pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d "$dest" "${pins[@]}"
echo "gpu_wheels: $(ls "$dest" | wc -l) wheels, $(du -sh "$dest" | cut -f1) in $dest"
