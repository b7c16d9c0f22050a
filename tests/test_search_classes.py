"""Transforms on classes of code: kernels written from scratch for these tests
(`tests/fixtures/search_classes/`), each naming in its first lines what must fire (`// fires:`)
and what must be refused (`// refuses:`). Every transform here has at least three positive
kernels that differ in structure and at least one negative; every rewrite compiles with real
nvcc for sm_90."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from nvcc_opt.search.transforms import BY_NAME
from tests.class_kernels import CLASSES
from tests.class_kernels import unit as class_unit
from tests.conftest import needs_nvcc

FILES = sorted(CLASSES.glob("*.cu"))
COVERED = tuple(BY_NAME)  # every transform of the registry


def _expected(path: Path, word: str) -> list[str]:
    for line in path.read_text().splitlines():
        if line.startswith(f"// {word}:"):
            return [name.strip() for name in line.split(":", 1)[1].split(",")]
    return []


def _rewrite(path: Path, name: str) -> str | None:
    unit = class_unit(path)
    return BY_NAME[name].apply(unit.code, unit.facts)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_fires_and_refuses_as_the_kernel_says(path: Path) -> None:
    fires, refuses = _expected(path, "fires"), _expected(path, "refuses")
    assert fires or refuses, f"{path.name} names nothing it tests"
    unit = class_unit(path)
    for name in fires:
        assert BY_NAME[name].apply(unit.code, unit.facts) not in (None, unit.code), name
    for name in refuses:
        assert BY_NAME[name].apply(unit.code, unit.facts) in (None, unit.code), name


@pytest.mark.parametrize("name", COVERED)
def test_each_transform_has_three_positives_and_a_negative(name: str) -> None:
    positives = [p for p in FILES if name in _expected(p, "fires")]
    negatives = [p for p in FILES if name in _expected(p, "refuses")]
    assert len(positives) >= 3 and negatives, (name, positives, negatives)


@needs_nvcc
@pytest.mark.slow
def test_every_rewrite_compiles_for_sm_90(tmp_path: Path) -> None:
    written = []
    for path in FILES:
        for name in _expected(path, "fires"):
            code = _rewrite(path, name)
            assert code is not None
            target = tmp_path / f"{path.stem}__{name}.cu"
            target.write_text(code)
            written.append(target.name)
    done = subprocess.run(
        ["nvcc", "-arch=sm_90", "-std=c++17", "-c", *written],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert sorted(p.stem for p in tmp_path.glob("*.o")) == sorted(w[:-3] for w in written)
