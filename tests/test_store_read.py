"""store/read.py: the standard-library reader that `status`, `explain` and `review --list` use
where the store is sound gives exactly what `api.Store` gives (the same records, in the same
order, under every filter), and hands every other store to `api.Store`."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from nvcc_opt.records import RewriteState, Verification
from nvcc_opt.store.api import Store
from nvcc_opt.store.read import open_reader
from tests.cli_helpers import context, invoke, propose, record, write_source


def _populated(tmp_path: Path) -> tuple[Path, Path]:
    db = tmp_path / "state" / "store.db"
    source = write_source(tmp_path)
    record(db, source)
    record(db, source, output="other.o", ctx=context(source, targets=("sm_80",)))
    first = propose(db, source, "scale", compile_args=("-use_fast_math",), targets=("sm_90",))
    second = propose(db, source, "scale", code="// another\n", statistics={"speedup": 1.5})
    propose(db, source, "scale", code="// a third\n", trace={"steps": [1, 2]})
    with Store.open(db) as store:
        store.add_verification(
            Verification(
                rewrite_id=first,
                at="2026-12-04T10:00:00Z",
                passed=True,
                status="improved",
                reasons=("faster: 1.2x", "unmeasured: no GPU here"),
                statistics={"speedup": 1.2},
                context=context(source),
                machine="host / H200",
            )
        )
        store.decide(first, RewriteState.ACCEPTED, "fast", forced=True)
        store.decide(second, RewriteState.REJECTED, "wrong")
    return db, source


def test_the_reader_answers_as_the_store_does(tmp_path: Path) -> None:
    db, source = _populated(tmp_path)
    reader = open_reader(db)
    assert reader is not None
    with reader, Store.open(db) as store:
        assert reader.path == store.path
        assert reader.regions() == store.regions() and len(reader.regions()) == 2
        assert reader.regions(str(source)) == store.regions(str(source))
        assert reader.regions(str(tmp_path / "none.cu")) == []
        everything = store.rewrites()
        assert reader.rewrites() == everything and len(everything) == 3
        assert everything[0].verifications and everything[0].decisions  # the rows have them
        for states in ([RewriteState.ACCEPTED], [RewriteState.PROPOSED, RewriteState.REJECTED], []):
            assert reader.rewrites(states=states) == store.rewrites(states=states)
        region_hash = everything[0].region_hash
        assert reader.rewrites(file=str(source), region_hash=region_hash) == store.rewrites(
            file=str(source), region_hash=region_hash
        )


def test_the_showing_commands_print_the_same_through_either(tmp_path: Path) -> None:
    """What status, explain and review --list print does not depend on which opened the store:
    the same commands with the reader refused (an old schema version) print the same."""
    db, source = _populated(tmp_path)
    commands = [["status"], ["status", "--json"], ["review", "--list", "--all"]]
    commands += [["review", "--json", "--all"], ["explain", str(source)]]
    through_reader = [invoke(db, *c) for c in commands]
    assert all(r.exit_code == 0 for r in through_reader), [r.output for r in through_reader]
    with sqlite3.connect(db) as conn:
        (version,) = conn.execute("PRAGMA user_version").fetchone()
        conn.execute(f"PRAGMA user_version = {version + 1}")  # a newer nvcc-opt's store
    assert open_reader(db) is None
    with sqlite3.connect(db) as conn:
        conn.execute(f"PRAGMA user_version = {version}")
    assert open_reader(db) is not None
    assert [invoke(db, *c).output for c in commands] == [r.output for r in through_reader]


def test_stores_the_reader_does_not_open_go_to_the_store(tmp_path: Path) -> None:
    missing = tmp_path / "missing" / "store.db"
    assert open_reader(missing) is None and not missing.parent.exists()
    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")
    assert open_reader(empty) is None
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"not a database" * 100)
    assert open_reader(garbage) is None
    old = tmp_path / "old.db"
    sqlite3.connect(old).close()  # a database at schema version 0
    assert open_reader(old) is None
    # and the command still says what the store would: a damaged one is moved aside
    result = invoke(garbage, "status")
    assert result.exit_code == 1 and "moved" in result.output, result.output
