"""`nvcc-opt import` of malformed files, through the installed console script: each gives one
line on stderr that names the file and what is wrong, exit code 1, no traceback, and the store
is left exactly as it was."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from nvcc_opt.records import RewriteState
from nvcc_opt.store.api import Store
from nvcc_opt.untrusted import MAX_BYTES
from tests.cli_helpers import FAST_SCALE, propose, write_source

Make = Callable[[Path], Path]


def _entry(**fields: object) -> dict[str, object]:
    return {"file": "src/k.cu", "region": "scale", "code": FAST_SCALE, **fields}


def _bundle_text(**fields: object) -> str:
    return json.dumps({"rewrites": [_entry(**fields)]}, indent=2) + "\n"


def _text(text: str, name: str = "r.json") -> Make:
    def make(folder: Path) -> Path:
        path = folder / name
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        return path

    return make


def _bytes(data: bytes) -> Make:
    def make(folder: Path) -> Path:
        path = folder / "r.json"
        path.write_bytes(data)
        return path

    return make


def _fields(**fields: object) -> Make:
    return _text(_bundle_text(**fields))


def _raw_field(name: str, raw: str) -> Make:
    """An entry whose field `name` is the JSON text `raw`, as written (not via json.dumps)."""
    marker = "__RAW__"
    text = _bundle_text(**{name: marker}).replace(json.dumps(marker), raw)
    return _text(text)


def _directory(folder: Path) -> Path:
    (folder / "r.json").mkdir()
    return folder / "r.json"


def _fifo(folder: Path) -> Path:
    os.mkfifo(folder / "r.json")
    return folder / "r.json"


def _too_large(folder: Path) -> Path:
    path = folder / "r.json"
    with path.open("wb") as out:
        out.truncate(MAX_BYTES + 1)  # sparse: no disk used
    return path


def _symlink_loop(folder: Path) -> Path:
    (folder / "r.json").symlink_to(folder / "r.json")
    return folder / "r.json"


def _fixed(path: str) -> Make:
    return lambda _folder: Path(path)


def _entry_file(make_target: Callable[[Path], object], name: str = "t.cu") -> Make:
    """A good bundle whose entry names `name`, which `make_target` creates (or not)."""

    def make(folder: Path) -> Path:
        make_target(folder / name)
        return _fields(file=name)(folder)

    return make


NESTED = "[" * 100_000 + "]" * 100_000

CASES: dict[str, tuple[Make, str]] = {
    "missing": (lambda folder: folder / "r.json", "file not found"),
    "directory": (_directory, "not a regular file: a directory"),
    "fifo": (_fifo, "not a regular file: a FIFO"),
    "proc_mem": (_fixed("/proc/self/mem"), "cannot read: Input/output error"),
    "dev_zero": (_fixed("/dev/zero"), "not a regular file: a character device"),
    "too_large": (_too_large, "larger than 64 MiB"),
    "symlink_loop": (_symlink_loop, "Too many levels of symbolic links"),
    "empty": (_bytes(b""), ":1: invalid JSON: Expecting value"),
    "utf8_bom": (_bytes(b"\xef\xbb\xbf" + _bundle_text().encode()), ":1: starts with a UTF-8"),
    "utf16": (_bytes(_bundle_text().encode("utf-16")), ":1: starts with a UTF-16"),
    "latin1": (
        _bytes(_bundle_text(explanation="cafe").replace("cafe", "café").encode("latin-1")),
        ":7: not valid UTF-8",
    ),
    "truncated": (_text(_bundle_text()[:40]), "invalid JSON"),
    "trailing_data": (_text(_bundle_text() + "{}\n"), "invalid JSON: Extra data"),
    "control_char": (_raw_field("code", '"a\tb"'), ":6: invalid JSON: Invalid control character"),
    "deeply_nested": (_raw_field("trace", NESTED), ":7: nested deeper than 64 levels"),
    "nested_65": (_raw_field("trace", "[" * 70 + "]" * 70), ":7: rewrites[0].trace[0][0]"),
    "huge_integer": (_raw_field("statistics", '{"n": 1' + "0" * 5000 + "}"), "5001 digits"),
    "integer_2_64": (_raw_field("statistics", '{"n": 18446744073709551616}'), "outside 64 bits"),
    "nan": (_raw_field("statistics", '{"ms": NaN}'), "statistics.ms: NaN is not JSON"),
    "infinity": (_raw_field("statistics", '{"ms": 1e999}'), "ms: number too large for a 64-bit"),
    "surrogate_code": (_raw_field("code", '"x\\ud800y"'), "code: text holds a lone surrogate"),
    "surrogate_key": (_raw_field("statistics", '{"\\udc00": 1}'), "a lone surrogate"),
    "nul_code": (_raw_field("code", '"x\\u0000y"'), ":6: rewrites[0].code: text holds a NUL"),
    "nul_path": (_fields(file="src/k.cu\x00.json"), "rewrites[0].file: text holds a NUL"),
    "duplicate_key": (
        _raw_field("explanation", '"a", "code": "b"'),
        ":3: rewrites[0]: key 'code' appears twice in one object",
    ),
    "top_array": (_text("[]\n"), ":1: top level: expected a JSON object"),
    "rewrites_object": (_text('{"rewrites": {}}'), ":1: rewrites: Input should be a valid list"),
    "newline_in_path": (_fields(file="src/\nk.cu"), "rewrites[0].file: Value error, must be"),
    "version_string": (_text('{"version": "x", "rewrites": []}'), "version: Input should be"),
    "entry_directory": (_entry_file(os.mkdir), "not a regular file: a directory"),
    "entry_fifo": (_entry_file(os.mkfifo), "not a regular file: a FIFO"),
    "entry_proc": (_fields(file="/proc/self/mem"), "cannot read: Input/output error"),
    "entry_loop": (_entry_file(lambda p: p.symlink_to(p)), "Too many levels of symbolic"),
    "odd_file_name": (_text("[", name="bad\nname.json"), "bad\\nname.json'"),
}


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project with one accepted and one proposed rewrite, so that "unchanged" means something."""
    monkeypatch.chdir(tmp_path)
    source = write_source(tmp_path)
    db = tmp_path / "store.db"
    accepted = propose(db, source, "scale")
    propose(db, source, "pair", code="// pair\n")
    with Store.open(db) as store:
        store.decide(accepted, RewriteState.ACCEPTED, "fast")
    return tmp_path


def _dump(db: Path) -> list[str]:
    with sqlite3.connect(db) as connection:
        return list(connection.iterdump())


@pytest.mark.parametrize("case", sorted(CASES))
def test_malformed_import_is_one_line_and_stores_nothing(
    project: Path, exe: str, case: str
) -> None:
    make, expected = CASES[case]
    db = project / "store.db"
    before = _dump(db)
    path = make(project)
    result = subprocess.run(
        [exe, "--store", str(db), "import", os.fsdecode(path)],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1, result.stderr
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    (line,) = lines
    assert "Traceback" not in line
    shown = str(path) if str(path).isprintable() else ascii(str(path))
    assert line.startswith(f"Error: {shown}"), line
    assert expected in line, line
    assert _dump(db) == before
