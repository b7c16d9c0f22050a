"""`nvcc-opt report`: the HTML file from canned bench reports, traces, a real store and a LULESH
table; one file without external references; every figure with data; missing pieces as notes;
bad input as one line naming the file."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import Result

from nvcc_opt.html_report.inputs import InputError
from nvcc_opt.html_report.runs import ToolSet, category_of, tools_from_options
from tests.html_report_fixtures import SIX, TRACE, Page, full_args, inputs, report

__all__ = ["inputs"]  # the fixture

pytest.importorskip("matplotlib")


def test_every_figure_has_data_and_nothing_is_external(inputs: dict[str, Path]) -> None:
    done = report(*full_args(inputs))
    assert done.exit_code == 0, done.output
    assert sorted(p.name for p in inputs["out"].parent.iterdir()) == ["report.html"]
    text = inputs["out"].read_text()
    page = Page(text)
    assert set(page.figures) == {"fig1-plot", "fig2-plot", "fig3-plot", "fig4-plot", "grpo-plot"}
    assert all(n > 0 for n in page.figures.values()), page.figures
    assert all(n > 0 for n in page.marks.values()), page.marks
    refs = page.references()
    assert refs and not [r for r in refs if r.startswith(("http:", "https:", "//", "data:"))]
    assert not [t for t, a in page.tags if t in ("link", "img", "iframe", "object")]
    assert not [a for t, a in page.tags if t == "script" and "src" in a]
    assert "<!DOCTYPE svg" not in text and "url(http" not in text and "@import" not in text
    # Fig. 1: 3 kernels x 2 runs in the full and the no-tools report; the wrong finals at 0
    assert page.figures["fig1-plot"] == 12
    assert 'id="mark-fig1-' in text and "-failed" in text
    # Fig. 2: both traces' benchmark_code calls, the rejected one marked as failed
    assert page.figures["fig2-plot"] == 4 and 'id="mark-fig2-0-failed"' in text
    # Fig. 3: all tools, without compiler_analysis, no tools
    assert "without compiler_analysis" in text and page.figures["fig3-plot"] == 18
    # Fig. 4: two traces, three tools each: a bar segment per trace and tool
    assert page.figures["fig4-plot"] == 6


def test_tables_link_explanations_to_traces(inputs: dict[str, Path]) -> None:
    assert report(*full_args(inputs)).exit_code == 0
    text = inputs["out"].read_text()
    page = Page(text)
    anchors = [r[1:] for r in page.references() if r.startswith("#trace-")]
    assert anchors and set(anchors) <= page.ids()
    # a bench run's trace: embedded, and linked as a file relative to the page
    files = [r for r in page.references() if r.endswith(".json")]
    assert any((inputs["out"].parent / f).resolve() == inputs["traces"] / TRACE for f in files)
    assert "Search policy: __restrict__ on x (1.400x measured)" in text
    # the store's rewrite: its explanation, speedup and the trace kept in the store
    assert "Fewer registers: 1.3x" in text and "1.300x" in text and "rewrite 1: pressure" in text
    # LULESH: the given speedup and the one computed from the times (2.0 / 1.7)
    assert "NVIDIA H200" in text and "1.031x" in text and "1.176x" in text
    # the runs as the paper counts them: the wrong final answers are 0
    assert '<span class="failed">0 (wrong final)</span>' in text
    assert (
        "<td>search (no tools)</td>" in text
        and "<td>search (without compiler_analysis)</td>" in text
    )


def test_missing_pieces_are_sections_that_say_so(tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    done = report("-o", out)
    assert done.exit_code == 0, done.output
    text = out.read_text()
    assert Page(text).figures == {}
    for said in (
        "No bench reports given",
        "No traces given",
        "No LULESH table given",
        "No store given",
    ):
        assert said in text


def test_no_ablation_runs_said(inputs: dict[str, Path]) -> None:
    done = report("--bench", inputs["full"], "-o", inputs["out"])
    assert done.exit_code == 0, done.output
    text = inputs["out"].read_text()
    assert "No ablation runs" in text and "fig3-plot" not in text
    # without --traces, Fig. 2 comes from the report's record of each run's calls
    assert Page(text).figures["fig2-plot"] == 12
    assert "no --traces given" in text


def one_line_naming(done: Result, path: Path) -> str:
    assert done.exit_code == 1
    lines = done.output.strip().splitlines()
    assert len(lines) == 1 and str(path) in lines[0], done.output
    return lines[0]


def test_bad_bench_report(tmp_path: Path) -> None:
    bad = tmp_path / "notes.json"
    bad.write_text('{"hello": 1}')
    line = one_line_naming(report("--bench", bad, "-o", tmp_path / "r.html"), bad)
    assert "not a bench report" in line
    assert not (tmp_path / "r.html").exists()


def test_trace_of_another_version(tmp_path: Path, inputs: dict[str, Path]) -> None:
    bad = inputs["traces"] / "old.json"
    bad.write_text(json.dumps({"format": "nvcc-opt/trace", "version": 2, "meta": {}}))
    line = one_line_naming(report("--traces", inputs["traces"], "-o", tmp_path / "r.html"), bad)
    assert "version 2" in line
    bad.write_text('{"format": "other"}')
    one_line_naming(report("--traces", inputs["traces"], "-o", tmp_path / "r.html"), bad)


def test_bad_lulesh_table_names_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "lulesh.json"
    bad.write_text(
        '{"rows": [\n {"what": "kernel", "baseline_ms": 2.0, "optimized_ms": 1.0},\n'
        ' {"what": "solver", "baseline_ms": 2.0, "optimized_ms": 1.0}\n]}'
    )
    line = one_line_naming(report("--lulesh", bad, "-o", tmp_path / "r.html"), bad)
    assert f"{bad}:3:" in line and "rows.1.what" in line


def test_missing_folder_and_unreadable_store(tmp_path: Path) -> None:
    gone = tmp_path / "nope"
    one_line_naming(report("--traces", gone, "-o", tmp_path / "r.html"), gone)
    one_line_naming(report("--store", gone, "-o", tmp_path / "r.html"), gone)
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not a database at all" * 100)
    before = sorted(tmp_path.iterdir())
    line = one_line_naming(report("--store", junk, "-o", tmp_path / "r.html"), junk)
    assert "not an SQLite database" in line
    assert sorted(tmp_path.iterdir()) == before  # only read: nothing moved aside or written
    assert junk.read_bytes() == b"not a database at all" * 100


def test_without_matplotlib_one_line_how_to_install(
    inputs: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    done = report("--bench", inputs["full"], "-o", inputs["out"])
    assert done.exit_code == 1 and "pip install matplotlib" in done.output
    assert len(done.output.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("options", "command", "names"),
    [
        ({"no_tools": True}, "", frozenset()),
        ({"tools": ["benchmark_code", "search"]}, "", frozenset({"benchmark_code", "search"})),
        ({"tools": "benchmark_code,list_dir"}, "", frozenset({"benchmark_code", "list_dir"})),
        ({"optimize_args": ["--tools=search"]}, "", frozenset({"search"})),
        ({}, "nvcc-opt optimize --tools benchmark_code x.cu:k", frozenset({"benchmark_code"})),
        ({}, "nvcc-opt optimize --parity", None),
    ],
)
def test_tools_named_by_a_report(
    options: dict[str, object], command: str, names: frozenset[str] | None
) -> None:
    found = tools_from_options(options, command)
    assert found is not None and found.names == names


def test_tool_set_labels() -> None:
    assert tools_from_options({}, "nvcc-opt bench suite") is None
    assert ToolSet(frozenset(SIX), "").label(SIX) == "all tools"
    assert ToolSet(frozenset(SIX[1:]), "").label(SIX) == "without benchmark_code"
    assert ToolSet(frozenset(), "").label(SIX) == "no tools"


def test_categories() -> None:
    assert category_of("Apps_PRESSURE") == "Apps"
    assert category_of("Polybench_GEMVER") == "Polybench"
    assert category_of("Polybench_GEMVER", "stencils") == "stencils"  # the row's own
    assert category_of("histogram_kernel") == "all kernels"
    assert category_of("Unknown_THING") == "all kernels"  # only RAJAPerf's groups


def test_reads_the_table_the_lulesh_integration_writes(tmp_path: Path) -> None:
    """The contract between `python -m integration.lulesh table` and the report: its JSON, as
    its own writer makes it, is read with seconds turned into ms and a missing time shown as
    such; a wrong output is said in the table's note."""
    from integration.lulesh import table as lulesh
    from nvcc_opt.html_report.lulesh import load_lulesh
    from nvcc_opt.html_report.table_sections import lulesh_table

    result = {
        "schema": lulesh.SCHEMA, "model": "search", "gpu": "NVIDIA H200",
        "problem": {"size": 120, "iters": 0}, "pairs": 5, "rewrite_id": 1, "correct": False,
        "check_reasons": ["Final Origin Energy differs"],
        "rows": [
            lulesh.row("kernel", "ms", [], [], "no nsys here: kernel time not measured"),
            lulesh.row("application", "s", [3.0, 3.2], [2.9, 2.95], "main-loop time"),
        ],
        "failures": [], "notes": [],
    }  # fmt: skip
    path, _ = lulesh.write(result, tmp_path / "lulesh-table")
    read = load_lulesh(path)
    kernel, app = read.rows
    assert kernel.baseline_ms is None and kernel.ratio is None and "no nsys" in kernel.note
    assert app.baseline_ms == pytest.approx(3100.0) and app.optimized_ms == pytest.approx(2925.0)
    assert read.size == 120 and "OUTPUT DIFFERS: Final Origin Energy differs" in read.note
    html = lulesh_table(read)
    assert "not measured" in html and "3100.000" in html and "1.060x" in html
    bad = json.loads(path.read_text(encoding="utf-8"))
    bad["rows"][1]["unit"] = "minutes"
    path.write_text(json.dumps(bad, indent=2), encoding="utf-8")
    with pytest.raises(
        InputError, match=r"lulesh-table.json:\d+: not a LULESH table \(rows.1.unit"
    ):
        load_lulesh(path)


def test_the_grpo_reward_curve_and_a_bad_step_log(inputs: dict[str, Path], tmp_path: Path) -> None:
    i = inputs
    done = report(*full_args(i))
    assert done.exit_code == 0, done.output
    page = Page(i["out"].read_text(encoding="utf-8"))
    assert page.figures["grpo-plot"] == 12  # four curves of three steps
    assert page.marks.get("grpo-plot", 0) >= 4
    bad = tmp_path / "bad_steps.jsonl"
    good = i["grpo"].read_text(encoding="utf-8")
    bad.write_text(good + '{"step": 4, "rollouts": 12}\n', encoding="utf-8")
    line = one_line_naming(report("--grpo", bad, "-o", tmp_path / "r.html"), bad)
    assert f"{bad}:4: not a GRPO step record" in line
    assert not (tmp_path / "r.html").exists()
