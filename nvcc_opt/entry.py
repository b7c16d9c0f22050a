"""The `nvcc-opt` command: a subcommand goes to the CLI, anything else is a compile.

This module is the launcher's fast path. A compile whose source files hold no `@optimize` is
handed to the compiler with `os.execv` after reading their bytes, having imported nothing but this
module and the command table (plain data): `os.execvp` would import `warnings`, and pip's
generated console scripts `re` (scripts/nvcc-opt is ours for that reason). No
`from __future__` import either: each module is a file to find and read on every compile.
"""

import os
import sys

from nvcc_opt.commands import COMMANDS, DISABLE, GUARD

PRAGMA = b"@optimize"
SOURCE_SUFFIXES = (".cu", ".cpp", ".cc", ".cxx", ".c++", ".cp", ".c")
SUBCOMMANDS = frozenset(COMMANDS)
_MISSING = (2, 20)  # ENOENT, ENOTDIR: try the next PATH entry (the errno module is not loaded)


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


def execvp(argv: list[str]) -> None:
    """`os.execvp` without its imports: search PATH as execvp(3) does, and raise the error of
    the first candidate that exists (say, not executable), else that of the last one tried."""
    name = argv[0]
    if "/" in name:
        os.execv(name, argv)
    found: OSError | None = None
    last: OSError = FileNotFoundError(2, "No such file or directory", name)
    for folder in (os.environ.get("PATH") or os.defpath).split(os.pathsep):
        try:
            os.execv(os.path.join(folder, name), argv)
        except OSError as exc:
            last = exc
            if exc.errno not in _MISSING and found is None:
                found = exc
    raise found or last


def _exec(rest: list[str]) -> None:
    try:
        execvp(rest)
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
