"""What a final answer changes, measured on the answer itself, never read from its explanation:
the code (its tokens, comments and spacing aside), compile flags that change floating-point
results (the fast-math family), other code-generation flags, or nothing. Bench reports count
"code changes" and "fast math only" apart from this, and a speedup from flags alone is never
reported as an optimization of the code."""

from __future__ import annotations

from collections.abc import Sequence

from nvcc_opt.regions.lexer import COMMENT, tokenize

CODE = "code"
CODE_AND_NUMERICS = "code + fast math"
NUMERICS_ONLY = "fast math only"
FLAGS_ONLY = "flags only"  # code-generation flags that keep results: -maxrregcount, -Xptxas -O3
NOTHING = "nothing"

# The options of flags.py's allowlist that let the compiler change floating-point results.
_NUMERICS = ("-use_fast_math", "-ftz", "-prec-div", "-prec-sqrt", "-fmad")


def changes_numerics(compile_args: Sequence[str]) -> bool:
    """Whether any of `compile_args` (allowlisted code-generation options) may change results.

    >>> changes_numerics(["-maxrregcount=64", "-Xptxas", "-O3"])
    False
    >>> changes_numerics(["--use_fast_math"]), changes_numerics(["--prec-div=false"])
    (True, True)
    """
    for arg in compile_args:
        name = "-" + arg.lstrip("-").split("=", 1)[0]
        if name in _NUMERICS:
            return True
    return False


def code_changed(original: str, final: str) -> bool:
    """Whether the tokens differ, comments and whitespace aside.

    >>> code_changed("a[i] = b[i]; // copy", "a[i]  =  b[i];")
    False
    >>> code_changed("a[i] = b[i];", "a[i] = __ldg(&b[i]);")
    True
    """
    return _tokens(original) != _tokens(final)


def unchanged(original: str, final: str, compile_args: Sequence[str]) -> bool:
    """Whether a final answer is the region itself: the same tokens (comments and whitespace
    aside) and no compile flags. The one rule `optimize`, the bench and training use to skip
    verifying an answer that changes nothing (an answer judged unchanged is never stored, so the
    rule can only drop an answer, never let one through).

    >>> unchanged("a[i] = b[i];", "a[i] = b[i]; // tried nothing better", [])
    True
    >>> unchanged("a[i] = b[i];", "a[i] = b[i];", ["-use_fast_math"])
    False
    """
    return not compile_args and not code_changed(original, final)


def change_kind(original: str, final: str, compile_args: Sequence[str]) -> str:
    """One of CODE, CODE_AND_NUMERICS, NUMERICS_ONLY, FLAGS_ONLY, NOTHING.

    >>> change_kind("x = y;", "x = y; // same", ["-use_fast_math"])
    'fast math only'
    >>> change_kind("x = y;", "x = 2 * y;", ["-ftz=true"])
    'code + fast math'
    """
    code = code_changed(original, final)
    numerics = changes_numerics(compile_args)
    if code:
        return CODE_AND_NUMERICS if numerics else CODE
    if numerics:
        return NUMERICS_ONLY
    return FLAGS_ONLY if compile_args else NOTHING


def _tokens(text: str) -> list[bytes]:
    src = text.encode("utf-8", errors="surrogatepass")
    return [src[start:end] for kind, start, end in tokenize(src) if kind != COMMENT]
