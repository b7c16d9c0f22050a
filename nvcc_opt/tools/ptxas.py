"""What compiler_analysis reads, parsed (pure: no I/O): ptxas' resource report (`-Xptxas -v`,
`--resource-usage`), theoretical occupancy on one table of GPU limits, SASS listings (cuobjdump
or nvdisasm) and PTX (`--keep`); the kernels and launch shapes a source text declares are
`source_kernels`' (re-exported here).

The ptxas format was read from nvcc 13.0: per ptxas run a `N bytes gmem` line, then per function
`Compiling entry function 'NAME' for 'sm_XX'` (kernels only), `Function properties for NAME`,
`N bytes stack frame, N bytes spill stores, N bytes spill loads` and, for kernels,
`Used N registers, used N barriers[, N bytes smem][, N bytes cumulative stack size][, N bytes
cmem[0]]`. The occupancy arithmetic follows CUDA's `cuda_occupancy.h`.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from dataclasses import dataclass, replace

from nvcc_opt.tools.source_kernels import Kernel as Kernel
from nvcc_opt.tools.source_kernels import Launch as Launch
from nvcc_opt.tools.source_kernels import code_only as code_only
from nvcc_opt.tools.source_kernels import constant as constant
from nvcc_opt.tools.source_kernels import kernels as kernels
from nvcc_opt.tools.source_kernels import launches as launches

# ---- ptxas -v ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Function:
    """One function of one ptxas run."""

    name: str  # as ptxas names it (mangled)
    arch: str  # "sm_90"; "" when the run named none (device functions only)
    entry: bool  # a kernel
    registers: int | None = None  # None for device functions: ptxas counts them in the kernel
    barriers: int = 0
    shared_bytes: int = 0  # static shared memory
    stack_frame: int = 0
    spill_stores: int = 0
    spill_loads: int = 0
    cumulative_stack: int = 0
    constant_bytes: int = 0  # cmem[0]: the kernel's parameters and launch constants


@dataclass(frozen=True)
class PtxasReport:
    functions: tuple[Function, ...]
    warnings: tuple[str, ...]  # ptxas' warning lines, once each


_RUN = re.compile(r"ptxas info\s*: \d+ bytes gmem")
_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '(\w+)'")
_PROPERTIES = re.compile(r"Function properties for (\S+)")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = {
    "registers": re.compile(r"Used (\d+) registers"),
    "barriers": re.compile(r"used (\d+) barriers"),
    "shared_bytes": re.compile(r"(\d+) bytes smem"),
    "cumulative_stack": re.compile(r"(\d+) bytes cumulative stack size"),
    "constant_bytes": re.compile(r"(\d+) bytes cmem\[0\]"),
}


def parse_ptxas(text: str) -> PtxasReport:
    """Every function of every ptxas run in `text` (compiler output; other lines are ignored)."""
    done: list[Function] = []
    run: list[Function] = []  # this run's functions; the run's arch is known only at its entries
    arch = entry = ""
    warnings: dict[str, None] = {}
    for line in text.splitlines():
        if _RUN.search(line):
            done += [replace(f, arch=arch) for f in run]
            run, arch = [], ""
        elif found := _ENTRY.search(line):
            entry, arch = found[1], found[2]
        elif found := _PROPERTIES.search(line):
            run.append(Function(found[1], "", entry=found[1] == entry))
        elif (found := _FRAME.search(line)) and run:
            frame, stores, loads = (int(n) for n in found.groups())
            run[-1] = replace(run[-1], stack_frame=frame, spill_stores=stores, spill_loads=loads)
        elif _USED["registers"].search(line) and run:
            run[-1] = _with_usage(run[-1], line)
        elif line.startswith("ptxas") and re.search(r"\b(warning|error)\b", line):
            warnings[" ".join(line.split())] = None
    done += [replace(f, arch=arch) for f in run]
    return PtxasReport(tuple(done), tuple(warnings))


def _with_usage(function: Function, line: str) -> Function:
    def number(key: str) -> int:
        found = _USED[key].search(line)
        return int(found[1]) if found else 0

    return replace(
        function,
        registers=number("registers"),
        barriers=number("barriers"),
        shared_bytes=number("shared_bytes"),
        cumulative_stack=number("cumulative_stack"),
        constant_bytes=number("constant_bytes"),
    )


def demangled_base(readable: str) -> str:
    """The unqualified name in a demangler's text: `void ns::heavy<int>(int*)` -> heavy,
    `k(Inputs, Data)` -> k, `operator+(float3, float3)` -> operator+."""
    text = re.sub(r"(\s*(?:const|volatile|&&|&))+$", "", readable.split("$")[0].strip())
    if text.endswith(")") and (opened := _opening(text, len(text) - 1, "(", ")")) > 0:
        text = text[:opened].rstrip()  # the parameter list
    if text.endswith(">") and "operator" not in text.rsplit("::", 1)[-1]:
        text = text[: max(_opening(text, len(text) - 1, "<", ">"), 0)].rstrip()
    last = _last_component(text)
    if "operator" in last:
        name = last[last.index("operator") :]
        return re.sub(r"\s+<.*>$", "", name)  # `operator< <int>`: its template arguments
    return last.split()[-1] if last.split() else readable


def _opening(text: str, end: int, opening: str, closing: str) -> int:
    """The index of the bracket that `text[end]` closes; -1 when unbalanced."""
    depth = 0
    for i in range(end, -1, -1):
        depth += (text[i] == closing) - (text[i] == opening)
        if depth == 0:
            return i
    return -1


def _last_component(text: str) -> str:
    """What follows the last `::` outside brackets (`(anonymous namespace)::k` -> k)."""
    depth, start = 0, 0
    for i, c in enumerate(text):
        depth += (c in "(<") - (c in ")>")
        if depth == 0 and text.startswith("::", i):
            start = i + 2
    return text[start:]


def mangled_base(name: str) -> str:
    """The unqualified name inside an Itanium-mangled name (`_ZN2ns5heavyIiEEvPT_` -> heavy,
    `_Z1k6Inputs4Data` -> k); other names as they are. Used only where no demangler
    (cu++filt, c++filt) is installed: `demangled_base` of the demangler's text is preferred."""
    if not name.startswith("_Z"):
        return name
    nested = name[2:3] == "N"
    i = 2 + nested
    while i < len(name) and name[i] in "KVr":  # cv-qualifiers of a nested name
        i += 1
    base = name
    while (found := re.match(r"\d+", name[i:])) is not None:
        length = int(found[0])
        start = i + len(found[0])
        base, i = name[start : start + length], start + length
        if not nested:  # what follows is the parameters' types, not more of the name
            break
    return base


# ---- occupancy --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Limits:
    """Per-SM limits of one GPU architecture (CUDA programming guide, cuda_occupancy.h)."""

    arch: str
    threads_per_sm: int
    blocks_per_sm: int
    shared_per_sm: int  # bytes, at the largest shared memory carveout
    shared_per_block: int  # bytes, the opt-in maximum of one block
    registers_per_sm: int = 65536
    registers_per_block: int = 65536
    register_unit: int = 256  # registers are given to a warp in units of this many
    shared_unit: int = 128  # shared memory is given to a block in units of this many bytes
    shared_reserved: int = 1024  # the driver's own shared memory per block (sm_80 and later)
    sub_partitions: int = 4  # a warp's registers come from one of these
    threads_per_block: int = 1024
    warp_size: int = 32


KB = 1024
ARCHS: dict[str, Limits] = {
    "sm_80": Limits("sm_80", 2048, 32, 164 * KB, 163 * KB),
    "sm_86": Limits("sm_86", 1536, 16, 100 * KB, 99 * KB),
    "sm_89": Limits("sm_89", 1536, 24, 100 * KB, 99 * KB),
    "sm_90": Limits("sm_90", 2048, 32, 228 * KB, 227 * KB),
}


def limits_for(arch: str) -> Limits | None:
    """The table's limits for `arch` (`sm_90a` counts as `sm_90`); None when not in the table."""
    found = re.fullmatch(r"sm_(\d+)[a-z]?", arch)
    return ARCHS.get(f"sm_{found[1]}") if found else None


@dataclass(frozen=True)
class Occupancy:
    block_size: int
    blocks: int  # resident blocks per SM
    warps: int  # resident warps per SM
    max_warps: int
    limiters: tuple[str, ...]  # what allows no more blocks: registers, shared memory, threads...

    @property
    def fraction(self) -> float:
        return self.warps / self.max_warps


def occupancy(
    limits: Limits, registers: int, shared_bytes: int, block_size: int, dynamic_shared: int = 0
) -> Occupancy:
    """Theoretical occupancy of a kernel launched with `block_size` threads per block."""
    warp_size = limits.warp_size
    warps = -(-block_size // warp_size)
    max_warps = limits.threads_per_sm // warp_size
    per: dict[str, int] = {
        "registers": _blocks_by_registers(limits, registers, warps),
        "shared memory": _blocks_by_shared(limits, shared_bytes + dynamic_shared),
        "threads per SM": max_warps // warps if block_size <= limits.threads_per_block else 0,
        "blocks per SM": limits.blocks_per_sm,
    }
    blocks = min(per.values())
    limiters = tuple(name for name, n in per.items() if n == blocks)
    return Occupancy(block_size, blocks, blocks * warps, max_warps, limiters)


def warps_by_registers(limits: Limits, registers: int) -> int:
    """Resident warps per SM that `registers` per thread allow, whatever the block size."""
    max_warps = limits.threads_per_sm // limits.warp_size
    return min(max_warps, _blocks_by_registers(limits, registers, 1) if registers else max_warps)


def _round_up(n: int, unit: int) -> int:
    return -(-n // unit) * unit


def _blocks_by_registers(limits: Limits, registers: int, warps: int) -> int:
    per_warp = _round_up(registers * limits.warp_size, limits.register_unit)
    if per_warp == 0:
        return limits.blocks_per_sm
    # The hardware checks a block as if its warps filled every sub-partition equally.
    if per_warp * _round_up(warps, limits.sub_partitions) > limits.registers_per_block:
        return 0
    warps_per_partition = limits.registers_per_sm // limits.sub_partitions // per_warp
    return warps_per_partition * limits.sub_partitions // warps


def _blocks_by_shared(limits: Limits, shared_bytes: int) -> int:
    allocated = _round_up(shared_bytes + limits.shared_reserved, limits.shared_unit)
    if allocated > limits.shared_per_block + limits.shared_reserved:
        return 0
    return limits.shared_per_sm // allocated


# ---- SASS and PTX -----------------------------------------------------------------------------

_SASS_ARCH = re.compile(r"code for (sm_\w+)")
_SASS_FUNCTION = re.compile(r"^\s*(?:Function\s*:\s*(\S+)|\.text\.(\S+):)\s*$")
_SASS_INSTRUCTION = re.compile(r"^\s*/\*[0-9a-fA-F]+\*/\s+(.*?)\s*;")
_PREDICATE = re.compile(r"^@!?U?P\w+\s+|^@!?%p\w*\s+")
_MEMORY = frozenset(
    ("LDG", "STG", "LDS", "STS", "LDL", "STL", "LD", "ST", "LDSM", "ATOM", "ATOMG", "ATOMS", "RED")
)
_SKELETON = frozenset(
    ("LD", "ST", "ATOM", "RED", "CP", "LDGSTS", "BAR", "BRA", "EXIT", "RET", "CALL", "MEMBAR")
)
_WIDTHS = {"128": "128", "64": "64", "U8": "8", "S8": "8", "U16": "16", "S16": "16"}


def parse_sass(text: str, arch: str = "") -> dict[tuple[str, str], list[str]]:
    """(arch, function) -> instructions of a cuobjdump -sass or nvdisasm listing, in order.
    nvdisasm names no arch: `arch` stands in for it."""
    listing: dict[tuple[str, str], list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        if found := _SASS_ARCH.search(line):
            arch, current = found[1], None
        elif found := _SASS_FUNCTION.match(line):
            current = listing.setdefault((arch, found[1] or found[2]), [])
        elif current is not None and (found := _SASS_INSTRUCTION.match(line)):
            current.append(" ".join(found[1].split()))
    return listing


def sass_digest(instructions: list[str]) -> str:
    """A short fingerprint of a function's machine code: two candidates with the same digest
    run the same instructions (no need to time both)."""
    return hashlib.sha256("\n".join(instructions).encode()).hexdigest()[:12]


def sass_mix(instructions: list[str]) -> Counter[str]:
    """Instruction counts by opcode; memory operations by width (`LDG.128`, `STL.32`)."""
    mix: Counter[str] = Counter()
    for instruction in instructions:
        parts = _PREDICATE.sub("", instruction).split(" ", 1)[0].split(".")
        if parts[0] in _MEMORY:
            width = next((_WIDTHS[p] for p in parts[1:] if p in _WIDTHS), "32")
            mix[f"{parts[0]}.{width}"] += 1
        else:
            mix[parts[0]] += 1
    return mix


_PTX_HEADER = re.compile(r"^\s*(?:\.\w+\s+)*\.(?:entry|func)\s+(?:\([^)]*\)\s*)?([\w$.]+)")
_PTX_SPACES = ("global", "shared", "local", "const", "param")


def parse_ptx(text: str) -> dict[str, list[str]]:
    """Function name -> its body's instructions and labels, from a PTX file."""
    functions: dict[str, list[str]] = {}
    name: str | None = None
    body: list[str] = []
    for line in text.splitlines():
        if found := _PTX_HEADER.match(line):
            name, body = found[1], []  # a declaration without a body is replaced by what follows
        elif name is not None and line.startswith("}"):
            functions[name], name = body, None
        elif name is not None and _ptx_statement(line.strip()):
            body.append(" ".join(line.split()))
    return functions


def ptx_target(text: str) -> str:
    """The architecture a PTX file is for (its `.target`), "" when it names none."""
    found = re.search(r"^\s*\.target\s+(\w+)", text, re.MULTILINE)
    return found[1] if found else ""


def _ptx_statement(text: str) -> bool:
    """An instruction or a label (not a directive, comment, or the brackets of a header)."""
    return bool(text) and not text.startswith((".", "//")) and text not in ("{", "(", ")")


def ptx_memory(body: list[str]) -> Counter[str]:
    """Loads, stores and atomics by state space, vector width and type (`ld.global.v4.f32`);
    parameter loads are left out."""
    found: Counter[str] = Counter()
    for instruction in body:
        parts = _PREDICATE.sub("", instruction).split(" ", 1)[0].split(".")
        if parts[0] not in ("ld", "st", "atom", "red") or "param" in parts:
            continue
        space = next((p for p in parts if p in _PTX_SPACES), "generic")
        kept = [p for p in parts[1:] if p == "nc" or re.fullmatch(r"v\d+", p)]
        found[".".join([parts[0], space, *kept, parts[-1]])] += 1
    return found


def skeleton(lines: list[str]) -> list[str]:
    """The memory, barrier and branch instructions and labels of a PTX body or SASS listing:
    the lines that show access widths and loop structure (parameter loads left out)."""
    kept = []
    for line in lines:
        op = _PREDICATE.sub("", line).split(" ", 1)[0]
        root = op.split(".")[0]
        wanted = op.endswith(":") or root.upper() in _SKELETON or root in _MEMORY
        if wanted and ".param" not in op:
            kept.append(line)
    return kept
