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
# The tests that drive CMake again, on the newest CMake (setup_env.sh installs it), unless this
# run was given its own pytest arguments.
cmake_tests=(tests/test_cmake_api.py tests/test_cmake_dir.py tests/test_cmake_rebuilds.py
  tests/test_example_builds.py tests/test_launcher_*.py tests/test_rajaperf*.py)
if [ $# -eq 0 ] && [ -x .venv/cmake-latest/path/cmake ]; then
  echo "check.sh: the CMake tests again on $(.venv/cmake-latest/path/cmake --version | head -1)"
  PATH="$root/.venv/cmake-latest/path:$PATH" .venv/bin/pytest -n "${PYTEST_WORKERS:-2}" -q \
    "${cmake_tests[@]}"
elif [ $# -eq 0 ]; then
  echo "check.sh: no .venv/cmake-latest (setup_env.sh could not install CMake): the CMake tests ran on the system CMake only"
fi
