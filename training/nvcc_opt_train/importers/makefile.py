"""Read the variables and recipes of a simple GNU Makefile, as HeCBench's are written.

Enough of make for those files: `=`, `:=`, `?=`, `+=`, `ifeq`/`ifneq`/`ifdef`/`ifndef` with
`else`/`endif`, line continuations, `$(VAR)`/`${VAR}`, substitution references
(`$(source:.cu=.o)`) and `$(wildcard ...)`. Variables it cannot know (the environment's
EXTRA_CFLAGS, LAUNCHER) expand to nothing, as make does when they are unset. Never runs make.
"""

from __future__ import annotations

import glob
import re
from dataclasses import dataclass, field
from pathlib import Path

_ASSIGN = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\s*(\+=|:=|::=|\?=|=)\s*(.*)$")
_RULE = re.compile(r"^([^\s:=][^:=]*?)\s*:(?!=)\s*(.*)$")
_COND = re.compile(r"^(ifeq|ifneq|ifdef|ifndef)\b\s*(.*)$")


@dataclass
class Makefile:
    """The variables after reading the whole file, and each target's recipe lines (expanded
    when asked for)."""

    folder: Path
    variables: dict[str, str] = field(default_factory=dict)
    recipes: dict[str, list[str]] = field(default_factory=dict)

    def expand(self, text: str, depth: int = 0) -> str:
        if depth > 20:
            return text
        out = []
        i = 0
        while i < len(text):
            if text[i] != "$" or i + 1 >= len(text):
                out.append(text[i])
                i += 1
                continue
            opener = text[i + 1]
            if opener in "({":
                closer = ")" if opener == "(" else "}"
                end = _closing(text, i + 2, opener, closer)
                out.append(self._reference(text[i + 2 : end], depth))
                i = end + 1
            elif opener == "$":
                out.append("$")
                i += 2
            else:
                out.append(self.variables.get(opener, ""))
                i += 2
        return "".join(out)

    def _reference(self, inner: str, depth: int) -> str:
        if inner.startswith("wildcard "):
            pattern = self.expand(inner[9:], depth + 1).split()
            found = []
            for word in pattern:
                paths = glob.glob(str(self.folder / word))
                found += sorted(str(Path(p).relative_to(self.folder)) for p in paths)
            return " ".join(found)
        name, colon, subst = inner.partition(":")
        value = self.expand(self.variables.get(name.strip(), ""), depth + 1)
        if colon and "=" in subst:
            old, new = subst.split("=", 1)
            value = " ".join(w[: -len(old)] + new if w.endswith(old) else w for w in value.split())
        return value

    def get(self, name: str) -> str:
        return self.expand(self.variables.get(name, "")).strip()

    def recipe(self, target: str) -> list[str]:
        return [self.expand(line).strip() for line in self.recipes.get(target, [])]


def _closing(text: str, i: int, opener: str, closer: str) -> int:
    depth = 1
    while i < len(text):
        if text[i] == opener:
            depth += 1
        elif text[i] == closer:
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return len(text)


def _logical_lines(text: str) -> list[str]:
    lines: list[str] = []
    pending = ""
    for raw in text.splitlines():
        if raw.endswith("\\"):
            pending += raw[:-1] + " "
            continue
        lines.append(pending + raw)
        pending = ""
    if pending:
        lines.append(pending)
    return lines


def _strip_comment(line: str) -> str:
    at = line.find("#")
    return line if at < 0 else line[:at]


def read_makefile(path: Path) -> Makefile:
    """The Makefile at `path`, read as make would with no variables set from outside."""
    mk = Makefile(path.parent)
    active: list[bool] = []  # one per open conditional: whether its current branch is read
    taken: list[bool] = []  # whether a branch of it was read already
    target: str | None = None
    for line in _logical_lines(path.read_text(encoding="utf-8", errors="replace")):
        on = all(active)
        if line.startswith("\t"):
            if on and target is not None:
                mk.recipes.setdefault(target, []).append(line[1:])
            continue
        text = _strip_comment(line).strip()
        cond = _COND.match(text)
        if cond:
            value = on and _condition(mk, cond.group(1), cond.group(2))
            active.append(value)
            taken.append(value)
            continue
        if text.startswith("else") and active:
            rest = text[4:].strip()
            cond = _COND.match(rest)
            value = not taken[-1] and (cond is None or _condition(mk, cond.group(1), cond.group(2)))
            active[-1] = value and all(active[:-1])
            taken[-1] = taken[-1] or value
            continue
        if text == "endif" and active:
            active.pop()
            taken.pop()
            continue
        if not on or not text:
            continue
        assign = _ASSIGN.match(text)
        if assign:
            _assign(mk, *assign.groups())
            target = None
            continue
        rule = _RULE.match(text)
        if rule:
            target = mk.expand(rule.group(1)).strip()
            mk.recipes.setdefault(target, [])
            recipe = rule.group(2).partition(";")[2]
            if recipe.strip():
                mk.recipes[target].append(recipe)
    return mk


def _assign(mk: Makefile, name: str, op: str, value: str) -> None:
    if op == "?=" and name in mk.variables:
        return
    if op in (":=", "::="):
        value = mk.expand(value)
    if op == "+=" and name in mk.variables:
        value = f"{mk.variables[name]} {value}"
    mk.variables[name] = value.strip()


def _condition(mk: Makefile, kind: str, rest: str) -> bool:
    if kind in ("ifdef", "ifndef"):
        defined = bool(mk.get(rest.strip()))
        return defined if kind == "ifdef" else not defined
    rest = rest.strip()
    if rest.startswith("(") and rest.endswith(")"):
        left, _, right = rest[1:-1].partition(",")
    else:
        quoted = re.findall(r"\"([^\"]*)\"|'([^']*)'", rest)
        if len(quoted) != 2:
            return False
        left, right = (a or b for a, b in quoted)
    same = mk.expand(left).strip() == mk.expand(right).strip()
    return same if kind == "ifeq" else not same
