"""The launcher's standard-library store access, against real SQLite files."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from nvcc_opt.records import CompileContext, NewRewrite, RegionSpan, RewriteState
from nvcc_opt.store import fast, migrations
from nvcc_opt.store.api import Store

ROOT = Path(__file__).resolve().parents[1]
FILE = "/src/kernels.cu"
HASH_A = "a1" * 32
HASH_B = "b2" * 32
CONTEXT = CompileContext(compiler_version="13.0", flags=("-O3",), targets=("sm_90",))


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store.open(tmp_path / "store.db") as opened:
        yield opened


def span(name: str = "k", text_hash: str = HASH_A, start: int = 10) -> RegionSpan:
    return RegionSpan(
        name=name,
        kind="function",
        pragma_line=start - 1,
        start_line=start,
        end_line=start + 5,
        start_offset=0,
        end_offset=100,
        text_hash=text_hash,
    )


def record(db: Path, *regions: RegionSpan, command: tuple[str, ...] = ("nvcc", "-c")) -> None:
    fast.record_compile(
        str(db),
        FILE,
        [(r, f"body of {r.name}") for r in regions],
        "k.o",
        list(command),
        "/build",
        CONTEXT,
    )


def add(store: Store, code: str, state: RewriteState, **fields: str) -> int:
    new = NewRewrite(
        file=fields.get("file", FILE),
        region_name="k",
        region_hash=fields.get("region_hash", HASH_A),
        code=code,
        compile_args=("-DX",),
        targets=("sm_90",),
    )
    rewrite_id = store.add_rewrite(new)[0].id
    if state is not RewriteState.PROPOSED:
        store.decide(rewrite_id, state)
    return rewrite_id


def test_schema_version_is_the_latest_migration() -> None:
    assert fast.SCHEMA_VERSION == migrations.LATEST_VERSION


def test_accepted_for_sees_only_accepted_rewrites_of_that_file_and_hash(store: Store) -> None:
    accepted = add(store, "a", RewriteState.ACCEPTED)
    add(store, "b", RewriteState.PROPOSED)
    add(store, "c", RewriteState.REJECTED)
    add(store, "d", RewriteState.ACCEPTED, file="/src/other.cu")
    add(store, "e", RewriteState.ACCEPTED, region_hash="c3" * 32)
    found = fast.accepted_for(str(store.path), FILE, [HASH_A, HASH_B])
    assert [(r.id, r.code, r.region_hash) for r in found] == [(accepted, "a", HASH_A)]
    assert (found[0].compile_args, found[0].targets, found[0].suspect) == (("-DX",), ("sm_90",), "")
    assert fast.accepted_for(str(store.path), FILE, [HASH_B]) == []
    assert fast.accepted_for(str(store.path), FILE, []) == []


def test_a_missing_store_has_no_rewrites_and_is_not_created(tmp_path: Path) -> None:
    db = tmp_path / "none" / "store.db"
    assert fast.accepted_for(str(db), FILE, [HASH_A]) == []
    assert not fast.mark_suspect(str(db), 1, "failed")
    assert not db.parent.exists()


def test_a_garbage_file_is_a_fast_store_error_and_moved_aside(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    db.write_bytes(b"garbage, not sqlite " * 200)
    with pytest.raises(fast.FastStoreError, match=f"{db}.*moved it to {db}.damaged-") as caught:
        fast.accepted_for(str(db), FILE, [HASH_A])
    assert caught.value.cause == "damaged"
    [aside] = tmp_path.glob("store.db.damaged-*")
    assert aside.read_bytes() == b"garbage, not sqlite " * 200
    record(db, span())  # the next compile starts a new store
    assert not fast.mark_suspect(str(db), 1, "failed")


def test_a_store_from_the_future_is_a_fast_store_error(store: Store) -> None:
    with sqlite3.connect(store.path) as conn:
        conn.execute(f"PRAGMA user_version = {fast.SCHEMA_VERSION + 1}")
    with pytest.raises(fast.FastStoreError, match="schema version"):
        fast.accepted_for(str(store.path), FILE, [HASH_A])
    with pytest.raises(fast.FastStoreError, match="schema version"):
        record(store.path, span())
    with pytest.raises(fast.FastStoreError, match="schema version"):
        fast.mark_suspect(str(store.path), 1, "failed")


@pytest.mark.parametrize("empty_file", [False, True])
def test_record_compile_creates_a_missing_or_empty_store(tmp_path: Path, empty_file: bool) -> None:
    db = tmp_path / "new" / "store.db"
    if empty_file:
        db.parent.mkdir()
        db.touch()
    record(db, span())
    with Store.open(db) as store:
        [region] = store.regions(FILE)
    assert (region.name, region.text_hash, region.text) == ("k", HASH_A, "body of k")
    assert [c.output for c in region.compiles] == ["/build/k.o"]


def _data_version(monitor: sqlite3.Connection) -> int:
    return int(monitor.execute("PRAGMA data_version").fetchone()[0])


def test_a_rebuild_that_changes_nothing_only_reads(store: Store) -> None:
    record(store.path, span("k"), span("m", HASH_B, 30))
    monitor = sqlite3.connect(store.path)
    before = _data_version(monitor)
    record(store.path, span("k"), span("m", HASH_B, 30))
    assert _data_version(monitor) == before
    record(store.path, span("k"), span("m", HASH_B, 30), command=("nvcc", "-c", "-g"))
    assert _data_version(monitor) != before
    monitor.close()


def test_moved_region_updates_its_row_and_changed_text_adds_one(store: Store) -> None:
    record(store.path, span("k", start=10))
    record(store.path, span("k", start=40))
    [moved] = store.regions(FILE)
    assert (moved.start_line, moved.end_line) == (40, 45)
    assert moved.last_seen > moved.first_seen
    record(store.path, span("k", HASH_B, 40))
    assert sorted(r.text_hash for r in store.regions(FILE)) == [HASH_A, HASH_B]


def test_mark_suspect_reports_only_the_first_time(store: Store) -> None:
    rewrite_id = add(store, "a", RewriteState.ACCEPTED)
    assert fast.mark_suspect(str(store.path), rewrite_id, "nvcc exited 1")
    assert not fast.mark_suspect(str(store.path), rewrite_id, "nvcc exited 2")
    [found] = fast.accepted_for(str(store.path), FILE, [HASH_A])
    assert found.suspect == "nvcc exited 1"
    assert not fast.mark_suspect(str(store.path), 999, "no such rewrite")


def test_the_fast_path_never_imports_sqlalchemy(tmp_path: Path) -> None:
    script = (
        "import sys\n"
        "from nvcc_opt.records import CompileContext, RegionSpan\n"
        "from nvcc_opt.store import fast\n"
        "db = sys.argv[1]\n"
        "s = RegionSpan('k', 'function', 1, 2, 3, 0, 10, 'ab' * 32)\n"
        "fast.record_compile(db, '/a.cu', [(s, 'x')], 'a.o', ['nvcc'], '/b', CompileContext())\n"
        "fast.accepted_for(db, '/a.cu', ['ab' * 32])\n"
        "heavy = [m for m in sys.modules if m.split('.')[0] in ('sqlalchemy', 'pydantic')]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "s.db")],
        check=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT)},
    )


def test_paths_with_uri_characters_work(tmp_path: Path) -> None:
    db = tmp_path / "a?b#c%20d" / "store.db"
    record(db, span())
    with Store.open(db) as store:
        accepted = add(store, "a", RewriteState.ACCEPTED)
        assert [r.name for r in store.regions(FILE)] == ["k"]
    assert [r.id for r in fast.accepted_for(str(db), FILE, [HASH_A])] == [accepted]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a?b#c%20d"]
