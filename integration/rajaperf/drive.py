"""Run RAJAPerf's own driver for one kernel, variant and tuning; print its time and checksum.

The run command of each kernel's nvcc-opt.toml (stdlib only, so it runs wherever the driver
does). It runs `raja-perf.exe -k KERNEL -v VARIANT -t TUNING -od OUTDIR [driver args...]`, then
reads what the driver wrote: the mean time per pass from `RAJAPerf-timing-Average.csv` (seconds)
and the checksum from `RAJAPerf-checksum.txt`, and prints

    rajaperf-ran: KERNEL VARIANT-TUNING
    rajaperf-time-s: <seconds>
    rajaperf-checksum: <checksum>

Any other outcome exits non-zero with one line that says why: the driver crashed (its status),
hung (killed at --timeout with its whole process group), or did not run that kernel and tuning
(the tunings it did run are listed).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
from pathlib import Path

TIMING = "RAJAPerf-timing-Average.csv"
CHECKSUM = "RAJAPerf-checksum.txt"


class DriveError(Exception):
    """The run did not give a time and a checksum; the message says why."""


def run_driver(argv: list[str], timeout: float) -> int:
    """The driver's exit status; DriveError when it outlives `timeout` (its group is killed)."""
    with subprocess.Popen(argv, start_new_session=True) as process:
        try:
            return process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            raise DriveError(f"the driver ran past {timeout:g} s and was killed") from None


def read_time(path: Path, kernel: str, column: str) -> float:
    """The number in `kernel`'s row under the `column` (VARIANT-TUNING) heading of a timing CSV:
    a title line, a row of variants, a row of tunings, then a row per kernel."""
    if not path.is_file():
        raise DriveError(f"the driver wrote no {path.name}")
    rows = [[cell.strip() for cell in line.split(",")] for line in path.read_text().splitlines()]
    headings = [r for r in rows if r and r[0].startswith("Kernel")]
    if len(headings) < 2:
        raise DriveError(f"{path.name}: no variant and tuning heading rows")
    columns = [f"{v}-{t}" for v, t in zip(headings[0][1:], headings[1][1:], strict=False)]
    row = next((r for r in rows if r and r[0] == kernel), None)
    if row is None:
        raise DriveError(f"{path.name}: no row for {kernel}")
    if column not in columns:
        raise DriveError(f"{path.name}: {kernel} has no {column}; it has {', '.join(columns)}")
    cell = row[1 + columns.index(column)] if len(row) > 1 + columns.index(column) else ""
    try:
        return float(cell)
    except ValueError:
        raise DriveError(f"{path.name}: {kernel} {column} is {cell!r}, not a time") from None


def read_checksum(path: Path, kernel: str, column: str) -> str:
    """The checksum printed for `column` (VARIANT-TUNING) in `kernel`'s block of the report."""
    if not path.is_file():
        raise DriveError(f"the driver wrote no {path.name}")
    inside = False
    for line in path.read_text().splitlines():
        words = line.split()
        if words == [kernel]:  # the kernel's block: its name alone, then a row per variant
            inside = True
        elif inside and line.startswith("---"):
            break
        elif inside and words and words[0] == column:
            if len(words) < 2 or words[1] == "Not":
                raise DriveError(f"{path.name}: {kernel} {column} was not run")
            return words[1]
    raise DriveError(f"{path.name}: no checksum for {kernel} {column}")


def main(args: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exe", required=True, help="raja-perf.exe")
    parser.add_argument("--kernel", required=True, help="e.g. Apps_PRESSURE")
    parser.add_argument("--variant", default="Base_CUDA")
    parser.add_argument("--tuning", required=True, help="e.g. block_256")
    parser.add_argument("--outdir", required=True, help="where the driver writes its reports")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds")
    known, driver_args = parser.parse_known_args(args)
    out = Path(known.outdir)
    out.mkdir(parents=True, exist_ok=True)
    for stale in (TIMING, CHECKSUM):
        (out / stale).unlink(missing_ok=True)  # a report must come from this run
    column = f"{known.variant}-{known.tuning}"
    argv = [
        known.exe, "-k", known.kernel, "-v", known.variant, "-t", known.tuning,
        "-od", str(out), *driver_args,
    ]  # fmt: skip
    try:
        status = run_driver(argv, known.timeout)
        if status != 0:
            raise DriveError(f"the driver exited with status {status}")
        seconds = read_time(out / TIMING, known.kernel, column)
        checksum = read_checksum(out / CHECKSUM, known.kernel, column)
    except (DriveError, OSError) as exc:
        print(f"rajaperf-error: {known.kernel} {column}: {exc}", file=sys.stderr)
        return 3
    print(f"rajaperf-ran: {known.kernel} {column}")
    print(f"rajaperf-time-s: {seconds!r}")
    print(f"rajaperf-checksum: {checksum}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
