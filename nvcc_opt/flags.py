"""compile_args, the extra nvcc flags a rewrite asks for: an allowlist of code-generation options.

compile_args are data (a model's tool call, a final answer, an imported file, a row of the store)
that end up on an nvcc command line, and nvcc starts the host compiler, ptxas and the linker,
some of them through `sh`. So only options that change the generated code are allowed, each value
matched exactly, in every spelling nvcc 13 accepts (see nvcc_opt.launcher.option_table: an
option with a value takes `-s v`, `-s=v`, `--long v`, `--long=v`, and only `-O` of these also
`-sV`; flags have a short and a long name). Everything else is refused: unknown options, host
compiler and tool options, macros and include paths (they change code outside the region),
outputs, options files, other modes, and any character no allowed option uses (whitespace, quotes,
shell characters).

Pure and cheap to import (no `re`): the launcher checks stored rewrites on every tagged compile.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    Validator = Callable[[str, str, "Sequence[str] | None"], str]

ALLOWED = (
    "only code-generation options are allowed (-use_fast_math; -ftz, -prec-div, -prec-sqrt or "
    "-fmad with =true|false; -maxrregcount=1..255; -Xptxas with -O0..-O3, -v, -warn-spills, "
    "-warn-lmem-usage, -allow-expensive-optimizations=true|false, -dlcm=ca|cg|cs|lu|cv, "
    "-dscm=cg|cs|wb|wt, -maxrregcount=N; -lineinfo; -restrict; -extra-device-vectorization; "
    "-O0..-O3; --expt-relaxed-constexpr; --extended-lambda; -dopt=on; -arch=sm_XXa or "
    "-gencode=arch=compute_XXa,code=sm_XXa where sm_XX is the build's GPU)"
)
# Characters that mean something to a shell: refused with their own reason, before any lookup
# (no allowed value holds one; the patterns below are exact anyway).
_NO_SHELL = "no allowed option holds whitespace, quotes or shell characters"
_SHELL = frozenset("\"'`$;|&<>\\(){}[]*?!~#")
_FLAGS = frozenset(
    {
        "-use_fast_math", "--use_fast_math", "-lineinfo", "--generate-line-info",
        "-restrict", "--restrict", "-extra-device-vectorization", "--extra-device-vectorization",
        "-expt-relaxed-constexpr", "--expt-relaxed-constexpr", "-extended-lambda",
        "--extended-lambda", "-expt-extended-lambda", "--expt-extended-lambda",
    }
)  # fmt: skip
_CACHE_OPS = {"-dlcm": "ca cg cs lu cv", "-dscm": "cg cs wb wt"}  # measured with ptxas 13.0
_PTXAS = frozenset(
    [f"-O{n}" for n in "0123"]
    + [f"--opt-level={n}" for n in "0123"]
    + ["-v", "--verbose", "-warn-spills", "--warn-on-spills"]
    + ["-warn-lmem-usage", "--warn-on-local-memory-usage"]
    + [f"{d}allow-expensive-optimizations={b}" for d in ("-", "--") for b in ("true", "false")]
    + [f"{n}={v}" for n in ("-dlcm", "--def-load-cache") for v in _CACHE_OPS["-dlcm"].split()]
    + [f"{n}={v}" for n in ("-dscm", "--def-store-cache") for v in _CACHE_OPS["-dscm"].split()]
)
_PTXAS_MAXRREG = ("-maxrregcount=", "--maxrregcount=")
_TARGET_PREFIXES = ("sm_", "compute_", "lto_")


class FlagError(ValueError):
    """compile_args with refused arguments; the message holds one reason per argument."""

    def __init__(self, reasons: Sequence[str]) -> None:
        super().__init__("\n".join(reasons))
        self.reasons = tuple(reasons)


def check(args: Sequence[str], targets: Sequence[str] | None = None) -> None:
    """Raise FlagError unless every argument is allowed (see `refused`)."""
    reasons = refused(args, targets)
    if reasons:
        raise FlagError(reasons)


def refused(args: Sequence[str], targets: Sequence[str] | None = None) -> list[str]:
    """One reason per refused argument of `args` (one of them says what is allowed); [] when
    all are allowed.

    `targets` are the compile's GPU targets as `CompileJob.targets` holds them: a GPU target
    option is then allowed only for the `a` variant of the compile's one architecture. None (no
    build at hand) checks the syntax only."""
    words = [args] if isinstance(args, str) else list(args)
    reasons = []
    i = 0
    while i < len(words):
        used, shown, why = _judge(words, i, targets)
        if why:
            reasons.append(f"compile_args: {shown!r} is refused: {why}")
        i += used
    if reasons:
        reasons[0] += f"; {ALLOWED}"  # whoever reads the reasons learns what is allowed
    return reasons


def _judge(words: Sequence[object], i: int, targets: Sequence[str] | None) -> tuple[int, str, str]:
    """(words used, the argument as shown, why it is refused or "")."""
    word = words[i]
    if not isinstance(word, str):
        return 1, repr(word), f"not a string but {type(word).__name__}"
    shell = _shell(word)
    if shell:
        return 1, word, shell
    if word in _FLAGS:
        return 1, word, ""
    validate = _VALUED.get(word)
    if validate is not None:
        value = words[i + 1] if i + 1 < len(words) else None
        if not isinstance(value, str):
            return 1, word, f"{word} needs a value"
        return 2, f"{word} {value}", _shell(value) or validate(word, value, targets)
    name, equals, value = word.partition("=")
    validate = _VALUED.get(name)
    if equals and validate is not None:
        return 1, word, validate(name, value, targets)
    if word.startswith("-O") and len(word) > 2:  # nvcc also reads -O glued to its level
        return 1, word, _optimize("-O", word[2:], targets)
    if not word.startswith("-"):
        return 1, word, "not an option: a value where none is expected"
    return 1, word, "not an option nvcc-opt allows"


def _shell(word: str) -> str:
    """Why `word` is refused for a character that means something to a shell, or ""."""
    for char in word:
        if char in _SHELL or char.isspace() or not char.isprintable():
            return f"it holds {char!r}; {_NO_SHELL}"
    return ""


def _integer(text: str, low: int, high: int) -> bool:
    return text.isascii() and text.isdigit() and text[0] != "0" and low <= int(text) <= high


def _boolean(name: str, value: str, targets: Sequence[str] | None) -> str:
    return "" if value in ("true", "false") else f"{name} takes true or false"


def _maxrregcount(name: str, value: str, targets: Sequence[str] | None) -> str:
    return "" if _integer(value, 1, 255) else f"{name} takes an integer from 1 to 255"


def _optimize(name: str, value: str, targets: Sequence[str] | None) -> str:
    return "" if value in ("0", "1", "2", "3") else f"{name} takes 0, 1, 2 or 3"


def _dopt(name: str, value: str, targets: Sequence[str] | None) -> str:
    return "" if value == "on" else f"{name} takes on (nvcc 13 allows no other value)"


def _ptxas(name: str, value: str, targets: Sequence[str] | None) -> str:
    """nvcc splits the value at commas into ptxas options; each must be allowed."""
    for item in value.split(","):
        count = next((item[len(p) :] for p in _PTXAS_MAXRREG if item.startswith(p)), None)
        if item in _PTXAS or (count is not None and _integer(count, 1, 255)):
            continue
        return (
            f"{item!r} is not an allowed ptxas option (-O0..-O3, -v, -warn-spills, "
            "-warn-lmem-usage, -allow-expensive-optimizations=true|false, "
            f"-dlcm={_CACHE_OPS['-dlcm'].replace(' ', '|')}, "
            f"-dscm={_CACHE_OPS['-dscm'].replace(' ', '|')}, -maxrregcount=1..255)"
        )
    return ""


def _arch(name: str, value: str, targets: Sequence[str] | None) -> str:
    number = _variant_a(value, "sm_")
    if number is None:
        return f"{name} takes only sm_XXa, the arch-specific variant of the build's GPU"
    return _own_architecture(number, targets)


def _gencode(name: str, value: str, targets: Sequence[str] | None) -> str:
    arch, comma, code = value.partition(",")
    number = _variant_a(arch, "arch=compute_")
    if number is None or not comma or code != f"code=sm_{number}a":
        return (
            f"{name} takes only arch=compute_XXa,code=sm_XXa, the arch-specific variant of the "
            "build's GPU"
        )
    return _own_architecture(number, targets)


def _variant_a(text: str, prefix: str) -> str | None:
    """XX of `<prefix>XXa`, XX a digit string; None when `text` is not that."""
    number = text[len(prefix) : -1]
    if text.startswith(prefix) and text.endswith("a") and _integer(number, 1, 9999):
        return number
    return None


def _own_architecture(number: str, targets: Sequence[str] | None) -> str:
    """Why sm_{number}a is not the `a` variant of the compile's one architecture, or ""."""
    if targets is None:
        return ""
    if not targets:
        return (
            "this compile uses nvcc's default GPU architecture; only a build that names its "
            "GPU (-arch=sm_XX) may add sm_XXa"
        )
    found = _architectures(targets)
    if found is None or len(found) != 1:
        return (
            f"this compile's GPU targets ({', '.join(targets)}) are not one architecture, so no "
            "GPU target may be added"
        )
    (own,) = found
    if number != own:
        return (
            f"this compile's GPU is sm_{own}: only its arch-specific variant sm_{own}a may be named"
        )
    return ""


def _architectures(targets: Sequence[str]) -> set[str] | None:
    """The architecture numbers of targets such as compute_90, sm_90a or sm_100f; None when one
    is something else (native, all, ...)."""
    found = set()
    for target in targets:
        prefix = next((p for p in _TARGET_PREFIXES if target.startswith(p)), "")
        number = target[len(prefix) :]
        if number[-1:] in ("a", "f"):
            number = number[:-1]
        if not prefix or not _integer(number, 1, 9999):
            return None
        found.add(number)
    return found


_VALUED: dict[str, Validator] = {
    "-ftz": _boolean, "--ftz": _boolean, "-prec-div": _boolean, "--prec-div": _boolean,
    "-prec-sqrt": _boolean, "--prec-sqrt": _boolean, "-fmad": _boolean, "--fmad": _boolean,
    "-maxrregcount": _maxrregcount, "--maxrregcount": _maxrregcount,
    "-Xptxas": _ptxas, "--ptxas-options": _ptxas, "-O": _optimize, "--optimize": _optimize,
    "-dopt": _dopt, "--dopt": _dopt, "-arch": _arch, "--gpu-architecture": _arch,
    "-gencode": _gencode, "--generate-code": _gencode,
}  # fmt: skip
