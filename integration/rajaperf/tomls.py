"""Each kernel's nvcc-opt.toml: build the suite, run its driver for that kernel's Base_CUDA tuning
through drive.py, time from the driver's timing report, check its checksum (pure: text out).

The files live in `<checkout>/.nvcc-opt-rajaperf/kernels/<Group_KERNEL>/nvcc-opt.toml` and are
given to `nvcc-opt optimize --root` that folder; paths in them are relative to it where nvcc-opt
reads them so (the build tree, the store, `source`: the checkout, which the model's file tools
see), absolute where a program must be found (python, drive.py). Fresh inputs in the final
verification: other problem sizes (`--sizefact`), which the driver fills with its own data, and
fewer repetitions (state kept across repetitions would show); the sanitizer runs a small size
with few repetitions.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from integration.rajaperf.kernels import Kernel

DRIVER = "bin/raja-perf.exe"
DRIVE = Path(__file__).resolve().with_name("drive.py")
FRESH_INPUTS = (("--sizefact", "0.73"), ("--sizefact", "1.37", "--repfact", "0.5"))
SANITIZER_ARGS = ("--sizefact", "0.02", "--repfact", "0.02")
RUN_TIMEOUT_S = 300.0
DRIVER_TIMEOUT_S = 240.0  # drive.py's own, inside the run's: its message says what hung


def _q(value: str) -> str:
    return json.dumps(value)  # a TOML basic string


def _list(values: tuple[str, ...] | list[str]) -> str:
    return "[" + ", ".join(_q(v) for v in values) + "]"


def render(
    kernel: Kernel, folder: Path, build: Path, store: Path, python: str, checkout: Path
) -> str:
    """The nvcc-opt.toml of `kernel`, to be written in `folder` of `checkout`; ValueError for a
    kernel without a Base_CUDA variant."""
    if kernel.tuning is None:
        raise ValueError(f"{kernel.full_name} has no Base_CUDA variant: nothing to optimize")
    rel_build = os.path.relpath(build, folder)
    rel_store = os.path.relpath(store, folder)
    rel_checkout = os.path.relpath(checkout, folder)
    run = [
        python, str(DRIVE), "--exe", "{build}/" + DRIVER, "--kernel", kernel.full_name,
        "--variant", "Base_CUDA", "--tuning", kernel.tuning, "--outdir", "{work}/out",
        "--timeout", f"{DRIVER_TIMEOUT_S:g}",
    ]  # fmt: skip
    tol = kernel.tolerance
    fresh = ", ".join(_list(list(f)) for f in FRESH_INPUTS)
    return f"""\
# nvcc-opt settings for RAJAPerf's {kernel.full_name}, Base_CUDA tuning {kernel.tuning}
# (written by integration/rajaperf prepare; removed by unprepare).
store = {_q(rel_store)}
# the checkout: the model's file tools see it
source = {_q(rel_checkout)}

[build]
dir = {_q(rel_build)}
command = ["cmake", "--build", "{{build}}", "--target", "raja-perf.exe"]
timeout_s = 3600

[run]
command = {_list(run)}
cwd = "{{work}}"
timeout_s = {RUN_TIMEOUT_S:g}

[time]
# the driver's mean time per pass (all repetitions) for this kernel and tuning
source = "regex"
regex = 'rajaperf-time-s: (\\S+)'
unit = "s"

[check]
require = [{_q("rajaperf-ran: " + kernel.full_name + " Base_CUDA-" + kernel.tuning)}]
numbers = ['rajaperf-checksum: (\\S+)']
# {tol.name}: {tol.why}
rtol = {tol.rtol!r}

[verify]
fresh_inputs = [{fresh}]
sanitizer_args = {_list(list(SANITIZER_ARGS))}
"""


def render_root(build: Path, store: Path, root: Path) -> str:
    """The checkout's own nvcc-opt.toml: where the store is, so the build through the launcher
    applies accepted rewrites from the store the kernels' runs fill."""
    return f"""\
# nvcc-opt settings for this RAJAPerf checkout (written by integration/rajaperf prepare;
# removed by unprepare). Each kernel's run and checks: .nvcc-opt-rajaperf/kernels/*/nvcc-opt.toml
store = {_q(os.path.relpath(store, root))}

[build]
dir = {_q(os.path.relpath(build, root))}
command = ["cmake", "--build", "{{build}}", "--target", "raja-perf.exe"]
"""
