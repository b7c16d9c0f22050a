"""`nvcc-opt train collect`: runs over a problem set's train split (resumable, --within), the
paper's filter (only a verified, stored speedup > 1 is kept), and its refusals.

The GPU run is faked at the process edge, as tests/test_bench_suite.py does: the problems are
host-only CMake projects (configured and built for real), and `FAKE_NVCC_OPT` stands in for
nvcc-opt as the launcher (optimize's argv[0]). Its `optimize` runs the real agent loop with a
scripted model (so the trace is the loop's own), stores a proposed rewrite in the run's real
store only where the problem's plan.json says the verification would have, and prints what
`optimize --json` prints.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import signal
import subprocess
import sys
import time
import types
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from nvcc_opt.bench.options import Options
from nvcc_opt_train.problemset import Problem, ProblemSet, ProblemSetError
from nvcc_opt_train.runs import RUNS, RegionResult, RunsError, read_runs, run_problems
from tests.conftest import needs_nvcc
from tests.openai_server import Step, call, completion, scripted_server


# --- stand-ins, in tests only, for modules other engineers write (conversations.py with
# `conversation` and `write_dataset`, exclusion.py with `require_exclusion`): used only while
# those are not merged; the lead's merge makes the real ones take over. -----------------------
def _stand_in_conversations() -> types.ModuleType:
    module = types.ModuleType("nvcc_opt_train.conversations")

    def conversation(trace_path: Path) -> dict[str, Any]:
        from nvcc_opt.agent.trace import load_trace

        trace = load_trace(trace_path)
        return {"messages": trace.messages, "tools": "[]", "meta": json.dumps(trace.meta)}

    def write_dataset(rows: list[dict[str, Any]], path: Path) -> None:
        path.write_text("".join(json.dumps(row) + "\n" for row in rows))

    module.conversation = conversation  # type: ignore[attr-defined]
    module.write_dataset = write_dataset  # type: ignore[attr-defined]
    return module


def _stand_in_exclusion() -> types.ModuleType:
    module = types.ModuleType("nvcc_opt_train.exclusion")

    def require_exclusion(problemset: ProblemSet) -> None:
        if "list_sha256" not in problemset.manifest.get("exclusion", {}):
            raise ProblemSetError(f"{problemset.root}: made without the exclusion")

    module.require_exclusion = require_exclusion  # type: ignore[attr-defined]
    module.list_sha256 = lambda: "stand-in"  # type: ignore[attr-defined]
    return module


for _name, _make in (
    ("conversations", _stand_in_conversations),
    ("exclusion", _stand_in_exclusion),
):
    if importlib.util.find_spec(f"nvcc_opt_train.{_name}") is None:
        sys.modules[f"nvcc_opt_train.{_name}"] = _make()

from nvcc_opt_train.collect import (  # noqa: E402 (after the stand-ins)
    KEPT,
    CollectError,
    collect,
    verdict,
)
from nvcc_opt_train.collect_cli import collect as collect_command  # noqa: E402

MINI = Path(__file__).parent / "fixtures" / "suite_mini"
from nvcc_opt_train.exclusion import list_sha256  # noqa: E402

# The manifest's record of the exclusion, as `require_exclusion` checks it
EXCLUSION = {"list_sha256": list_sha256(), "names": 0, "texts": 0, "exclude_from": []}

FAKE_NVCC_OPT = """\
import json, os, random, sys, time
from pathlib import Path

if sys.argv[1] != "optimize":
    os.execvp(sys.argv[1], sys.argv[1:])
args = sys.argv[2:]
with open(os.environ["FAKE_LOG"], "a") as log:
    log.write(json.dumps({"app": Path.cwd().name, "args": args}) + "\\n")
while Path("hang").exists():  # until the caller is interrupted (SIGINT ends this too)
    time.sleep(0.1)

from nvcc_opt.agent.loop import Agent, Limits
from nvcc_opt.agent.model import Reply, ToolCall
from nvcc_opt.tools.prompt import choose_tools
from nvcc_opt.agent.scripted import ScriptedModel
from nvcc_opt.agent.trace import TraceWriter
from nvcc_opt.toolbox.schema import Toolbox, tool


class Bench:
    @tool
    def benchmark_code(self, code: str) -> str:
        \"\"\"Time a candidate.

        Args:
            code: The region's new text.
        \"\"\"
        return "improved: 3.0x"  # what the loop measured: never evidence for the filter


plan = json.loads(Path("plan.json").read_text())
seed = int(args[args.index("--seed") + 1])
tools = choose_tools(None, parity="--parity" in args, rng=random.Random(seed))
store = Path(os.environ["NVCC_OPT_STORE"])
trace = store.parent / "traces" / "k.json"
answer = {"final_code": "int k() { return 2; }", "explanation": plan["explanation"]}
model = ScriptedModel([
    Reply("Trying a rewrite.", (ToolCall("c1", "benchmark_code", '{"code": "x"}'),)),
    Reply(json.dumps(answer)),
])
writer = TraceWriter(trace)
outcome = Agent(model, Toolbox.from_objects(Bench()), ["benchmark_code"], Limits(), writer).run(
    "system", "user"
)
writer.add_meta(tools=tools)  # the tools optimize would have offered
writer.save()
rewrite_id = None
if plan.get("store"):  # the final verification found it correct and faster, and stored it
    from nvcc_opt.records import NewRewrite
    from nvcc_opt.store.api import Store

    with Store.open(store) as db:
        new = NewRewrite(str(Path("src/k.cu").resolve()), "k", "0" * 16, answer["final_code"])
        rewrite_id = db.add_rewrite(new)[0].id
print("[k] src/k.cu:1: optimizing", file=sys.stderr, flush=True)
print(json.dumps([{
    "file": str(Path("src/k.cu").resolve()), "region": "k", "stopped": outcome.reason,
    "status": plan["status"], "rewrite_id": rewrite_id, "speedup": plan.get("speedup", 1.0),
    "reasons": plan.get("reasons", []), "trace": str(trace), "baseline_ms": 1.0, "wall_s": 0.5,
    "explanation": plan["explanation"],
}], indent=2))
"""

HOST_CMAKE = "cmake_minimum_required(VERSION 3.18)\nproject(fake NONE)\n"

# What the final verification said, per problem (the fake prints it as optimize would)
VERIFIED = {"status": "proposed", "speedup": 1.5, "store": True, "explanation": "Tiled: 1.5x."}
CLAIMED = {  # the model claims a speedup; the verification found the answer wrong
    "status": "original kept",
    "reasons": ["numbers_differ: checksum 1 vs 2"],
    "explanation": "Unrolled the loop: 3x faster, verified by benchmark_code.",
}
UNSTORED = {"status": "proposed", "speedup": 2.0, "explanation": "Claims a proposed 2x."}


def problem_set(
    tmp_path: Path,
    plans: dict[str, dict[str, Any]],
    split: str = "train",
    exclusion: bool = True,
    eval_plans: dict[str, dict[str, Any]] | None = None,
    benchmarks: dict[str, str] | None = None,
) -> Path:
    """A complete problem set of host-only apps, each with region k and its plan.json (each
    its own benchmark unless `benchmarks` maps its name to one)."""
    root = tmp_path / "set"
    problemset = ProblemSet.begin(root, [{"from": "test"}])
    problems = []
    for name, plan in [*plans.items(), *(eval_plans or {}).items()]:
        app = root / "problems" / name
        (app / "src").mkdir(parents=True)
        (app / "nvcc-opt.toml").write_text('[build]\ndir = "build"\n')
        (app / "CMakeLists.txt").write_text(HOST_CMAKE)
        (app / "src" / "k.cu").write_text("// @optimize\nint k() { return 1; }\n")
        (app / "plan.json").write_text(json.dumps(plan))
        where = "eval" if name in (eval_plans or {}) else split
        bench = (benchmarks or {}).get(name, name)
        problems.append(Problem(name, "apps", bench, ("src/k.cu:k",), ("k",), split=where))
    problemset.finish(problems, {"exclusion": EXCLUSION} if exclusion else {})
    return root


def fake_options(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **kw: Any) -> Options:
    """Options whose launcher is FAKE_NVCC_OPT, logging optimize's calls to tmp_path/log."""
    fake = tmp_path / "fake-nvcc-opt"
    fake.write_text(f"#!{sys.executable}\n{FAKE_NVCC_OPT}")
    fake.chmod(0o755)
    monkeypatch.setenv("FAKE_LOG", str(tmp_path / "log"))
    values: dict[str, Any] = {
        "suite": tmp_path,
        "spec": "search",
        "out": tmp_path / "out",
        "launcher": str(fake),
        **kw,
    }
    return Options(**values)


def optimize_calls(tmp_path: Path) -> list[dict[str, Any]]:
    log = tmp_path / "log"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def _result(**kw: Any) -> RegionResult:
    values: dict[str, Any] = {
        "file": "src/k.cu", "region": "k", "status": "proposed", "speedup": 1.5,
        "rewrite_id": 3, "stopped": "final_answer", "reasons": ("faster: 1.5x",),
        "outcome": "proposed", "trace": "traces/k-run1.json", **kw,
    }  # fmt: skip
    return RegionResult(**values)


# --- the filter ---------------------------------------------------------------------------


def test_the_filter_keeps_only_a_verified_stored_speedup_above_one() -> None:
    assert verdict(_result()) == KEPT
    assert verdict(_result(rewrite_id=None)) == "not stored"
    assert verdict(_result(speedup=1.0)) == "not faster"
    assert verdict(_result(trace="")) == "no trace"
    claimed = _result(
        status="original kept", speedup=1.0, rewrite_id=None, outcome="no improvement",
        reasons=("no difference: p = 0.4",), explanation="3x faster, I measured it",
    )  # fmt: skip
    assert verdict(claimed) == "no improvement"
    wrong = _result(status="original kept", rewrite_id=None, outcome="wrong final")
    assert verdict(wrong) == "wrong final"
    assert verdict(_result(status="error", rewrite_id=None, outcome="error")) == "error"


@pytest.mark.parametrize(
    "note",
    [
        "unmeasured: compute-sanitizer racecheck passed the candidate over its first 8 launches",
        "unmeasured: the runtime state check did not run (no channel report)",
        "uncontained: subreaper; a process outlived the run",
    ],
)
def test_a_speedup_whose_checks_did_not_complete_is_never_kept(
    note: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A check that could not be made is where a cheat would hide: the run is dropped whatever
    its speedup. What the machine lacks (`unavailable:`) drops it too, unless the operator
    credits it ($NVCC_OPT_CREDIT_UNAVAILABLE=1, for a machine that lacks the tool by design)."""
    monkeypatch.setenv("NVCC_OPT_CREDIT_UNAVAILABLE", "1")
    assert verdict(_result(reasons=("faster: 1.5x", note))) == "caveat"
    missing = "unavailable: compute-sanitizer did not run (it or a GPU is missing here)"
    assert verdict(_result(reasons=("faster: 1.5x", missing))) == KEPT
    monkeypatch.delenv("NVCC_OPT_CREDIT_UNAVAILABLE")
    assert verdict(_result(reasons=("faster: 1.5x", missing))) == "caveat"


# --- runs: resumable, --within ------------------------------------------------------------


def test_runs_resume_where_they_stopped_and_within_starts_none_late(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = problem_set(tmp_path, {"a": VERIFIED, "b": CLAIMED})
    problemset = ProblemSet.open(root)
    out = tmp_path / "out"

    late = run_problems(problemset, "train", fake_options(tmp_path, monkeypatch, runs=2,
                                                          start_within_s=0))  # fmt: skip
    assert (late.total, late.finished, late.remaining) == (4, 0, 4)
    assert optimize_calls(tmp_path) == [] and read_runs(out) == []

    first = run_problems(problemset, "train", fake_options(tmp_path, monkeypatch, runs=1))
    assert (first.done_before, first.finished, first.remaining) == (0, 2, 0)
    again = run_problems(problemset, "train", fake_options(tmp_path, monkeypatch, runs=2))
    assert (again.done_before, again.finished, again.remaining) == (2, 2, 0)
    done = run_problems(problemset, "train", fake_options(tmp_path, monkeypatch, runs=2))
    assert (done.done_before, done.finished) == (4, 0)

    calls = [(c["app"], c["args"][c["args"].index("--seed") + 1]) for c in optimize_calls(tmp_path)]
    assert sorted(calls) == [("a", "1"), ("a", "2"), ("b", "1"), ("b", "2")], "each run once"
    records = read_runs(out)
    assert sorted((r.id, r.run) for r in records) == [("a", 1), ("a", 2), ("b", 1), ("b", 2)]
    a1 = next(r for r in records if (r.id, r.run) == ("a", 1))
    (result,) = a1.results
    assert result.status == "proposed" and result.rewrite_id is not None
    assert result.trace == "traces/a-run1.json" and (out / result.trace).is_file()
    assert result.tools == ("benchmark_code", "microbench_code", "compiler_analysis",
                            "file_viewer", "list_dir", "search")  # fmt: skip
    assert a1.error is None and a1.wall_s > 0
    (line,) = [ln for ln in (out / RUNS).read_text().splitlines() if '"run": 1' in ln
               and '"id": "b"' in ln]  # fmt: skip
    assert json.loads(line)["results"][0]["outcome"] == "wrong final"


def test_runs_take_turns_over_benchmarks_so_a_stopped_call_covers_the_most(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    names = ["a-A", "a-B", "a-A+B", "b-A", "c-A", "c-B"]
    plans = {n: VERIFIED for n in names}
    root = problem_set(tmp_path, plans, benchmarks={n: n.split("-")[0] for n in names})
    run_problems(ProblemSet.open(root), "train", fake_options(tmp_path, monkeypatch, runs=2))
    order = [(c["app"], c["args"][c["args"].index("--seed") + 1]) for c in optimize_calls(tmp_path)]
    firsts = ["a-A", "b-A", "c-A", "a-B", "c-B", "a-A+B"]
    assert order == [(n, "1") for n in firsts] + [(n, "2") for n in firsts]


def test_runs_of_another_model_are_never_mixed_into_an_output_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    problemset = ProblemSet.open(problem_set(tmp_path, {"a": CLAIMED}))
    run_problems(problemset, "train", fake_options(tmp_path, monkeypatch))
    before = (tmp_path / "out" / RUNS).read_text()
    other = fake_options(tmp_path, monkeypatch, spec="openai:m@http://127.0.0.1:9/v1")
    with pytest.raises(RunsError, match=r"runs-settings.json: these runs were made with model"):
        run_problems(problemset, "train", other)
    assert (tmp_path / "out" / RUNS).read_text() == before


def test_a_damaged_runs_file_is_named_with_its_line(tmp_path: Path) -> None:
    (tmp_path / RUNS).write_text('{"id": "a", "run": 1, "seed": 1}\n')
    with pytest.raises(RunsError, match=rf"{RUNS}:1: not a run record"):
        read_runs(tmp_path)
    (tmp_path / RUNS).write_text("{not json\n")
    with pytest.raises(RunsError, match=rf"{RUNS}:1: not JSON"):
        read_runs(tmp_path)


# --- collect --------------------------------------------------------------------------------


def test_collect_keeps_the_verified_run_and_drops_the_claims(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = problem_set(tmp_path, {"a": VERIFIED, "b": CLAIMED, "c": UNSTORED})
    options = fake_options(tmp_path, monkeypatch, runs=2)
    summary, progress = collect(root, options)
    out = options.out
    assert progress.remaining == 0 and summary.problem_runs == 6 and summary.runs == 6
    assert summary.kept == 2
    assert summary.dropped == {"not stored": 2, "wrong final": 2}
    assert summary.tool_calls == {"benchmark_code": 6}
    assert summary.tool_calls_kept == {"benchmark_code": 2}
    assert sum(summary.tools_offered.values()) >= 6 * 4 and summary.tools_offered[
        "benchmark_code"] == 6  # fmt: skip
    rows = [json.loads(line) for line in (out / "sft.jsonl").read_text().splitlines()]
    assert len(rows) == 2
    assert all("Tiled: 1.5x." in json.dumps(row) for row in rows)
    assert not any("3x faster" in json.dumps(row) for row in rows)
    written = json.loads((out / "collect.json").read_text())
    assert written["kept"] == 2 and written["dropped"] == summary.dropped

    calls = optimize_calls(tmp_path)
    assert all("--parity" in c["args"] for c in calls), "the paper's random tool subsets"
    seeds = {c["args"][c["args"].index("--seed") + 1] for c in calls}
    assert len(seeds) == 6, "each problem's runs seeded apart"
    offered = {r.results[0].tools for r in read_runs(out)}
    assert all("benchmark_code" in t and 4 <= len(t) <= 6 for t in offered)


def test_collect_refuses_the_eval_split_and_a_set_without_its_exclusion(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = problem_set(tmp_path, {"a": VERIFIED})
    options = fake_options(tmp_path, monkeypatch)
    with pytest.raises(CollectError, match="reads only the train split"):
        collect(root, options, split="eval")
    runner = CliRunner()
    refused = runner.invoke(
        collect_command, [str(root), "--model", "search", "--out", str(tmp_path / "o"),
                          "--split", "eval"],
    )  # fmt: skip
    assert refused.exit_code == 1 and "reads only the train split" in refused.output

    bare = problem_set(tmp_path / "bare", {"a": VERIFIED}, exclusion=False)
    with pytest.raises(ProblemSetError, match="exclusion"):
        collect(bare, options)
    assert optimize_calls(tmp_path) == [] and not options.out.exists()


def test_collect_refuses_a_half_written_set_in_one_line(tmp_path: Path) -> None:
    ProblemSet.begin(tmp_path / "set", [{"from": "test"}])
    out = tmp_path / "o"
    result = CliRunner().invoke(
        collect_command, [str(tmp_path / "set"), "--model", "search", "--out", str(out)]
    )
    assert result.exit_code == 1 and "half-written problem set" in result.output
    assert len(result.output.strip().splitlines()) == 1 and not out.exists()


# --- end to end: the real optimize, its real verification and store, on host-only apps ------


def _answer(code: str, explanation: str) -> str:
    return (
        "Done.\n```json\n" + json.dumps({"final_code": code, "explanation": explanation}) + "\n```"
    )


@needs_nvcc
@pytest.mark.slow
def test_collect_end_to_end_with_a_scripted_teacher(
    tmp_path: Path, exe: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No fake here: suite_mini's apps run on the host, so the real optimize times and verifies
    them; the teacher is a scripted OpenAI-compatible server on loopback. This machine has no
    GPU and no compute-sanitizer, which the operator credits (the default would drop it)."""
    monkeypatch.setenv("NVCC_OPT_CREDIT_UNAVAILABLE", "1")
    root = tmp_path / "set"
    problemset = ProblemSet.begin(root, [{"from": "suite_mini"}])
    for name in ("alpha", "beta", "common"):
        shutil.copytree(MINI / name, root / "problems" / name)
    problemset.finish(
        [
            Problem("alpha", "suite", "alpha", ("src/work.cu:accumulate",), ("accumulate",)),
            Problem("beta", "suite", "beta", ("src/scale.cu:weighted_sum",), ("weighted_sum",)),
        ],
        {"exclusion": EXCLUSION},
    )
    work = (MINI / "alpha" / "src" / "work.cu").read_text().split("// @optimize\n", 1)[1]
    half = work.replace("++p)", "p += 2)")  # every pass computes the same sum: half of them
    scale = (MINI / "beta" / "src" / "scale.cu").read_text().split("// @optimize\n", 1)[1]
    wrong = scale.replace("w * x[i]", "x[i]")
    trying = call("c1", "benchmark_code", json.dumps({"code": half}))
    script = [
        Step(completion("Trying half the passes.", tool_calls=[trying])),
        Step(completion(_answer(half, "Half the passes: each computes the same sum."))),
        Step(completion(_answer(wrong, "Dropped the weight: 2x faster, I measured it."))),
    ]
    with scripted_server(script, lifetime_s=300) as server:
        options = Options(
            suite=tmp_path, spec=f"openai:scripted@{server.base_url}", out=tmp_path / "out",
            turns=3, time_s=120, launcher=exe,
            cmake_args=("-DCMAKE_CUDA_ARCHITECTURES=90",),
        )  # fmt: skip
        summary, progress = collect(root, options)
    assert progress.remaining == 0 and summary.runs == 2
    assert summary.kept == 1 and summary.dropped == {"wrong final": 1}
    alpha, beta = sorted(read_runs(options.out), key=lambda r: r.id)
    (kept,) = alpha.results
    assert kept.status == "proposed" and kept.speedup > 1.5 and kept.rewrite_id is not None
    assert "benchmark_code" in kept.tools and 4 <= len(kept.tools) <= 6
    assert beta.results[0].outcome == "wrong final" and beta.results[0].rewrite_id is None
    (row,) = [json.loads(line) for line in (options.out / "sft.jsonl").read_text().splitlines()]
    assert "Half the passes" in json.dumps(row) and "Dropped the weight" not in json.dumps(row)


def test_a_run_interrupted_by_ctrl_c_is_not_recorded_and_runs_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = problem_set(tmp_path, {"a": CLAIMED, "b": CLAIMED})
    (root / "problems" / "b" / "hang").write_text("")
    options = fake_options(tmp_path, monkeypatch)
    code = (
        "import signal, sys; from pathlib import Path; from nvcc_opt.bench.options import Options;"
        " from nvcc_opt_train.problemset import ProblemSet;"
        " from nvcc_opt_train.runs import run_problems;"
        " signal.signal(signal.SIGINT, signal.default_int_handler);"
        " root, out, launcher = map(Path, sys.argv[1:]);"
        " options = Options(suite=root, spec='search', out=out, launcher=str(launcher));"
        " print(run_problems(ProblemSet.open(root), 'train', options), flush=True)"
    )
    argv = [sys.executable, "-c", code, str(root), str(options.out), options.launcher]
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as run:
        deadline = time.monotonic() + 60
        while [c["app"] for c in optimize_calls(tmp_path)] != ["a", "b"]:
            assert time.monotonic() < deadline and run.poll() is None, run.communicate()
            time.sleep(0.1)
        run.send_signal(signal.SIGINT)
        stdout, stderr = run.communicate(timeout=60)
    assert "finished=1, remaining=1, interrupted=True" in stdout, stdout + stderr
    assert [r.id for r in read_runs(options.out)] == ["a"], "b was stopped: not a result"
    (root / "problems" / "b" / "hang").unlink()
    again = run_problems(ProblemSet.open(root), "train", options)
    assert (again.done_before, again.finished) == (1, 1)
    assert [r.id for r in read_runs(options.out)] == ["a", "b"]
