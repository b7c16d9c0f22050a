"""What the original region does, over all its sides: the `Reference` the allowlist judges a
candidate against (what it uses and calls, and with which string literals, the functions and
namespaces it defines, its host asm, launch streams, attributes, directives, static-storage
variables, the files its translation unit reads, the names it declares at namespace scope and
every name the unit uses outside it). Built once per original and kept.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache

from nvcc_opt.verify.preprocess import Preprocessed
from nvcc_opt.verify.region_code import RegionCode
from nvcc_opt.verify.region_exports import OuterOperator, exports, outside_of


@dataclass(frozen=True)
class Reference:
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
    declared: dict[str, frozenset[tuple[str, str]]]  # namespace-scope name -> Export.key's
    defined: frozenset[str]  # namespace-scope names it defines (not only declares)
    operators: tuple[OuterOperator, ...]  # operator functions named outside the region
    outside: frozenset[str]  # every identifier of the unit outside the region, on any side
    after: frozenset[str]  # those of the code after the region
    reads: frozenset[str] = frozenset()  # what of its compile it reads (Preprocessed.reads)


@lru_cache(maxsize=4)
def reference_of(original: Preprocessed) -> Reference:
    codes = [RegionCode(side) for side in original.sides]
    calls: dict[str, set[tuple[tuple[str, ...], ...]]] = {}
    for use in (u for code in codes for u in code.uses):
        if use.called and use.shape is not None:
            calls.setdefault(unqualified(use.name), set()).add(use.shape)
    named = {s.file for side in original.sides for s in side.segments}  # each file once: a
    # unit's linemarkers name the same few headers tens of thousands of times
    files = {os.path.realpath(file) for file in named}
    outside = [outside_of(side) for side in original.sides]
    declared: dict[str, set[tuple[str, str]]] = {}
    defined: set[str] = set()
    for export in (e for code in codes for e in exports(code)):
        declared.setdefault(export.name, set()).add(export.key)
        if export.defined:
            defined.add(export.name)
    return Reference(
        uses=frozenset(unqualified(u.name) for code in codes for u in code.uses),
        calls=calls,
        functions=frozenset(d.qualified for code in codes for d in code.definitions),
        namespaces=frozenset(n for code in codes for n, _ in code.namespaces),
        host_asm=frozenset(text for code in codes for text, _ in code.host_asm),
        streams=frozenset(text for code in codes for text, _ in code.launch_streams),
        attributes=frozenset(name for code in codes for name, _ in code.attributes),
        directives=frozenset(" ".join(t.split()) for code in codes for t, _ in code.directives),
        variables=frozenset((v.name, v.where) for code in codes for v in code.variables),
        files=frozenset(files),
        declared={name: frozenset(keys) for name, keys in declared.items()},
        defined=frozenset(defined),
        operators=tuple({o for seen in outside for o in seen.operators}),
        outside=frozenset().union(*(seen.before | seen.after for seen in outside)),
        after=frozenset().union(*(seen.after for seen in outside)),
        reads=frozenset(what for what, _ in original.reads),
    )


def unqualified(name: str) -> str:
    """The last component of a name: `std::max` -> `max`."""
    return name.rsplit("::", 1)[-1]
