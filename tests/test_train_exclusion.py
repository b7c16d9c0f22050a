"""The evaluation-kernel exclusion: the shipped names, the text-similarity check (a renamed copy
and a lightly edited copy are caught, unrelated kernels are not), its record in the manifest and
`require_exclusion`. No builds: these run in well under a second each."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from nvcc_opt.regions.scan import region_text, scan
from nvcc_opt_train.cli import train
from nvcc_opt_train.exclusion import (
    Exclusion,
    ExclusionError,
    list_sha256,
    normalize,
    parse_list,
    read_folder,
    require_exclusion,
    shipped_list,
)
from nvcc_opt_train.problemset import Problem, ProblemSet, ProblemSetError

REPO = Path(__file__).resolve().parent.parent
SUITE = REPO / "benchmarks" / "suite"
APPS = REPO / "tests" / "fixtures" / "train_apps"

# A kernel of our own, the reference an exclusion folder holds.
REFERENCE = """\
// @optimize begin smooth
__global__ void smooth_rows(int rows, int cols, const float* in, float* out, float weight) {
  int r = blockIdx.y * blockDim.y + threadIdx.y;
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (r > 0 && r < rows - 1 && c > 0 && c < cols - 1) {
    float centre = in[r * cols + c];
    float around = in[(r - 1) * cols + c] + in[(r + 1) * cols + c] + in[r * cols + c - 1] +
                   in[r * cols + c + 1];
    out[r * cols + c] = weight * centre + (1.0f - weight) * 0.25f * around;
  }
}
// @optimize end
"""
RENAMES = {
    "smooth_rows": "relax_grid",
    "rows": "ny",
    "cols": "nx",
    "in": "src",
    "out": "dst",
    "weight": "alpha",
    "centre": "mid",
    "around": "ring",
    "r": "j",
    "c": "k",
}
UNRELATED = """\
__global__ void count_keys(int n, const int* keys, int buckets, unsigned* histogram) {
  __shared__ unsigned local[256];
  for (int b = threadIdx.x; b < buckets; b += blockDim.x) local[b] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    atomicAdd(&local[keys[i] % buckets], 1u);
  __syncthreads();
  for (int b = threadIdx.x; b < buckets; b += blockDim.x) atomicAdd(&histogram[b], local[b]);
}
"""


def renamed(text: str) -> str:
    return re.sub(r"\b\w+\b", lambda m: RENAMES.get(m[0], m[0]), text)


def problem(text: str, kernels: tuple[str, ...] = ("k",)) -> Problem:
    return Problem(
        id="apps-x",
        source="apps",
        benchmark="x",
        regions=("k.cu:x",),
        kernels=kernels,
        kind="app",
        region_text=text,
    )


@pytest.fixture
def reference(tmp_path: Path) -> Exclusion:
    folder = tmp_path / "evalkernels"
    folder.mkdir()
    (folder / "smooth.cu").write_text(REFERENCE)
    return Exclusion.load([folder])


def test_shipped_list_holds_rajaperf_and_lulesh_names() -> None:
    lines = [line.split() for line in shipped_list().decode().splitlines()]
    entries = [words for words in lines if words and not words[0].startswith("#")]
    assert len([w for w in entries if w[-1] == "kernel" and w[1] == "RAJAPerf"]) == 36
    names = {w[0] for w in entries}
    assert {"POLYBENCH_ATAX", "poly_atax_1", "energycalc1", "Mass3DPA", "SCAN"} <= names
    assert "CalcKinematicsAndMonotonicQGradient_kernel" in names  # LULESH's
    assert len([w for w in entries if w[1] == "LULESH"]) == 19
    assert len(list_sha256()) == 64


def test_names_match_after_normalizing() -> None:
    exclusion = Exclusion.load()
    assert normalize("CalcVolumeForceForElems_kernel") == "calcvolumeforceforelems"
    assert normalize("Poly_Atax_1Kernel") == "poly_atax_1"
    why = exclusion.match(problem("", ("calcVolumeForceForElemsKernel",)))
    assert why is not None and "LULESH" in why and "CalcVolumeForceForElems_kernel" in why
    assert "RAJAPerf polybench" in (exclusion.match(problem("", ("atax_kernel",))) or "")
    assert exclusion.match(problem("", ("saxpy_kernel", "relax"))) is None
    assert exclusion.matched["name"] == 2


def test_a_renamed_copy_is_caught(reference: Exclusion) -> None:
    copy = renamed(REFERENCE)
    assert "smooth_rows" not in copy and "weight" not in copy
    why = reference.match(problem(copy, ("relax_grid",)))
    assert why is not None and "evalkernels/smooth.cu" in why


def test_a_lightly_edited_copy_is_caught(reference: Exclusion) -> None:
    edited = REFERENCE.replace("0.25f", "0.2f").replace(
        "    out[r * cols + c]",
        "    around = around > 1e6f ? 1e6f : around;\n    out[r * cols + c]",
    )
    assert edited != REFERENCE
    why = reference.match(problem(edited, ("smooth_rows_v2",)))
    assert why is not None and "similarity" in why


def test_an_unrelated_kernel_is_not_caught(reference: Exclusion) -> None:
    assert reference.match(problem(UNRELATED, ("count_keys",))) is None


def test_distinct_suite_kernels_do_not_match_each_other() -> None:
    """The thresholds' margin: no region of the suite is taken for another app's kernels."""
    _, texts = read_folder(SUITE)
    apps = sorted(p.name for p in SUITE.iterdir() if (p / "nvcc-opt.toml").is_file())
    assert len(apps) == 28
    for app in apps:
        others = [t for t in texts if t.label.split("/")[1] != app]
        exclusion = Exclusion(names={}, texts=others, list_sha256="")
        for path in (SUITE / app).rglob("*.cu"):
            data = path.read_bytes()
            for span in scan(data).regions:
                assert exclusion.match(problem(region_text(data, span), ())) is None, path


def test_exclude_from_reads_names_and_rejects_a_missing_folder(tmp_path: Path) -> None:
    (tmp_path / "k.cuh").write_text(
        "template <int B>\n__global__ void __launch_bounds__(B)\n"
        "Tiled_Kernel(float* x) { x[0] = 1.0f; }\n"
    )
    names, _ = read_folder(tmp_path)
    assert "tiled" in names
    with pytest.raises(ExclusionError, match="no such folder"):
        Exclusion.load([tmp_path / "missing"])
    assert parse_list("a_kernel RAJAPerf x  # comment\n# only a comment\n") == {
        "a": "RAJAPerf x: a_kernel"
    }


def test_require_exclusion(tmp_path: Path) -> None:
    made = ProblemSet.begin(tmp_path / "set", [{"from": "apps"}])
    made.finish([], {})
    with pytest.raises(ProblemSetError, match="without the evaluation-kernel exclusion"):
        require_exclusion(ProblemSet.open(tmp_path / "set"))
    old = ProblemSet.begin(tmp_path / "old", [{"from": "apps"}])
    old.finish([], {"exclusion": {**Exclusion.load().record(0), "list_sha256": "0" * 64}})
    with pytest.raises(ProblemSetError, match="another evaluation-kernel list"):
        require_exclusion(ProblemSet.open(tmp_path / "old"))
    good = ProblemSet.begin(tmp_path / "good", [{"from": "apps"}])
    good.finish([], {"exclusion": Exclusion.load().record(0)})
    require_exclusion(ProblemSet.open(tmp_path / "good"))


def app_with_kernel(root: Path, app: str, kernel: str) -> None:
    """A copy of the saxpy fixture app whose kernel is called `kernel`."""
    target = root / app
    target.mkdir(parents=True)
    for path in (APPS / "saxpy").rglob("*"):
        if path.is_file():
            out = target / path.relative_to(APPS / "saxpy")
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(path.read_bytes().replace(b"saxpy_kernel", kernel.encode()))


def test_the_command_skips_evaluation_kernels_and_records_it(tmp_path: Path) -> None:
    apps = tmp_path / "apps"
    app_with_kernel(apps, "mine", "axpy_update")
    app_with_kernel(apps, "theirs", "poly_gesummv")
    app_with_kernel(apps, "copied", "axpy_again")
    (apps / "copied" / "src" / "main.cu").write_text(
        (apps / "copied" / "src" / "main.cu").read_text()
        + "\n// @optimize begin extra\n"
        + renamed(REFERENCE).split("\n", 1)[1]
    )
    evalfolder = tmp_path / "evalkernels"
    evalfolder.mkdir()
    (evalfolder / "smooth.cu").write_text(REFERENCE)
    out = tmp_path / "set"
    args = ["problems", str(out), "--from", "apps", str(apps), "--check", "none"]
    result = CliRunner().invoke(train, [*args, "--exclude-from", str(evalfolder)])
    assert result.exit_code == 0, result.output
    made = ProblemSet.open(out)
    assert [p.id for p in made.problems()] == ["apps-mine"]
    reasons = {row["name"]: row["reason"] for row in made.skipped()}
    assert "poly_gesummv" in reasons["theirs"] and "RAJAPerf" in reasons["theirs"]
    assert "smooth.cu" in reasons["copied"]
    record = made.manifest["exclusion"]
    assert record["list_sha256"] == list_sha256()
    assert record["exclude_from"] == [str(evalfolder.resolve())]
    assert record["matched"] == {"name": 1, "similar": 1} and record["checked"] == 3
    require_exclusion(made)
    assert "skipped: 2: 2 excluded" in result.output


def test_an_eval_only_set_keeps_evaluation_kernels_with_a_note(tmp_path: Path) -> None:
    apps = tmp_path / "apps"
    app_with_kernel(apps, "theirs", "poly_gesummv")
    out = tmp_path / "set"
    args = ["problems", str(out), "--from", "apps", str(apps), "--check", "none"]
    result = CliRunner().invoke(train, [*args, "--split", "eval"])
    assert result.exit_code == 0, result.output
    (kept,) = ProblemSet.open(out).problems("eval")
    assert kept.split == "eval" and "poly_gesummv" in kept.notes[0]
    row = json.loads((out / "eval.jsonl").read_text())
    assert row["notes"] == list(kept.notes)
