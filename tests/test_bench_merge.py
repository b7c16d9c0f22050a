"""`nvcc-opt bench merge`: reports written by the bench's own writer, from its own rows and
summary, merged: the replacement rule, the recomputed summary, the refusals, the command."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from nvcc_opt.bench.merge import MergeError, load_report, merge_reports
from nvcc_opt.bench.render import render_markdown, write_report
from nvcc_opt.bench.results import (
    KEPT,
    PROPOSED,
    AppRun,
    Kernel,
    KernelRun,
    Report,
    Tried,
    classify,
    what_changed,
)
from nvcc_opt.bench.summary import rows_for, summarize
from nvcc_opt.cli.bench import bench

RESULTS = Path(__file__).resolve().parent.parent / "benchmarks" / "results"

# (app, region, status, speedup, reasons) per kernel; an app with a str is a failed run
Slice = dict[str, list[tuple[str, str, float, tuple[str, ...]]] | str]


def _write(folder: Path, model: str, apps: Slice, started: str) -> Path:
    """A suite report as the bench makes one: KernelRuns, rows_for, summarize, write_report."""
    kernels: list[Kernel] = []
    runs: list[AppRun] = []
    for app, found in apps.items():
        if isinstance(found, str):  # failed before optimize: its one kernel becomes an error
            kernels.append(Kernel(app, "src/k.cu", "k"))
            runs.append(AppRun(app, 1, (), found, 1.0, "w"))
            continue
        done = []
        for region, status, speedup, reasons in found:
            kernels.append(Kernel(app, "src/k.cu", region))
            tried = (Tried(1, f"Trying {region}.", (), "improved", speedup, "faster"),)
            done.append(
                KernelRun(app, "src/k.cu", region, 1, status, speedup, 2.0, 60.0,
                          reasons=reasons, explanation=f"{region} in {folder.name}",
                          outcome=classify(status, reasons), tried=tried)
            )  # fmt: skip
        runs.append(AppRun(app, 1, tuple(done), None, 60.0, "w"))
    rows = rows_for(kernels, runs, 1)
    report = Report(
        model=model, date="2026-12-02", started_at=started,
        command=f"nvcc-opt bench suite --model {model} --only {','.join(apps)}",
        machine={"host": folder.name, "gpu": "H200"}, options={"runs": 1, "stem": "suite"},
        rows=tuple(rows), overall=summarize(rows, sum(1 for r in runs if r.error)),
        runs=tuple(runs), wall_s=100.0,
    )  # fmt: skip
    json_path, _ = write_report(report, folder)
    return json_path


@pytest.fixture
def two(tmp_path: Path) -> tuple[Path, Path]:
    first = _write(
        tmp_path / "s1",
        "search",
        {
            "atax": [("atax_k", KEPT, 1.0, ("no difference",))],
            "fir": [("fir_k", PROPOSED, 1.2, ("faster",)), ("fir_j", KEPT, 1.0, ("no diff",))],
        },
        "2026-12-02T10:00:00",
    )
    second = _write(
        tmp_path / "s2",
        "search",
        {
            "fir": [("fir_k", PROPOSED, 1.6, ("faster",))],
            "bfs": "configure failed: CMake Error",
        },
        "2026-12-02T11:00:00",
    )
    return first, second


def test_a_later_report_replaces_rows_and_the_summary_is_recomputed(
    two: tuple[Path, Path], tmp_path: Path
) -> None:
    merged = merge_reports(two, tmp_path / "out", "nvcc-opt bench merge a b")
    keys = [(r.app, r.region) for r in merged.rows]
    assert keys == [("atax", "atax_k"), ("bfs", "k"), ("fir", "fir_k"), ("fir", "fir_j")]
    rows = {r.region: r for r in merged.rows}
    assert rows["fir_k"].best_speedup == 1.6 and rows["fir_k"].explanation == "fir_k in s2"
    assert rows["fir_j"].explanation == "fir_j in s1", "a kernel only the first has is kept"
    assert rows["k"].verdict == "error: configure failed: CMake Error"
    assert rows["fir_k"].tried == (Tried(1, "Trying fir_k.", (), "improved", 1.6, "faster"),)
    assert merged.overall == summarize(merged.rows, 1)
    assert merged.overall.improved == 1 and merged.overall.failed_runs == 1
    assert [(r.app, r.error) for r in merged.runs] == [
        ("atax", None), ("bfs", "configure failed: CMake Error"), ("fir", None), ("fir", None),
    ]  # fmt: skip
    # fir's rows came from both reports (fir_j only the first has): so do its runs, in order
    assert [k.speedup for r in merged.runs[2:] for k in r.kernels] == [1.2, 1.0, 1.6]
    assert [(s.file, s.rows_kept) for s in merged.sources] == [(str(two[0]), 2), (str(two[1]), 2)]
    assert merged.sources[1].command == "nvcc-opt bench suite --model search --only fir,bfs"
    assert merged.started_at == "2026-12-02T10:00:00" and merged.wall_s == 200.0
    assert merged.machine == {"host": "s1; s2", "gpu": "H200"}
    assert merged.options["stem"].startswith("suite-merged-")
    assert merged.options["stem"].endswith("-search")


def test_the_merged_report_reads_back_as_written(two: tuple[Path, Path], tmp_path: Path) -> None:
    merged = merge_reports(two, tmp_path / "out")
    json_path, md_path = write_report(merged, tmp_path / "out")
    assert load_report(json_path) == merged
    assert "merged from 2 reports" in md_path.read_text()
    again = merge_reports([json_path, two[1]], tmp_path / "out")
    assert again.rows == merged.rows and again.overall == merged.overall


def test_a_report_of_an_older_bench_without_the_evidence_still_merges(
    two: tuple[Path, Path], tmp_path: Path
) -> None:
    data = json.loads(two[0].read_text())
    for row in data["rows"]:
        del row["tried"], row["explanation"], row["trace_errors"]
    for run in data["runs"]:
        for kernel in run["kernels"]:
            del kernel["tried"], kernel["trace"], kernel["trace_error"]
    del data["sources"]
    old = tmp_path / "old.json"
    old.write_text(json.dumps(data))
    merged = merge_reports([old, two[1]], tmp_path / "out")
    assert {r.region: r.tried for r in merged.rows}["atax_k"] == ()


def test_a_kernel_the_bench_stopped_is_not_counted_and_never_replaces_a_finished_row(
    tmp_path: Path,
) -> None:
    """A slice cut short by its time limit: atomic stopped before optimize began, two_mm stopped
    in optimize without an answer. The next slices ran atomic to the end and stopped fir; the
    first slice's report predates unfinished rows (its verdicts say "error: interrupted")."""
    first = _write(
        tmp_path / "s1",
        "search",
        {"atomic": "interrupted", "fir": [("fir_k", PROPOSED, 1.2, ("faster",))]},
        "2026-12-02T10:00:00",
    )
    data = json.loads(first.read_text())
    for row in data["rows"]:
        del row["unfinished"]
    del data["overall"]["unfinished"]
    assert {r["app"]: r["verdict"] for r in data["rows"]}["atomic"].startswith("unfinished")
    data["rows"][0]["verdict"] = "error: interrupted"  # what the bench said before
    first.write_text(json.dumps(data))
    stopped = KernelRun("two_mm", "src/k.cu", "two_mm_k", 1, KEPT, 1.0, 0.1, 70.0,
                        stopped="interrupted", reasons=("no final answer: interrupted",),
                        outcome="no answer")  # fmt: skip
    fir = KernelRun("fir", "src/k.cu", "fir_k", 1, "error", reasons=("interrupted",))
    runs = (
        AppRun("atomic", 1, (KernelRun("atomic", "src/k.cu", "k", 1, PROPOSED, 3.9, 2.4, 116.0,
                                       outcome=PROPOSED),), None, 116.0, "w"),
        AppRun("fir", 1, (fir,), "interrupted", 5.0, "w"),
        AppRun("two_mm", 1, (stopped,), "interrupted", 70.0, "w"),
    )  # fmt: skip
    kernels = [Kernel("atomic", "src/k.cu", "k"), Kernel("fir", "src/k.cu", "fir_k"),
               Kernel("two_mm", "src/k.cu", "two_mm_k")]  # fmt: skip
    rows = rows_for(kernels, runs, 1)
    assert [r.unfinished for r in rows] == [False, True, True]
    assert rows[2].baseline_ms == 0.1 and rows[2].wall_s is None
    second = Report(
        model="search", date="2026-12-02", started_at="2026-12-02T11:00:00", command="second",
        machine={}, options={"runs": 1}, rows=tuple(rows), overall=summarize(rows, 0),
        runs=runs, wall_s=200.0,
    )  # fmt: skip
    assert (second.overall.kernels, second.overall.improved, second.overall.unfinished) == (1, 1, 2)
    assert "Not counted: 2 kernels whose runs the bench stopped" in render_markdown(second)
    path, _ = write_report(second, tmp_path / "s2")
    merged = merge_reports([first, path], tmp_path / "out")
    verdicts = {r.app: r.verdict for r in merged.rows}
    assert verdicts["atomic"] == "improved", "the finished run replaces the stopped one"
    assert verdicts["fir"] == "improved", "a stopped run never replaces a finished one"
    assert verdicts["two_mm"].startswith("unfinished")
    o = merged.overall
    assert (o.kernels, o.improved, o.unfinished, o.failed_runs) == (2, 2, 1, 0)
    assert [(s.rows_kept) for s in merged.sources] == [1, 2]


def test_a_kernel_with_some_runs_stopped_counts_the_others_and_says_how_many() -> None:
    kept = KernelRun("fir", "src/k.cu", "k", 1, KEPT, 1.0, 2.0, 60.0, reasons=("no diff",),
                     outcome=classify(KEPT, ("no diff",)))  # fmt: skip
    runs = [
        AppRun("fir", 1, (kept,), None, 60.0, "w"),
        AppRun("fir", 2, (), "interrupted before it started", 0.0, "w"),
        AppRun("fir", 3, (), "interrupted before it started", 0.0, "w"),
    ]
    (row,) = rows_for([Kernel("fir", "src/k.cu", "k")], runs, 3)
    assert not row.unfinished and row.errors == 0
    assert row.verdict.endswith("(1 of 3 runs counted: the others were stopped)"), row.verdict


def test_the_gpu_each_run_had_survives_a_merge_and_an_older_report_has_none(
    two: tuple[Path, Path], tmp_path: Path
) -> None:
    data = json.loads(two[1].read_text())
    for run, gpu in zip(data["runs"], ("0", "1"), strict=True):
        run["gpu"] = gpu  # as `bench suite --gpus 0,1` writes it
    gpus = tmp_path / "gpus.json"
    gpus.write_text(json.dumps(data))
    old = json.loads(two[0].read_text())
    for run in old["runs"]:
        del run["gpu"]
    del old["interrupted"], old["not_run"]
    (tmp_path / "old.json").write_text(json.dumps(old))
    merged = merge_reports([tmp_path / "old.json", gpus], tmp_path / "out")
    runs = [(r.app, r.gpu) for r in merged.runs]  # fir: the old report's run, then the new one
    assert runs == [("atax", None), ("bfs", "1"), ("fir", None), ("fir", "0")]
    assert not merged.interrupted and merged.not_run == ()
    assert "- GPUs (one app at a time each): bfs: 1, fir: 0\n" in render_markdown(merged)


def test_different_models_or_a_file_that_is_not_a_report_are_refused(
    two: tuple[Path, Path], tmp_path: Path
) -> None:
    other = _write(tmp_path / "s3", "openai:m@http://x/v1", {"fir": []}, "2026-12-03T10:00:00")
    with pytest.raises(MergeError, match="different model specs") as refused:
        merge_reports([two[0], other], tmp_path / "out")
    assert f"{two[0]}: search" in str(refused.value) and f"{other}: openai:m@" in str(refused.value)
    stranger = tmp_path / "stranger.json"
    stranger.write_text('{"rows": []}')
    with pytest.raises(MergeError, match=rf"{stranger}: not a suite report \(model: "):
        merge_reports([two[0], stranger], tmp_path / "out")
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    with pytest.raises(MergeError, match=rf"{broken}: cannot read a suite report"):
        merge_reports([broken], tmp_path / "out")
    with pytest.raises(MergeError, match="cannot read"):
        merge_reports([tmp_path / "missing.json"], tmp_path / "out")


def test_the_merge_command_end_to_end(
    two: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "results"
    args = ["merge", str(two[0]), str(two[1]), "--out", str(out)]
    monkeypatch.setattr(sys, "argv", ["/bin/nvcc-opt", "bench", *args])
    runner = CliRunner()
    done = runner.invoke(bench, args)
    assert done.exit_code == 0, done.output
    (json_path,) = out.glob("suite-merged-*-search.json")
    md = json_path.with_suffix(".md").read_text()
    assert md in done.output and "## What was tried" in md
    data = json.loads(json_path.read_text())
    assert [s["file"] for s in data["sources"]] == [str(two[0]), str(two[1])]
    assert data["command"] == f"nvcc-opt bench merge {two[0]} {two[1]} --out {out}"
    assert data["overall"]["kernels"] == 4 and data["overall"]["improved"] == 1
    second = runner.invoke(bench, ["merge", str(two[0]), "--out", str(out)])
    assert second.exit_code == 0 and len(list(out.glob("suite-merged-*.json"))) == 2
    stranger = tmp_path / "x.json"
    stranger.write_text("[]")
    refused = runner.invoke(bench, ["merge", str(two[0]), str(stranger), "--out", str(out)])
    assert refused.exit_code == 1 and f"{stranger}: not a suite report" in refused.output
    assert runner.invoke(bench, ["merge", "--out", str(out)]).exit_code == 2


OLD_ANSWER = """Search policy: 3.984x measured by benchmark_code with these changes:
- atomic adds onto a few counters privatized per block in shared memory: 3.984x, improved alone
Tried and not kept:
- const __restrict__ on read-only pointer parameters: 1.000x, no improvement"""

NEW_ANSWER = """Search policy: twice the threads per block + -use_fast_math \
(1.061x measured by benchmark_code)
Changes:
- twice the threads per block: 1.061x, improved alone"""


def test_what_changed_names_the_changes_in_the_old_and_the_new_answer_and_keeps_a_models() -> None:
    assert what_changed(OLD_ANSWER) == (
        "atomic adds onto a few counters privatized per block in shared memory"
        " (3.984x measured by benchmark_code)"
    )
    assert what_changed(NEW_ANSWER) == (
        "twice the threads per block + -use_fast_math (1.061x measured by benchmark_code)"
    )
    assert what_changed("Tiled in shared memory.\nThen unrolled.") == "Tiled in shared memory."
    assert what_changed("") == ""
    assert what_changed("x" * 500).endswith("...") and len(what_changed("x" * 500)) == 120


def test_a_committed_report_of_the_older_policy_says_what_changed_once_merged(
    tmp_path: Path,
) -> None:
    """The H200 slice of session c, written when the policy's first line named no change."""
    old = RESULTS / "gpu-2026-12-02-c" / "suite-slice2.json"
    assert load_report(old).rows[0].changed.endswith("with these changes:")
    merged = merge_reports([old], tmp_path)
    rows = {row.app: row for row in merged.rows}
    assert rows["atomic"].changed.startswith("atomic adds onto a few counters privatized")
    assert "with these changes" not in render_markdown(merged)


def test_suite_apps_no_report_measured_are_named_and_the_command_takes_the_suite(
    two: tuple[Path, Path], tmp_path: Path
) -> None:
    """What the merge does not cover is said, not left for the reader to count."""
    merged = merge_reports(two, tmp_path / "out", suite_apps=["atax", "bfs", "fir", "mvt", "adi"])
    assert merged.not_run == ("adi", "mvt")
    md = render_markdown(merged)
    assert "- not measured in any of these reports: adi, mvt" in md
    assert merge_reports(two, tmp_path / "out").not_run == ()
    suite = tmp_path / "suite"
    for app in ("atax", "fir", "zeta"):
        (suite / app).mkdir(parents=True)
        (suite / app / "nvcc-opt.toml").write_text("")
        (suite / app / "CMakeLists.txt").write_text("")
    out = tmp_path / "results"
    runner = CliRunner()
    done = runner.invoke(bench, ["merge", *map(str, two), "--out", str(out), "--suite", str(suite)])
    assert done.exit_code == 0, done.output
    (json_path,) = out.glob("suite-merged-*-search.json")
    assert json.loads(json_path.read_text())["not_run"] == ["zeta"]
    missing = runner.invoke(bench, ["merge", str(two[0]), "--suite", str(tmp_path / "none")])
    assert missing.exit_code == 1 and "no such suite folder" in missing.output
