"""Many processes on one store at once: a `-j64` build while someone imports and reviews."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from nvcc_opt.records import NewRewrite, RewriteState
from nvcc_opt.store import migrations
from nvcc_opt.store.api import Store

ROOT = Path(__file__).resolve().parents[1]
FILE = "/src/kernels.cu"
COMPILERS = 64
IMPORTS = 50
DUPLICATES = 10  # the last DUPLICATES imports repeat the first ones

# Each worker script waits for the `go` file, so that all of them really run at once.
PRELUDE = """
import os, sys, time
from pathlib import Path
Path(sys.argv[1] + ".ready." + str(os.getpid())).touch()
while not os.path.exists(sys.argv[1] + ".go"):
    time.sleep(0.005)
db = sys.argv[1]
"""

COMPILER = """
from nvcc_opt.records import CompileContext, RegionSpan
from nvcc_opt.store import fast
i = int(sys.argv[2])
def span(name, text_hash, line):
    return RegionSpan(name, "function", line - 1, line, line + 3, 0, 40, text_hash)
regions = [(span(f"own{i}", f"{i:064x}", 100 + i), f"own {i}"), (span("shared", "f" * 64, 10), "s")]
command = ["nvcc", "-c", "kernels.cu", "-o", f"obj{i}.o"]
for _ in range(2):  # the second time is a no-op rebuild: a read racing the writers
    fast.record_compile(db, "/src/kernels.cu", regions, f"obj{i}.o", command, "/build",
                        CompileContext(targets=("sm_90",)))
    fast.accepted_for(db, "/src/kernels.cu", ["f" * 64, f"{i:064x}"])
"""

IMPORTER = """
from nvcc_opt.records import NewRewrite
from nvcc_opt.store.api import Store
with Store.open(db) as store:
    for n in range(int(sys.argv[2])):
        store.add_rewrite(NewRewrite(file="/src/kernels.cu", region_name="shared",
                                     region_hash="f" * 64, code=f"import {n % int(sys.argv[3])}"))
"""

DECIDER = """
import json
from nvcc_opt.records import RewriteState as S
from nvcc_opt.store.api import InvalidTransition, Store
plan = json.loads(sys.argv[2])
with Store.open(db) as store:
    for rewrite_id, states in enumerate(plan, start=1):
        for state in states:
            store.decide(rewrite_id, S(state), f"to {state}")
    try:
        store.decide(len(plan) + 1, S.ACCEPTED)
    except InvalidTransition:
        pass
    else:
        raise SystemExit("a second rewrite of region r0 was accepted")
"""

OPENER = """
from nvcc_opt.store.api import Store
with Store.open(db) as store:
    store.rewrites()
"""

# Rewrites 1..5 (regions r0..r4) get these decisions; rewrite 6 (region r0 again) must be refused.
PLAN: list[list[str]] = [
    ["accepted"],
    ["rejected"],
    ["accepted", "revoked"],
    ["accepted"],
    ["rejected"],
]


def run_together(db: Path, jobs: Sequence[tuple[str, Sequence[str]]]) -> None:
    """Start every job, release them at once, and require that all succeed quietly."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", PRELUDE + script, str(db), *args],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for script, args in jobs
    ]
    deadline = time.monotonic() + 60
    while len(list(db.parent.glob(db.name + ".ready.*"))) < len(procs):
        assert time.monotonic() < deadline, "workers did not start"
        time.sleep(0.01)
    Path(str(db) + ".go").touch()
    failures = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        if proc.returncode != 0 or err:
            failures.append(f"rc={proc.returncode} {out}{err}")
    assert not failures, "\n".join(failures)


def test_parallel_build_import_and_review(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    with Store.open(db) as store:
        for n, region in enumerate([*range(len(PLAN)), 0]):
            store.add_rewrite(
                NewRewrite(
                    file=FILE,
                    region_name=f"r{region}",
                    region_hash=f"{region:064x}",
                    code=f"setup {n}",
                )
            )
    jobs = [(COMPILER, [str(i)]) for i in range(COMPILERS)]
    jobs.append((IMPORTER, [str(IMPORTS), str(IMPORTS - DUPLICATES)]))
    jobs.append((DECIDER, [json.dumps(PLAN)]))
    run_together(db, jobs)

    with Store.open(db) as store:
        regions = store.regions(FILE)
        assert len(regions) == COMPILERS + 1
        [shared] = [r for r in regions if r.name == "shared"]
        assert len(shared.compiles) == COMPILERS
        assert all(len(r.compiles) == 1 for r in regions if r.name != "shared")
        imported = store.rewrites(region_hash="f" * 64)
        assert sorted(r.code for r in imported) == sorted(
            f"import {n}" for n in range(IMPORTS - DUPLICATES)
        )
        for rewrite_id, states in enumerate(PLAN, start=1):
            decisions = store.rewrite(rewrite_id).decisions
            assert [(d.to_state.value, d.reason) for d in decisions] == [
                (s, f"to {s}") for s in states
            ]
        assert store.rewrite(len(PLAN) + 1).state is RewriteState.PROPOSED
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM compiles").fetchone()[0] == 2 * COMPILERS
        decided = conn.execute("SELECT count(*) FROM decisions").fetchone()[0]
        assert decided == sum(len(states) for states in PLAN)


def test_sixteen_processes_create_one_store_at_once(tmp_path: Path) -> None:
    db = tmp_path / "fresh" / "store.db"
    db.parent.mkdir()
    jobs: list[tuple[str, list[str]]] = [(OPENER, [])] * 8
    jobs += [(COMPILER, [str(i)]) for i in range(8)]
    run_together(db, jobs)
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == migrations.LATEST_VERSION
    with Store.open(db) as store:
        assert len(store.regions(FILE)) == 8 + 1


@pytest.mark.parametrize("trial", range(10))
def test_one_store_shared_by_threads(tmp_path: Path, trial: int) -> None:
    """16 threads on one Store, more than SQLAlchemy's per-thread pool keeps (5): it closed
    other threads' connections under them, and 6 of 20 such runs failed (CI saw one at 8)."""

    def propose(n: int) -> tuple[int, bool]:
        new = NewRewrite(file=FILE, region_name="k", region_hash="a" * 64, code=f"v{n % 20}")
        rewrite, created = store.add_rewrite(new)
        return rewrite.id, created

    with Store.open(tmp_path / "store.db") as store, ThreadPoolExecutor(16) as pool:
        results = list(pool.map(propose, range(160)))
        assert sum(created for _, created in results) == 20
        assert len({rewrite_id for rewrite_id, _ in results}) == 20
        assert len(store.rewrites()) == 20


class _LockedAtFirst:
    """A real connection whose first `n` WAL switches answer "database is locked" at once, as
    SQLite did in CI while 16 processes created one store."""

    def __init__(self, conn: sqlite3.Connection, n: int) -> None:
        self.conn, self.left = conn, n

    def execute(self, sql: str, *args: object) -> sqlite3.Cursor:
        if sql == "PRAGMA journal_mode=WAL" and self.left > 0:
            self.left -= 1
            raise sqlite3.OperationalError("database is locked")
        return self.conn.execute(sql, *args)

    def close(self) -> None:
        self.conn.close()


def test_a_store_whose_switch_to_wal_is_refused_at_first_is_created_anyway(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = sqlite3.connect
    monkeypatch.setattr(
        migrations.sqlite3, "connect", lambda *a, **k: _LockedAtFirst(real(*a, **k), 3)
    )
    db = tmp_path / "store.db"
    assert migrations.migrate(db) == migrations.LATEST_VERSION
    monkeypatch.setattr(migrations, "BUSY_TIMEOUT_S", 0.05)  # refused for longer: the error
    monkeypatch.setattr(
        migrations.sqlite3, "connect", lambda *a, **k: _LockedAtFirst(real(*a, **k), 10**6)
    )
    with pytest.raises(migrations.StoreError, match="cannot migrate: database is locked"):
        migrations.migrate(tmp_path / "other.db")
