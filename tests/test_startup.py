"""Start-up: what each kind of `nvcc-opt` run imports, and the installed script itself.

Time is measured in benchmarks/startup.py and benchmarks/launcher_overhead.py; these tests pin the
behaviour that makes it short: a pass-through compile imports nothing beyond the interpreter's own
start-up but `nvcc_opt.entry` and the command table, `--help` imports no command, `status` and
`review --list` no model, tool or verification code, and the script pip installs is ours.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import click
import pytest

from nvcc_opt.cli import cli, load
from nvcc_opt.commands import COMMANDS
from tests.conftest import run

REPO = Path(__file__).resolve().parent.parent
# What a pass-through compile may import beyond what the interpreter imports to run `pass`.
PASS_THROUGH_MODULES = {"nvcc_opt", "nvcc_opt.entry", "nvcc_opt.commands"}
# Never needed to list commands, nor to read the store.
HEAVY_FOR_STORE_READS = ("tree_sitter", "pydantic", "torch", "transformers")
COMMAND_CODE = ("nvcc_opt.agent", "nvcc_opt.tools", "nvcc_opt.verify", "nvcc_opt.workspace")


def imported(command: list[str], cwd: Path, env: dict[str, str] | None = None) -> set[str]:
    """The modules `command` (a Python program) imports, from -X importtime's report."""
    done = run(command, cwd, env={**(env or {}), "PYTHONPROFILEIMPORTTIME": "1"})
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    lines = done.stderr.decode(errors="replace").splitlines()
    return {line.split("|")[-1].strip() for line in lines if line.startswith("import time:")}


# Runs the script named by argv[1] with the arguments after it, and prints which modules were
# loaded when it exits (importlib.import_module, as the CLI group uses, is not in -X importtime).
DUMP_MODULES = (
    "import atexit, runpy, sys\n"
    "atexit.register(lambda: print('MODULES', *sorted(sys.modules), file=sys.__stderr__))\n"
    "sys.argv = sys.argv[1:]\n"
    "runpy.run_path(sys.argv[0], run_name='__main__')\n"
)


def loaded(exe: str, args: list[str], cwd: Path) -> set[str]:
    """The modules loaded by the time `exe args` exits (a CLI command: it does not exec)."""
    done = run([interpreter(exe), "-c", DUMP_MODULES, exe, *args], cwd)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    (line,) = [x for x in done.stderr.decode().splitlines() if x.startswith("MODULES ")]
    return set(line.split()[1:])


def interpreter(script: str) -> str:
    with open(script, "rb") as handle:
        first = handle.readline().decode()
    assert first.startswith("#!/"), first
    return first[2:].strip()


def at_start(python: str, cwd: Path) -> set[str]:
    """What the interpreter imports before any program of ours runs (site, .pth files)."""
    return imported([python, "-c", "pass"], cwd)


def test_pass_through_imports_only_the_entry(tmp_path: Path, exe: str, store_env: Path) -> None:
    (tmp_path / "k.cu").write_text("__global__ void k() {}\n")
    python = interpreter(exe)
    extra = imported([exe, "true", "-c", "k.cu"], tmp_path) - at_start(python, tmp_path)
    assert extra == PASS_THROUGH_MODULES
    # not the generated console script's `re`, nor `os.execvp`'s `warnings`
    assert not {"re", "warnings", "__future__"} & extra


def test_module_entry_passes_through_too(tmp_path: Path, exe: str) -> None:
    (tmp_path / "k.cu").write_text("__global__ void k() {}\n")
    python = interpreter(exe)
    done = run([python, "-m", "nvcc_opt", "sh", "-c", "echo ran $0", "k.cu"], tmp_path)
    assert (done.returncode, done.stdout) == (0, b"ran k.cu\n")
    helped = run([python, "-m", "nvcc_opt", "--help"], tmp_path)
    assert helped.returncode == 0 and b"Commands:" in helped.stdout


def test_help_imports_no_command(tmp_path: Path, exe: str) -> None:
    modules = loaded(exe, ["--help"], tmp_path)
    ours = {m for m in modules if m.startswith("nvcc_opt")}
    assert ours == PASS_THROUGH_MODULES | {"nvcc_opt.cli"}
    assert not {m for m in modules if m.split(".")[0] in ("sqlalchemy", *HEAVY_FOR_STORE_READS)}


def test_help_lists_every_command_as_click_would(exe: str, tmp_path: Path) -> None:
    """The table's one-line help is each command's own: the listing is the one click would
    print with every command imported."""
    eager = click.Group(commands={name: load(target) for name, (target, _) in COMMANDS.items()})
    for name, (_, short) in COMMANDS.items():
        assert eager.commands[name].get_short_help_str(limit=1000) == short, name

    def listing(group: click.Group) -> str:
        context = click.Context(group, info_name="nvcc-opt")
        formatter = context.make_formatter()
        group.format_commands(context, formatter)
        return formatter.getvalue()

    fresh = type(cli)(name="nvcc-opt", lazy=COMMANDS)
    assert listing(fresh) == listing(eager)
    assert not fresh.commands  # listed, none imported
    shown = run([exe, "--help"], tmp_path).stdout.decode()
    assert all(f"  {name} " in shown for name in COMMANDS)


def test_subcommand_help_imports_only_that_command(tmp_path: Path, exe: str) -> None:
    modules = loaded(exe, ["init", "--help"], tmp_path)
    assert "nvcc_opt.cli.config" in modules
    assert not {"nvcc_opt.cli.review", "nvcc_opt.cli.optimize", "nvcc_opt.store.api"} & modules


@pytest.mark.parametrize("command", [["status"], ["review", "--list"]], ids=["status", "review"])
def test_store_reads_import_no_model_tool_or_verification(
    tmp_path: Path, exe: str, store_env: Path, command: list[str]
) -> None:
    run([exe, "status"], tmp_path)  # the store exists: the reader opens it
    modules = loaded(exe, command, tmp_path)
    assert "nvcc_opt.store.read" in modules and "nvcc_opt.store.api" not in modules
    assert not {m for m in modules if m.split(".")[0] in ("sqlalchemy", *HEAVY_FOR_STORE_READS)}
    assert not {m for m in modules if m.startswith(COMMAND_CODE)}


def test_every_table_entry_is_a_command_the_entry_routes_to_the_cli() -> None:
    from nvcc_opt import entry

    assert set(COMMANDS) == entry.SUBCOMMANDS
    for name, (target, _) in COMMANDS.items():
        assert isinstance(load(target), click.Command), name
        assert cli.get_command(click.Context(cli), name) is not None


def test_installed_script_is_ours(exe: str) -> None:
    """The script beside the interpreter is scripts/nvcc-opt with its first line rewritten to
    this environment's interpreter (pip's generated wrapper would import more)."""
    installed = Path(exe).read_text().splitlines()
    ours = (REPO / "scripts" / "nvcc-opt").read_text().splitlines()
    assert ours[0] == "#!python"
    assert Path(interpreter(exe)).samefile(sys.executable)
    assert installed[1:] == ours[1:], f"{exe} is not scripts/nvcc-opt: bash tests/setup_env.sh"
    tree = ast.parse("\n".join(ours[1:]))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            names.add(str(node.module))
    assert names == {"sys", "nvcc_opt.entry"}


def _write(path: Path, text: str, mode: int) -> None:
    path.write_text(text)
    path.chmod(mode)


def test_path_search_as_execvp(tmp_path: Path, exe: str) -> None:
    """Our PATH search (os.execvp without its imports): a file that exists but cannot be run is
    skipped for a later one that can, as execvp(3) does; if none can, its error is reported."""
    (tmp_path / "k.cu").write_text("__global__ void k() {}\n")
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    _write(first / "cc", "#!/bin/sh\necho first\n", 0o644)  # not executable
    _write(second / "cc", '#!/bin/sh\necho second "$@"\n', 0o755)
    path = os.pathsep.join([str(tmp_path / "missing"), str(first), str(second)])
    done = run([exe, "cc", "-c", "k.cu"], tmp_path, env={"PATH": path})
    assert (done.returncode, done.stdout) == (0, b"second -c k.cu\n")

    alone = os.pathsep.join([str(tmp_path / "missing"), str(first)])
    refused = run([exe, "cc", "-c", "k.cu"], tmp_path, env={"PATH": alone})
    assert refused.returncode == 127
    assert refused.stderr == b"nvcc-opt: cannot run cc: Permission denied\n"

    relative = run([exe, "b/cc", "-c", "k.cu"], tmp_path)
    assert (relative.returncode, relative.stdout) == (0, b"second -c k.cu\n")


@pytest.mark.slow
def test_fresh_venv_install_writes_our_script(tmp_path: Path) -> None:
    """The README's install (a new venv, `pip install .`) with the pip the venv comes with:
    older pips write a console script that imports `re`. The script must be ours, and a
    pass-through import only the entry. Needs the package index, as the install does."""
    source = tmp_path / "src"
    files = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    for name in files:
        if (REPO / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, source / name)
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    installed = run([str(python), "-m", "pip", "install", "-q", str(source)], tmp_path)
    assert installed.returncode == 0, installed.stderr.decode(errors="replace")
    script = env_dir / "bin" / "nvcc-opt"
    text = script.read_text().splitlines()
    assert text[0] == f"#!{python}"
    assert text[1:] == (REPO / "scripts" / "nvcc-opt").read_text().splitlines()[1:]
    (tmp_path / "k.cu").write_text("__global__ void k() {}\n")
    extra = imported([str(script), "true", "-c", "k.cu"], tmp_path)
    assert extra - at_start(str(python), tmp_path) == PASS_THROUGH_MODULES
    helped = run([str(script), "--help"], tmp_path)
    assert helped.returncode == 0 and b"Commands:" in helped.stdout
