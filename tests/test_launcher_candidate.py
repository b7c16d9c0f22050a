"""Candidate mode (private build trees): same splice path, but fail closed and record nothing."""

from __future__ import annotations

from pathlib import Path

from nvcc_opt.launcher import candidate
from nvcc_opt.regions.scan import scan
from nvcc_opt.store.api import Store
from tests.conftest import needs_nvcc, run
from tests.test_launcher_substitution import COMPILE, REWRITE, SOURCE

pytestmark = needs_nvcc


def _candidate(
    tmp_path: Path, source: Path, code: str, digest: str | None = None
) -> dict[str, str]:
    region = next(r for r in scan(source.read_bytes()).regions if r.name == "variant")
    path = tmp_path / "candidate.json"
    candidate.write(str(path), str(source), digest or region.text_hash, code, [])
    return {candidate.ENV: str(path)}


def test_candidate_is_compiled_in_place_of_the_region(
    tmp_path: Path, exe: str, store_env: Path
) -> None:
    source = tmp_path / "k.cu"
    source.write_text(SOURCE)
    done = run([exe, *COMPILE], tmp_path, _candidate(tmp_path, source, REWRITE))
    assert done.returncode == 0, done.stderr
    assert b"variant-REWRITTEN" in (tmp_path / "k.o").read_bytes()
    with Store.open(store_env) as store:
        assert store.regions() == [], "a private tree's compiles are not the user's build"


def test_broken_candidate_fails_with_errors_at_original_lines(
    tmp_path: Path, exe: str, store_env: Path
) -> None:
    source = tmp_path / "k.cu"
    source.write_text(SOURCE)
    broken = "const char* variant() { return undefined_thing; }\n"
    done = run([exe, *COMPILE], tmp_path, _candidate(tmp_path, source, broken))
    assert done.returncode != 0
    assert b"k.cu(3): error" in done.stderr and b"undefined_thing" in done.stderr


def test_candidate_for_unknown_region_text_is_an_error(
    tmp_path: Path, exe: str, store_env: Path
) -> None:
    source = tmp_path / "k.cu"
    source.write_text(SOURCE)
    env = _candidate(tmp_path, source, REWRITE, digest="0" * 64)
    done = run([exe, *COMPILE], tmp_path, env)
    assert done.returncode == 1
    assert b"bad candidate" in done.stderr


def test_candidate_file_is_a_dependency(tmp_path: Path, exe: str, store_env: Path) -> None:
    """Writing the next candidate must make Ninja/Make rebuild the object."""
    source = tmp_path / "k.cu"
    source.write_text(SOURCE)
    env = _candidate(tmp_path, source, REWRITE)
    done = run([exe, *COMPILE], tmp_path, env)
    assert done.returncode == 0, done.stderr
    assert env[candidate.ENV] in (tmp_path / "k.o.d").read_text()


def test_private_tree_builds_are_not_recorded(tmp_path: Path, exe: str, store_env: Path) -> None:
    (tmp_path / "k.cu").write_text(SOURCE)
    done = run([exe, *COMPILE], tmp_path, {candidate.PRIVATE: "1"})
    assert done.returncode == 0, done.stderr
    assert not store_env.exists() or Store.open(store_env).regions() == []
