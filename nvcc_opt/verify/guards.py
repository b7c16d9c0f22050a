"""Static guards on a candidate rewrite of one `@optimize` region. Pure: texts in, reasons out.

Published kernel optimizers have been caught with fake speedups: work moved to another stream or
thread, results cached across launches, library calls, timer games. Each guard names such a
construct, or a way for the candidate to reach past its region, as
`guard_<name>: <what> (<construct>) at line N of the candidate`.

The rules read the region lexer's tokens, never raw text: comments, strings and `#if 0` code
neither trigger nor hide anything, and `#define` bodies count as code. Apart from
guard_signature, a rule fires only on a construct the original region did not already have (a
region that used a stream may keep it). `check` lists the guards.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from nvcc_opt.regions.lexer import (
    COMMENT,
    DIRECTIVE,
    PUNCT,
    STRING,
    UNTERMINATED,
    WORD,
    Token,
    read_branches,
    tokenize,
)
from nvcc_opt.verify.declarations import (
    Function,
    Outline,
    Tok,
    changed_signatures,
    close,
    merge_scopes,
    word_set,
)


@dataclass(frozen=True)
class _Finding:
    guard: str
    key: str  # the same key in the original region means the construct is not new
    detail: str
    line: int = 0  # 0: the finding has no line in the candidate

    def reason(self) -> str:
        where = f" at line {self.line} of the candidate" if self.line else ""
        return f"guard_{self.guard}: {self.detail}{where}"


# (guard, how the name matches, pattern, what it does). How: "word" is the name's last component,
# "prefix" and "iprefix" (any case) its start, "has" a substring in any case, "qualified" the last
# component after some `x::`, "scope" any component before the last.
_NAME_RULES: tuple[tuple[str, str, str, str], ...] = (
    ("stream", "prefix", "cudaStreamCreate", "creates a CUDA stream"),
    ("stream", "prefix", "cuStreamCreate", "creates a CUDA stream"),
    ("stream", "prefix", "cudaStreamBeginCapture", "captures a stream"),
    ("stream", "prefix", "cuStreamBeginCapture", "captures a stream"),
    ("stream", "word", "cudaStream_t", "declares a CUDA stream"),
    ("stream", "word", "CUstream", "declares a CUDA stream"),
    ("stream", "word", "cudaStreamPerThread", "launches on the per-thread stream"),
    ("thread", "qualified", "thread", "starts a host thread"),
    ("thread", "qualified", "jthread", "starts a host thread"),
    ("thread", "qualified", "async", "runs host work asynchronously"),
    ("thread", "prefix", "pthread_", "starts a host thread"),
    ("thread", "prefix", "omp_", "uses OpenMP"),
    ("thread", "word", "cudaLaunchHostFunc", "runs host code from a stream"),
    ("thread", "word", "cudaStreamAddCallback", "runs host code from a stream"),
    ("graph", "prefix", "cudaGraph", "uses a CUDA graph"),
    ("graph", "prefix", "cuGraph", "uses a CUDA graph"),
    ("graph", "prefix", "cudaStreamEndCapture", "uses a CUDA graph"),
    ("l2", "has", "accesspolicywindow", "sets an L2 access policy window"),
    ("l2", "word", "cudaStreamAttrValue", "sets a stream attribute"),
    ("l2", "word", "cudaKernelNodeAttrValue", "sets a kernel node attribute"),
    ("l2", "has", "persistingl2", "sets aside persisting L2 cache"),
    ("l2", "has", "persisting_l2", "sets aside persisting L2 cache"),
    ("l2", "has", "accessproperty", "sets an L2 access property"),
    ("l2", "has", "access_property", "sets an L2 access property"),
    ("l2", "word", "annotated_ptr", "sets an L2 access property"),
    ("precomputed", "prefix", "cudaMemcpy", "copies memory"),
    ("precomputed", "prefix", "cudaMemset", "fills memory"),
    ("precomputed", "prefix", "cuMemcpy", "copies memory"),
    ("precomputed", "prefix", "cuMemset", "fills memory"),
    *(
        ("library", "iprefix", name, "calls a library")
        for name in ("cublas", "cusparse", "cufft", "curand", "cusolver", "cudnn", "cutensor")
    ),
    *(
        ("library", "scope", name, "calls a library")
        for name in ("thrust", "cub", "cutlass", "cute")
    ),
    ("timer", "word", "clock", "reads a timer"),
    ("timer", "word", "clock64", "reads a timer"),
    ("timer", "word", "globaltimer", "reads a timer"),
    ("timer", "word", "__globaltimer", "reads a timer"),
    ("timer", "word", "clock_gettime", "reads a timer"),
    ("timer", "word", "gettimeofday", "reads a timer"),
    ("timer", "scope", "chrono", "reads a timer"),
    ("timer", "word", "__nanosleep", "sleeps"),
    ("timer", "scope", "this_thread", "sleeps"),
    ("timer", "prefix", "cudaEvent", "uses CUDA events"),
    ("timer", "prefix", "cuEvent", "uses CUDA events"),
    ("outside", "word", "constructor", "runs code at program start or exit"),
    ("outside", "word", "destructor", "runs code at program start or exit"),
)
# Block- and warp-wide CUB primitives are building blocks inside the candidate's own kernel.
_OWN_WORK = ("cub::Block", "cub::Warp")
# Inline-asm text (lowercase) that reads a clock or pins lines in L2 across launches.
_ASM_RULES = (
    ("timer", "%clock", "reads a clock register in inline asm"),
    ("timer", "%globaltimer", "reads a clock register in inline asm"),
    ("l2", "evict_last", "sets an L2 eviction priority in inline asm"),
    ("l2", "createpolicy", "sets an L2 eviction priority in inline asm"),
)
_ASM = frozenset(("asm", "__asm__", "__asm"))
_SAFE_PRAGMAS = frozenset(("unroll", "nounroll", "once"))
_THREAD_HEADERS = frozenset(("thread", "future", "pthread.h", "omp.h"))
_TOOLKIT_HEADERS = tuple(
    word_set(
        "cuda cub/ thrust/ cooperative_groups mma.h sm_ device_ vector_ math_constants.h crt/ nv/"
        " cublas cufft curand cusparse cusolver nvtx3/ texture_ surface_"
    )
)
_STD_HEADERS = word_set(
    "algorithm array atomic bit bitset cassert cfloat climits cmath complex cstdarg cstddef "
    "cinttypes "
    "cstdint cstdio cstdlib cstring functional initializer_list iostream iterator limits "
    "memory new numeric optional tuple type_traits utility vector assert.h float.h "
    "limits.h math.h stddef.h stdint.h stdio.h stdlib.h string.h"
)
_OPENERS = frozenset(("if", "ifdef", "ifndef"))
_ALTERNATIVES = frozenset(("elif", "else", "elifdef", "elifndef"))


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
      `%clock`/`%globaltimer` in inline asm): the names in `_NAME_RULES` and `_ASM_RULES`.
    - guard_static_buffer: a mutable namespace-scope variable (`__device__`, `__managed__`, host)
      or a non-const `static` local or member: state that carries results across launches.
    """
    rest = _rest_of_file(original_region, file_text)
    old, new = _Code(original_region), _Code(candidate)
    known = {(f.guard, f.key) for f in _findings(old, rest)}
    found = [f for f in _findings(new, rest) if (f.guard, f.key) not in known]
    found += _signature_findings(old.functions, new.functions, rest)
    first: dict[tuple[str, str], _Finding] = {}
    for finding in sorted(found, key=lambda f: f.line):
        first.setdefault((finding.guard, finding.key), finding)
    return sorted({f.reason() for f in first.values()})


@dataclass(frozen=True)
class _Rest:
    """What the file outside the region names and includes."""

    words: frozenset[str]
    includes: frozenset[str]


def _rest_of_file(region: str, file_text: str | None) -> _Rest | None:
    if file_text is None:
        return None
    text, region = file_text.replace("\r\n", "\n"), region.replace("\r\n", "\n")
    at = text.find(region)
    if at < 0 or not region:
        return None
    rest = _Code(text[:at] + text[at + len(region) :])
    words = {part for tok in rest.live + rest.macros for part in tok.text.split("::")}
    for directive in rest.directives:
        words.update(t.text for t in _sub_tokens(directive) if t.kind == WORD)
    includes = (d for d in rest.directives if _words(d)[:1] in (["include"], ["include_next"]))
    return _Rest(frozenset(words), frozenset(_include_path(d) for d in includes))


class _Code:
    """One text's tokens, read the way the guards need them."""

    def __init__(self, text: str) -> None:
        src = text.replace("\r\n", "\n").encode("utf-8", "replace")
        raw = tokenize(src)
        read, skipped = read_branches(src, raw)
        starts = [0] + [i + 1 for i, c in enumerate(src) if c == 10]
        self.unterminated = [_tok(src, t, starts) for t in raw if t[0] == UNTERMINATED]
        self.conditionals = [_tok(src, t, starts) for t in raw if t[0] == DIRECTIVE]
        live = [_tok(src, t, starts) for t in sorted(read + skipped, key=_start) if t[0] != COMMENT]
        self.directives = [t for t in live if t.kind == DIRECTIVE]
        self.live = merge_scopes([t for t in live if t.kind != DIRECTIVE])
        self.read = merge_scopes(
            [_tok(src, t, starts) for t in read if t[0] not in (COMMENT, DIRECTIVE)]
        )
        self.macros = [t for d in self.directives if _words(d)[:1] == ["define"] for t in _body(d)]
        self.outline = Outline(self.read)
        self.functions = self.outline.functions


def _tok(src: bytes, token: Token, starts: list[int]) -> Tok:
    kind, start, end = token
    begin = start + 1 if kind == DIRECTIVE else start
    return Tok(kind, src[begin:end].decode("utf-8", "replace"), bisect_right(starts, start))


def _start(token: Token) -> int:
    return token[1]


def _sub_tokens(directive: Tok) -> list[Tok]:
    """The tokens inside a directive line, comments dropped, with their own lines."""
    src = directive.text.encode("utf-8", "replace")
    starts = [0] + [i + 1 for i, c in enumerate(src) if c == 10]
    toks = [_tok(src, t, starts) for t in tokenize(src) if t[0] != COMMENT]
    return [t._replace(line=t.line + directive.line - 1) for t in toks]


def _words(directive: Tok) -> list[str]:
    return [t.text for t in _sub_tokens(directive) if t.kind == WORD]


def _body(define: Tok) -> list[Tok]:
    """A `#define`'s replacement tokens (its parameter list included: harmless)."""
    return merge_scopes(_sub_tokens(define)[2:])


def _findings(code: _Code, rest: _Rest | None) -> list[_Finding]:
    found = [*_name_findings(code.live + code.macros), *_asm_findings(code.live + code.macros)]
    found += _directive_findings(code, rest)
    found += _balance_findings(code)
    found += [
        _Finding("outside", "using namespace", "`using namespace` at namespace scope", line)
        for line in code.outline.using_namespace
    ]
    found += [
        _Finding(
            "static_buffer",
            f"var {name}",
            f"keeps state across launches in a mutable variable ({name})",
            line,
        )
        for name, line in code.outline.variables
    ]
    return found


def _name_findings(toks: Iterable[Tok]) -> list[_Finding]:
    return [
        _Finding(guard, tok.text, f"{what} ({tok.text})", tok.line)
        for tok in toks
        if tok.kind == WORD
        for guard, what in _rules_for(tok.text)
    ]


@lru_cache(maxsize=4096)
def _rules_for(name: str) -> tuple[tuple[str, str], ...]:
    """(guard, what) of each name rule `name` matches."""
    if name[0].isdigit() or name[0] == "." or name.startswith(_OWN_WORK):
        return ()
    return tuple(
        (guard, what)
        for guard, how, pattern, what in _NAME_RULES
        if _name_matches(name, how, pattern)
    )


def _name_matches(name: str, how: str, pattern: str) -> bool:
    *scopes, last = name.split("::")
    if how == "word":
        return last == pattern
    if how == "prefix":
        return last.startswith(pattern)
    if how == "iprefix":
        return last.lower().startswith(pattern)
    if how == "has":
        return pattern in last.lower()
    if how == "qualified":
        return bool(scopes) and last == pattern
    return pattern in scopes


def _asm_findings(toks: list[Tok]) -> list[_Finding]:
    found = []
    for i, tok in enumerate(toks):
        if tok.kind != WORD or tok.text not in _ASM:
            continue
        text = " ".join(t.text for t in _group(toks, i + 1, "(", ")") if t.kind == STRING).lower()
        for guard, needle, what in _ASM_RULES:
            if needle in text:
                found.append(_Finding(guard, f"asm {needle}", f"{what} ({needle})", tok.line))
    return found


def _group(toks: list[Tok], i: int, opener: str, closer: str) -> list[Tok]:
    """The tokens from the `opener` at or after index `i` (skipping qualifiers) to its closer."""
    while i < len(toks) and toks[i].kind == WORD:
        i += 1  # `asm volatile (`
    if i >= len(toks) or toks[i].text != opener:
        return []
    return toks[i : close(toks, i, opener, closer) + 1]


def _directive_findings(code: _Code, rest: _Rest | None) -> list[_Finding]:
    found: list[_Finding] = []
    defined: dict[str, Tok] = {}  # macros the candidate defines and has not undefined yet
    for directive in code.directives:
        words = _words(directive)
        name = words[1] if len(words) > 1 else ""
        if words[:1] == ["define"] and name:
            defined[name] = directive
            if rest is not None and name in rest.words:
                detail = f"#define redefines {name}, a name the rest of the file uses"
                found.append(_Finding("outside", f"redefine {name}", detail, directive.line))
        elif words[:1] == ["undef"] and name and defined.pop(name, None) is None:
            if rest is None or name in rest.words:
                detail = f"#undef removes {name}, which the rest of the file may use"
                found.append(_Finding("outside", f"undef {name}", detail, directive.line))
        elif words[:1] == ["pragma"]:
            found += _pragma_findings(directive.text[len("pragma") :].strip(), directive.line)
        elif words[:1] in (["include"], ["include_next"], ["import"]):
            found += _include_findings(_include_path(directive), directive.line, rest)
        elif words[:1] == ["line"] or directive.text.strip()[:1].isdigit():
            found.append(_Finding("outside", "line", "#line renumbers the file", directive.line))
    for name, directive in defined.items():
        detail = f"#define {name} stays defined after the region"
        found.append(_Finding("outside", f"define {name}", detail, directive.line))
    for i, tok in enumerate(code.live):
        if tok.text in ("_Pragma", "__pragma"):
            strings = [t for t in _group(code.live, i + 1, "(", ")") if t.kind == STRING]
            text = _unquote(strings[0].text) if strings else ""
            found += _pragma_findings(text, tok.line)
    return found


def _pragma_findings(text: str, line: int) -> list[_Finding]:
    first = text.split(None, 1)[0] if text.split() else ""
    if first in _SAFE_PRAGMAS:
        return []
    normal = " ".join(text.split())
    if first == "omp":
        return [_Finding("thread", f"pragma {normal}", "uses OpenMP (#pragma omp)", line)]
    detail = f"#pragma {first} changes how the rest of the file compiles"
    return [_Finding("outside", f"pragma {normal}", detail, line)]


def _include_path(directive: Tok) -> str:
    after = directive.text.strip().split(None, 1)
    text = after[1].strip() if len(after) > 1 else ""
    if text.startswith("<"):
        return text[: text.find(">") + 1]
    if text.startswith('"'):
        return text[: text.find('"', 1) + 1]
    return text


def _include_findings(path: str, line: int, rest: _Rest | None) -> list[_Finding]:
    if rest is not None and path in rest.includes:
        return []
    name = path[1:-1]
    if path.startswith("<") and name in _THREAD_HEADERS:
        return [_Finding("thread", f"include {path}", f"includes {path}", line)]
    if path.startswith("<") and (name in _STD_HEADERS or name.startswith(_TOOLKIT_HEADERS)):
        return []
    shown = path or "of a macro"
    detail = f"#include {shown} is neither standard, CUDA toolkit, nor included by the file"
    return [_Finding("outside", f"include {path}", detail, line)]


def _balance_findings(code: _Code) -> list[_Finding]:
    found = [
        _Finding("outside", "unterminated", "an unterminated comment or raw string", tok.line)
        for tok in code.unterminated
    ]
    depth = 0
    for directive in code.conditionals:
        words = _words(directive)[:1]
        depth += (words[0] in _OPENERS) - (words[0] == "endif") if words else 0
        if depth < 0 or (depth == 0 and words and words[0] in _ALTERNATIVES):
            break
    if depth != 0:
        found.append(_Finding("outside", "conditional", "unbalanced #if/#endif"))
    pairs = {")": "(", "]": "[", "}": "{"}
    stack: list[Tok] = []
    for tok in (t for t in code.read if t.kind == PUNCT):
        if tok.text in "([{":
            stack.append(tok)
        elif tok.text in pairs and (not stack or stack[-1].text != pairs[tok.text]):
            detail = f"`{tok.text}` closes a bracket the candidate did not open"
            return [*found, _Finding("outside", "brackets", detail, tok.line)]
        elif tok.text in pairs:
            stack.pop()
    if stack:
        detail = f"`{stack[0].text}` is never closed"
        found.append(_Finding("outside", "brackets", detail, stack[0].line))
    return found


def _signature_findings(
    old: list[Function], new: list[Function], rest: _Rest | None
) -> list[_Finding]:
    def used_elsewhere(name: str) -> bool:
        return rest is None or name.split("::")[-1] in rest.words

    changed = changed_signatures(old, new, used_elsewhere)
    return [_Finding("signature", f"sig {name}", detail, line) for name, detail, line in changed]


def _unquote(literal: str) -> str:
    """The text of a plain string literal (`_Pragma`'s argument), its prefix and escapes removed."""
    body = literal[literal.find('"') + 1 : literal.rfind('"')]
    return body.replace('\\"', '"').replace("\\\\", "\\")
