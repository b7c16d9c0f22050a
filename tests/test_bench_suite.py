"""`nvcc-opt bench suite`: the summary math, the table, and one run end to end on a suite of two
host-code apps (tests/fixtures/suite_mini) with a deterministic model served on loopback."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from nvcc_opt.agent.loop import Agent, Limits
from nvcc_opt.agent.model import Reply, ToolCall
from nvcc_opt.agent.scripted import ScriptedModel
from nvcc_opt.agent.trace import TraceWriter
from nvcc_opt.bench.apps import SuiteError, find_apps
from nvcc_opt.bench.optimize_output import kernel_runs, parse_optimize_output, read_tried
from nvcc_opt.bench.process import run_streaming
from nvcc_opt.bench.render import command_line, render_markdown
from nvcc_opt.bench.results import (
    APP_ROW,
    KEPT,
    PROPOSED,
    AppRun,
    Kernel,
    KernelRow,
    KernelRun,
    Report,
    Tried,
    classify,
    geomean,
    is_wrong,
    short_reason,
)
from nvcc_opt.bench.suite import gpu_ids
from nvcc_opt.bench.summary import model_slug, rows_for, summarize, summarize_kernel
from nvcc_opt.cli.bench import bench
from nvcc_opt.toolbox.schema import Toolbox, tool
from nvcc_opt.tools.bench import describe
from nvcc_opt.verify import stats
from nvcc_opt.verify.verdict import Verdict
from tests.conftest import needs_nvcc
from tests.openai_server import Step, call, completion, scripted_server

MINI = Path(__file__).parent / "fixtures" / "suite_mini"


def _run(
    region: str, status: str, speedup: float = 1.0, *reasons: str, run: int = 1, **kw: object
) -> KernelRun:
    return KernelRun(
        "app", "src/k.cu", region, run, status, speedup, reasons=reasons,
        outcome=classify(status, reasons), **kw,
    )  # fmt: skip


# --- classification ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "reasons", "outcome"),
    [
        (PROPOSED, ["faster: 1.4x"], "proposed"),
        (KEPT, ["numbers_differ: checksum 1 vs 2"], "wrong final"),
        (KEPT, ["fresh_inputs --seed 987: numbers_differ: checksum"], "wrong final"),
        (KEPT, ["sanitizer_memcheck: Invalid __global__ read"], "wrong final"),
        (KEPT, ["exit_status: 139 (SIGSEGV)"], "wrong final"),
        (KEPT, ["missing: check: PASS"], "wrong final"),
        (KEPT, ["zeros: output numbers are all zero, the baseline's are not"], "wrong final"),
        (KEPT, ["guard_stream: a new stream (cudaStreamCreate) at line 3"], "guard"),
        (KEPT, ["build_failed: kernel.cu(12): error: identifier x"], "build failed"),
        (KEPT, ["ceiling: 40.00x is above the 10x sanity ceiling", "faster"], "held for review"),
        (KEPT, ["no final answer: limit:turns"], "no answer"),
        (KEPT, ["no difference: p = 0.4", "sanitizer: not run (no GPU)"], "no improvement"),
        (KEPT, ["the final answer is the region unchanged: nothing to verify"], "no improvement"),
        ("error", ["configure failed: CMake Error"], "error"),
    ],
)
def test_what_became_of_a_final_answer(status: str, reasons: list[str], outcome: str) -> None:
    assert classify(status, reasons) == outcome


def test_a_note_that_the_sanitizer_did_not_run_is_not_a_wrong_final() -> None:
    assert not is_wrong(["sanitizer: not run (compute-sanitizer or a GPU is missing here)"])
    assert not is_wrong(["build_failed: error", "untimed: no comparison was made"])
    assert is_wrong(["no difference", "file_differs: out.bin (first at byte 3)"])


# --- summary math ------------------------------------------------------------------------


def test_geomean() -> None:
    assert geomean([2.0, 1.0, 1.0, 0.5]) == pytest.approx(1.0)
    assert geomean([4.0, 1.0]) == pytest.approx(2.0)
    assert geomean([]) == 1.0
    with pytest.raises(ValueError):
        geomean([1.0, 0.0])


def test_a_kernel_takes_its_best_verified_run_and_the_median_wall_time() -> None:
    runs = [
        _run(
            "k",
            PROPOSED,
            1.30,
            "faster",
            explanation="Tiled in shared memory.\nMore.",
            wall_s=100.0,
            baseline_ms=2.0,
        ),  # fmt: skip
        _run("k", PROPOSED, 1.10, "faster", run=2, explanation="other", wall_s=300.0),
        _run("k", KEPT, 1.0, "numbers_differ: x", run=3, wall_s=50.0, baseline_ms=4.0),
    ]
    row = summarize_kernel(Kernel("app", "src/k.cu", "k"), runs, 3)
    assert row.best_speedup == 1.30 and row.improved and row.proposed == 2
    assert row.changed == "Tiled in shared memory."
    assert row.wall_s == 100.0 and row.baseline_ms == 3.0
    assert row.wrong_finals == 1 and row.verdict == "improved (1 wrong final)"


def test_a_kept_or_small_or_failed_kernel_counts_one() -> None:
    kept = summarize_kernel(Kernel("a", "f", "k"), [_run("k", KEPT, 1.0, "no difference")], 1)
    assert kept.best_speedup == 1.0 and not kept.improved
    assert kept.verdict == "kept: no improvement" and kept.changed == ""
    no_answer = _run("k", KEPT, 1.0, "no final answer: limit:turns", stopped="limit:turns")
    assert summarize_kernel(Kernel("a", "f", "k"), [no_answer], 1).verdict == (
        "kept: no answer (limit:turns)"
    )
    small = summarize_kernel(Kernel("a", "f", "k"), [_run("k", PROPOSED, 1.04, "faster")], 1)
    assert not small.improved and small.verdict == "proposed, below 5%"
    wrong = summarize_kernel(Kernel("a", "f", "k"), [_run("k", KEPT, 1.0, "nonfinite: nan")], 1)
    assert wrong.verdict == "kept: wrong final (nonfinite)" and wrong.wrong_finals == 1
    failed = summarize_kernel(
        Kernel("a", "f", "k"), [_run("k", "error", 1.0, "build failed: nvcc error")], 1
    )
    assert failed.verdict == "error: build failed: nvcc error" and failed.wall_s is None


def test_one_failed_run_of_several_is_named_in_the_verdict() -> None:
    runs = [_run("k", PROPOSED, 2.0, "faster"), _run("k", "error", 1.0, "timeout", run=2)]
    row = summarize_kernel(Kernel("app", "src/k.cu", "k"), runs, 2)
    assert row.verdict == "improved (1 of 2 runs failed: timeout)" and row.errors == 1


def _row(speedup: float, wall: float | None, wrong: int = 0) -> KernelRow:
    return KernelRow(
        "app", "f", "k", 1.0, speedup, speedup >= 1.05, "", wall, "", 1, 0, wrong, 0
    )  # fmt: skip


def test_overall_share_geomean_wrong_finals_and_targets() -> None:
    rows = [_row(2.0, 100), _row(1.5, 200), _row(1.05, 500), _row(1.0, 600), _row(1.0, None, 1)]
    overall = summarize(rows, failed_runs=1)
    assert overall.kernels == 5 and overall.improved == 3
    assert overall.share_improved == pytest.approx(0.6)
    assert overall.geomean_speedup == pytest.approx((2.0 * 1.5 * 1.05) ** (1 / 5))
    assert overall.wrong_finals == 1 and overall.median_wall_s == 350.0
    assert overall.failed_runs == 1
    assert list(overall.targets.values()) == [True, False, False]
    assert summarize([]).targets["no wrong finals"]
    assert not any(list(summarize([]).targets.values())[:2])


def test_rows_cover_every_scanned_kernel_even_when_its_app_failed() -> None:
    kernels = [Kernel("a", "src/k.cu", "one"), Kernel("a", "src/k.cu", "two")]
    good = _run("one", PROPOSED, 1.5, "faster")
    runs = [
        AppRun(
            "a",
            1,
            (KernelRun("a", "src/k.cu", "one", 1, PROPOSED, 1.5, outcome="proposed"),),
            None,
            9.0,
            "w",
        ),  # fmt: skip
        AppRun("b", 1, (), "configure failed: CMake Error at CMakeLists.txt:2", 1.0, "w"),
    ]
    assert good.outcome == "proposed"
    rows = rows_for(kernels, runs, 1)
    assert [(r.app, r.region) for r in rows] == [("a", "one"), ("a", "two"), ("b", APP_ROW)]
    assert rows[0].improved and rows[1].verdict.startswith("error: not optimized")
    assert rows[2].verdict == "error: configure failed: CMake Error at CMakeLists.txt:2"


def test_markdown_has_the_table_the_overall_line_and_escapes_cells() -> None:
    rows = [
        KernelRow(
            "fir",
            "src/kernel.cu",
            "fir_kernel",
            1.234,
            1.5,
            True,
            "a | b",
            61.0,
            "improved",
            1,
            1,
            0,
            0,
        ),  # fmt: skip
        _row(1.0, None),
    ]
    report = Report(
        model="openai:m@http://x/v1", date="2026-12-02", started_at="2026-12-02T10:00:00",
        command="nvcc-opt bench suite --model m", machine={"host": "h", "gpu": "none"},
        options={"runs": 1}, rows=tuple(rows), overall=summarize(rows),
    )  # fmt: skip
    text = render_markdown(report)
    assert "| app | kernel | baseline ms | best speedup | improved | what changed |" in text
    assert "| fir | fir_kernel | 1.234 | 1.500x | yes | a \\| b | 61.0 | improved |" in text
    assert "| app | k | 1.000 | 1.000x | no |  | - |  |" in text
    assert "1 of 2 kernels improved" in text and "(50.0%)" in text
    assert "geometric mean speedup 1.225x" in text and "wrong finals: 0" in text
    assert "improved share >= 60%: NOT met" in text and "no wrong finals: met" in text


@pytest.mark.parametrize(
    ("spec", "slug"),
    [
        ("openai:Qwen/Qwen2.5-7B-Instruct@http://127.0.0.1:8000/v1", "openai-Qwen2.5-7B-Instruct"),
        ("openai:scripted@http://127.0.0.1:4321/v1?key_env=K", "openai-scripted"),
        ("hf:/models/llama/#q4 model.gguf", "hf-llama"),
        ("smollm2", "smollm2"),
        ("search?budget_s=30", "search"),
    ],
)
def test_model_slug(spec: str, slug: str) -> None:
    assert model_slug(spec) == slug


def test_the_json_after_the_progress_lines() -> None:
    out = (
        "[k] src/k.cu:3: optimizing\n[k] tool call 1: x [1]\n[other] cannot optimize: no tree\n"
        + json.dumps([{"region": "k", "status": PROPOSED}], indent=2)
        + "\n"
    )
    results, cannot = parse_optimize_output(out)
    assert results == [{"region": "k", "status": PROPOSED}]
    assert cannot == {"other": "no tree"}
    assert parse_optimize_output("nothing to optimize\n[]\n") == ([], {})
    assert parse_optimize_output("[k] optimizing\nTraceback\n")[0] is None


def test_a_failed_optimize_is_named_by_its_closing_error_line() -> None:
    from nvcc_opt.bench.optimize_output import optimize_failure

    stderr = (
        "[k] src/k.cu:3: optimizing\n[k] tool call 3: error: nvcc failed\n"
        "Error: cannot optimize the region: the original could not be run or timed here\n"
    )
    assert optimize_failure(stderr) == (
        "Error: cannot optimize the region: the original could not be run or timed here"
    )
    assert optimize_failure("", "Traceback (most recent call last):\nKeyError: 'x'\n") == (
        "KeyError: 'x'"
    )


def test_the_json_alone_on_stdout_and_the_progress_on_stderr() -> None:
    stderr = "[k] src/k.cu:3: optimizing\n[other] cannot optimize: no tree\n"
    results, cannot = parse_optimize_output('[\n {"region": "k"}\n]\n', stderr)
    assert results == [{"region": "k"}] and cannot == {"other": "no tree"}


def test_the_command_line_is_written_as_nvcc_opt() -> None:
    assert command_line(["/x/bin/nvcc-opt", "bench", "suite", "--model", "a b"]) == (
        "nvcc-opt bench suite --model 'a b'"
    )
    assert command_line(["-c", "suite", "--runs", "2"]) == "nvcc-opt bench suite --runs 2"


def test_a_failure_is_named_by_its_first_error() -> None:
    cmake = (
        "CMake Error at CMakeLists.txt:1 (message):\n  zeta is broken\n\n-- Configuring incomplete"
    )
    assert short_reason(cmake) == "CMake Error at CMakeLists.txt:1 (message): zeta is broken"
    assert short_reason("a\nb\nlast words\n") == "last words"
    crash = (
        '[k] optimizing\nTraceback (most recent call last):\n  File "x.py", line 3, in f\n'
        "    g()  # the error if unset\n    ^^^\nValueError: '{work}/out' uses {work}\n"
    )
    assert short_reason(crash) == "ValueError: '{work}/out' uses {work}"
    assert short_reason("") == "(no output)"
    assert len(short_reason("error: " + "x" * 500)) == 160


def test_a_run_past_its_timeout_is_interrupted_and_what_it_printed_is_kept(tmp_path: Path) -> None:
    lines: list[str] = []
    started = time.monotonic()
    said: list[str] = []
    ran = run_streaming(
        ["sh", "-c", "echo first; echo said >&2; sleep 30; echo never"],
        cwd=tmp_path,
        env=dict(os.environ),
        timeout_s=1.0,
        on_line=lines.append,
        on_err_line=said.append,
    )
    assert ran.timed_out and lines == ["first"] and ran.stdout == "first\n"
    assert said == ["said"] and ran.stderr == "said\n"
    assert time.monotonic() - started < 15


# --- what was tried: the traces ----------------------------------------------------------


class Bench:
    """benchmark_code answering as the real one describes a verdict: faster, then rejected."""

    def __init__(self) -> None:
        base, cand = stats.summarize([2.0, 2.1, 2.0]), stats.summarize([1.6, 1.6, 1.7])
        faster = stats.Comparison(base, cand, 1.25, 1.2, 1.3, 0.01, "faster", "faster")
        self.verdicts = [
            Verdict(True, True, faster, "improved", ("faster: 1.250x",)),
            Verdict(True, False, None, "rejected", ("numbers_differ: checksum 1 vs 2",)),
        ]

    @tool
    def benchmark_code(self, code: str, compile_args: list[str] | None = None) -> str:
        """Time a candidate.

        Args:
            code: The region's new text.
            compile_args: Extra nvcc flags.
        """
        return describe(self.verdicts.pop(0))


def _bench_call(n: int, text: str, **arguments: object) -> Reply:
    return Reply(text, (ToolCall(f"c{n}", "benchmark_code", json.dumps(arguments)),))


def _trace(path: Path) -> Path:
    """A trace written by the agent loop: two benchmark_code calls, then a final answer."""
    model = ScriptedModel(
        [
            _bench_call(1, "Trying __restrict__ on x alone.\nMore words.", code="a"),
            _bench_call(2, "Trying -use_fast_math alone.", code="b", compile_args=["-O3"]),
            Reply(json.dumps({"final_code": "a", "explanation": "Kept __restrict__."})),
        ]
    )
    toolbox = Toolbox.from_objects(Bench())
    Agent(model, toolbox, ["benchmark_code"], Limits(), TraceWriter(path)).run("s", "u")
    return path


def test_what_was_tried_is_read_from_the_trace_the_loop_wrote(tmp_path: Path) -> None:
    tried, unreadable = read_tried(_trace(tmp_path / "t.json"), 2)
    assert unreadable == ""
    assert tried == (
        Tried(2, "Trying __restrict__ on x alone.", (), "improved", 1.25, "faster: 1.250x"),
        Tried(2, "Trying -use_fast_math alone.", ("-O3",), "rejected", 1.0,
              "numbers_differ: checksum 1 vs 2"),
    )  # fmt: skip


def test_a_missing_or_foreign_trace_is_named_in_the_report_not_fatal(tmp_path: Path) -> None:
    (tmp_path / "other.json").write_text('{"format": "something else"}')
    results = [
        {"file": "k.cu", "region": "k", "status": KEPT, "reasons": ["no difference"],
         "trace": str(tmp_path / "gone.json"), "explanation": "Nothing helped."},
        {"file": "k.cu", "region": "j", "status": KEPT, "trace": str(tmp_path / "other.json")},
    ]  # fmt: skip
    gone, other = kernel_runs("app", 1, results, tmp_path, tmp_path)
    assert gone.trace == "gone.json" and gone.tried == () and gone.explanation == "Nothing helped."
    assert "gone.json: cannot read a trace" in gone.trace_error
    assert "not an nvcc-opt/trace file" in other.trace_error
    row = summarize_kernel(Kernel("app", "k.cu", "k"), [gone], 1)
    assert row.trace_errors == (f"trace unreadable: {gone.trace_error}",)
    assert row.explanation == "Nothing helped."
    report = Report("search", "d", "d", "c", {}, {}, (row,), summarize([row]))
    assert f"- trace unreadable: {tmp_path}/gone.json: cannot read a trace" in (
        render_markdown(report)
    )


def test_the_markdown_says_what_was_tried_per_kernel_and_run(tmp_path: Path) -> None:
    trace = _trace(tmp_path / "state" / "traces" / "t.json")
    result = {"file": "k.cu", "region": "k", "status": PROPOSED, "speedup": 1.2,
              "trace": str(trace), "explanation": "Kept __restrict__.\nDetails."}  # fmt: skip
    runs = [*kernel_runs("app", 1, [result], tmp_path, tmp_path)]
    runs += kernel_runs("app", 2, [{**result, "trace": str(tmp_path / "none.json")}], tmp_path,
                        tmp_path)  # fmt: skip
    assert runs[0].trace == "state/traces/t.json"
    row = summarize_kernel(Kernel("app", "k.cu", "k"), runs, 2)
    assert len(row.tried) == 2 and row.explanation == "Kept __restrict__.\nDetails."
    report = Report("search", "d", "d", "c", {}, {"runs": 2}, (row,), summarize([row]))
    text = render_markdown(report)
    section = text.split("## What was tried\n", 1)[1]
    assert section.splitlines()[:7] == [
        "",
        "### app / k",
        "",
        "Final answer: Kept __restrict__.",
        "",
        "- run 1: Trying __restrict__ on x alone.: 1.250x, improved",
        "- run 1: Trying -use_fast_math alone. [-O3]: -, rejected "
        "(numbers_differ: checksum 1 vs 2)",
    ]
    assert "- run 2: trace unreadable: " in section


# --- apps and the command's errors -------------------------------------------------------


def _app(folder: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / "nvcc-opt.toml").write_text('[build]\ndir = "build"\n')
    (folder / "CMakeLists.txt").write_text("project(x)\n")
    return folder


def test_apps_are_sorted_or_taken_in_the_order_named(tmp_path: Path) -> None:
    for name in ("zeta", "alpha", "mid"):
        _app(tmp_path / name)
    (tmp_path / "notes").mkdir()
    assert [p.name for p in find_apps(tmp_path)] == ["alpha", "mid", "zeta"]
    named = find_apps(tmp_path, ["zeta", "alpha", "zeta"])  # a slice runs what it wants first
    assert [p.name for p in named] == ["zeta", "alpha"]
    with pytest.raises(RuntimeError, match="no app named nope"):
        find_apps(tmp_path, ["nope"])


def test_the_command_refuses_a_missing_suite_no_apps_and_an_unknown_model(tmp_path: Path) -> None:
    runner = CliRunner()
    missing = runner.invoke(bench, ["suite", "--suite", str(tmp_path / "no"), "--model", "smollm2"])
    assert missing.exit_code == 2 and "no such folder" in missing.output
    empty = runner.invoke(bench, ["suite", "--suite", str(tmp_path), "--model", "smollm2"])
    assert empty.exit_code == 1 and "no apps" in empty.output
    model = runner.invoke(bench, ["suite", "--suite", str(tmp_path), "--model", "nope:x"])
    assert model.exit_code == 2 and "unknown model spec" in model.output
    assert not (tmp_path / "benchmarks").exists()


# --- end to end --------------------------------------------------------------------------


def _answer(code: str, explanation: str) -> str:
    body = {"final_code": code, "explanation": explanation}
    return "Done.\n```json\n" + json.dumps(body) + "\n```"


@needs_nvcc
@pytest.mark.slow
@pytest.mark.parametrize("gpu", [None, "5"])  # a GPU id the host-only apps never touch
def test_the_bench_end_to_end(
    tmp_path: Path, gpu: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NVCC_OPT_CREDIT_UNAVAILABLE", "1")  # no GPU here: credit what it lacks
    suite = tmp_path / "suite"
    shutil.copytree(MINI, suite)
    broken = _app(suite / "zeta")  # sorted last: fails to configure, the bench goes on
    (broken / "CMakeLists.txt").write_text('message(FATAL_ERROR "zeta is broken")\n')
    work = (MINI / "alpha" / "src" / "work.cu").read_text().split("// @optimize\n", 1)[1]
    half = work.replace("++p)", "p += 2)")  # every pass computes the same sum: half of them
    scale = (MINI / "beta" / "src" / "scale.cu").read_text().split("// @optimize\n", 1)[1]
    wrong = scale.replace("w * x[i]", "x[i]")
    trying = call("c1", "benchmark_code", json.dumps({"code": half}))
    script = [
        Step(completion("Trying half the passes.", tool_calls=[trying])),
        Step(completion(_answer(half, "Half the passes: each computes the same sum.\nMore."))),
        Step(completion(_answer(wrong, "Dropped the weight."))),
    ]
    out = tmp_path / "results"
    user_store = tmp_path / "user" / "store.db"
    env = {
        **os.environ,
        "NVCC_OPT_STORE": str(user_store),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
    }
    with scripted_server(script, lifetime_s=300) as server:
        spec = f"openai:scripted@{server.base_url}"
        done = subprocess.run(
            [
                sys.executable,
                "-c",
                "from nvcc_opt.cli.bench import bench; bench()",
                "suite",
                "--suite",
                str(suite),
                "--model",
                spec,
                "--out",
                str(out),
                "--turns",
                "3",
                "--time",
                "120",
                "--cmake-arg=-DCMAKE_CUDA_ARCHITECTURES=90",
                *(["--gpus", gpu] if gpu else []),
            ],  # fmt: skip
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        requests = len(server.requests)
    assert done.returncode == 0, done.stdout + done.stderr
    assert requests == 3
    region = "accumulate" if gpu is None else f"accumulate gpu {gpu}"  # optimize's --gpus
    assert f"[alpha run 1/1] [{region}] " in done.stderr and "[zeta run 1/1] error:" in done.stderr
    assert [r["gpu"] for r in json.loads(next(out.glob("*.json")).read_text())["runs"]] == [gpu] * 3
    assert '"rewrite_id"' not in done.stderr, "the JSON goes to the report, not the progress"
    (json_file,) = out.glob("suite-*-openai-scripted.json")
    md_file = json_file.with_suffix(".md")
    assert md_file.read_text() in done.stdout
    report = json.loads(json_file.read_text())
    rows = {row["app"]: row for row in report["rows"]}
    assert [row["region"] for row in report["rows"]] == ["accumulate", "weighted_sum", APP_ROW]
    alpha, beta, zeta = rows["alpha"], rows["beta"], rows["zeta"]
    assert alpha["improved"] and alpha["best_speedup"] > 1.5 and alpha["verdict"] == "improved"
    assert alpha["changed"] == "Half the passes: each computes the same sum."
    assert alpha["baseline_ms"] > 0 and alpha["wall_s"] > 0 and alpha["file"] == "src/work.cu"
    assert not beta["improved"] and beta["best_speedup"] == 1.0
    assert beta["verdict"] == "kept: wrong final (numbers_differ)" and beta["wrong_finals"] == 1
    assert beta["explanation"] == "Dropped the weight." and beta["tried"] == []
    (tried,) = alpha["tried"]
    assert tried["what"] == "Trying half the passes." and tried["verdict"] == "improved"
    assert tried["speedup"] > 1.5 and alpha["trace_errors"] == []
    (alpha_run,) = [k for r in report["runs"] for k in r["kernels"] if k["app"] == "alpha"]
    assert alpha_run["tried"] == [tried] and alpha_run["trace"].startswith("alpha/run-1/state/")
    work = Path(report["options"]["work"])
    assert (work / alpha_run["trace"]).is_file()
    assert "## What was tried" in md_file.read_text()
    assert "- Trying half the passes.: " in md_file.read_text()
    assert (
        zeta["verdict"].startswith("error: configure failed:")
        and "zeta is broken" in (zeta["verdict"])
    )
    statuses = [(k["app"], k["status"]) for r in report["runs"] for k in r["kernels"]]
    assert statuses == [("alpha", PROPOSED), ("beta", KEPT)]
    overall = report["overall"]
    assert overall["kernels"] == 3 and overall["improved"] == 1 and overall["wrong_finals"] == 1
    assert overall["geomean_speedup"] == pytest.approx(alpha["best_speedup"] ** (1 / 3))
    assert overall["failed_runs"] == 1 and overall["median_wall_s"] > 0
    assert report["command"].startswith(f"nvcc-opt bench suite --suite {suite} --model ")
    assert report["command"].endswith(
        "--cmake-arg=-DCMAKE_CUDA_ARCHITECTURES=90" + (f" --gpus {gpu}" if gpu else "")
    )
    assert report["machine"]["host"] and report["model"] == spec
    assert not user_store.exists(), "the user's store is never touched"
    assert not (suite / "alpha" / "build").exists(), "the suite's folders are never built in"


# --- --gpus: one app per GPU at once -------------------------------------------------------

# nvcc-opt's stand-in at the bench's process edge (its launcher: optimize's argv[0]). `optimize`
# logs "start|end APP GPU ARGS" (GPU: its CUDA_VISIBLE_DEVICES), waits until FAKE_PARTNERS
# optimizes run at once (or every app started), lingers as long as the app's `linger` file says,
# sleeps for ever where the app has a `hang` file, and answers region k as optimize --json does;
# on SIGINT it answers k as stopped ("interrupted", no final answer) and exits, as optimize does.
FAKE_NVCC_OPT = """\
import json, os, signal, sys, time
from pathlib import Path

log = Path(os.environ["FAKE_LOG"])
app, gpu = Path.cwd().name, os.environ.get("CUDA_VISIBLE_DEVICES", "-")


def event(kind):
    with log.open("a") as f:
        f.write(f"{kind} {app} {gpu} {' '.join(sys.argv[1:])}\\n")


def answer(*_):
    k = {"file": str(Path("src/k.cu").resolve()), "region": "k", "status": "original kept",
         "reasons": ["no difference"], "wall_s": 0.5, "baseline_ms": 1.0}
    if _:  # stopped in the middle of k, as optimize reports a region it could not finish
        k.update(stopped="interrupted", reasons=["no final answer: interrupted"])
    print(json.dumps([k], indent=2), flush=True)
    event("end")
    sys.exit(130 if _ else 0)


if sys.argv[1] != "optimize":
    os.execvp(sys.argv[1], sys.argv[1:])
signal.signal(signal.SIGINT, answer)
event("start")
print("[k] src/k.cu:2: optimizing", file=sys.stderr, flush=True)
deadline = time.monotonic() + 20
partners, apps = int(os.environ["FAKE_PARTNERS"]), int(os.environ["FAKE_APPS"])
while time.monotonic() < deadline:
    kinds = [line.split()[0] for line in log.read_text().splitlines()]
    active = kinds.count("start") - kinds.count("end")
    if active >= partners or kinds.count("start") == apps:
        break
    time.sleep(0.05)
time.sleep(float(Path("linger").read_text()) if Path("linger").exists() else 0)
while Path("hang").exists():
    time.sleep(0.1)
answer()
"""

# configure and build write down the CUDA_VISIBLE_DEVICES they saw, in the build tree
FAKE_CMAKE = """\
cmake_minimum_required(VERSION 3.18)
project(fake NONE)
file(WRITE ${CMAKE_BINARY_DIR}/configure-gpu.txt "$ENV{CUDA_VISIBLE_DEVICES}")
add_custom_target(gpu ALL COMMAND sh -c "printf %s \\"$CUDA_VISIBLE_DEVICES\\" >build-gpu.txt"
                  WORKING_DIRECTORY ${CMAKE_BINARY_DIR} VERBATIM)
"""


def _fake_suite(tmp_path: Path, apps: str, **files: str) -> Path:
    """A suite of host-only apps (no compiler needed) named by the letters of `apps`, each with
    the tagged region k; `files` maps "APP/NAME" to a file's text (linger, hang, more regions)."""
    suite = tmp_path / "suite"
    for name in apps:
        app = _app(suite / name)
        (app / "CMakeLists.txt").write_text(FAKE_CMAKE)
        (app / "src").mkdir()
        (app / "src" / "k.cu").write_text("// @optimize\nint k() { return 1; }\n")
    for where, text in files.items():
        (suite / where).write_text(text)
    return suite


def _fake_bench(
    tmp_path: Path, suite: Path, *args: str, partners: int = 1, **env: str
) -> subprocess.Popen[str]:
    """`nvcc-opt bench suite` in a process of its own, optimizing through FAKE_NVCC_OPT."""
    fake = tmp_path / "fake-nvcc-opt"
    fake.write_text(f"#!{sys.executable}\n{FAKE_NVCC_OPT}")
    fake.chmod(0o755)
    code = (
        "import os, signal; import nvcc_opt.cli.bench as cli;"
        " signal.signal(signal.SIGINT, signal.default_int_handler);"
        " cli.launcher_path = lambda: os.environ['FAKE_LAUNCHER']; cli.bench()"
    )
    environ = {
        **os.environ, "FAKE_LAUNCHER": str(fake), "FAKE_LOG": str(tmp_path / "events.log"),
        "FAKE_PARTNERS": str(partners), "FAKE_APPS": str(len(find_apps(suite))), **env,
    }  # fmt: skip
    (tmp_path / "events.log").write_text("")
    argv = [sys.executable, "-c", code, "suite", "--suite", str(suite), "--model", "search",
            "--out", str(tmp_path / "results"), *args]  # fmt: skip
    return subprocess.Popen(
        argv, cwd=tmp_path, env=environ, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )


def _finish(
    bench_process: subprocess.Popen[str], out: Path, returncode: int = 0
) -> tuple[dict[str, Any], str, str]:
    """The report's JSON and Markdown under `out` and the progress, once the bench ended with
    `returncode`."""
    stdout, stderr = bench_process.communicate(timeout=120)
    assert bench_process.returncode == returncode, stdout + stderr
    (json_file,) = out.glob("suite-*.json")
    return json.loads(json_file.read_text()), json_file.with_suffix(".md").read_text(), stderr


def _events(tmp_path: Path) -> list[tuple[str, str, str, list[str]]]:
    """(start|end, app, CUDA_VISIBLE_DEVICES, optimize's arguments) in the order they happened."""
    found = []
    for line in (tmp_path / "events.log").read_text().splitlines():
        kind, app, gpu, *args = line.split()
        found.append((kind, app, gpu, args))
    return found


def _most_at_once(events: Sequence[tuple[str, str, str, list[str]]]) -> int:
    """The most optimize runs in flight together; asserts that those never share a GPU."""
    active: dict[str, str] = {}
    most = 0
    for kind, app, gpu, _ in events:
        if kind == "start":
            assert gpu not in active.values(), f"{app} shares GPU {gpu} with {active}"
            active[app] = gpu
            most = max(most, len(active))
        else:
            del active[app]
    return most


def test_apps_run_at_once_one_per_gpu_and_report_in_order(tmp_path: Path) -> None:
    suite = _fake_suite(tmp_path, "abcd", **{"a/linger": "5"})  # a ends after b, c, d (with
    # room for a loaded machine: b, c and d run one after another on the other GPU)
    report, md, stderr = _finish(
        _fake_bench(tmp_path, suite, "--gpus", "0,1", partners=2), tmp_path / "results"
    )
    events = _events(tmp_path)
    assert _most_at_once(events) == 2, events  # at once, never more than the GPUs
    ends = [app for kind, app, _, _ in events if kind == "end"]
    assert ends != sorted(ends) and ends[-1] == "a", events
    for kind, _, gpu, args in events:
        assert kind == "end" or args[-2:] == ["--gpus", gpu], "optimize's own runs: same GPU"
    runs = report["runs"]
    assert [(r["app"], r["run"]) for r in runs] == [("a", 1), ("b", 1), ("c", 1), ("d", 1)]
    assert [row["app"] for row in report["rows"]] == ["a", "b", "c", "d"]
    assert {r["gpu"] for r in runs} == {"0", "1"} and report["options"]["gpus"] == ["0", "1"]
    for r in runs:  # configure, build and optimize all saw the run's GPU
        build = Path(r["work"]) / r["app"] / "build"
        assert (build / "configure-gpu.txt").read_text() == r["gpu"]
        assert (build / "build-gpu.txt").read_text() == r["gpu"]
        started = [g for kind, app, g, _ in events if kind == "start" and app == r["app"]]
        assert started == [r["gpu"]] and r["error"] is None
    assert all(row["verdict"] == "kept: no improvement" for row in report["rows"])
    where = ", ".join(f"{r['app']}: {r['gpu']}" for r in runs)
    assert f"- GPUs (one app at a time each): {where}\n" in md
    progress = [line for line in stderr.splitlines() if not line.startswith("written: ")]
    assert progress and all(line[:11] in {f"[{a} run 1/1]" for a in "abcd"} for line in progress)


def test_without_gpus_one_app_at_a_time_in_the_callers_environment(tmp_path: Path) -> None:
    suite = _fake_suite(tmp_path, "abc")
    bench_process = _fake_bench(tmp_path, suite, CUDA_VISIBLE_DEVICES="inherited-7")
    report, md, stderr = _finish(bench_process, tmp_path / "results")
    events = _events(tmp_path)
    assert _most_at_once(events) == 1
    assert [(kind, app) for kind, app, _, _ in events] == [
        ("start", "a"), ("end", "a"), ("start", "b"), ("end", "b"), ("start", "c"), ("end", "c"),
    ]  # fmt: skip
    assert {gpu for _, _, gpu, _ in events} == {"inherited-7"}
    assert all("--gpus" not in args for _, _, _, args in events)
    assert [r["gpu"] for r in report["runs"]] == [None, None, None]
    assert report["options"]["gpus"] == [] and not report["interrupted"]
    assert "GPUs" not in md and "[a run 1/1] configuring\n" in stderr
    assert "[a run 1/1] [k] src/k.cu:2: optimizing" in stderr


def test_a_kernel_its_run_timeout_stopped_counts_as_a_timeout_not_as_unfinished(
    tmp_path: Path,
) -> None:
    """--timeout sends optimize the same SIGINT as Ctrl-C: the kernel it stopped is the bench's
    finding about the model (too slow), so it stays in the numbers."""
    suite = _fake_suite(tmp_path, "ab", **{"b/hang": ""})
    report, md, _ = _finish(_fake_bench(tmp_path, suite, "--timeout", "2"), tmp_path / "results")
    assert not report["interrupted"]
    (b_run,) = [r for r in report["runs"] if r["app"] == "b"]
    assert b_run["error"] == "timeout after 2 s"
    assert [k["stopped"] for k in b_run["kernels"]] == ["timeout"]
    row = next(row for row in report["rows"] if row["app"] == "b")
    assert not row["unfinished"] and row["verdict"] == "kept: no answer (timeout)", row
    overall = report["overall"]
    assert (overall["kernels"], overall["unfinished"], overall["failed_runs"]) == (2, 0, 1)


def test_no_run_starts_after_start_within_and_the_report_names_the_apps_left(
    tmp_path: Path,
) -> None:
    """a takes 1.5 s; b's turn comes after the 1 s allowed: b and c are not started, and the
    bench ends normally (nothing was cut short)."""
    suite = _fake_suite(tmp_path, "abc", **{"a/linger": "1.5"})
    bench_process = _fake_bench(tmp_path, suite, "--start-within", "1")
    report, md, _ = _finish(bench_process, tmp_path / "results")
    assert [app for kind, app, _, _ in _events(tmp_path) if kind == "start"] == ["a"]
    assert not report["interrupted"] and report["not_run"] == ["b", "c"]
    assert [r["app"] for r in report["runs"]] == ["a"] and report["options"]["start_within_s"] == 1
    assert "- not started (their turn came after --start-within 1 s): b, c\n" in md
    assert report["overall"]["kernels"] == 1 and report["overall"]["failed_runs"] == 0


@pytest.mark.parametrize("gpus", [(), ("--gpus", "3")])
def test_ctrl_c_stops_the_runs_in_flight_and_reports_what_finished(
    tmp_path: Path, gpus: tuple[str, ...]
) -> None:
    regions = "// @optimize\nint k() { return 1; }\n// @optimize\nint j() { return 2; }\n"
    suite = _fake_suite(tmp_path, "abc", **{"b/hang": "", "b/src/k.cu": regions})
    bench_process = _fake_bench(tmp_path, suite, *gpus)
    deadline = time.monotonic() + 60
    while ("start", "b") not in [(k, a) for k, a, _, _ in _events(tmp_path)]:
        assert time.monotonic() < deadline and bench_process.poll() is None
        time.sleep(0.1)
    bench_process.send_signal(signal.SIGINT)
    report, md, stderr = _finish(bench_process, tmp_path / "results", 130)
    assert report["interrupted"] and report["not_run"] == ["c"]
    assert [(r["app"], r["error"]) for r in report["runs"]] == [("a", None), ("b", "interrupted")]
    rows = {(row["app"], row["region"]): row["verdict"] for row in report["rows"]}
    unfinished = "unfinished: the bench was stopped before this kernel's runs ended (not counted)"
    assert rows == {("a", "k"): "kept: no improvement", ("b", "k"): unfinished,
                    ("b", "j"): unfinished}  # fmt: skip
    overall = report["overall"]  # the stopped kernels measured nothing: not failures, not counted
    assert (overall["kernels"], overall["unfinished"], overall["failed_runs"]) == (1, 2, 0)
    assert "Not counted: 2 kernels whose runs the bench stopped before they ended." in md
    stopped = "- interrupted: the runs in flight were stopped (their rows say so); apps not run"
    assert f"{stopped}: c\n" in md
    assert "interrupted: stopping the runs in flight" in stderr


def test_gpus_are_named_or_listed_by_nvidia_smi(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert gpu_ids(None) == () and gpu_ids(" 0, 2 ") == ("0", "2")
    assert gpu_ids("GPU-5e1f") == ("GPU-5e1f",)
    with pytest.raises(SuiteError, match="an entry is empty"):
        gpu_ids("0,,1")
    with pytest.raises(SuiteError, match="1 named twice"):
        gpu_ids("0,1,1")
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SuiteError, match="nvidia-smi is not on PATH"):
        gpu_ids("all")
    smi = tmp_path / "nvidia-smi"
    smi.write_text(
        '#!/bin/sh\n[ "$*" = "--query-gpu=index --format=csv,noheader" ] && printf "0\\n1\\n"\n'
    )
    smi.chmod(0o755)
    assert gpu_ids("all") == ("0", "1")
    smi.write_text("#!/bin/sh\nexit 0\n")
    with pytest.raises(SuiteError, match="nvidia-smi lists no GPU"):
        gpu_ids("all")
    smi.write_text("#!/bin/sh\necho 'NVIDIA-SMI has failed: no driver' >&2; exit 9\n")
    with pytest.raises(SuiteError, match="nvidia-smi exited 9: NVIDIA-SMI has failed"):
        gpu_ids("all")


def test_gpus_all_without_nvidia_smi_is_a_clear_error_before_anything_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _app(tmp_path / "suite" / "alpha")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    out = tmp_path / "results"
    args = ["suite", "--suite", str(tmp_path / "suite"), "--model", "search", "--out", str(out)]
    done = CliRunner().invoke(bench, [*args, "--gpus", "all"])
    assert done.exit_code == 1
    assert "Error: --gpus all: nvidia-smi is not on PATH; name the GPUs" in done.output
    assert not out.exists()


def test_nvcc_opt_bench_is_a_subcommand_not_a_compiler(exe: str) -> None:
    done = subprocess.run([exe, "bench", "suite", "--help"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "--model" in done.stdout and "--runs" in done.stdout
