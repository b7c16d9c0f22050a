"""`nvcc-opt import` and `export` with click's runner against real SQLite files."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from nvcc_opt.records import Rewrite, RewriteState
from nvcc_opt.store.api import Store
from tests.cli_helpers import FAST_SCALE, context, invoke, propose, spans, write_source


def _write_json(path: Path, data: object) -> Path:
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return path


def _rewrites(db: Path) -> list[Rewrite]:
    with Store.open(db) as store:
        return store.rewrites()


def _same_content(rewrite: Rewrite) -> dict[str, object]:
    """What an export -> import round trip must keep."""
    kept = dataclasses.asdict(rewrite)
    for field in ("id", "origin", "state", "created_at", "decisions", "suspect"):
        del kept[field]
    return kept


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    write_source(tmp_path)
    return tmp_path


def test_minimal_entry_arrives_proposed(project: Path) -> None:
    db = project / "store.db"
    bundle = _write_json(
        project / "r.json",
        {
            "rewrites": [
                {
                    "file": "src/k.cu",
                    "region": "scale",
                    "code": FAST_SCALE,
                    "explanation": "no aliasing",
                }
            ]
        },
    )
    result = invoke(db, "import", str(bundle))
    assert result.exit_code == 0, result.output
    assert result.output.startswith("#1 imported (proposed): scale")
    (rewrite,) = _rewrites(db)
    source = project / "src" / "k.cu"
    assert rewrite.file == str(source)
    assert rewrite.region_hash == spans(source)["scale"].text_hash
    assert (rewrite.state, rewrite.origin, rewrite.code) == ("proposed", "import", FAST_SCALE)
    assert rewrite.explanation == "no aliasing"
    assert rewrite.targets is None and rewrite.context is None


def test_region_by_text_hash_and_optional_fields(project: Path) -> None:
    db = project / "store.db"
    digest = spans(project / "src" / "k.cu")["pair"].text_hash
    ctx = {
        "compiler_version": "13.0",
        "flags": ["-O3"],
        "nvcc_env": [["NVCC_APPEND_FLAGS", "-G"]],
        "file_hash": "ab" * 32,
        "targets": ["sm_90"],
    }
    entry = {
        "file": "src/k.cu",
        "region": digest[:10],
        "code": "// pair\n",
        "explanation": "",
        "compile_args": ["-maxrregcount=64"],
        "statistics": {"speedup": 1.2},
        "model": "m",
        "trace": [{"tool": "x"}],
        "targets": ["sm_90"],
        "context": ctx,
    }
    result = invoke(db, "import", str(_write_json(project / "r.json", {"rewrites": [entry]})))
    assert result.exit_code == 0, result.output
    (rewrite,) = _rewrites(db)
    assert (rewrite.region_name, rewrite.region_hash) == ("pair", digest)
    assert rewrite.compile_args == ("-maxrregcount=64",)
    assert rewrite.statistics == {"speedup": 1.2}
    assert (rewrite.model, rewrite.trace, rewrite.targets) == ("m", [{"tool": "x"}], ("sm_90",))
    assert rewrite.context is not None
    assert rewrite.context.nvcc_env == (("NVCC_APPEND_FLAGS", "-G"),)


def test_bad_entry_names_file_and_line_and_stores_nothing(project: Path) -> None:
    db = project / "store.db"
    good = {"file": "src/k.cu", "region": "scale", "code": FAST_SCALE}
    bundle = _write_json(
        project / "r.json", {"rewrites": [good, {"file": "src/k.cu", "region": "scale"}]}
    )
    result = invoke(db, "import", str(bundle))
    assert result.exit_code == 1
    line = bundle.read_text().splitlines().index("    {", 3) + 1
    assert f"{bundle}:{line}: rewrites[1].code: Field required" in result.output
    assert "Traceback" not in result.output
    assert _rewrites(db) == []


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"file": "src/k.cu", "region": "nope", "code": "x"}, "no region 'nope'"),
        ({"file": "src/missing.cu", "region": "scale", "code": "x"}, "file not found"),
        ({"file": "src/k.cu", "region": "scale", "code": "x", "colour": 1}, "colour"),
        ({"file": "src/k.cu", "region": "scale", "code": 3}, "code"),
    ],
)
def test_unresolvable_entry_is_an_error(
    project: Path, entry: dict[str, object], message: str
) -> None:
    db = project / "store.db"
    good = {"file": "src/k.cu", "region": "pair", "code": "// ok\n"}
    bundle = _write_json(project / "r.json", {"rewrites": [good, entry]})
    result = invoke(db, "import", str(bundle))
    assert result.exit_code == 1
    assert str(bundle) in result.output and message in result.output
    assert _rewrites(db) == []


def test_invalid_json_names_the_line(project: Path) -> None:
    bundle = project / "r.json"
    bundle.write_text('{\n  "rewrites": [\n    {"file": "src/k.cu",}\n  ]\n}\n')
    result = invoke(project / "store.db", "import", str(bundle))
    assert result.exit_code == 1
    assert f"{bundle}:3: invalid JSON" in result.output


@pytest.mark.parametrize(
    ("top", "where"),
    [
        ([], "1: top level"),
        ({"format": "other/thing", "rewrites": []}, "2: format"),
        ({"version": 99, "rewrites": []}, "2: version"),
    ],
)
def test_wrong_kind_of_file_is_an_error(project: Path, top: object, where: str) -> None:
    result = invoke(project / "store.db", "import", str(_write_json(project / "r.json", top)))
    assert result.exit_code == 1
    assert f"{project / 'r.json'}:{where}:" in result.output


def test_export_import_round_trip_without_duplicates(project: Path, tmp_path: Path) -> None:
    source = project / "src" / "k.cu"
    first, second = project / "a.db", project / "b.db"
    accepted = propose(
        first,
        source,
        "scale",
        explanation="why",
        compile_args=("-O3",),
        targets=("sm_90",),
        context=context(source),
        statistics={"ms": [1.0]},
        model="big",
        trace={"steps": 3},
    )
    propose(first, source, "pair", code="// pair\n")
    assert invoke(first, "review", "--force", "--accept", str(accepted)).exit_code == 0

    out = project / "shared.json"
    assert invoke(first, "export", str(out)).exit_code == 0
    exported = json.loads(out.read_text())
    assert [e["region"] for e in exported["rewrites"]] == ["scale"]  # accepted by default
    assert exported["rewrites"][0]["file"] == "src/k.cu"

    for attempt in ("imported", "already present"):
        result = invoke(second, "import", str(out))
        assert result.exit_code == 0, result.output
        assert attempt in result.output
    (copy,) = _rewrites(second)
    (original,) = [r for r in _rewrites(first) if r.id == accepted]
    assert copy.state is RewriteState.PROPOSED
    assert _same_content(copy) == _same_content(original)


def test_export_to_stdout_by_state(project: Path) -> None:
    db = project / "store.db"
    source = project / "src" / "k.cu"
    propose(db, source, "scale")
    result = invoke(db, "export", "--state", "proposed")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["format"] == "nvcc-opt/rewrites"
    assert [(e["region"], e["state"]) for e in data["rewrites"]] == [("scale", "proposed")]
    assert json.loads(invoke(db, "export").stdout)["rewrites"] == []


def test_rewrite_for_other_text_keeps_its_hash(project: Path) -> None:
    db = project / "store.db"
    old = "cd" * 32
    entry = {"file": "src/k.cu", "region": "scale", "region_hash": old, "code": "x"}
    result = invoke(db, "import", str(_write_json(project / "r.json", {"rewrites": [entry]})))
    assert result.exit_code == 0, result.output
    assert "other text" in result.stderr
    (rewrite,) = _rewrites(db)
    assert (rewrite.region_name, rewrite.region_hash) == ("scale", old)


def test_many_bad_entries_are_reported_up_to_a_limit(project: Path) -> None:
    bad = [{"file": "src/k.cu", "region": "scale"} for _ in range(50)]
    bundle = _write_json(project / "r.json", {"rewrites": bad})
    result = invoke(project / "store.db", "import", str(bundle))
    assert result.exit_code == 1
    lines = result.stderr.splitlines()
    assert len(lines) == 21 and lines[-1] == "... and more (the first 20 shown)"
    assert all(f"{bundle}:" in line and "code: Field required" in line for line in lines[:20])
