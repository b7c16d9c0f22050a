"""Preprocessor conditionals in a region, as the parser sees them: one branch of each group.

Real kernels put `#if`/`#ifdef` around launch bounds, types and whole statements, often in the
middle of a declaration (`__global__ #ifdef DOUBLE __launch_bounds__(64,8) #else ... #endif
void k(...)`), which a C++ grammar cannot parse: the kernel would be opaque to every transform.
`view` blanks each directive line of a conditional group and every branch but one (each byte but
newlines becomes a space), so byte offsets and line numbers stay those of the original, and the
parse sees code the compiler could see. The branch shown is the one the region itself decides
(`#if 0`, `#if 1`, `#ifdef X` after the region's own `#define X`/`#undef X`); an undecided group
shows its first branch.

The blanked bytes (`View.hidden`) are never edited: `preserved` says whether a transform's result
kept every directive and every hidden branch byte for byte, in order, so a rewrite never drops or
changes a branch the build may compile. Unbalanced conditionals (an `#endif` without `#if`, a
group left open) give no view: the code stays as it is and the parser sees it as before.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_DIRECTIVE = re.compile(rb"^[ \t]*#[ \t]*(ifdef|ifndef|if|elifdef|elifndef|elif|else|endif)\b(.*)")
_DEFINE = re.compile(rb"^[ \t]*#[ \t]*(define|undef)[ \t]+([A-Za-z_]\w*)")
_DEFINED = re.compile(rb"^(!)?\s*defined\s*(?:\(\s*([A-Za-z_]\w*)\s*\)|\s([A-Za-z_]\w*))$")


@dataclass(frozen=True)
class View:
    data: bytes  # what the parser sees: the original with hidden bytes blanked
    hidden: tuple[tuple[int, int], ...]  # byte ranges blanked: directives and branches not shown


@dataclass
class _Group:
    taken: bool  # a branch of this group is shown (or was)
    shown: bool  # the current branch is shown


def view(data: bytes) -> View:
    """The parser's view of `data`; `hidden` is empty when there is nothing to hide or the
    conditionals are unbalanced."""
    if b"#" not in data:
        return View(data, ())
    out = bytearray(data)
    hidden: list[tuple[int, int]] = []
    stack: list[_Group] = []
    defined: dict[str, bool] = {}
    offset = 0
    lines = data.splitlines(keepends=True)
    index = 0
    while index < len(lines):
        start = offset
        line = lines[index]
        # a directive continues over lines ending in a backslash
        while line.rstrip(b"\r\n").endswith(b"\\") and index + 1 < len(lines):
            index += 1
            line += lines[index]
        offset += len(line)
        index += 1
        visible = all(g.shown for g in stack)
        match = _DIRECTIVE.match(line)
        if match is None:
            if not visible:
                hidden.append((start, offset))
            elif (define := _DEFINE.match(line)) is not None:
                defined[define.group(2).decode()] = define.group(1) == b"define"
            continue
        kind, rest = match.group(1), _condition(match.group(2))
        hidden.append((start, offset))
        if kind in (b"if", b"ifdef", b"ifndef"):
            decided = _decide(kind, rest, defined) if visible else False
            shown = decided is not False  # undecided: the first branch
            stack.append(_Group(taken=shown, shown=shown))
        elif not stack:
            return View(data, ())  # #elif/#else/#endif without #if
        elif kind == b"endif":
            stack.pop()
        elif kind == b"else":
            group = stack[-1]
            group.shown, group.taken = not group.taken, True
        else:  # elif, elifdef, elifndef
            group = stack[-1]
            decided = _decide(kind, rest, defined) if not group.taken else False
            group.shown = decided is not False
            group.taken = group.taken or group.shown
    if stack:
        return View(data, ())
    merged = _merge(hidden)
    for begin, end in merged:
        for at in range(begin, end):
            if out[at] not in b"\r\n":
                out[at] = 0x20
    return View(bytes(out), tuple(merged))


def preserved(before: bytes, after: bytes) -> bool:
    """Whether `after` keeps `before`'s directives and hidden branches, byte for byte, in order
    (a rewrite may change only what the parser saw)."""
    old, new = view(before), view(after)
    if not old.hidden and b"#" in before and _has_conditional(before):
        return before == after  # unbalanced: nothing to compare against, so nothing may change
    return _hidden_text(before, old) == _hidden_text(after, new)


def _has_conditional(data: bytes) -> bool:
    return any(_DIRECTIVE.match(line) for line in data.splitlines())


def _hidden_text(data: bytes, seen: View) -> list[bytes]:
    return [data[b:e] for b, e in seen.hidden]


def _condition(rest: bytes) -> bytes:
    """The condition without comments and line continuations."""
    text = re.sub(rb"/\*.*?\*/", b" ", rest.replace(b"\\\n", b" "), flags=re.S)
    return text.split(b"//")[0].strip()


def _decide(kind: bytes, condition: bytes, defined: dict[str, bool]) -> bool | None:
    """True or False where the region itself decides `condition`; None where it cannot."""
    if kind in (b"ifdef", b"ifndef", b"elifdef", b"elifndef"):
        known = defined.get(condition.decode(errors="replace"))
        if known is None:
            return None
        return known if kind in (b"ifdef", b"elifdef") else not known
    if re.fullmatch(rb"\(?\s*[0-9]+\s*\)?", condition):
        return int(condition.strip(b"() \t")) != 0
    match = _DEFINED.match(condition)
    if match is not None:
        name = (match.group(2) or match.group(3)).decode()
        known = defined.get(name)
        if known is None:
            return None
        return not known if match.group(1) else known
    return None


def _merge(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for begin, end in spans:
        if merged and merged[-1][1] == begin:
            merged[-1] = (merged[-1][0], end)
        else:
            merged.append((begin, end))
    return merged
