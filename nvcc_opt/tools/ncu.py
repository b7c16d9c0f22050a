"""Nsight Compute (`ncu`) for profile_kernel: where it is, the command line, and its CSV read
back into per-kernel averages.

The metrics are a short list that a model can act on: time, DRAM and SM throughput against peak,
achieved and theoretical occupancy with what limits it, registers, and the warp stall breakdown
of ncu's WarpStateStats section (`smsp__average_warps_issue_stalled_<reason>_per_issue_active
.ratio`: cycles a warp spends in each state per issued instruction; their sum is the average
number of cycles between two instructions of a warp). The CSV of `--page raw` (one column per
metric, a units row) and of the details page (one row per metric) are both read.
"""

from __future__ import annotations

import csv
import os
import re
import shutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

TIME = "gpu__time_duration.sum"
DRAM_PCT = "dram__throughput.avg.pct_of_peak_sustained_elapsed"
DRAM_BYTES_PER_S = "dram__bytes.sum.per_second"
SM_PCT = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
ACHIEVED_OCCUPANCY = "sm__warps_active.avg.pct_of_peak_sustained_active"
THEORETICAL_OCCUPANCY = "sm__maximum_warps_per_active_cycle_pct"
REGISTERS = "launch__registers_per_thread"
BLOCK_SIZE = "launch__block_size"
GRID_SIZE = "launch__grid_size"
LIMITS = {  # blocks per SM that each resource allows
    "registers": "launch__occupancy_limit_registers",
    "shared memory": "launch__occupancy_limit_shared_mem",
    "warps": "launch__occupancy_limit_warps",
    "blocks": "launch__occupancy_limit_blocks",
}
STALL_PREFIX = "smsp__average_warps_issue_stalled_"
STALL_SUFFIX = "_per_issue_active.ratio"
# The reasons of ncu's WarpStateStats section (Volta and newer). "selected" is the cycle an
# instruction issues: part of the total, never shown as a stall.
STALL_REASONS = (
    "barrier",
    "branch_resolving",
    "dispatch_stall",
    "drain",
    "imc_miss",
    "lg_throttle",
    "long_scoreboard",
    "math_pipe_throttle",
    "membar",
    "mio_throttle",
    "misc",
    "no_instruction",
    "not_selected",
    "selected",
    "short_scoreboard",
    "sleeping",
    "tex_throttle",
    "wait",
)
NOT_A_STALL = "selected"
METRICS = (
    TIME,
    DRAM_PCT,
    DRAM_BYTES_PER_S,
    SM_PCT,
    ACHIEVED_OCCUPANCY,
    THEORETICAL_OCCUPANCY,
    REGISTERS,
    BLOCK_SIZE,
    GRID_SIZE,
    *LIMITS.values(),
    *(f"{STALL_PREFIX}{reason}{STALL_SUFFIX}" for reason in STALL_REASONS),
)
PERMISSION = "ERR_NVGPUCTRPERM"
NO_KERNELS_PROFILED = "No kernels were profiled"
# Where the CUDA toolkit puts ncu when PATH does not name it.
CUDA_DIRS = ("/usr/local/cuda/bin", "/opt/nvidia/nsight-compute")

# Units ncu prints, to the base unit this module keeps: nanoseconds, bytes per second, counts.
_PREFIXES = {"n": 1e-9, "u": 1e-6, "m": 1e-3, "": 1.0, "K": 1e3, "k": 1e3, "M": 1e6, "G": 1e9}
_PREFIXES["T"] = 1e12
_UNIT = re.compile(r"(?P<prefix>[numkKMGT]?)(?P<base>second|s|byte/second|byte/s|byte|cycle)")


def find(path: str | None = None) -> str | None:
    """The ncu executable: on PATH (`path`, default $PATH), else beside nvcc (the wrapper or its
    real file), else in $CUDA_HOME/bin, $CUDA_PATH/bin or the CUDA toolkit's usual folders."""
    found = shutil.which("ncu", path=path)
    if found:
        return found
    folders: list[Path] = []
    nvcc = shutil.which("nvcc", path=path)
    if nvcc:
        folders += [Path(nvcc).parent, Path(os.path.realpath(nvcc)).parent]
    for variable in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(variable):
            folders.append(Path(os.environ[variable]) / "bin")
    folders += [Path(d) for d in CUDA_DIRS]
    for folder in folders:
        candidate = folder / "ncu"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def kernel_regex(names: Iterable[str]) -> str:
    """ncu's `--kernel-name` value matching exactly these kernels by function name (a namespace
    before it and template arguments after it allowed)."""
    alternatives = "|".join(re.escape(n) for n in sorted(set(names)))
    return f"regex:^(.*::)?({alternatives})(<.*)?$"


def command(ncu: str, kernels: Sequence[str], launch_count: int) -> list[str]:
    """The ncu words before the run command: clocks as in a normal run, only the region's
    kernels, the first `launch_count` launches of them, the metrics as one CSV row per launch."""
    return [
        ncu,
        "--clock-control",
        "none",
        "--target-processes",
        "all",
        "--kernel-name-base",
        "function",
        "--kernel-name",
        kernel_regex(kernels),
        "--launch-count",
        str(launch_count),
        "--metrics",
        ",".join(METRICS),
        "--csv",
        "--page",
        "raw",
        "--print-units",
        "base",
        "--print-kernel-base",
        "function",
    ]


@dataclass
class Launch:
    """One profiled kernel launch: its metrics in base units (ns, byte/s, %, counts)."""

    kernel: str  # the function name, without namespace, template arguments or parameters
    values: dict[str, float] = field(default_factory=dict)


def parse_csv(text: str) -> list[Launch]:
    """Every launch in ncu's CSV output, in order; lines that are not CSV (the application's
    output, ==PROF== lines) are skipped. Reads both the raw page (a column per metric, then a
    units row) and the details page (a row per metric)."""
    launches: dict[tuple[str, str], Launch] = {}
    header: list[str] | None = None
    units: list[str] = []
    for line in text.splitlines():
        if not line.startswith('"'):
            continue
        row = next(csv.reader([line]))
        if "ID" in row and "Kernel Name" in row:
            header, units = row, []
            continue
        if header is None or len(row) != len(header):
            continue
        fields = dict(zip(header, row, strict=True))
        if not fields["ID"].strip() and not fields["Kernel Name"].strip():
            units = row  # the raw page's units row
            continue
        key = (fields.get("Process ID", ""), fields["ID"])
        launch = launches.setdefault(key, Launch(base_name(fields["Kernel Name"])))
        if "Metric Name" in fields and "Metric Value" in fields:
            unit = fields.get("Metric Unit", "")
            _put(launch, fields["Metric Name"], unit, fields["Metric Value"])
        else:
            for i, name in enumerate(header):
                if "__" in name:
                    _put(launch, name, units[i] if i < len(units) else "", row[i])
    return list(launches.values())


def _put(launch: Launch, metric: str, unit: str, text: str) -> None:
    value = number(text)
    if value is not None:
        launch.values[metric] = value * scale(unit)


def number(text: str) -> float | None:
    """A value as ncu prints it ("1,234.5", "n/a", ""), or None."""
    cleaned = text.strip().replace(",", "")
    try:
        return float(cleaned)
    except ValueError:
        return None


def scale(unit: str) -> float:
    """The factor from `unit` to the base unit kept here (ns for time, byte/s, bytes)."""
    match = _UNIT.fullmatch(unit.strip())
    if match is None:
        return 1.0  # %, counts, "block", "register/thread", ...
    factor = _PREFIXES[match["prefix"]]
    return factor * 1e9 if match["base"] in ("second", "s") else factor


def base_name(kernel: str) -> str:
    """`ns::k<float>(float*, int)` -> `k`."""
    name = kernel.strip()
    depth, cut = 0, len(name)
    for i, char in enumerate(name):  # the parameter list starts at the first top-level "("
        if char == "<":
            depth += 1
        elif char == ">":
            depth = max(depth - 1, 0)
        elif char == "(" and depth == 0:
            cut = i
            break
    name = name[:cut].strip()
    name = name.split("<", 1)[0]
    name = name.rsplit("::", 1)[-1]
    return name.split()[-1] if name.split() else name  # "void k" -> "k"


@dataclass(frozen=True)
class Summary:
    """One kernel's averages over its profiled launches."""

    kernel: str
    launches: int
    values: dict[str, float]  # metric -> mean over the launches that report it
    stalls: list[tuple[str, float]]  # (reason, share of all warp cycles per issue), largest first
    cycles_per_issue: float | None  # the sum of the breakdown


def summarize(launches: Sequence[Launch], kernel: str) -> Summary | None:
    """The averages of `kernel`'s launches, or None when none was profiled."""
    mine = [launch for launch in launches if launch.kernel == kernel]
    if not mine:
        return None
    metrics = dict.fromkeys(m for launch in mine for m in launch.values)
    values = {}
    for metric in metrics:
        seen = [launch.values[metric] for launch in mine if metric in launch.values]
        values[metric] = sum(seen) / len(seen)
    breakdown = {
        name[len(STALL_PREFIX) : -len(STALL_SUFFIX)]: value
        for name, value in values.items()
        if name.startswith(STALL_PREFIX) and name.endswith(STALL_SUFFIX)
    }
    total = sum(breakdown.values())
    stalls = []
    if total > 0:
        shares = [(r, value / total) for r, value in breakdown.items() if r != NOT_A_STALL]
        stalls = sorted(shares, key=lambda item: (-item[1], item[0]))
    return Summary(kernel, len(mine), values, stalls, total if breakdown else None)


def problems(output: str) -> list[str]:
    """ncu's own error lines (`==ERROR== ...`), in order."""
    return [line.strip() for line in output.splitlines() if line.strip().startswith("==ERROR==")]
