"""The read-only file tools on a real folder tree, confinement, and `nvcc-opt tool`."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from nvcc_opt.toolbox.schema import Toolbox, is_error
from nvcc_opt.tools.cli import tool_command
from nvcc_opt.tools.files import ProjectFiles


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A project with sources, a build tree and .git, beside a folder it must not reach."""
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "src" / "long.cu").write_text("".join(f"line {n}\n" for n in range(1, 1001)))
    (project / "src" / "kernel.cu").write_text(
        "#include <cuda_runtime.h>\n"
        "__global__ void scale(float* x, float a, int n)\n"
        "{\n"
        "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "    if (i < n) x[i] *= a;\n"
        "}\n"
    )
    (project / "src" / "kernel.o").write_bytes(b"\x7fELF\x00\x00scale\x00")
    (project / "build").mkdir()
    (project / "build" / "CMakeCache.txt").write_text("scale cache\n")
    (project / ".git").mkdir()
    (project / ".git" / "config").write_text("scale in git\n")
    (project / "README.md").write_text("Scale a vector.\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("scale secret\n")
    return project


@pytest.fixture
def box(root: Path) -> Toolbox:
    return Toolbox.from_objects(ProjectFiles(root))


def call(box: Toolbox, name: str, **args: object) -> str:
    return box.call(name, json.dumps(args))


def test_file_viewer_default_window(box: Toolbox) -> None:
    out = call(box, "file_viewer", path="src/long.cu").splitlines()
    assert out[0] == "[src/long.cu: lines 1-100 of 1000]"
    assert out[1] == "    1 | line 1"
    assert out[100] == "  100 | line 100"
    assert out[101] == (
        "[lines 101-1000 not shown; file_viewer(path='src/long.cu', start=101) shows more]"
    )
    assert len(out) == 102


def test_file_viewer_window_and_limits(box: Toolbox) -> None:
    out = call(box, "file_viewer", path="./src//kernel.cu", start=2, end=3)
    assert out == (
        "[src/kernel.cu: lines 2-3 of 6]\n"
        "    2 | __global__ void scale(float* x, float a, int n)\n"
        "    3 | {\n"
        "[lines 4-6 not shown; file_viewer(path='src/kernel.cu', start=4) shows more]"
    )
    whole = call(box, "file_viewer", path="src/kernel.cu", start=5, end=99)
    assert whole.startswith("[src/kernel.cu: lines 5-6 of 6]") and "not shown" not in whole
    wide = call(box, "file_viewer", path="src/long.cu", start=501, end=1000).splitlines()
    assert wide[0] == "[src/long.cu: lines 501-900 of 1000]"  # at most 400 lines at once
    assert wide[-1].startswith("[lines 901-1000 not shown;")


@pytest.mark.parametrize(
    ("args", "says"),
    [
        ({"start": 0}, "error: start must be 1 or more: lines are numbered from 1"),
        ({"start": 7}, "error: 'src/kernel.cu' has 6 lines; start must be at most 6"),
        ({"start": 4, "end": 2}, "error: end (2) is before start (4)"),
    ],
)
def test_file_viewer_bad_window(box: Toolbox, args: dict[str, int], says: str) -> None:
    assert call(box, "file_viewer", path="src/kernel.cu", **args).startswith(says)


def test_file_viewer_refuses_what_it_cannot_show(box: Toolbox, root: Path) -> None:
    assert call(box, "file_viewer", path="src/kernel.o") == (
        "error: 'src/kernel.o' is a binary file (12 B); only text can be shown"
    )
    assert call(box, "file_viewer", path="src") == (
        "error: 'src' is a folder; list_dir(path='src') lists it"
    )
    assert call(box, "file_viewer", path="src/gone/k.cu") == (
        "error: 'src/gone/k.cu' does not exist; list_dir(path='src') shows what is there"
    )
    (root / "empty.cu").write_text("")
    assert call(box, "file_viewer", path="empty.cu") == "[empty.cu: empty file]"


def test_file_viewer_text_details(box: Toolbox, root: Path) -> None:
    (root / "odd.cu").write_bytes(b"caf\xe9\r\nform\x0cfeed\nwide " + b"y" * 500 + b"\nend")
    out = call(box, "file_viewer", path="odd.cu").split("\n")
    assert out[0] == "[odd.cu: lines 1-4 of 4]"
    assert out[1] == "    1 | caf\ufffd"  # not UTF-8: a replacement character, CR dropped
    assert out[2] == "    2 | form\x0cfeed"  # one line, as the compiler counts it
    assert out[3] == f"    3 | wide {'y' * 395}... [105 more characters]"
    assert out[4] == "    4 | end"


def test_file_viewer_stops_a_window_of_long_lines_early(box: Toolbox, root: Path) -> None:
    (root / "wide.cu").write_text(("z" * 390 + "\n") * 200)
    out = call(box, "file_viewer", path="wide.cu", end=200).splitlines()
    assert out[0] == "[wide.cu: lines 1-80 of 200]"
    assert out[-1] == "[lines 81-200 not shown; file_viewer(path='wide.cu', start=81) shows more]"


def test_list_dir(box: Toolbox, root: Path) -> None:
    os.symlink("src/kernel.cu", root / "k.cu")
    os.symlink("../outside", root / "away")
    assert call(box, "list_dir") == (
        "[.: 3 folders, 1 file, 2 links]\n"
        ".git/      (1 entry, version control data)\n"
        "build/     (1 entry, a CMake build tree)\n"
        "src/       (3 entries)\n"
        "README.md  16 B\n"
        "away@      -> (outside the project root)\n"
        "k.cu@      -> src/kernel.cu"
    )
    assert call(box, "list_dir", path="src").splitlines()[1:] == [
        "kernel.cu  155 B",
        "kernel.o   12 B",
        "long.cu    8.7 KB",
    ]


def test_list_dir_edges(box: Toolbox, root: Path) -> None:
    (root / "empty").mkdir()
    assert call(box, "list_dir", path="empty") == "[empty: empty folder]"
    assert call(box, "list_dir", path="README.md") == (
        "error: 'README.md' is a file; file_viewer(path='README.md') shows it"
    )
    many = root / "many"
    many.mkdir()
    for n in range(305):
        (many / f"f{n:03}").write_text("")
    out = call(box, "list_dir", path="many").splitlines()
    assert out[0] == "[many: 0 folders, 305 files]"
    assert out[300] == "f299  0 B"
    assert out[301] == "[5 more entries not shown; list a subfolder or search for a name]"


def test_search_shows_files_counts_and_lines(box: Toolbox) -> None:
    assert call(box, "search", pattern="x[i]") == (  # literal: [i] is not a character class
        "[1 match for \"x[i]\" in 1 file under '.'; skipped files: 1 binary]\n"
        "src/kernel.cu (1)\n"
        "    5 |     if (i < n) x[i] *= a;"
    )
    assert call(box, "search", pattern="i", path="src/kernel.cu").splitlines()[:3] == [
        "[4 matches for \"i\" in 1 file under 'src/kernel.cu']",
        "src/kernel.cu (4)",
        "    1 | #include <cuda_runtime.h>",
    ]


def test_search_regex_and_skips(box: Toolbox, root: Path) -> None:
    (root / "big.txt").write_text("scale\n" * 400_000)  # over 2 MB
    os.symlink("src/kernel.cu", root / "k.cu")  # searched once, under its real name
    assert call(box, "search", pattern=r"sc\w+e", regex=True).splitlines() == [
        "[2 matches for regex \"sc\\\\w+e\" in 2 files under '.'; "
        "skipped files: 1 binary, 1 over 2 MB]",
        "build/CMakeCache.txt (1)",
        "    1 | scale cache",
        "src/kernel.cu (1)",
        "    2 | __global__ void scale(float* x, float a, int n)",
    ]
    assert call(box, "search", pattern="nothing here", path="src") == (
        "no matches for \"nothing here\" under 'src' (3 files searched; skipped files: 1 binary)"
    )
    assert call(box, "search", pattern="scale", path=".git").startswith(  # hidden, if asked
        "[1 match for \"scale\" in 1 file under '.git']"
    )


def test_search_asks_to_narrow(box: Toolbox, root: Path) -> None:
    out = call(box, "search", pattern="line").splitlines()
    assert out[0] == "[1000 matches for \"line\" in 1 file under '.'; skipped files: 1 binary]"
    assert out[1].startswith("[more than 50 matches or 20 files: matches per file below, no lines;")
    assert out[2:] == ["src/long.cu (1000)"]
    spread = root / "spread"
    spread.mkdir()
    for n in range(21):
        (spread / f"f{n:02}.cu").write_text("hit\n" * (2 if n == 7 else 1))
    many = call(box, "search", pattern="hit").splitlines()
    assert many[0] == "[22 matches for \"hit\" in 21 files under '.'; skipped files: 1 binary]"
    assert many[2] == "spread/f07.cu (2)"  # most matches first
    assert len(many) == 2 + 21 and not any(" | " in row for row in many)


def test_search_errors(box: Toolbox) -> None:
    assert call(box, "search", pattern="(x", regex=True) == (
        'error: invalid regular expression "(x": missing ), unterminated subpattern at '
        "position 0. Fix it, or pass regex=false to search for the text as written"
    )
    assert call(box, "search", pattern="(x").startswith("no matches")
    assert call(box, "search", pattern="") == "error: pattern is empty; give the text to look for"


def link(root: Path, name: str, target: str) -> None:
    os.symlink(target, root / name)


ESCAPES = [
    ("..", "error: '..' leads outside the project root; paths are relative to the project root"),
    ("../outside/secret.txt", "error: '../outside/secret.txt' leads outside the project root"),
    ("src/../../outside", "error: 'src/../../outside' leads outside the project root"),
    ("~", "error: '~' is an absolute path; paths are relative to the project root '.'"),
    ("/etc", "error: '/etc' is an absolute path; paths are relative to the project root '.'"),
    ("out.txt", "error: 'out.txt' goes through a symbolic link that leads outside"),
    ("outdir", "error: 'outdir' goes through a symbolic link that leads outside"),
    ("outdir/secret.txt", "error: 'outdir/secret.txt' goes through a symbolic link"),
    ("chain1", "error: 'chain1' goes through a symbolic link that leads outside"),
    ("src/up/outside", "error: 'src/up/outside' goes through a symbolic link"),
    ("outdir/../README.md", "error: 'outdir/../README.md' goes through a symbolic link"),
    ("loop", "error: 'loop' cannot be resolved (a symbolic link loop?)"),
]


@pytest.mark.parametrize("tool_name", ["file_viewer", "list_dir", "search"])
@pytest.mark.parametrize(("path", "says"), ESCAPES)
def test_confinement(box: Toolbox, root: Path, tool_name: str, path: str, says: str) -> None:
    link(root, "out.txt", "../outside/secret.txt")
    link(root, "outdir", str(root.parent / "outside"))  # absolute target
    link(root, "chain1", "chain2")
    link(root, "chain2", "../outside")
    link(root / "src", "up", "../..")
    link(root, "loop", "loop")
    args = {"path": path, **({"pattern": "secret"} if tool_name == "search" else {})}
    out = box.call(tool_name, json.dumps(args))
    assert out.startswith(says)
    assert str(root.parent) not in out  # no host path


def test_absolute_path_inside_the_root_gets_its_relative_form(box: Toolbox, root: Path) -> None:
    out = call(box, "file_viewer", path=str(root / "src" / "kernel.cu"))
    assert out == (
        f"error: '{root}/src/kernel.cu' is an absolute path; use 'src/kernel.cu' "
        "(paths are relative to the project root '.')"
    )


def test_links_that_stay_inside_are_followed(box: Toolbox, root: Path) -> None:
    link(root, "k1", "k2")
    link(root, "k2", "src/kernel.cu")
    link(root, "sources", "src")
    assert call(box, "file_viewer", path="k1", end=1) == (
        "[k1: lines 1-1 of 6]\n    1 | #include <cuda_runtime.h>\n"
        "[lines 2-6 not shown; file_viewer(path='k1', start=2) shows more]"
    )
    assert call(box, "list_dir", path="sources").startswith("[sources: 0 folders, 3 files]")
    assert "src/kernel.cu (1)" in call(box, "search", pattern="blockDim", path="sources")
    assert call(box, "list_dir").splitlines()[5:] == [
        "k1@        -> src/kernel.cu",
        "k2@        -> src/kernel.cu",
        "sources@   -> src/",
    ]


def test_cli_root_defaults_to_the_current_folder(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(root)
    out = CliRunner().invoke(tool_command, ["search", "--args", '{"pattern": "vector"}'])
    assert out.exit_code == 0 and not is_error(out.output)
    assert out.output.splitlines()[1:] == ["README.md (1)", "    1 | Scale a vector."]
