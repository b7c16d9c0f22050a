"""The macros a compile command defines, as nvcc 13.0 reads them (each rule checked with nvcc -E
and a device-side `#error`):

- its own `-D`/`--define-macro` and `-U`/`--undefine-macro`, in order, the last word for a name
  winning, `-DNAME` meaning 1, a list option's value split at commas (`-DA=1,B=2` defines both);
- the host compiler's `-D`/`-U` passed through `-Xcompiler`/`--compiler-options` (they reach
  device code too), applied first, so that nvcc's own override them;
- options files (`--options-file F`, `-optf F`) read in place, relative to the compile's folder;
  one that cannot be read leaves every macro unknown (an empty answer), never half of them.

compiler_analysis names the ones the region's file uses, so that a reader of the region (a model,
the search policy) knows the types and sizes the build gives it on the command line
(`-Dreal=double`, `-DBLOCK=256`), which no file of the project spells as code.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from nvcc_opt.launcher.argv import split_options_text

_DEFINE = ("-D", "--define-macro")
_UNDEFINE = ("-U", "--undefine-macro")
_HOST = ("-Xcompiler", "--compiler-options")
_OPTIONS_FILE = ("-optf", "--options-file")
_NAME = re.compile(r"[A-Za-z_]\w*")
# options whose next word goes to another tool: a `-DX` after them is not nvcc's or the host's
_PASSED_ON = frozenset(
    ["-Xptxas", "--ptxas-options", "-Xlinker", "--linker-options", "-Xnvlink", "--nvlink-options",
     "-Xarchive", "--archive-options"]
)  # fmt: skip
MAX_DEPTH = 8  # options files that name options files


class _Unreadable(Exception):
    pass


def defines(words: Sequence[str], folder: Path | None = None) -> dict[str, str]:
    """name -> value of every macro `words` (a compile command run in `folder`) leave defined."""
    try:
        expanded = _expanded(list(words), folder or Path("."), 0)
    except _Unreadable:
        return {}
    host: list[str] = []
    own: list[str] = []
    at = 0
    while at < len(expanded):
        word = expanded[at]
        at += 1
        value = _value(word, expanded[at] if at < len(expanded) else None, _HOST)
        if value is not None:
            at += word in _HOST
            host += [f"-{item}" if not item.startswith("-") else item for item in value.split(",")]
        elif word in _PASSED_ON:
            at += 1
        else:
            own.append(word)
    found: dict[str, str] = {}
    _apply(host, found)
    _apply(own, found)
    return found


def used(found: dict[str, str], code: str) -> dict[str, str]:
    """The macros of `found` that `code` names (as a whole word) and does not decide itself: a
    `#undef`, or a `#define` not guarded by `#ifndef NAME` (a default the command line sets)."""
    words = set(re.findall(r"[A-Za-z_]\w*", code))
    kept = {}
    for name, value in found.items():
        if name not in words or re.search(rf"#\s*undef\s+{name}\b", code):
            continue
        if re.search(rf"#\s*define\s+{name}\b", code) and not defaults(code, name):
            continue
        kept[name] = value
    return kept


def defaults(code: str, name: str) -> bool:
    """Whether `code` defines `name` only as a default, under `#ifndef NAME` (or `#if
    !defined(NAME)`), which a command-line definition overrides."""
    return bool(re.search(rf"#\s*ifndef\s+{name}\b|#\s*if\s+!\s*defined\s*\(?\s*{name}\b", code))


def _expanded(words: list[str], folder: Path, depth: int) -> list[str]:
    """`words` with every options file's words in its place."""
    out: list[str] = []
    at = 0
    while at < len(words):
        word = words[at]
        at += 1
        name = _value(word, words[at] if at < len(words) else None, _OPTIONS_FILE)
        if name is None:
            out.append(word)
            continue
        at += word in _OPTIONS_FILE
        if depth == MAX_DEPTH:
            raise _Unreadable
        try:
            text = (folder / name).read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise _Unreadable from exc
        out += _expanded(split_options_text(text), folder, depth + 1)
    return out


def _apply(words: list[str], found: dict[str, str]) -> None:
    at = 0
    while at < len(words):
        word = words[at]
        at += 1
        for spellings, define in ((_DEFINE, True), (_UNDEFINE, False)):
            value = _value(word, words[at] if at < len(words) else None, spellings)
            if value is None:
                continue
            at += word in spellings  # the value was the next word
            for item in value.split(","):
                name, equals, text = item.partition("=")
                if not _NAME.fullmatch(name):
                    continue
                if define:
                    found[name] = text if equals else "1"
                else:
                    found.pop(name, None)


def _value(word: str, following: str | None, spellings: tuple[str, str]) -> str | None:
    """The option's value when `word` is one of `spellings` (`-DX`, `-D X`, `--define-macro X`,
    `--define-macro=X`); None when it is not (or when its value is missing)."""
    short, long = spellings
    if word in spellings:
        return following
    if word.startswith(long + "="):
        return word[len(long) + 1 :]
    if short.startswith("-X") or short == "-optf":  # -Xcompiler=..., -optf=...
        return word[len(short) + 1 :] if word.startswith(short + "=") else None
    if word.startswith(short) and not word.startswith("--"):
        return word[len(short) :]
    return None
