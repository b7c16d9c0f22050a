"""The problem-set format: written in steps, refused half-written, resumed, read by `datasets`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from nvcc_opt_train.problemset import (
    MANIFEST,
    Problem,
    ProblemSet,
    ProblemSetError,
    append_jsonl,
    read_jsonl,
)

SOURCES = [{"from": "suite", "path": "/somewhere/suite"}]


def problem(pid: str, split: str = "train", **extra: object) -> Problem:
    return Problem(
        id=pid,
        source="suite",
        benchmark=pid,
        regions=("src/kernel.cu:k",),
        kernels=("k",),
        split=split,
        region_text="__global__ void k(float* x) { x[0] = 1; }",
        extra=dict(extra),
    )


def test_a_set_written_to_the_end_opens_and_lists_its_problems(tmp_path: Path) -> None:
    root = tmp_path / "set"
    ps = ProblemSet.begin(root, SOURCES)
    ps.finish([problem("a"), problem("b", "eval", size=3)], {"check": "build"})
    opened = ProblemSet.open(root)
    assert [p.id for p in opened.problems("train")] == ["a"]
    assert [p.id for p in opened.problems("eval")] == ["b"]
    assert opened.problems("eval")[0].extra == {"size": 3}
    assert opened.manifest["counts"] == {"train": 1, "eval": 1}
    assert opened.manifest["check"] == "build"
    assert opened.app_dir(opened.problems()[0]) == root / "problems" / "a"


def test_a_half_written_set_is_refused_in_one_line_and_resumed_by_the_same_sources(
    tmp_path: Path,
) -> None:
    root = tmp_path / "set"
    ProblemSet.begin(root, SOURCES)  # a killed run stops here
    with pytest.raises(ProblemSetError) as caught:
        ProblemSet.open(root)
    assert "half-written" in str(caught.value) and "\n" not in str(caught.value)
    with pytest.raises(ProblemSetError, match="other sources"):
        ProblemSet.begin(root, [{"from": "apps", "path": "/elsewhere"}])
    resumed = ProblemSet.begin(root, SOURCES)
    resumed.finish([problem("a")], {})
    assert ProblemSet.open(root).manifest["complete"] is True


def test_a_complete_set_is_never_overwritten(tmp_path: Path) -> None:
    root = tmp_path / "set"
    ProblemSet.begin(root, SOURCES).finish([problem("a")], {})
    before = (root / "train.jsonl").read_bytes()
    with pytest.raises(ProblemSetError, match="already a complete problem set"):
        ProblemSet.begin(root, SOURCES)
    assert (root / "train.jsonl").read_bytes() == before


def test_a_folder_that_is_not_a_set_names_itself(tmp_path: Path) -> None:
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(ProblemSetError, match="not a problem set"):
        ProblemSet.open(tmp_path / "other")
    with pytest.raises(ProblemSetError, match="not a problem set"):
        ProblemSet.begin(tmp_path / "other", SOURCES)
    assert (tmp_path / "other" / "notes.txt").read_text() == "mine"
    (tmp_path / "v2").mkdir()
    (tmp_path / "v2" / MANIFEST).write_text(
        json.dumps({"format": "nvcc-opt/problemset", "version": 2})
    )
    with pytest.raises(ProblemSetError, match="version 2"):
        ProblemSet.open(tmp_path / "v2")


def test_a_broken_index_line_names_file_and_line(tmp_path: Path) -> None:
    root = tmp_path / "set"
    ProblemSet.begin(root, SOURCES).finish([problem("a")], {})
    with (root / "train.jsonl").open("a") as out:
        out.write("{not json\n")
    with pytest.raises(ProblemSetError, match=r"train\.jsonl:2: not JSON"):
        ProblemSet.open(root).problems("train")


def test_appended_rows_are_whole_lines_read_back_in_order(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    for i in range(3):
        append_jsonl(path, {"id": str(i)})
    assert [row["id"] for _, row in read_jsonl(path)] == ["0", "1", "2"]


def test_ids_are_unique(tmp_path: Path) -> None:
    ps = ProblemSet.begin(tmp_path / "set", SOURCES)
    with pytest.raises(ProblemSetError, match="used twice"):
        ps.finish([problem("a"), problem("a", "eval")], {})


def test_datasets_loads_the_index_as_it_is(tmp_path: Path) -> None:
    pytest.importorskip("datasets")
    root = tmp_path / "set"
    ProblemSet.begin(root, SOURCES).finish(
        [problem("a", size=1), problem("b", kernels="x"), problem("c", "eval")], {}
    )
    code = (
        "import datasets, json, sys; d = datasets.load_dataset('json', data_files={"
        "'train': sys.argv[1] + '/train.jsonl', 'eval': sys.argv[1] + '/eval.jsonl'}, "
        "cache_dir=sys.argv[1] + '/.cache'); "
        "print(json.dumps({k: [r['id'] for r in v] for k, v in d.items()}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(root)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"train": ["a", "b"], "eval": ["c"]}
