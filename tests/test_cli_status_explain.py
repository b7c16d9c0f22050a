"""`nvcc-opt status` and `nvcc-opt explain` with click's runner against real SQLite files, the
regions recorded as the launcher records them."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from nvcc_opt.cli import cli
from nvcc_opt.store import fast
from tests.cli_helpers import (
    FAST_SCALE,
    KERNELS,
    context,
    invoke,
    propose,
    record,
    spans,
    write_source,
)


@pytest.fixture
def source(tmp_path: Path) -> Path:
    return write_source(tmp_path)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "state" / "store.db"


def _explain(db: Path, source: Path) -> dict[str, str]:
    """Region name -> why, from `nvcc-opt explain`."""
    result = invoke(db, "explain", str(source))
    assert result.exit_code == 0, result.output
    found = {}
    for line in result.output.splitlines():
        where, why = line.split(": ", 1)
        found[where.rsplit(" ", 1)[1]] = why
    return found


def _accept(db: Path, rewrite_id: int) -> None:
    result = invoke(db, "review", "--force", "--accept", str(rewrite_id))
    assert result.exit_code == 0, result.output


def test_status_before_any_build(db: Path) -> None:
    result = invoke(db, "status")
    assert result.exit_code == 0
    assert "no regions seen yet" in result.output


def test_status_lists_regions_compiles_and_rewrites(db: Path, source: Path) -> None:
    command = record(db, source)
    rewrite_id = propose(db, source, "scale")
    result = invoke(db, "status")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    digest = spans(source)["scale"].text_hash
    assert lines[0] == f"store: {db}"
    assert lines[1] == f"{source}:4-8 scale (function), text {digest[:12]}"
    build = source.parent.parent / "build"
    assert lines[2] == f"  compiled in {build}: {shlex.join(command)}"
    assert lines[3] == f"  rewrite #{rewrite_id} proposed; not verified here"
    assert lines[4].startswith(f"{source}:11-16 pair (block)")
    assert lines[6] == "  no rewrites"


def test_status_json(db: Path, source: Path) -> None:
    command = record(db, source)
    rewrite_id = propose(db, source, "pair", code="// pair\n", context=context(source))
    data = json.loads(invoke(db, "status", "--json").output)
    assert data["store"] == str(db)
    by_name = {r["name"]: r for r in data["regions"]}
    pair = by_name["pair"]
    assert pair["file"] == str(source) and pair["lines"] == [11, 16]
    assert pair["text_hash"] == spans(source)["pair"].text_hash
    (compiled,) = pair["compiles"]
    assert compiled["command"] == command
    assert compiled["cwd"] == str(source.parent.parent / "build")
    as_json = json.loads(json.dumps(context(source).as_dict()))
    assert compiled["context"] == as_json and as_json["targets"] == ["sm_90"]
    (rewrite,) = pair["rewrites"]
    assert (rewrite["id"], rewrite["state"], rewrite["context_changed"]) == (
        rewrite_id,
        "proposed",
        [],
    )
    assert by_name["scale"]["rewrites"] == []


def test_status_shows_what_changed_since_verification(db: Path, source: Path) -> None:
    verified = context(source)
    rewrite_id = propose(db, source, "scale", context=verified, targets=("sm_90",))
    _accept(db, rewrite_id)
    now = verified.replace(
        compiler_version="Cuda compilation tools, release 13.1",
        nvcc_env=(("NVCC_APPEND_FLAGS", "-lineinfo"),),
    )
    record(db, source, now)
    result = invoke(db, "status")
    expected = f"rewrite #{rewrite_id} accepted; not verified here; changed since verification: "
    assert f"  {expected}compiler_version, nvcc_env" in result.output.splitlines()
    data = json.loads(invoke(db, "status", "--json").output)
    (scale,) = [r for r in data["regions"] if r["name"] == "scale"]
    assert scale["rewrites"][0]["context_changed"] == ["compiler_version", "nvcc_env"]


def test_status_marks_older_text_and_unseen_rewrites(db: Path, source: Path) -> None:
    record(db, source)
    old = propose(db, source, "scale")
    source.write_text(source.read_text().replace("*= a", "*= 2 * a"))
    record(db, source)
    other = write_source(source.parent.parent, name="other.cu")
    unseen = propose(db, other, "scale")
    output = invoke(db, "status").output
    older = [line for line in output.splitlines() if "older text" in line]
    assert len(older) == 1 and " scale " in older[0]
    assert "rewrites of region text no build has seen:" in output
    assert f"{other} scale" in output and f"rewrite #{unseen} proposed" in output
    assert f"rewrite #{old} proposed" in output


def test_explain_no_rewrite_and_proposed(db: Path, source: Path) -> None:
    record(db, source)
    rewrite_id = propose(db, source, "scale")
    why = _explain(db, source)
    assert why["pair"] == "no rewrite for this region in the store"
    assert why["scale"] == f"rewrite #{rewrite_id} proposed, not accepted (nvcc-opt review)"


def test_explain_accepted_and_applied(db: Path, source: Path) -> None:
    record(db, source)
    rewrite_id = propose(db, source, "scale", targets=("sm_90",))
    _accept(db, rewrite_id)
    assert _explain(db, source)["scale"] == f"rewrite #{rewrite_id} applied"


def test_explain_made_for_other_text(db: Path, source: Path) -> None:
    record(db, source)
    rewrite_id = propose(db, source, "scale")
    _accept(db, rewrite_id)
    source.write_text(source.read_text().replace("*= a", "*= 2 * a"))
    why = _explain(db, source)["scale"]
    assert why.startswith(f"rewrite #{rewrite_id} made for other text of this region")
    assert why.endswith("(this text not compiled through nvcc-opt yet)")


def test_explain_verified_for_other_targets(db: Path, source: Path) -> None:
    record(db, source, context(source, targets=("sm_90",)))
    rewrite_id = propose(db, source, "scale", targets=("sm_80",))
    _accept(db, rewrite_id)
    why = _explain(db, source)["scale"]
    assert why == f"rewrite #{rewrite_id} was verified for sm_80, this compile targets sm_90"


def test_explain_by_object_when_targets_differ(db: Path, source: Path) -> None:
    record(db, source, context(source, targets=("sm_90",)), output="a.o")
    record(db, source, context(source, targets=("sm_80",)), output="b.o")
    rewrite_id = propose(db, source, "scale", targets=("sm_90",))
    _accept(db, rewrite_id)
    why = _explain(db, source)["scale"]
    assert why.startswith("for sm_80: rewrite #")
    assert why.endswith(f"; for sm_90: rewrite #{rewrite_id} applied")


def test_explain_suspect(db: Path, source: Path) -> None:
    record(db, source)
    rewrite_id = propose(db, source, "scale")
    _accept(db, rewrite_id)
    assert fast.mark_suspect(str(db), rewrite_id, "substituted compile failed: error X")
    why = _explain(db, source)["scale"]
    assert why == f"accepted rewrite #{rewrite_id} is suspect: substituted compile failed: error X"
    assert "suspect: substituted compile failed" in invoke(db, "status").output


def test_explain_flags_conflict(db: Path, source: Path) -> None:
    record(db, source)
    first = propose(db, source, "scale", compile_args=("-maxrregcount=32",))
    second = propose(db, source, "pair", code="// pair\n", compile_args=("-maxrregcount=64",))
    _accept(db, first)
    _accept(db, second)
    why = _explain(db, source)
    assert why["scale"].startswith(f"rewrite #{first} not applied: flags conflict with #{second}")
    assert "-maxrregcount=32 vs -maxrregcount=64" in why["pair"]


def test_explain_rejected_and_never_compiled(db: Path, source: Path) -> None:
    rewrite_id = propose(db, source, "scale", code=FAST_SCALE)
    assert invoke(db, "review", "--reject", str(rewrite_id)).exit_code == 0
    why = _explain(db, source)["scale"]
    assert why == f"rewrite #{rewrite_id} rejected (this text not compiled through nvcc-opt yet)"


def test_explain_file_without_regions_and_warnings(db: Path, tmp_path: Path) -> None:
    plain = write_source(tmp_path, "// @optimize begin lonely\nint x;\n", name="plain.cu")
    result = invoke(db, "explain", str(plain))
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith(f"{plain}:1: warning:")
    assert lines[-1] == f"{plain}: no @optimize regions"


def test_store_from_environment_and_broken_config(
    db: Path, source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record(db, source)
    monkeypatch.setenv("NVCC_OPT_STORE", str(db))
    result = CliRunner().invoke(cli, ["status"])
    assert result.exit_code == 0 and f"{source}:4-8 scale" in result.output

    monkeypatch.delenv("NVCC_OPT_STORE")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "nvcc-opt.toml").write_text("store = [\n")
    result = CliRunner().invoke(cli, ["status"])
    assert result.exit_code == 1
    assert f"Error: {tmp_path / 'nvcc-opt.toml'}:" in result.output


def test_a_header_region_is_never_substituted_and_optimize_refuses_it(
    db: Path, tmp_path: Path
) -> None:
    """The launcher substitutes only the file nvcc compiles: a region tagged in a header no
    build compiled says so in `explain`, and `optimize` refuses it before any model or build
    (a rewrite of it could be accepted and never applied). A header a build compiled as its main
    file (nvcc -x cu k.cuh) is explained as any other file."""
    header = write_source(tmp_path, KERNELS, name="k.cuh")
    (tmp_path / "nvcc-opt.toml").write_text('[run]\ncommand = ["true"]\n')
    why = _explain(db, header)["scale"]
    assert why.startswith(f"{header} is a header, and the launcher substitutes regions only")
    result = invoke(db, "optimize", f"{header}:scale", "--model", "search")
    assert result.exit_code == 1
    assert "would never be applied (move the kernel into the .cu file" in result.output
    assert "nothing to optimize" not in result.output and "no GPU" not in result.output
    record(db, header)
    assert _explain(db, header)["scale"] == "no rewrite for this region in the store"
