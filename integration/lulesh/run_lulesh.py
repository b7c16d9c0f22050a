"""The run command nvcc-opt.toml names: LULESH once, its output passed through, then the line
`lulesh_elapsed_s = S`, the main loop's time to 8 digits, and the scale-free symmetry figures
nvcc-opt's [check] compares (see output.py).

    python -m integration.lulesh.run_lulesh BINARY --size N --iters I [--size M ...]

A later `--size`/`--iters` replaces an earlier one, so [verify] fresh_inputs and sanitizer_args,
which nvcc-opt appends to the command, choose another problem. The exit status is LULESH's.
"""

from __future__ import annotations

import argparse
import subprocess
import sys

from integration.lulesh.output import OutputError, parse


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="run_lulesh")
    parser.add_argument("binary")
    parser.add_argument("--size", type=int, required=True)
    parser.add_argument("--iters", type=int, default=-1, help="-1: run to the stop time")
    args = parser.parse_args(argv)
    command = [args.binary, "-s", str(args.size)]
    if args.iters > 0:
        command += ["-i", str(args.iters)]
    done = subprocess.run(command, capture_output=True, text=True, errors="replace", check=False)
    sys.stdout.write(done.stdout)
    sys.stderr.write(done.stderr)
    if done.returncode == 0:
        try:
            figures = parse(done.stdout)
            print(f"lulesh_elapsed_s = {figures.elapsed_s:.9g}")
            sys.stdout.write(figures.symmetry_lines())
        except OutputError as exc:
            print(f"run_lulesh: {exc}", file=sys.stderr)
            return 1
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
