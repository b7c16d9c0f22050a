"""The candidate-code allowlist: what a rewrite may define, keep, call and name, judged on the
preprocessed code (host side and every device side) against the original region's.

A rewrite passes when everything it does is on a list of things known to be harmless, not when it
avoids a list of known cheats: a call is allowed because it is the candidate's own, the original
region's, in the CUDA toolkit's pure parts or device-only, not because its name looks innocent.
Each refusal reads `allowlist: <what> at line N of the candidate`.

1. Definitions: namespace-scope functions are the original's or new helpers that are not
   `extern "C"`, have an unqualified name (no `A::f`, no specialization of a template the
   candidate does not own, no `operator new`/`delete`), and live in the global namespace, an
   anonymous one or one the original opens; under relocatable device code new device functions
   need internal linkage. Types are free.
2. State: no variable with static storage (namespace scope, `static`, `thread_local`, static
   members, `__device__`/`__managed__`) unless a compile-time constant; `__shared__` is per block.
3. Calls (and any other use of a function, its address included): see `_function_reason`.
4. Names: a namespace-scope variable used, not defined: a constant, a CUDA built-in or one the
   original uses. Types used run their constructors: those follow the call rule.
5. Attributes: `ALLOWED_ATTRIBUTES` only; `#pragma` only unroll and nounroll.
6. `asm` in host code only as the original has it (device asm is another check's job).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from nvcc_opt.regions.lexer import DIRECTIVE, tokenize
from nvcc_opt.verify.declarations import word_set
from nvcc_opt.verify.preprocess import Preprocessed
from nvcc_opt.verify.region_code import RegionCode, Use, Variable
from nvcc_opt.verify.symbols import (
    FUNCTION,
    PROJECT,
    SYSTEM,
    TOOLKIT,
    TYPE,
    VARIABLE,
    Decl,
    Symbols,
    classify,
    symbols_of,
)

ALLOWED_ATTRIBUTES = word_set(
    "global device host shared constant launch_bounds maxnreg local_maxnreg cluster_dims "
    "block_size grid_constant noinline always_inline nv_inline_hint aligned unused maybe_unused "
    "nodiscard deprecated fallthrough likely unlikely"
)
ALLOWED_PRAGMAS = frozenset(("unroll", "nounroll"))
CUDA_BUILTINS = frozenset(("threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize"))
# CUDA runtime calls that only configure the candidate's own kernels or read fixed device facts
# (the occupancy calculator reads a kernel's attributes and the device's limits).
RUNTIME_CALLS = word_set(
    "cudaFuncSetAttribute cudaFuncSetCacheConfig cudaGetLastError cudaPeekAtLastError "
    "cudaGetErrorString cudaGetErrorName cudaGetDevice cudaDeviceGetAttribute "
    "cudaGetDeviceProperties cudaGetDeviceCount cudaFuncGetAttributes cudaRuntimeGetVersion "
    "cudaDriverGetVersion cudaOccupancyMaxActiveBlocksPerMultiprocessor "
    "cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags cudaOccupancyMaxPotentialBlockSize "
    "cudaOccupancyAvailableDynamicSMemPerBlock"
)
# Compiler builtins with no effect beyond their value (hints, bit tricks, constants, math).
BUILTINS = word_set(
    "__builtin_expect __builtin_expect_with_probability __builtin_assume_aligned "
    "__builtin_assume __builtin_unreachable __builtin_constant_p __builtin_addressof "
    "__builtin_is_constant_evaluated __builtin_launder __builtin_bit_cast __builtin_offsetof "
    "__builtin_clz __builtin_clzl __builtin_clzll __builtin_ctz __builtin_ctzl __builtin_ctzll "
    "__builtin_popcount __builtin_popcountl __builtin_popcountll __builtin_parity "
    "__builtin_bswap16 __builtin_bswap32 __builtin_bswap64 __builtin_ffs __builtin_ffsll "
    "__builtin_huge_val __builtin_huge_valf __builtin_inf __builtin_inff __builtin_nan "
    "__builtin_nanf __builtin_isnan __builtin_isinf __builtin_isfinite __builtin_fabs "
    "__builtin_fabsf __builtin_sqrt __builtin_sqrtf __builtin_fma __builtin_fmaf "
    "__builtin_memcpy __builtin_memset __builtin_prefetch"
)
# Toolkit functions that touch more than the candidate's own data: device printf and heap,
# clocks and sleeps (by name: `clock64`, `__nanosleep`, `get_sreg_globaltimer`, chrono `now`).
_REFUSED_TOOLKIT = frozenset(("printf", "vprintf", "malloc", "free", "now", "time"))
_TIMER_PARTS = ("clock", "timer", "sleep")
# Parts of the toolkit whose host-callable functions compute values only (math, conversions,
# vector types, cooperative groups, libcu++); elsewhere (cudart, cuBLAS, thrust, device-wide
# CUB) a host-callable toolkit function is a library doing work. Paths under nvcc's include dir.
_PURE_TOOLKIT = (
    "crt/", "cooperative_groups", "cuda/", "nv/", "cccl/cuda/", "cccl/nv/", "mma.h", "sm_",
    "device_", "vector_", "math_", "cuda_fp", "cuda_bf16", "cuComplex.h", "cuda_pipeline",
    "cuda_awbarrier", "texture_", "surface_", "builtin_types.h", "host_defines.h",
    "common_functions.h", "cuda_texture_types.h", "cuda_surface_types.h",
)  # fmt: skip
# System headers (by file name) whose functions and constructors compute values only.
_PURE_STD = word_set(
    "type_traits limits utility tuple array initializer_list complex numeric numbers bit "
    "ratio cmath math.h mathcalls.h mathcalls-narrow.h std_abs.h stl_algobase.h stl_algo.h "
    "stl_numeric.h stl_pair.h move.h utility.h stl_iterator.h stl_iterator_base_funcs.h "
    "stl_function.h predefined_ops.h cstdint stdint.h cstddef stddef.h cstring string.h "
    "mathcalls-helper-functions.h specfun.h algorithmfwd.h stl_heap.h ptr_traits.h invoke.h "
    "ranges_base.h"
)
_STREAMS = frozenset(("0", "nullptr", "NULL", "__null", "0L", "0l", "0u", "0U"))
_PRIMITIVE = word_set(
    "void auto bool char short int long unsigned signed float double wchar_t char8_t char16_t "
    "char32_t size_t ptrdiff_t __int128 _Float16 __fp16 decltype"
)


@dataclass(frozen=True)
class _Reference:
    """What the original region does, over all its sides."""

    uses: frozenset[str]  # last components of the names it uses and does not define
    calls: dict[str, set[tuple[tuple[str, ...], ...]]]  # name -> string literals by argument
    functions: frozenset[str]  # qualified names of the functions it defines
    namespaces: frozenset[str]
    host_asm: frozenset[str]
    streams: frozenset[str]
    attributes: frozenset[str]
    directives: frozenset[str]  # whitespace-normalized
    variables: frozenset[tuple[str, str]]  # (name, where) of its static-storage variables
    files: frozenset[str]  # every file its translation unit reads (real paths)


def check_candidate(
    original: Preprocessed, candidate: Preprocessed, *, rdc: bool | None = None
) -> list[str]:
    """The allowlist reasons against `candidate` replacing `original`, sorted; [] when clean.

    Both come from `nvcc_opt.verify.preprocess.preprocess` with the same compile command.
    `rdc`: whether the compile makes relocatable device code (default: as the command says).
    The original's symbol table is built once per `original` (kept for the next candidates).
    """
    reference = _reference(original)
    table = _candidate_table(original, candidate)
    found: dict[str, int] = {}
    for reason, line in _findings(
        candidate, reference, table, rdc if rdc is not None else candidate.rdc
    ):
        text = f"allowlist: {reason}" + (f" at line {line} of the candidate" if line else "")
        found.setdefault(text, line)
    return sorted(found, key=lambda text: (found[text], text))


def _findings(
    candidate: Preprocessed, reference: _Reference, table: Symbols, rdc: bool
) -> Iterable[tuple[str, int]]:
    yield from _line_directives(candidate.code)
    yield from _includes(candidate, reference)
    for side in candidate.sides:
        code = RegionCode(side)
        rules = _Rules(code, reference, table, rdc, host=side.name == "host")
        yield from rules.reasons()


@lru_cache(maxsize=4)
def _reference(original: Preprocessed) -> _Reference:
    codes = [RegionCode(side) for side in original.sides]
    calls: dict[str, set[tuple[tuple[str, ...], ...]]] = {}
    for use in (u for code in codes for u in code.uses):
        if use.called and use.shape is not None:
            calls.setdefault(_last(use.name), set()).add(use.shape)
    files = {os.path.realpath(s.file) for side in original.sides for s in side.segments}
    return _Reference(
        uses=frozenset(_last(u.name) for code in codes for u in code.uses),
        calls=calls,
        functions=frozenset(d.qualified for code in codes for d in code.definitions),
        namespaces=frozenset(n for code in codes for n, _ in code.namespaces),
        host_asm=frozenset(text for code in codes for text, _ in code.host_asm),
        streams=frozenset(text for code in codes for text, _ in code.launch_streams),
        attributes=frozenset(name for code in codes for name, _ in code.attributes),
        directives=frozenset(" ".join(t.split()) for code in codes for t, _ in code.directives),
        variables=frozenset((v.name, v.where) for code in codes for v in code.variables),
        files=frozenset(files),
    )


@lru_cache(maxsize=4)
def _original_table(original: Preprocessed) -> Symbols:
    return symbols_of(original)


def _candidate_table(original: Preprocessed, candidate: Preprocessed) -> Symbols:
    """The original unit's declarations, plus those of the headers the candidate includes."""
    table = _original_table(original)
    if not any(side.includes for side in candidate.sides):
        return table
    return Symbols((*table.units, *symbols_of(candidate, included_only=True).units))


def _line_directives(code: str) -> Iterable[tuple[str, int]]:
    """`#line` moves what follows out of the region's marker: nothing after it would be read."""
    data = code.encode("utf-8", "surrogateescape")
    for kind, start, end in tokenize(data):
        words = data[start + 1 : end].split(None, 1) if kind == DIRECTIVE else []
        if words and (words[0] == b"line" or words[0][:1].isdigit()):
            yield "a #line directive renumbers the code", data.count(b"\n", 0, start) + 1


def _includes(candidate: Preprocessed, reference: _Reference) -> Iterable[tuple[str, int]]:
    """Headers the candidate includes: the toolkit's, the system's, or ones the original's
    translation unit already reads (a project file could hold anything)."""
    for side in candidate.sides:
        for header, line in side.includes:
            system = any(s.system for s in side.segments if s.file == header)
            origin, _ = classify(header, system, candidate.marker, candidate.toolkit)
            if origin == PROJECT and os.path.realpath(header) not in reference.files:
                yield f"#include of {header}, a project file the original does not include", line


def _last(name: str) -> str:
    return name.rsplit("::", 1)[-1]


def _plain_type(text: str) -> str:
    """`const std::basic_ofstream<char>` -> `std::basic_ofstream`; '' for pointers and such."""
    if any(c in text for c in "*&(["):
        return ""
    words = [
        w for w in text.split() if w not in ("const", "volatile", "struct", "class", "typename")
    ]
    depth = 0
    out = []
    for char in " ".join(words):
        depth += (char == "<") - (char == ">")
        if depth == 0 and char not in "<> ":
            out.append(char)
    return "".join(out)


class _Rules:
    """The six rules applied to one side of the candidate."""

    def __init__(
        self, code: RegionCode, reference: _Reference, table: Symbols, rdc: bool, *, host: bool
    ) -> None:
        self.code = code
        self.reference = reference
        self.table = table
        self.rdc = rdc
        self.host = host

    def reasons(self) -> Iterable[tuple[str, int]]:
        yield from self._definitions()
        yield from self._state()
        for use in self.code.uses:
            reason = self._use_reason(use)
            if reason:
                yield reason, use.line
        yield from self._attributes()
        yield from self._asm()
        yield from self._streams()

    # -- 1. definitions -----------------------------------------------------------------------

    def _definitions(self) -> Iterable[tuple[str, int]]:
        ref = self.reference
        for name, line in self.code.namespaces:
            if name not in ref.namespaces:
                yield f"opens namespace {name}, which the original does not open", line
        for d in self.code.definitions:
            if d.qualified in ref.functions:
                continue
            if d.foreign:
                yield f"defines {d.name}, a name it does not own", d.line
            elif d.extern_c:
                yield f'defines a new extern "C" function {d.name}', d.line
            elif self.rdc and d.attrs & {"device", "global"} and not d.internal:
                yield (
                    f"defines a new device function {d.name} with external linkage under "
                    "relocatable device code (make it static)",
                    d.line,
                )

    # -- 2. state -----------------------------------------------------------------------------

    def _state(self) -> Iterable[tuple[str, int]]:
        for word, line in self.code.unread_storage:
            yield f"keeps state across calls: `{word}` in code the parser could not read", line
        for var in self.code.variables:
            if (var.name, var.where) in self.reference.variables and var.where == "extern":
                continue
            if var.where == "extern":
                yield f"declares extern variable {var.name}, defined outside the region", var.line
            elif not self._constant(var):
                space = next((a for a in ("device", "managed", "constant") if a in var.attrs), "")
                what = f"__{space}__ " if space else ""
                yield (
                    f"keeps state across calls in {var.where} {what}variable {var.name}",
                    var.line,
                )

    def _constant(self, var: Variable) -> bool:
        """A compile-time constant: constexpr, or const/`__constant__` of arithmetic or enum
        type (arrays included, or a pointer const at every level to such), initialized without
        running code."""
        if "managed" in var.attrs:
            return False
        if var.constexpr:  # evaluated by the compiler, read-only after
            return var.form != "reference" and var.type not in self.code.mutable_types
        if var.initializer == "runs-code":
            return False
        if not (var.const or "constant" in var.attrs) or var.form in ("pointer", "reference"):
            return False
        if var.type_kind == "placeholder_type_specifier":
            return var.initializer == "constant"
        return self._arithmetic(var.type)

    def _arithmetic(self, type_text: str, depth: int = 0) -> bool:
        name = " ".join(w for w in type_text.split() if w not in ("const", "volatile"))
        if name in self.code.enums:
            return True
        if name in self.code.typedefs and depth < 8:
            return self._arithmetic(self.code.typedefs[name], depth + 1)
        return self.table.is_arithmetic_type(type_text)

    # -- 3 and 4. calls, names and types ------------------------------------------------------

    def _use_reason(self, use: Use) -> str:
        name = use.name
        last = _last(name)
        if last in _PRIMITIVE or (use.called and name in BUILTINS):
            return ""
        if name.startswith("__builtin_"):
            return f"calls compiler builtin {name}, which is not known to be pure"
        decls = self._decls(use)
        functions = [d for d in decls if d.kind == FUNCTION]
        types = [d for d in decls if d.kind == TYPE]
        variables = [d for d in decls if d.kind == VARIABLE and (not d.member or "::" in name)]
        if use.own_overload:
            return self._own_overload_reason(use, functions)
        if last in self.reference.uses:
            return self._original_call_reason(use, functions)
        if use.called and not decls:
            return f"calls {name}, which nothing declares"
        if not decls and "::" in name and "(" not in name:
            return f"uses {name}, which nothing declares"
        if types and (use.type_context or not functions or use.called):
            return self._type_reason(name, types)
        if functions:
            reason = self._function_reason(last, functions)
            return f"{'calls' if use.called else 'uses'} {name}: {reason}" if reason else ""
        if variables and not types:
            return self._variable_reason(name, variables)
        return ""

    def _decls(self, use: Use) -> list[Decl]:
        if use.method:
            return [d for d in self.table.named(_last(use.name)) if d.member]
        first, _, rest = use.name.partition("::")
        name = (
            f"{self.code.aliases[first]}::{rest}"
            if rest and first in self.code.aliases
            else use.name
        )
        decls = self.table.lookup(name)
        return decls if "::" in use.name else [d for d in decls if not d.member]

    def _own_overload_reason(self, use: Use, functions: list[Decl]) -> str:
        """The candidate's own function shares its name with others that overload resolution
        could pick instead: those must be allowed too."""
        if not functions or _last(use.name) in self.reference.uses:
            return ""
        reason = self._function_reason(_last(use.name), functions)
        return (
            f"its {use.name} overloads one declared in {functions[0].file}: {reason}"
            if reason
            else ""
        )

    def _original_call_reason(self, use: Use, functions: list[Decl]) -> str:
        """A function the original also uses: allowed, but where the declarations alone would
        not allow it, the call must pass what one of the original's calls passes (the same
        string literals, argument by argument), so a forged message cannot be printed."""
        if not use.called or not functions or not self._function_reason(_last(use.name), functions):
            return ""
        shapes = self.reference.calls.get(_last(use.name), set())
        if use.shape is None:
            return f"calls {use.name} where the code could not be parsed"
        if use.shape in shapes:
            return ""
        strings = [s for group in use.shape for s in group]
        shown = f" with {', '.join(strings)}" if strings else ""
        return f"calls {use.name}{shown}, unlike any call of it in the original"

    def _function_reason(self, last: str, functions: list[Decl]) -> str:
        """'' when calling `last` is allowed: a toolkit function that is device-only or in the
        toolkit's pure parts (not a clock, sleep, device printf or heap call; CUDA runtime
        calls only from RUNTIME_CALLS), a device-only project function, or a function of a
        pure standard header. Otherwise why not."""
        if last in _REFUSED_TOOLKIT or any(part in last.lower() for part in _TIMER_PARTS):
            return "reads a clock, sleeps, or prints or allocates from device code"
        if last.startswith(("cuda", "__cuda")) and any(d.origin == TOOLKIT for d in functions):
            return "" if last in RUNTIME_CALLS else "a CUDA runtime call outside the allowed few"
        for decl in functions:
            if decl.origin == TOOLKIT and (
                decl.device_only or decl.header.startswith(_PURE_TOOLKIT)
            ):
                return ""
            if decl.origin != TOOLKIT and decl.device_only:
                return ""
            if decl.origin == SYSTEM and decl.header in _PURE_STD:
                return ""
        decl = functions[0]
        where = {TOOLKIT: "a CUDA library", SYSTEM: "a system header", PROJECT: "the project"}
        return f"a host function of {where.get(decl.origin, decl.origin)} ({decl.file})"

    def _type_reason(self, name: str, types: list[Decl], depth: int = 0) -> str:
        """A class with constructors or a destructor runs them: they must be callable.
        Typedefs and aliases are followed to the class they name."""
        for alias in (t for t in types if t.typedef not in ("", "?") and depth < 8):
            target = _plain_type(alias.typedef)
            reason = (
                self._type_reason(target, self.table.lookup(target), depth + 1) if target else ""
            )
            if reason:
                return reason
        if not any(t.record and t.special for t in types):
            return ""
        last = _last(name)
        ctors = [
            d
            for d in self.table.named(last)
            if d.kind == FUNCTION and d.member and d.qualified.endswith(f"{last}::{last}")
        ]
        reason = self._function_reason(last, ctors) if ctors else "its constructors are unknown"
        return f"constructs {name}: {reason}" if reason else ""

    def _variable_reason(self, name: str, variables: list[Decl]) -> str:
        if _last(name) in CUDA_BUILTINS:
            return ""
        for var in variables:
            if var.constexpr or (
                var.const and (var.arithmetic or self.table.is_arithmetic_type(var.typedef))
            ):
                return ""
        return f"uses {name}, a variable outside the region ({variables[0].file})"

    # -- 5. attributes and pragmas, 6. host asm, and launch streams ---------------------------

    def _attributes(self) -> Iterable[tuple[str, int]]:
        """Attributes on the list or the original's; pragmas unroll and nounroll or the
        original's (no other directive survives preprocessing)."""
        for name, line in self.code.attributes:
            if name not in ALLOWED_ATTRIBUTES and name not in self.reference.attributes:
                yield f"attribute {name}", line
        for text, line in self.code.directives:
            words = text.lstrip("#").split()
            if words[:1] == ["pragma"] and words[1:2] and words[1].split("(")[0] in ALLOWED_PRAGMAS:
                continue
            if " ".join(text.split()) not in self.reference.directives:
                yield f"directive {' '.join(words[:3])}", line

    def _asm(self) -> Iterable[tuple[str, int]]:
        if not self.host:
            return
        for text, line in self.code.host_asm:
            if text not in self.reference.host_asm:
                yield "asm in host code", line

    def _streams(self) -> Iterable[tuple[str, int]]:
        for text, line in self.code.launch_streams:
            if text not in _STREAMS and text not in self.reference.streams:
                yield f"launches on stream {text}, which the original does not use", line
