"""What the channel library wrote for one run: a `channel-<pid>.txt` per CUDA process. Pure but
for `read`.

Lines (see channel.cpp): `kernel LAUNCHES NS BASE MANGLED`, `memcpy COUNT NS`, `memset COUNT NS`,
`note TEXT`, and in a state run `state_calls N`, `state_allocation aI BASEHEX SIZE TYPE ORDINAL
SEEN...` (ORDINAL: the process's how-many-th allocation, -1 unknown), `state_call_ns CALL NS`,
`state_late_ns NS` (the calls after the last CALL, together), `state_digest call C aI PRE POST`,
`state_compare call C aI differing D of N first I B C worst W unwritten U`, `state_touched call C
aI`, and problems (`state_error`, `state_extra`, `state_layout`, `state_missing`). The last line
`end` is written at exit: a file without it (or no file) means the process did not end through
exit() with the channel intact.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

PROBLEMS = ("state_error", "state_extra", "state_layout", "state_missing")


@dataclass(frozen=True)
class Kernel:
    launches: int
    ns: int
    base: str  # the kernel's name without scope, template arguments or parameters
    mangled: str


@dataclass(frozen=True)
class Allocation:
    index: int
    base: str  # hex address (in the process that wrote the report)
    size: int
    type: str  # float, double, half, bfloat16 or other: the elements the state check changes
    seen: str  # the kernel signature and parameter that first reached it
    ordinal: int = -1  # the process's how-many-th allocation: the same in every run


@dataclass(frozen=True)
class Compare:
    call: int
    index: int
    differing: int
    elements: int
    first: int
    expected: float
    got: float
    worst: float
    unwritten: bool  # the process left it as it was before the call


@dataclass(frozen=True)
class State:
    calls: int
    allocations: tuple[Allocation, ...]
    call_ns: tuple[int, ...]  # region GPU time of calls 1, 2, ...
    digests: dict[tuple[int, int], tuple[str, str]]  # (call, allocation) -> (before, after)
    compares: tuple[Compare, ...]
    touched: tuple[tuple[int, int], ...]  # (call, allocation) changed though the record's was not
    problems: tuple[str, ...]
    late_ns: int = 0  # region GPU time of the calls after those of call_ns, together


@dataclass(frozen=True)
class Process:
    name: str  # the file's name
    complete: bool
    kernels: tuple[Kernel, ...]
    memcpy_ns: int = 0
    memset_ns: int = 0
    notes: tuple[str, ...] = ()
    state: State | None = None


@dataclass(frozen=True)
class Report:
    """One run: every CUDA process that wrote (or began to write) a channel file."""

    processes: tuple[Process, ...] = field(default_factory=tuple)

    @property
    def complete(self) -> bool:
        return bool(self.processes) and all(p.complete for p in self.processes)

    def launches(self) -> Counter[str]:
        """Launches per kernel (base name), all processes together."""
        counts: Counter[str] = Counter()
        for process in self.processes:
            for kernel in process.kernels:
                counts[kernel.base] += kernel.launches
        return counts

    def gpu_ns(self, names: Iterable[str] | None = None) -> int:
        """GPU nanoseconds of the kernels named (base names), or of all kernels."""
        wanted = None if names is None else set(names)
        return sum(
            k.ns for p in self.processes for k in p.kernels if wanted is None or k.base in wanted
        )

    def copy_ns(self) -> int:
        """GPU nanoseconds of memory copies and memsets, all processes together."""
        return sum(p.memcpy_ns + p.memset_ns for p in self.processes)

    @property
    def notes(self) -> tuple[str, ...]:
        return tuple(n for p in self.processes for n in p.notes)

    @property
    def states(self) -> tuple[State, ...]:
        """The state reports of the processes that ran the region."""
        return tuple(p.state for p in self.processes if p.state is not None and p.state.calls)


def read(folder: Path) -> Report:
    """Every channel file in `folder` (a missing folder reads as no process)."""
    if not folder.is_dir():
        return Report()
    files = sorted(folder.glob("channel-*.txt")) + sorted(folder.glob("channel-*.txt.tmp"))
    return Report(
        tuple(parse(f.name, f.read_text(encoding="utf-8", errors="replace")) for f in files)
    )


def parse(name: str, text: str) -> Process:
    """One channel file's text."""
    lines = text.splitlines()
    complete = bool(lines) and lines[-1].strip() == "end" and not name.endswith(".tmp")
    kernels: list[Kernel] = []
    notes: list[str] = []
    counts = {"memcpy": 0, "memset": 0}
    state_lines: list[list[str]] = []
    for line in lines:
        words = line.split()
        if not words:
            continue
        if words[0] == "kernel" and len(words) >= 5:
            kernels.append(Kernel(int(words[1]), int(words[2]), words[3], " ".join(words[4:])))
        elif words[0] in counts and len(words) == 3:
            counts[words[0]] = int(words[2])
        elif words[0] == "note":
            notes.append(line[len("note ") :])
        elif words[0].startswith("state_"):
            state_lines.append(words)
    state = _state(state_lines) if state_lines else None
    return Process(
        name, complete, tuple(kernels), counts["memcpy"], counts["memset"], tuple(notes), state
    )


def _index(word: str) -> int:
    return int(word.lstrip("a"))


def _state(lines: list[list[str]]) -> State:
    calls = 0
    allocations: list[Allocation] = []
    call_ns: dict[int, int] = {}
    late_ns = 0
    digests: dict[tuple[int, int], tuple[str, str]] = {}
    compares: list[Compare] = []
    touched: list[tuple[int, int]] = []
    problems: list[str] = []
    for words in lines:
        kind = words[0]
        if kind == "state_calls":
            calls = int(words[1])
        elif kind == "state_allocation":  # aI BASE SIZE TYPE ORDINAL SEEN...
            seen = " ".join(words[6:])
            allocations.append(
                Allocation(_index(words[1]), words[2], int(words[3]), words[4], seen, int(words[5]))
            )
        elif kind == "state_call_ns":
            call_ns[int(words[1])] = int(words[2])
        elif kind == "state_late_ns":
            late_ns = int(words[1])
        elif kind == "state_digest":  # state_digest call C aI PRE POST
            digests[(int(words[2]), _index(words[3]))] = (words[4], words[5])
        elif (
            kind == "state_compare"
        ):  # ... call C aI differing D of N first I B C worst W unwritten U
            compares.append(
                Compare(
                    call=int(words[2]),
                    index=_index(words[3]),
                    differing=int(words[5]),
                    elements=int(words[7]),
                    first=int(words[9]),
                    expected=float(words[10]),
                    got=float(words[11]),
                    worst=float(words[13]),
                    unwritten=words[15] == "1",
                )
            )
        elif kind == "state_touched":
            touched.append((int(words[2]), _index(words[3])))
        elif kind in PROBLEMS:
            problems.append(" ".join(words))
    ordered = tuple(call_ns.get(c, 0) for c in range(1, max(call_ns, default=0) + 1))
    return State(
        calls,
        tuple(allocations),
        ordered,
        digests,
        tuple(compares),
        tuple(touched),
        tuple(problems),
        late_ns,
    )
