"""The static guards on directives and balance (guard_outside; guard_thread for OpenMP and
thread headers): a `#define` left defined, or one or an `#undef` of a name the rest of the file
uses; a `#pragma`/`_Pragma` other than unroll, nounroll, once; `#include` of a header neither
standard, in the CUDA toolkit, nor already included by the file; `#line`; unterminated comments,
unbalanced `#if`/`#endif` and brackets. Pure: a `Code` in, findings out.
"""

from __future__ import annotations

from nvcc_opt.regions.lexer import PUNCT, STRING
from nvcc_opt.verify.declarations import Tok, word_set
from nvcc_opt.verify.guard_code import Code, Finding, Rest, group, include_path, words_of

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


def directive_findings(code: Code, rest: Rest | None) -> list[Finding]:
    found: list[Finding] = []
    defined: dict[str, Tok] = {}  # macros the candidate defines and has not undefined yet
    for directive in code.directives:
        words = words_of(directive)
        name = words[1] if len(words) > 1 else ""
        if words[:1] == ["define"] and name:
            defined[name] = directive
            if rest is not None and name in rest.words:
                detail = f"#define redefines {name}, a name the rest of the file uses"
                found.append(Finding("outside", f"redefine {name}", detail, directive.line))
        elif words[:1] == ["undef"] and name and defined.pop(name, None) is None:
            if rest is None or name in rest.words:
                detail = f"#undef removes {name}, which the rest of the file may use"
                found.append(Finding("outside", f"undef {name}", detail, directive.line))
        elif words[:1] == ["pragma"]:
            found += _pragma_findings(directive.text[len("pragma") :].strip(), directive.line)
        elif words[:1] in (["include"], ["include_next"], ["import"]):
            found += _include_findings(include_path(directive), directive.line, rest)
        elif words[:1] == ["line"] or directive.text.strip()[:1].isdigit():
            found.append(Finding("outside", "line", "#line renumbers the file", directive.line))
    for name, directive in defined.items():
        detail = f"#define {name} stays defined after the region"
        found.append(Finding("outside", f"define {name}", detail, directive.line))
    for i, tok in enumerate(code.live):
        if tok.text in ("_Pragma", "__pragma"):
            strings = [t for t in group(code.live, i + 1, "(", ")") if t.kind == STRING]
            text = _unquote(strings[0].text) if strings else ""
            found += _pragma_findings(text, tok.line)
    return found


def _pragma_findings(text: str, line: int) -> list[Finding]:
    first = text.split(None, 1)[0] if text.split() else ""
    if first in _SAFE_PRAGMAS:
        return []
    normal = " ".join(text.split())
    if first == "omp":
        return [Finding("thread", f"pragma {normal}", "uses OpenMP (#pragma omp)", line)]
    detail = f"#pragma {first} changes how the rest of the file compiles"
    return [Finding("outside", f"pragma {normal}", detail, line)]


def _include_findings(path: str, line: int, rest: Rest | None) -> list[Finding]:
    if rest is not None and path in rest.includes:
        return []
    name = path[1:-1]
    if path.startswith("<") and name in _THREAD_HEADERS:
        return [Finding("thread", f"include {path}", f"includes {path}", line)]
    if path.startswith("<") and (name in _STD_HEADERS or name.startswith(_TOOLKIT_HEADERS)):
        return []
    shown = path or "of a macro"
    detail = f"#include {shown} is neither standard, CUDA toolkit, nor included by the file"
    return [Finding("outside", f"include {path}", detail, line)]


def balance_findings(code: Code) -> list[Finding]:
    found = [
        Finding("outside", "unterminated", "an unterminated comment or raw string", tok.line)
        for tok in code.unterminated
    ]
    depth = 0
    for directive in code.conditionals:
        words = words_of(directive)[:1]
        depth += (words[0] in _OPENERS) - (words[0] == "endif") if words else 0
        if depth < 0 or (depth == 0 and words and words[0] in _ALTERNATIVES):
            break
    if depth != 0:
        found.append(Finding("outside", "conditional", "unbalanced #if/#endif"))
    pairs = {")": "(", "]": "[", "}": "{"}
    stack: list[Tok] = []
    for tok in (t for t in code.read if t.kind == PUNCT):
        if tok.text in "([{":
            stack.append(tok)
        elif tok.text in pairs and (not stack or stack[-1].text != pairs[tok.text]):
            detail = f"`{tok.text}` closes a bracket the candidate did not open"
            return [*found, Finding("outside", "brackets", detail, tok.line)]
        elif tok.text in pairs:
            stack.pop()
    if stack:
        detail = f"`{stack[0].text}` is never closed"
        found.append(Finding("outside", "brackets", detail, stack[0].line))
    return found


def _unquote(literal: str) -> str:
    """The text of a plain string literal (`_Pragma`'s argument), its prefix and escapes removed."""
    body = literal[literal.find('"') + 1 : literal.rfind('"')]
    return body.replace('\\"', '"').replace("\\\\", "\\")
