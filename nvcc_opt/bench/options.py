"""The options of one `nvcc-opt bench suite` session (the command line's, as data)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Options:
    suite: Path
    spec: str
    out: Path
    runs: int = 1
    only: tuple[str, ...] = ()
    time_s: float | None = None
    turns: int | None = None
    cmake_args: tuple[str, ...] = ()
    timeout_s: float | None = None  # per optimize call; default from the regions and --time
    launcher: str = "nvcc-opt"
    command_line: str = ""
    gpus: tuple[str, ...] = ()  # one app run per GPU at once; (): one at a time, env untouched
    start_within_s: float | None = None  # no run starts later than this after the bench began
    optimize_args: tuple[str, ...] = ()  # added to every optimize call (e.g. --parity, --tools)
    seed_per_app: bool = False  # optimize's --seed from the app's name and the run (run_seed)
