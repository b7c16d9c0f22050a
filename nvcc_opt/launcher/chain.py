"""Find the real compiler behind wrappers in a launcher command line (pure: no I/O).

`nvcc-opt ccache cmake -E env X=1 nvcc -c a.cu`: the wrappers are kept verbatim and run again
around the compiler; only the compiler's own arguments are parsed and changed.
"""

from __future__ import annotations

from nvcc_opt.values import Value

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

_CACHES = frozenset({"ccache", "sccache", "buildcache"})
_NAME_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_NAME_REST = _NAME_START | frozenset("0123456789")


def _is_assignment(word: str) -> bool:
    """NAME=VALUE, as env and cmake -E env take it (no regex: `re` costs start-up time)."""
    name, equals, _ = word.partition("=")
    return bool(equals and name and name[0] in _NAME_START and set(name) <= _NAME_REST)


def _is_nvcc_name(name: str) -> bool:
    """nvcc, nvcc.exe, nvcc-12.4 (any case)."""
    lowered = name.lower().removesuffix(".exe")
    if lowered == "nvcc":
        return True
    version = lowered.removeprefix("nvcc-")
    return version != lowered and version[:1].isdigit() and set(version) <= set("0123456789.")


_SELF = frozenset({"nvcc-opt", "nvcc_opt"})

# env(1) options we can follow (-C/--chdir and -S/--split-string we cannot: the compile's working
# directory or words would differ from what we see).
_ENV_UNSET = frozenset({"-u", "--unset"})  # the next word is the value
_ENV_FLAGS = frozenset({"-i", "-", "--ignore-environment", "-0", "--null", "-v", "--debug"})
_ENV_GLUED = ("-u", "--unset=", "--default-signal", "--ignore-signal", "--block-signal")


class Chain(Value):
    __slots__ = ("wrappers", "compiler", "args")
    wrappers: tuple[str, ...]  # everything before the real compiler, verbatim
    compiler: str  # the real compiler word, verbatim
    args: tuple[str, ...]  # the compiler's arguments, verbatim

    def __init__(self, wrappers: tuple[str, ...], compiler: str, args: tuple[str, ...]) -> None:
        self._set(wrappers=wrappers, compiler=compiler, args=args)

    def command(self, args: Sequence[str]) -> list[str]:
        """The same wrappers and compiler around other arguments."""
        return [*self.wrappers, self.compiler, *args]


def split_chain(rest: Sequence[str]) -> Chain | None:
    """Split `rest` into wrappers, compiler and arguments; None when no compiler is found."""
    i = 0
    while 0 <= i < len(rest):
        name = _basename(rest[i])
        if name in _CACHES:
            i += 1
        elif name == "cmake" and list(rest[i + 1 : i + 3]) == ["-E", "env"]:
            i = _skip_cmake_env(rest, i + 3)
        elif name == "env":
            i = _skip_env(rest, i + 1)
        else:
            break
    if not 0 <= i < len(rest):
        return None
    return Chain(tuple(rest[:i]), rest[i], tuple(rest[i + 1 :]))


def is_nvcc(compiler: str) -> bool:
    """The word names nvcc: `nvcc`, `nvcc.exe`, or a versioned `nvcc-12.4` (never nvcc-opt)."""
    return _is_nvcc_name(_basename(compiler))


def is_self(compiler: str) -> bool:
    """The word names nvcc-opt itself: running it would recurse."""
    name = _basename(compiler)
    if name.lower().endswith(".exe"):
        name = name[:-4]
    return name in _SELF


def ccache_first_fix(parent_comm: str) -> str | None:
    """One line of explanation and fix when ccache or sccache launched us, else None.

    `parent_comm` is the parent's command name (`/proc/<ppid>/comm`, read by the caller).
    """
    name = parent_comm.strip()
    if name not in ("ccache", "sccache"):
        return None
    return (
        f"{name} runs before nvcc-opt, so it takes the nvcc path for a second input"
        " and silently stops caching; put nvcc-opt first:"
        f' -DCMAKE_CUDA_COMPILER_LAUNCHER="nvcc-opt;{name}"'
    )


def _basename(word: str) -> str:
    return word.replace("\\", "/").rsplit("/", 1)[-1]


def _skip_cmake_env(rest: Sequence[str], i: int) -> int:
    """Index of the command after `cmake -E env [--unset=N] [--modify M] [N=V] [--]`."""
    while i < len(rest):
        word = rest[i]
        if word == "--":
            return i + 1
        if word == "--modify":
            i += 2
        elif word.startswith(("--unset=", "--modify=")) or _is_assignment(word):
            i += 1
        else:
            return i
    return i


def _skip_env(rest: Sequence[str], i: int) -> int:
    """Index of the command after env(1) options and assignments; -1 for what we cannot follow."""
    while i < len(rest):
        word = rest[i]
        if word == "--":
            return i + 1
        if word in _ENV_UNSET:
            i += 2
        elif word in _ENV_FLAGS or word.startswith(_ENV_GLUED):
            i += 1
        elif word.startswith("-"):
            return -1
        elif _is_assignment(word):
            i += 1
        else:
            return i
    return i
