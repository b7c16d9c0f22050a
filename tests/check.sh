#!/usr/bin/env bash
# The test command: lint, types, then the whole test suite (GPU tests skip without a GPU).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
[ -x .venv/bin/nvcc-opt ] || bash tests/setup_env.sh
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy
.venv/bin/pytest -n "${PYTEST_WORKERS:-2}" "$@"
