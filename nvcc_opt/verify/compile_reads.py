"""The code may not read where or when it is compiled. Pure but for the clock and the draw.

The build's copy of the region's file, the allowlist's (verify/check_copy.py) and the object
line's own compile (workspace/unit.py) each give the compiler another file name, and they run at
other seconds: a candidate that reads the name (`__BASE_FILE__`) or the time (`__DATE__`,
`__TIME__`, `__TIMESTAMP__`) can compile to the original under every check and to a cheat in
the build (a constant-folded branch; the PTX line alone reads device asm). No list of macro
names is complete, so the preprocessing measures it (verify/preprocess.py): its copy has an
unguessable name, the compiler is told an unguessable date and time (SOURCE_DATE_EPOCH, which
gcc and clang read) and the copy's modification time is another (`Told`); a region whose
preprocessed text holds any of them, or the real time of the run, reads it (`compile_reads`;
the allowlist refuses it unless the original reads the same). `__FILE__`, `__FILE_NAME__` and
`__LINE__` follow the `#line` directives, which every compile shares with the build's.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timezone
from typing import Protocol

COMPILE_NAME = "the name of the file being compiled"
COMPILE_TIME = "the date and time of the compile"
_EARLIEST, _LATEST = 315532800, 1577836800  # 1980 to 2020: instants no compile runs at now


@dataclass(frozen=True)
class Told:
    """The instants a preprocessing tells the compiler: the date and time (SOURCE_DATE_EPOCH)
    and the copy's modification time, each unguessable; and when it started."""

    epoch: int
    written: int
    started: float

    @staticmethod
    def draw() -> Told:
        span = _LATEST - _EARLIEST
        return Told(
            _EARLIEST + secrets.randbelow(span), _EARLIEST + secrets.randbelow(span), time.time()
        )

    def canaries(self, copy_name: str, ran: tuple[float, float]) -> dict[str, tuple[str, ...]]:
        """What the region's text may not hold, by what it tells: the random part of the
        copy's name; the date and time (as __DATE__, __TIME__ and __TIMESTAMP__ write them, in
        UTC and local time) of the instants told and of every second the run took."""
        seconds = range(int(ran[0]), int(ran[1]) + 1)
        stamps = (self.epoch, self.written, *seconds)
        times = {_clock(t, zone) for t in stamps for zone in (UTC, None)}
        dates = {_date(t, zone) for t in stamps for zone in (UTC, None)}
        token = copy_name.rsplit(".", 1)[0].rsplit("-", 1)[-1]
        return {COMPILE_NAME: (token,), COMPILE_TIME: tuple(sorted(times | dates))}


def _clock(instant: float, zone: timezone | None) -> str:
    return datetime.fromtimestamp(instant, zone).strftime("%H:%M:%S")


def _date(instant: float, zone: timezone | None) -> str:
    """As __DATE__ writes it: `Mar  4 1990`."""
    moment = datetime.fromtimestamp(instant, zone)
    return f"{moment.strftime('%b')} {moment.day:2d} {moment.year}"


class Side(Protocol):
    """A preprocessed side (preprocess.Side): the region's text and each line's code line."""

    @property
    def region(self) -> str: ...

    @property
    def region_lines(self) -> tuple[int, ...]: ...


def compile_reads(
    sides: Sequence[Side], canaries: dict[str, tuple[str, ...]]
) -> tuple[tuple[str, int], ...]:
    """(what, code line) of each canary kind some side's region text holds, first line only.

    >>> from nvcc_opt.verify.preprocess import Side as Preprocessed
    >>> code = 'int a;\\nconst char* f = "x/.c-0f3a.cu";'
    >>> side = Preprocessed("host", "", (), code, (1, 2), (), (0, 0))
    >>> compile_reads([side], {COMPILE_NAME: ("0f3a",), COMPILE_TIME: ("12:00:01",)})
    (('the name of the file being compiled', 2),)
    """
    found: dict[str, int] = {}
    for side in sides:
        for row, text in enumerate(side.region.split("\n")):
            for what, values in canaries.items():
                if what not in found and any(v and v in text for v in values):
                    found[what] = side.region_lines[row] if row < len(side.region_lines) else 0
    return tuple(found.items())
