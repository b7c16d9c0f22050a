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
   need internal linkage. Types are free. And every name it declares at namespace scope that
   is new against the original (a new one, another overload or specialization, a definition of
   what the original only declares; `region_exports`) is one the code outside the region never
   uses (functions and specializations: anywhere in the unit; other names: after the region);
   a new operator takes a class the candidate defines, or only CUDA vector and arithmetic types
   no operator outside the region serves: a declaration outside code can see could change what
   that code calls.
2. State: no variable with static storage (namespace scope, `static`, `thread_local`, static
   members, `__device__`/`__managed__`) unless a compile-time constant; `__shared__` is per block.
3. Calls (and any other use of a function, its address included): see
   `allowlist_rules.Rules._function_reason`.
4. Names: a namespace-scope variable used, not defined: a constant, a CUDA built-in or one the
   original uses. Types used run their constructors: those follow the call rule.
5. Attributes: `allowlist_lists.ALLOWED_ATTRIBUTES` only; `#pragma` only unroll and nounroll.
6. `asm` in host code only as the original has it (device asm is another check's job).
7. Where and when: nothing of its compile the original does not read (the file's name, the date
   and time: `preprocess.Preprocessed.reads`): every check compiles the code under another name
   and at another second than the build, so a candidate that reads them could show the checks
   the original and give the build a cheat.

This module checks the whole candidate (`check_candidate`: `#line` directives, the project
headers it includes, then each side); `allowlist_rules` applies the six rules to one side,
against what the original does (`allowlist_reference`), with the lists of `allowlist_lists`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from functools import lru_cache

from nvcc_opt.regions.lexer import DIRECTIVE, tokenize
from nvcc_opt.verify.allowlist_reference import Reference, reference_of
from nvcc_opt.verify.allowlist_rules import Rules
from nvcc_opt.verify.preprocess import Preprocessed
from nvcc_opt.verify.region_code import RegionCode
from nvcc_opt.verify.symbols import PROJECT, Symbols, classify, symbols_of


def check_candidate(
    original: Preprocessed, candidate: Preprocessed, *, rdc: bool | None = None
) -> list[str]:
    """The allowlist reasons against `candidate` replacing `original`, sorted; [] when clean.

    Both come from `nvcc_opt.verify.preprocess.preprocess` with the same compile command.
    `rdc`: whether the compile makes relocatable device code (default: as the command says).
    The original's symbol table is built once per `original` (kept for the next candidates).
    """
    reference = reference_of(original)
    table = _candidate_table(original, candidate)
    found: dict[str, int] = {}
    for reason, line in _findings(
        candidate, reference, table, rdc if rdc is not None else candidate.rdc
    ):
        text = f"allowlist: {reason}" + (f" at line {line} of the candidate" if line else "")
        found.setdefault(text, line)
    return sorted(found, key=lambda text: (found[text], text))


def _findings(
    candidate: Preprocessed, reference: Reference, table: Symbols, rdc: bool
) -> Iterable[tuple[str, int]]:
    yield from _line_directives(candidate.code)
    yield from _includes(candidate, reference)
    yield from _compile_reads(candidate, reference)
    for side in candidate.sides:
        code = RegionCode(side)
        rules = Rules(code, reference, table, rdc, host=side.name == "host")
        yield from rules.reasons()


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


def _compile_reads(candidate: Preprocessed, reference: Reference) -> Iterable[tuple[str, int]]:
    """Rule 7: what of its compile the candidate reads that the original does not."""
    for what, line in candidate.reads:
        if what not in reference.reads:
            yield (
                f"reads {what}, which the build's compile and each check's see differently "
                "(the checks could be shown other code than the build compiles)",
                line,
            )


def _includes(candidate: Preprocessed, reference: Reference) -> Iterable[tuple[str, int]]:
    """Headers the candidate includes: the toolkit's, the system's, or ones the original's
    translation unit already reads (a project file could hold anything)."""
    for side in candidate.sides:
        for header, line in side.includes:
            system = any(s.system for s in side.segments if s.file == header)
            origin, _ = classify(header, system, candidate.marker, candidate.toolkit)
            if origin == PROJECT and os.path.realpath(header) not in reference.files:
                yield f"#include of {header}, a project file the original does not include", line
