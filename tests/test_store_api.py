"""The Store contract, against real SQLite files."""

from __future__ import annotations

import dataclasses
import sqlite3
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import UniqueConstraint, create_engine, inspect

from nvcc_opt.records import (
    ALLOWED_TRANSITIONS,
    CompileContext,
    NewRewrite,
    RegionSpan,
    RewriteState,
)
from nvcc_opt.store import fast, migrations
from nvcc_opt.store.api import InvalidTransition, NotFound, Store, StoreError
from nvcc_opt.store.schema import Base

FILE = "/src/kernels.cu"
HASH_A = "a1" * 32
HASH_B = "b2" * 32


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "nested" / "store.db"


@pytest.fixture
def store(db: Path) -> Iterator[Store]:
    with Store.open(db) as opened:
        yield opened


def proposal(code: str = "__global__ void k() {}", **fields: object) -> NewRewrite:
    base: dict[str, object] = {
        "file": FILE,
        "region_name": "k",
        "region_hash": HASH_A,
        "code": code,
        "targets": ("sm_90",),
    }
    base.update(fields)
    return NewRewrite(**base)  # type: ignore[arg-type]


def test_open_creates_folder_at_latest_version(db: Path, store: Store) -> None:
    assert db.is_file()
    assert store.path == db
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == migrations.LATEST_VERSION
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_migrations_build_the_schema_that_schema_py_describes(store: Store) -> None:
    reflected = inspect(create_engine(f"sqlite:///{store.path}"))
    dialect = create_engine("sqlite://").dialect
    assert set(reflected.get_table_names()) == set(Base.metadata.tables)
    for name, table in Base.metadata.tables.items():
        columns = {c["name"]: (str(c["type"]), c["nullable"]) for c in reflected.get_columns(name)}
        expected = {c.name: (c.type.compile(dialect), c.nullable or False) for c in table.columns}
        assert columns == expected, name
        uniques = {tuple(u["column_names"]) for u in reflected.get_unique_constraints(name)}
        assert uniques == {
            tuple(c.name for c in u.columns)
            for u in table.constraints
            if isinstance(u, UniqueConstraint)
        }
        indexes = {i["name"]: tuple(i["column_names"]) for i in reflected.get_indexes(name)}
        assert indexes == {i.name: tuple(c.name for c in i.columns) for i in table.indexes}
        keys = {
            (k["referred_table"], tuple(k["constrained_columns"]))
            for k in reflected.get_foreign_keys(name)
        }
        assert keys == {(k.column.table.name, (k.parent.name,)) for k in table.foreign_keys}


def test_a_store_from_a_newer_nvcc_opt_is_refused(db: Path) -> None:
    db.parent.mkdir()
    with sqlite3.connect(db) as conn:
        conn.execute(f"PRAGMA user_version = {migrations.LATEST_VERSION + 1}")
    with pytest.raises(StoreError, match="newer nvcc-opt") as caught:
        Store.open(db)
    assert str(db) in str(caught.value)


def test_a_garbage_file_is_a_readable_store_error(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    db.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError, match="not a database") as caught:
        Store.open(db)
    assert str(db) in str(caught.value)


def test_add_rewrite_round_trips_and_is_idempotent(store: Store) -> None:
    context = CompileContext(
        compiler_version="13.0",
        flags=("-O3",),
        targets=("sm_90",),
        nvcc_env=(("NVCC_APPEND_FLAGS", "-g"),),
    )
    new = proposal(
        explanation="why",
        compile_args=("-O3",),
        context=context,
        statistics={"speedup": 1.4},
        model="m",
        trace=[{"tool": "x"}],
    )
    first, created = store.add_rewrite(new)
    assert created
    assert first.state is RewriteState.PROPOSED
    assert (first.code, first.explanation, first.compile_args) == (new.code, "why", ("-O3",))
    assert (first.targets, first.context, first.statistics) == (
        ("sm_90",),
        context,
        {"speedup": 1.4},
    )
    assert (first.trace, first.model, first.origin, first.suspect) == (
        [{"tool": "x"}],
        "m",
        "import",
        "",
    )
    again, created_again = store.add_rewrite(dataclasses.replace(new, explanation="other"))
    assert (again.id, created_again) == (first.id, False)
    other, created_other = store.add_rewrite(dataclasses.replace(new, targets=None))
    assert created_other
    assert other.id != first.id
    assert other.targets is None
    assert [r.id for r in store.rewrites()] == [first.id, other.id]


def test_a_trace_that_is_not_json_is_a_store_error(store: Store) -> None:
    with pytest.raises(StoreError, match="cannot store rewrite"):
        store.add_rewrite(proposal(trace=object()))
    assert store.rewrites() == []


def test_records_are_frozen(store: Store) -> None:
    rewrite, _ = store.add_rewrite(proposal())
    with pytest.raises(dataclasses.FrozenInstanceError):
        rewrite.state = RewriteState.ACCEPTED  # type: ignore[misc]
    assert store.rewrite(rewrite.id).state is RewriteState.PROPOSED


def _bring_to(store: Store, state: RewriteState) -> int:
    rewrite_id = store.add_rewrite(proposal())[0].id
    if state is RewriteState.REJECTED:
        store.decide(rewrite_id, RewriteState.REJECTED)
    if state in (RewriteState.ACCEPTED, RewriteState.REVOKED):
        store.decide(rewrite_id, RewriteState.ACCEPTED)
    if state is RewriteState.REVOKED:
        store.decide(rewrite_id, RewriteState.REVOKED)
    return rewrite_id


@pytest.mark.parametrize("source", list(RewriteState))
@pytest.mark.parametrize("target", list(RewriteState))
def test_transitions_follow_the_table(
    store: Store, source: RewriteState, target: RewriteState
) -> None:
    rewrite_id = _bring_to(store, source)
    before = store.rewrite(rewrite_id).decisions
    if target in ALLOWED_TRANSITIONS[source]:
        after = store.decide(rewrite_id, target, "ok")
        assert after.state is target
        assert after.decisions[-1].from_state is source
        assert store.rewrite(rewrite_id) == after
    else:
        with pytest.raises(InvalidTransition) as caught:
            store.decide(rewrite_id, target, "no")
        message = str(caught.value)
        assert f"from {source.value} to {target.value}" in message
        assert str(store.path) in message
        assert store.rewrite(rewrite_id).decisions == before


def test_decisions_are_kept_in_order_with_time_and_reason(store: Store) -> None:
    rewrite_id = store.add_rewrite(proposal())[0].id
    start = datetime.now().astimezone()
    store.decide(rewrite_id, RewriteState.ACCEPTED, "faster", forced=True)
    final = store.decide(rewrite_id, RewriteState.REVOKED, "breaks tests")
    moves = [(d.from_state, d.to_state, d.reason, d.forced) for d in final.decisions]
    assert moves == [
        (RewriteState.PROPOSED, RewriteState.ACCEPTED, "faster", True),
        (RewriteState.ACCEPTED, RewriteState.REVOKED, "breaks tests", False),
    ]
    times = [datetime.fromisoformat(d.at) for d in final.decisions]
    assert all(t.utcoffset() == timedelta(0) for t in times)
    assert start - timedelta(seconds=1) <= times[0] <= times[1]
    assert {d.rewrite_id for d in final.decisions} == {rewrite_id}


def test_only_one_accepted_rewrite_per_region(store: Store) -> None:
    first = store.add_rewrite(proposal("a"))[0].id
    second = store.add_rewrite(proposal("b"))[0].id
    elsewhere = store.add_rewrite(proposal("b", file="/src/other.cu"))[0].id
    store.decide(first, RewriteState.ACCEPTED)
    with pytest.raises(InvalidTransition, match=f"revoke #{first} first"):
        store.decide(second, RewriteState.ACCEPTED)
    assert store.decide(elsewhere, RewriteState.ACCEPTED).state is RewriteState.ACCEPTED
    store.decide(first, RewriteState.REVOKED)
    assert store.decide(second, RewriteState.ACCEPTED).state is RewriteState.ACCEPTED


def test_missing_rewrite_is_not_found(store: Store) -> None:
    with pytest.raises(NotFound, match="#42") as caught:
        store.rewrite(42)
    assert str(store.path) in str(caught.value)
    with pytest.raises(NotFound):
        store.decide(42, RewriteState.ACCEPTED)
    with pytest.raises(NotFound):
        store.clear_suspect(42)


def test_rewrites_filters(store: Store) -> None:
    a = store.add_rewrite(proposal("a"))[0].id
    b = store.add_rewrite(proposal("b", region_hash=HASH_B))[0].id
    c = store.add_rewrite(proposal("c", file="/src/other.cu"))[0].id
    store.decide(b, RewriteState.REJECTED)
    assert [r.id for r in store.rewrites(file=FILE)] == [a, b]
    assert [r.id for r in store.rewrites(region_hash=HASH_A)] == [a, c]
    assert [r.id for r in store.rewrites(states=[RewriteState.REJECTED])] == [b]
    assert [r.id for r in store.rewrites(file=FILE, states=[RewriteState.PROPOSED])] == [a]
    assert store.rewrites(states=[]) == []


def test_clear_suspect(store: Store) -> None:
    rewrite_id = store.add_rewrite(proposal())[0].id
    assert fast.mark_suspect(str(store.path), rewrite_id, "nvcc exited 2")
    assert store.rewrite(rewrite_id).suspect == "nvcc exited 2"
    store.clear_suspect(rewrite_id)
    assert store.rewrite(rewrite_id).suspect == ""


def _span(name: str, text_hash: str, start: int) -> RegionSpan:
    return RegionSpan(
        name=name,
        kind="function",
        pragma_line=start - 1,
        start_line=start,
        end_line=start + 2,
        start_offset=0,
        end_offset=10,
        text_hash=text_hash,
    )


def _compile(store: Store, output: str, *spans: RegionSpan) -> None:
    context = CompileContext(compiler_version="13.0", targets=("sm_90",))
    fast.record_compile(
        str(store.path),
        FILE,
        [(s, f"text of {s.name}") for s in spans],
        output,
        ["nvcc", "-c", FILE, "-o", output],
        "/build",
        context,
    )


def test_regions_come_with_their_compiles(store: Store) -> None:
    _compile(store, "a.o", _span("k", HASH_A, 10), _span("m", HASH_B, 20))
    _compile(store, "b.o", _span("k", HASH_A, 10))
    regions = store.regions(FILE)
    assert [(r.name, r.start_line, r.end_line, r.text) for r in regions] == [
        ("k", 10, 12, "text of k"),
        ("m", 20, 22, "text of m"),
    ]
    k_compiles = regions[0].compiles
    assert [c.output for c in k_compiles] == ["/build/a.o", "/build/b.o"]
    assert k_compiles[0].command == ("nvcc", "-c", FILE, "-o", "a.o")
    assert k_compiles[0].cwd == "/build"
    assert k_compiles[0].context == CompileContext(compiler_version="13.0", targets=("sm_90",))
    assert store.regions("/src/none.cu") == []
    assert len(store.regions()) == 2


def test_find_region_by_name_hash_and_prefix(store: Store) -> None:
    _compile(store, "a.o", _span("k", HASH_A, 10), _span("m", HASH_B, 20))
    _compile(store, "a.o", _span("k", "a1" * 31 + "ff", 10))
    by_name = store.find_region(FILE, "k")
    assert [r.text_hash for r in by_name] == ["a1" * 31 + "ff", HASH_A]
    assert [r.name for r in store.find_region(FILE, HASH_B)] == ["m"]
    assert [r.name for r in store.find_region(FILE, HASH_B[:8])] == ["m"]
    assert store.find_region(FILE, HASH_B[:7]) == []
    assert store.find_region(FILE, "nothing") == []
    assert store.find_region("/src/other.cu", "k") == []
    with pytest.raises(StoreError, match="ambiguous"):
        store.find_region(FILE, HASH_A[:8])
    assert [r.text_hash for r in store.find_region(FILE, HASH_A[:63])] == [HASH_A]


def test_add_rewrites_is_all_or_nothing(tmp_path: Path) -> None:
    from nvcc_opt.records import NewRewrite
    from nvcc_opt.store.api import Store, StoreError

    good = NewRewrite(file="/x/k.cu", region_name="k", region_hash="a" * 64, code="ok")
    bad = NewRewrite(
        file="/x/k.cu", region_name="k", region_hash="b" * 64, code="x", statistics={"f": object()}
    )
    with Store.open(tmp_path / "s.db") as store:
        with pytest.raises(StoreError):
            store.add_rewrites([good, bad])
        assert store.rewrites() == []
        (first, created), (again, created_again) = store.add_rewrites([good, good])
        assert created and not created_again and first.id == again.id
