"""The macros a compile command defines (`-D`, `--define-macro`, `-U`, `--undefine-macro`), as
nvcc reads them: in order, the last word for a name wins, `-DNAME` means 1, and a list option's
value is split at commas (`-DA=1,B=2` defines both; checked with nvcc 13.0 -E).

compiler_analysis names the ones the region uses, so that a reader of the region (a model, the
search policy) knows the types and sizes the build gives it on the command line (`-Dreal=double`,
`-DBLOCK=256`), which no file of the project spells as code.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_DEFINE = ("-D", "--define-macro")
_UNDEFINE = ("-U", "--undefine-macro")
_NAME = re.compile(r"[A-Za-z_]\w*")
# options whose next word is passed on to another tool: a `-DX` after them is not nvcc's
_PASSED_ON = frozenset(
    ["-Xcompiler", "--compiler-options", "-Xptxas", "--ptxas-options", "-Xlinker",
     "--linker-options", "-Xnvlink", "--nvlink-options", "-Xarchive", "--archive-options"]
)  # fmt: skip


def defines(words: Sequence[str]) -> dict[str, str]:
    """name -> value of every macro `words` leave defined, in command order."""
    found: dict[str, str] = {}
    at = 0
    while at < len(words):
        word = words[at]
        at += 1
        if word in _PASSED_ON:
            at += 1
            continue
        for spellings, define in ((_DEFINE, True), (_UNDEFINE, False)):
            value = _value(word, words[at] if at < len(words) else None, spellings)
            if value is None:
                continue
            if word in spellings:
                at += 1  # the value was the next word
            for item in value.split(","):
                name, equals, text = item.partition("=")
                if not _NAME.fullmatch(name):
                    continue
                if define:
                    found[name] = text if equals else "1"
                else:
                    found.pop(name, None)
    return found


def used(found: dict[str, str], code: str) -> dict[str, str]:
    """The macros of `found` that `code` names (as a whole word)."""
    words = set(re.findall(r"[A-Za-z_]\w*", code))
    return {name: value for name, value in found.items() if name in words}


def _value(word: str, following: str | None, spellings: tuple[str, str]) -> str | None:
    """The option's value when `word` is one of `spellings` (`-DX`, `-D X`, `--define-macro X`,
    `--define-macro=X`); None when it is not."""
    short, long = spellings
    if word in spellings:
        return following
    if word.startswith(long + "="):
        return word[len(long) + 1 :]
    if word.startswith(short) and not word.startswith("--"):
        return word[len(short) :]
    return None
