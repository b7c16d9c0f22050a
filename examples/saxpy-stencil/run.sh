#!/bin/sh
# Runs the built program: run.sh [BUILD_DIR] [program options...]
# BUILD_DIR defaults to ./build; options (--size N, --reps N, --seed N) go to the program.
set -eu
build_dir=${1:-./build}
if [ $# -gt 0 ]; then
    shift
fi
exec "$build_dir/saxpy_stencil" "$@"
