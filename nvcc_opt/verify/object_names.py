"""What the names in a compiled translation unit mean: pure functions over symbol names.

`host_rules.py` compares the symbols of the original's and the candidate's objects; these are
its vocabulary. Names are compared after `normalize`, which erases what nvcc writes per compile
or per path (the candidate is compiled from a private copy, so a hash of the path differs). The
allowlist of what a rewrite may newly call (`may_call`) is exact names, in four classes: what a
kernel launch and its registration need, compiler support, the C math library, and runtime
calls that configure the candidate's own kernels or read fixed device facts.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

# nvcc's per-compile and per-path names: `tmpxft_<pid>_<n>-<n>` file names, and the unique id of a
# file (`<path hash>_<len>_<file>_<hash>`) in anonymous namespaces, internal-linkage device names,
# static kernels and relocatable-device-code wrappers. The hashes are replaced by as many x's, so
# the length prefixes of the mangled names around them stay right.
_TMPXFT = re.compile(r"tmpxft_[0-9a-f]+_[0-9a-f]+[-_]\d+")
_UNIQUE_ID = re.compile(
    r"(?:_GLOBAL__N__|_INTERNAL_|__fatbinwrap_|__nv_static_\d+__|__cudaRegisterLinkedBinary_)"
    r"([0-9a-f]{8})_(\d+)_"
)
_HEX8 = re.compile(r"_[0-9a-f]{8}")
# Whole names that only say which compile or which first function a file had.
_PER_COMPILE = (
    "_GLOBAL__sub_I_",
    "_GLOBAL__sub_D_",
    "__fatbinwrap_",
    "__cudaRegisterLinkedBinary_",
)


def normalize(name: str) -> str:
    """`name` with nvcc's per-compile and per-path parts made equal (see the module docstring)."""
    for prefix in _PER_COMPILE:
        if name.startswith(prefix):
            return prefix
    name = _TMPXFT.sub("tmpxft_X", name)
    out: list[str] = []
    at = 0
    for match in _UNIQUE_ID.finditer(name):
        if match.start() < at:
            continue
        out.append(name[at : match.start(1)] + "x" * 8 + name[match.end(1) : match.end()])
        at = match.end() + int(match.group(2))  # past the file part
        out.append(name[match.end() : at])
        tail = _HEX8.match(name, at)  # the file's content hash, where nvcc adds one
        if tail:
            out.append("_" + "x" * 8)
            at = tail.end()
    out.append(name[at:])
    return "".join(out)


# --- mangled names ---------------------------------------------------------------------------

_STD_ABBREVIATIONS = ("St", "Sa", "Sb", "Ss", "Si", "So", "Sd")
# Scopes whose code comes from the C++ and CUDA libraries' headers: an inline or template
# instantiation of theirs that other objects also instantiate is the same code (ODR).
LIBRARY_SCOPES = frozenset(
    {
        "std",
        "__gnu_cxx",
        "__cxxabiv1",
        "thrust",
        "cub",
        "cuda",
        "cooperative_groups",
        "nvcuda",
        "dim3",
        "__half",
        "__half2",
        "__nv_bfloat16",
        "__nv_bfloat162",
    }
)
_LIBRARY_PREFIXES = ("__nv_fp8", "__nv_fp6", "__nv_fp4")


def is_mangled(name: str) -> bool:
    return name.startswith("_Z")


def outer_scope(name: str) -> str | None:
    """The outermost scope (or name) of a mangled C++ name: "std" for `_ZNSt6vectorIiSaIiEE...`,
    "dim3" for `_ZN4dim3C1Ejjj`, "f" for `_Z1fv`; an operator's code ("nw" for operator new);
    None for an unmangled name or one this reading does not understand."""
    if not is_mangled(name):
        return None
    rest = name[2:]
    if rest[:2] in ("TV", "TI", "TS", "TT", "TH", "TW", "GV", "GR"):  # tables, TLS, guards
        rest = rest[2:]
    rest = rest.removeprefix("Z")  # a local entity: the scope of the function around it
    if rest.startswith("N"):
        rest = rest[1:].lstrip("rVKRO")
    if rest[:2] in _STD_ABBREVIATIONS:
        return "std"
    rest = rest.removeprefix("L")  # internal linkage
    number = re.match(r"\d+", rest)
    if number:
        length = int(number.group())
        return rest[number.end() : number.end() + length] or None
    operator = re.match(r"[a-z][a-z]", rest)
    return operator.group() if operator else None


def in_library_scope(name: str) -> bool:
    scope = outer_scope(name)
    return scope is not None and (scope in LIBRARY_SCOPES or scope.startswith(_LIBRARY_PREFIXES))


def replaces_global_operator(name: str) -> bool:
    """operator new / new[] / delete / delete[] at global scope: defining one replaces the
    program's allocator everywhere."""
    return re.match(r"_Z(nw|na|dl|da)", name) is not None


# --- what nvcc itself adds ----------------------------------------------------------------------

# Defined symbols nvcc and the host compiler add for a first kernel launch, managed memory,
# relocatable device code or exception handling: their presence says nothing about the
# candidate's code.
_OWN_DEFINITIONS = re.compile(
    r"DW\.ref\.__gxx_personality_v0|__clang_call_terminate"
    r"|hostRef(Constant|Device|Kernel)Array(External|Internal)Linkage"
    r"|__fatbinwrap_"
    r"|_ZL22__nv_inited_managed_rt|_ZL32__nv_fatbinhandle_for_managed_rt"
)
# A static (`__f`, `__handle`, a guarded `__tmp`) of the host stub nvcc writes for a kernel:
# `__device_stub__<the kernel's mangled name>` taking the kernel's parameters.
_STUB_STATIC = re.compile(r"_Z(?:GV)?ZL?(\d+)(.*)E\d+(?:__f|__handle|__tmp)")
_STUB = "__device_stub__"


def nvcc_own(name: str, functions: frozenset[str]) -> bool:
    """Whether `name` (normalized) is bookkeeping nvcc adds: its own symbols, or a static of a
    kernel's host stub (`__device_stub__...::__f`, `__handle`, `__tmp`, and their guards). The
    stub's name spells its kernel as nvcc mangles it, which for template instantiations and
    kernels in anonymous namespaces matches no symbol of the object (`functions` is kept for the
    callers), so the stub's own reserved name is what counts; a static local a rewrite writes
    itself is refused by the allowlist line whatever it is called."""
    if _OWN_DEFINITIONS.fullmatch(name):
        return True
    stub = _STUB_STATIC.fullmatch(name)
    return stub is not None and stub.group(2)[: int(stub.group(1))].startswith(_STUB)


# --- calls a rewrite may add ------------------------------------------------------------------

LAUNCH = frozenset(
    {
        "__cudaGetKernel",
        "__cudaInitModule",
        "__cudaLaunchKernel",
        "__cudaPopCallConfiguration",
        "__cudaPushCallConfiguration",
        "__cudaRegisterFatBinary",
        "__cudaRegisterFatBinaryEnd",
        "__cudaRegisterFunction",
        "__cudaRegisterVar",  # a __constant__ table; device state is refused by the PTX rules
        "__cudaRegisterLinkedBinary_",  # normalized: relocatable device code
        "__cudaUnregisterFatBinary",
        "cudaLaunchKernel",
        "cudaLaunchKernelExC",
        "cudaLaunchCooperativeKernel",
        # A kernel's host stub keeps its handle in a guarded static; any other guarded static is
        # writable data of the candidate's own, which the state rule refuses.
        "__cxa_guard_acquire",
        "__cxa_guard_release",
        "__cxa_guard_abort",
    }
)
COMPILER = frozenset(
    {
        "memcpy",
        "memset",
        "memmove",
        "__stack_chk_fail",
        "_Unwind_Resume",
        "__gxx_personality_v0",
        "__cxa_begin_catch",
        "__cxa_end_catch",
        "_ZSt9terminatev",
        "_GLOBAL_OFFSET_TABLE_",
        "__dso_handle",
    }
)
# Reporting an error and ending the program: what a CUDA_CHECK macro expands to. Writing to
# stdout (where a check reads results) needs `stdout`, `printf` or `puts`, none of which is here.
ERROR_PATH = frozenset(
    {
        "fprintf",
        "__fprintf_chk",
        "fputs",
        "fputc",
        "fwrite",
        "perror",
        "stderr",
        "exit",
        "abort",
        "__assert_fail",
    }
)
_MATH_BASES = [
    "sqrt",
    "cbrt",
    "hypot",
    "exp",
    "exp2",
    "expm1",
    "exp10",
    "log",
    "log2",
    "log10",
    "log1p",
    "logb",
    "ilogb",
    "pow",
    "sin",
    "cos",
    "tan",
    "sincos",
    "asin",
    "acos",
    "atan",
    "atan2",
    "sinh",
    "cosh",
    "tanh",
    "asinh",
    "acosh",
    "atanh",
    "erf",
    "erfc",
    "tgamma",
    "fabs",
    "fmod",
    "remainder",
    "remquo",
    "fma",
    "fmin",
    "fmax",
    "fdim",
    "floor",
    "ceil",
    "trunc",
    "round",
    "lround",
    "llround",
    "rint",
    "lrint",
    "llrint",
    "nearbyint",
    "frexp",
    "ldexp",
    "modf",
    "scalbn",
    "scalbln",
    "nextafter",
    "nexttoward",
    "copysign",
]  # lgamma is not here: it writes the global signgam
MATH = frozenset(
    spelled
    for base in _MATH_BASES
    for name in (base, base + "f", base + "l")
    for spelled in (name, f"__{name}_finite")
)
RUNTIME = frozenset(
    {
        "cudaFuncSetAttribute",
        "cudaFuncSetCacheConfig",
        "cudaGetLastError",
        "cudaPeekAtLastError",
        "cudaGetErrorString",
        "cudaGetErrorName",
        "cudaGetDevice",
        "cudaGetDeviceCount",
        "cudaDeviceGetAttribute",
        "cudaGetDeviceProperties",
        "cudaGetDeviceProperties_v2",
        "cudaDriverGetVersion",
        "cudaRuntimeGetVersion",
        # Fixed facts about a kernel on this device (the occupancy API's templates call these).
        "cudaFuncGetAttributes",
        "cudaOccupancyMaxActiveBlocksPerMultiprocessor",
        "cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags",
        "cudaOccupancyAvailableDynamicSMemPerBlock",
        "cudaOccupancyMaxPotentialClusterSize",
        "cudaOccupancyMaxActiveClusters",
    }
)
ALLOWED_CALLS = LAUNCH | COMPILER | ERROR_PATH | MATH | RUNTIME
_PER_THREAD_STREAM = re.compile(r"(_?_?cuda\w+)_pt[sd]z")  # --default-stream per-thread spellings


def may_call(name: str) -> bool:
    """Whether a rewrite may newly reference the undefined symbol `name` (normalized)."""
    per_thread = _PER_THREAD_STREAM.fullmatch(name)
    return (per_thread.group(1) if per_thread else name) in ALLOWED_CALLS


def shown(name: str, demangled: Mapping[str, str]) -> str:
    """`name`, and how C++ spells it when that differs: `_Z1fv (f())`."""
    readable = demangled.get(name, name)
    return name if readable == name else f"{name} ({readable})"
