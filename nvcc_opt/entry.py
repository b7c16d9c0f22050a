"""The `nvcc-opt` console script: a subcommand goes to the CLI, anything else is a compile.

This module is the launcher's fast path and imports only `os` and `sys`: a compile whose source
files hold no `@optimize` is handed to the compiler with `os.execvp` after reading their bytes.
"""

from __future__ import annotations

import os
import sys

GUARD = "NVCC_OPT_ACTIVE"  # set for the compilers we start: a nested nvcc-opt passes through
DISABLE = "NVCC_OPT_DISABLE"
PRAGMA = b"@optimize"
SOURCE_SUFFIXES = (".cu", ".cpp", ".cc", ".cxx", ".c++", ".cp", ".c")
SUBCOMMANDS = frozenset(
    {
        "status",
        "import",
        "export",
        "review",
        "explain",
        "init",
        "optimize",
        "verify",
        "tool",
        "mcp",
        "bench",
        "recover",
    }
)


def _is_self(word: str) -> bool:
    return os.path.basename(word) in ("nvcc-opt", "nvcc_opt")


def _strip_self(rest: list[str]) -> list[str]:
    while rest and _is_self(rest[0]):
        rest = rest[1:]
    return rest


def _tagged(rest: list[str]) -> bool:
    for arg in rest[1:]:
        if not arg.endswith(SOURCE_SUFFIXES) or arg.startswith("-"):
            continue
        try:
            with open(arg, "rb") as handle:
                if PRAGMA in handle.read():
                    return True
        except OSError:
            continue
    return False


def _exec(rest: list[str]) -> None:
    try:
        os.execvp(rest[0], rest)
    except OSError as exc:
        sys.stderr.write(f"nvcc-opt: cannot run {rest[0]}: {exc.strerror}\n")
        sys.exit(127)


def launch(rest: list[str]) -> None:
    rest = _strip_self(rest)
    if not rest:
        sys.stderr.write("nvcc-opt: no compiler given (usage: nvcc-opt nvcc ARGS...)\n")
        sys.exit(2)
    if os.environ.get(GUARD) or os.environ.get(DISABLE) or not _tagged(rest):
        _exec(rest)
    from nvcc_opt.launcher.main import run

    sys.exit(run(rest))


def main() -> None:
    argv = sys.argv
    if len(argv) < 2 or argv[1] in SUBCOMMANDS or argv[1].startswith("-"):
        from nvcc_opt.cli import cli

        cli()
        return
    launch(argv[1:])
