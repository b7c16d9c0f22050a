"""Static guards on a candidate rewrite of one `@optimize` region. Pure: texts in, reasons out.

Published kernel optimizers have been caught with fake speedups: work moved to another stream or
thread, results cached across launches, library calls, timer games. Each guard names such a
construct, or a way for the candidate to reach past its region, as
`guard_<name>: <what> (<construct>) at line N of the candidate`.

The rules read the region lexer's tokens, never raw text: comments, strings and `#if 0` code
neither trigger nor hide anything, and `#define` bodies count as code. Apart from
guard_signature, a rule fires only on a construct the original region did not already have (a
region that used a stream may keep it). `check` lists the guards.

The rules are in `guard_names` (names and inline asm), `guard_directives` (directives and
balance) and here (`using namespace`, static buffers, signatures, compared by `declarations`);
`guard_code` reads a text the way they need it and holds the `Finding` each reports.
"""

from __future__ import annotations

from nvcc_opt.verify.declarations import Function, changed_signatures
from nvcc_opt.verify.guard_code import Code, Finding, Rest, rest_of_file
from nvcc_opt.verify.guard_directives import balance_findings, directive_findings
from nvcc_opt.verify.guard_names import asm_findings, name_findings


def check(original_region: str, candidate: str, *, file_text: str | None = None) -> list[str]:
    """The guard reasons against `candidate` replacing `original_region`, sorted; [] when clean.

    `file_text` is the whole source file that holds the region. Without it, or when the region is
    not in it, everything the region defines counts as used by the rest of the file.

    - guard_signature: a function of the region that the rest of the program can use is gone or
      changed. Host functions with external linkage always count; kernels, device functions and
      `static`/`inline` host functions only when the rest of the file names them. Compared: the
      name, execution space, template header, return type and parameter types; parameter names,
      `__restrict__`, top-level `const`, a `const` added to a pointer's pointee,
      `__launch_bounds__` and other attributes may change. New helpers are free.
    - guard_outside: unbalanced brackets, `#if`/`#endif` or comments; a `#define` left defined,
      or one or an `#undef` of a name the rest of the file uses; a `#pragma`/`_Pragma` other than
      unroll, nounroll, once; `#include` of a header neither standard C/C++, in the CUDA
      toolkit, nor already included by the file; `#line`; namespace-scope `using namespace`;
      constructor/destructor attributes.
    - guard_stream, guard_thread, guard_graph, guard_l2, guard_precomputed (any CUDA memcpy or
      memset call kind), guard_library (cuBLAS and the like, thrust::, cub:: other than
      Block/Warp primitives, cutlass::, cute::), guard_timer (clock reads, sleeps, CUDA events,
      `%clock`/`%globaltimer` in inline asm): the names in `guard_names`' `_NAME_RULES` and
      `_ASM_RULES`.
    - guard_static_buffer: a mutable namespace-scope variable (`__device__`, `__managed__`, host)
      or a non-const `static` local or member: state that carries results across launches.
    """
    rest = rest_of_file(original_region, file_text)
    old, new = Code(original_region), Code(candidate)
    known = {(f.guard, f.key) for f in _findings(old, rest)}
    found = [f for f in _findings(new, rest) if (f.guard, f.key) not in known]
    found += _signature_findings(old.functions, new.functions, rest)
    first: dict[tuple[str, str], Finding] = {}
    for finding in sorted(found, key=lambda f: f.line):
        first.setdefault((finding.guard, finding.key), finding)
    return sorted({f.reason() for f in first.values()})


def _findings(code: Code, rest: Rest | None) -> list[Finding]:
    found = [*name_findings(code.live + code.macros), *asm_findings(code.live + code.macros)]
    found += directive_findings(code, rest)
    found += balance_findings(code)
    found += [
        Finding("outside", "using namespace", "`using namespace` at namespace scope", line)
        for line in code.outline.using_namespace
    ]
    found += [
        Finding(
            "static_buffer",
            f"var {name}",
            f"keeps state across launches in a mutable variable ({name})",
            line,
        )
        for name, line in code.outline.variables
    ]
    return found


def _signature_findings(
    old: list[Function], new: list[Function], rest: Rest | None
) -> list[Finding]:
    def used_elsewhere(name: str) -> bool:
        return rest is None or name.split("::")[-1] in rest.words

    changed = changed_signatures(old, new, used_elsewhere)
    return [Finding("signature", f"sig {name}", detail, line) for name, detail, line in changed]
