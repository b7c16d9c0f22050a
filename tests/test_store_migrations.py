"""Upgrading a store an older nvcc-opt wrote: data kept, launcher reads it before and after."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from nvcc_opt.records import CompileContext, NewRewrite, RewriteState, Verification
from nvcc_opt.store import fast, migrations
from nvcc_opt.store.api import Store


def _version_1_store(path: Path) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    migrations.MIGRATIONS[0](conn)
    conn.execute("PRAGMA user_version = 1")
    conn.execute(
        "INSERT INTO rewrites (file, region_name, region_hash, code, explanation, compile_args,"
        " targets, context, statistics, model, trace, origin, state, suspect, created_at,"
        " content_key) VALUES ('/p/k.cu', 'k', ?, 'code', '', '[]', NULL, NULL, '{}', '',"
        " 'null', 'import', 'accepted', '', '2026-01-01T00:00:00Z', 'key')",
        ("a" * 64,),
    )
    conn.close()


def test_launcher_reads_a_store_written_before_the_latest_migration(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    _version_1_store(db)
    (found,) = fast.accepted_for(str(db), "/p/k.cu", ["a" * 64])
    assert found.code == "code"


def test_opening_upgrades_and_keeps_every_row(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    _version_1_store(db)
    with Store.open(db) as store:
        (rewrite,) = store.rewrites()
        assert rewrite.state is RewriteState.ACCEPTED and rewrite.verifications == ()
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == migrations.LATEST_VERSION == 2


def test_verifications_are_kept_in_order(tmp_path: Path) -> None:
    with Store.open(tmp_path / "s.db") as store:
        rewrite, _ = store.add_rewrite(
            NewRewrite(file="/p/k.cu", region_name="k", region_hash="b" * 64, code="x")
        )
        context = CompileContext(compiler_version="V13.0", targets=("sm_90",))
        for passed, status in ((False, "rejected"), (True, "improved")):
            store.add_verification(
                Verification(
                    rewrite_id=rewrite.id,
                    at="",
                    passed=passed,
                    status=status,
                    reasons=("check: ok",) if passed else ("numbers_differ: x",),
                    statistics={"speedup": 1.2},
                    context=context,
                    machine="host / NVIDIA H200",
                )
            )
        again = store.rewrite(rewrite.id)
    assert [v.status for v in again.verifications] == ["rejected", "improved"]
    assert again.last_verification is not None and again.last_verification.passed
    assert again.last_verification.context == context and again.last_verification.at
