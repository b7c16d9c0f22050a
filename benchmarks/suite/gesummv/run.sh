#!/bin/sh
set -eu
build_dir=${1:-./build}
[ $# -gt 0 ] && shift
exec "$build_dir/gesummv" "$@"
