"""`nvcc-opt import --reopen`: a team brings back a rewrite it revoked or rejected, as the same
rewrite proposed again with its history; without --reopen the import says how and stores
nothing."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from tests.cli_helpers import invoke, propose, record, write_source


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    record(tmp_path / "store.db", write_source(tmp_path))  # a build has seen the regions
    return tmp_path


def _dump(db: Path) -> list[str]:
    with sqlite3.connect(db) as connection:
        return list(connection.iterdump())


def _history(db: Path, rewrite_id: int) -> list[tuple[str, str, str]]:
    result = invoke(db, "review", "--json", "--all")
    assert result.exit_code == 0, result.output
    (shown,) = [r for r in json.loads(result.stdout) if r["id"] == rewrite_id]
    return [(d["from"], d["to"], d["reason"]) for d in shown["decisions"]]


def _ok(db: Path, *args: str) -> str:
    result = invoke(db, *args)
    assert result.exit_code == 0, result.output
    return result.stdout


def test_revoked_rewrite_comes_back_proposed_with_its_history(project: Path) -> None:
    db = project / "store.db"
    rewrite_id = propose(db, project / "src" / "k.cu", "scale")
    _ok(db, "review", "--force", "--accept", str(rewrite_id), "--reason", "fast")
    _ok(db, "export", "shared.json")
    _ok(db, "review", "--revoke", str(rewrite_id), "--reason", "wrong on sm_80")

    before = _dump(db)
    refused = invoke(db, "import", "shared.json")
    assert refused.exit_code == 1
    (line,) = refused.stderr.splitlines()
    assert line.startswith("Error: shared.json:5: rewrites[0]: #1 (scale) is here already,")
    assert "revoked on 20" in line
    assert line.endswith(
        "`nvcc-opt import --reopen shared.json` proposes it again, its history kept"
    )
    assert _dump(db) == before

    assert _ok(db, "import", "--reopen", "shared.json") == "#1 reopened (proposed): scale\n"
    assert "rewrite #1 proposed" in _ok(db, "status")
    assert _ok(db, "review", "--list").startswith(f"#1 proposed {project / 'src' / 'k.cu'} scale")
    again = f"imported again from {project / 'shared.json'}"
    assert _history(db, rewrite_id) == [
        ("proposed", "accepted", "fast"),
        ("accepted", "revoked", "wrong on sm_80"),
        ("revoked", "proposed", again),
    ]

    # now an ordinary proposal: a second --reopen changes nothing, and review decides again
    assert _ok(db, "import", "--reopen", "shared.json") == "#1 already present (proposed): scale\n"
    assert len(_history(db, rewrite_id)) == 3
    _ok(db, "review", "--force", "--accept", str(rewrite_id))
    assert _ok(db, "review", "--list").startswith("#1 accepted")


def test_rejected_rewrite_comes_back_too(project: Path) -> None:
    db = project / "store.db"
    rewrite_id = propose(db, project / "src" / "k.cu", "scale")
    _ok(db, "export", "--state", "proposed", "mine.json")
    _ok(db, "review", "--reject", str(rewrite_id), "--reason", "not now")

    refused = invoke(db, "import", "mine.json")
    assert refused.exit_code == 1
    assert "is here already, rejected on" in refused.stderr
    assert "--reopen mine.json" in refused.stderr

    assert _ok(db, "import", "--reopen", "mine.json") == "#1 reopened (proposed): scale\n"
    assert _history(db, rewrite_id)[-1][:2] == ("rejected", "proposed")


def test_a_closed_entry_stores_nothing_of_the_whole_file(project: Path) -> None:
    db = project / "store.db"
    source = project / "src" / "k.cu"
    accepted = propose(db, source, "scale")
    propose(db, source, "pair", code="// pair\n")
    _ok(db, "review", "--force", "--accept", str(accepted))
    _ok(db, "export", "--state", "accepted", "--state", "proposed", "both.json")
    fresh = project / "fresh.db"
    _ok(fresh, "import", "both.json")  # another store: both arrive as new proposals
    _ok(fresh, "review", "--reject", "2")

    before = _dump(fresh)
    bundle = json.loads((project / "both.json").read_text())
    bundle["rewrites"].append({"file": "src/k.cu", "region": "scale", "code": "// new\n"})
    (project / "three.json").write_text(json.dumps(bundle, indent=2))
    refused = invoke(fresh, "import", "three.json")
    assert refused.exit_code == 1
    assert refused.stderr.count("is here already, rejected") == 1
    assert _dump(fresh) == before  # the new third entry was not stored either

    assert _ok(fresh, "import", "--reopen", "three.json").splitlines() == [
        "#1 already present (proposed): scale",
        "#2 reopened (proposed): pair",
        "#3 imported (proposed): scale",
    ]


def test_a_reopened_rewrite_survives_a_damaged_store(project: Path) -> None:
    """The reopen and a new entry of the same import reach the journal, so `recover` brings back
    the rewrite proposed again with its whole history."""
    db = project / "store.db"
    rewrite_id = propose(db, project / "src" / "k.cu", "scale")
    _ok(db, "review", "--force", "--accept", str(rewrite_id), "--reason", "fast")
    _ok(db, "export", "shared.json")
    _ok(db, "review", "--revoke", str(rewrite_id), "--reason", "wrong on sm_80")
    _ok(db, "import", "--reopen", "shared.json")
    history = _history(db, rewrite_id)
    assert history[-1][1] == "proposed" and history[-1][2].startswith("imported again from ")

    db.write_bytes(b"this is not a database" * 100)  # damaged
    damaged = invoke(db, "status")
    assert damaged.exit_code == 1 and "moved" in damaged.output, damaged.output
    _ok(db, "recover")
    assert _history(db, rewrite_id) == history
    assert "rewrite #1 proposed" in _ok(db, "status")
