"""`nvcc-opt train grpo`: the paper's reward equations, and GRPO with nvcc-opt's own tools.

The end-to-end test trains a tiny model built here (nothing downloaded) for 2 GRPO steps with
K = 4 on a problem set of two real CMake projects: `host` (tests/fixtures/hostapp: its region is
host code in a .cu file, so it builds with the real nvcc and runs, checks and times here; no GPU
run is faked) and `hang` (its build never ends: [build] timeout_s stops it). The model's replies
are scripted at the model edge (`_generate_single_turn`), because an untrained model makes no
tool call; everything after a reply is real: trl's parsing and tool loop, the Toolbox's private
build trees, benchmark_code, and the independent final verification that decides r_perf.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from nvcc_opt.records import CREDIT_UNAVAILABLE
from nvcc_opt_train.grpo import final_answer
from nvcc_opt_train.grpo_data import GRPOError, tool_subset
from nvcc_opt_train.problemset import Problem, ProblemSet
from nvcc_opt_train.rewards import Judged, judged, perf_of, r_perf, r_tools, reward
from tests.conftest import needs_nvcc

HOSTAPP = Path(__file__).parent / "fixtures" / "hostapp"
ORIGINAL = (HOSTAPP / "src" / "work.cu").read_text().split("// @optimize\n", 1)[1]
HALF = ORIGINAL.replace("++p)", "p += 2)")  # half the passes, the same sum: correct and faster
WRONG = HALF.replace("x[i] * x[i]", "x[i]")
K = 4


def answer(code: str) -> str:
    return json.dumps({"final_code": code, "explanation": "fewer passes"})


# --- the equations on crafted rollouts ---------------------------------------------------


@pytest.mark.parametrize(
    ("status", "base", "cand", "expected"),
    [
        ("rejected", None, None, -2.0),  # incorrect: build failure, guard, wrong numbers
        ("no improvement", 1.0, 1.2, -1.0),  # correct, slower
        ("no improvement", 1.0, 0.99, -1.0),  # correct, within the noise: not faster
        ("held for review", 1.0, 0.001, -1.0),  # above the ceiling: never credited
        ("improved", 3.0, 1.0, 2.0),  # faster: t_base / t - 1
        ("improved", 50.0, 1.0, 10.0),  # capped at 10
    ],
)
def test_r_perf_follows_the_verdict(
    status: str, base: float | None, cand: float | None, expected: float
) -> None:
    assert perf_of(judged(status, base, cand)) == pytest.approx(expected)


def test_a_speedup_whose_checks_did_not_complete_is_not_rewarded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A policy rewarded where a check could not be made learns to steer there."""
    monkeypatch.setenv("NVCC_OPT_CREDIT_UNAVAILABLE", "1")
    partial = ["faster: 3x", "unmeasured: compute-sanitizer memcheck passed the candidate over "
               "its first 8 launches"]  # fmt: skip
    assert perf_of(judged("improved", 3.0, 1.0, partial)) == -1.0
    missing = ["faster: 3x", "unavailable: no GPU here, so nvcc-opt's own GPU measurement is off"]
    assert perf_of(judged("improved", 3.0, 1.0, missing)) == pytest.approx(2.0)
    monkeypatch.delenv("NVCC_OPT_CREDIT_UNAVAILABLE")
    assert perf_of(judged("improved", 3.0, 1.0, missing)) == -1.0


def test_no_final_answer_is_minus_two_and_tool_share_is_half_the_unique_share() -> None:
    assert perf_of(None) == -2.0
    assert r_perf(True, 1.0, 0.25) == 3.0
    offered = ("benchmark_code", "compiler_analysis", "file_viewer", "search")
    assert r_tools(["benchmark_code"] * 5, offered) == pytest.approx(0.125)
    assert r_tools(list(offered), offered) == pytest.approx(0.5)
    assert reward(perf_of(Judged(True, 2.0, 1.0)), r_tools(["search"], offered)) == 1.125


def test_final_answer_is_read_from_the_last_assistant_message_only() -> None:
    said = [{"role": "assistant", "content": answer(HALF)}]
    assert final_answer(said) is not None and final_answer(said).final_code == HALF  # type: ignore[union-attr]
    calling = said + [{"role": "assistant", "content": "", "tool_calls": [{"function": {}}]}]
    assert final_answer(calling) is None  # stopped while still calling tools
    assert final_answer([{"role": "assistant", "content": "3x faster, trust me"}]) is None


def test_tool_subsets_are_the_papers_and_seeded() -> None:
    drawn = {tool_subset(7, "p", s) for s in range(40)}
    assert all("benchmark_code" in t and 4 <= len(t) <= 6 for t in drawn)
    assert len(drawn) > 3 and tool_subset(7, "p", 3) == tool_subset(7, "p", 3)


def test_the_equations_doctests_pass() -> None:
    import doctest

    from nvcc_opt_train import grpo_data, rewards

    for module in (rewards, grpo_data):
        result = doctest.testmod(module)
        assert result.attempted > 0 and result.failed == 0, module.__name__


def test_tool_calls_of_all_rollouts_run_at_once_and_are_filled_in_place() -> None:
    """Four calls that each wait for all four to have started: serialized, the barrier breaks
    and every result is an error."""
    import threading

    from nvcc_opt_train.grpo_env import PENDING, Rollouts
    from nvcc_opt_train.toolpool import open_executor

    barrier = threading.Barrier(4, timeout=10)

    def call(i: int) -> str:
        barrier.wait()
        return f"result {i}"

    executor = open_executor("local:4")
    shared = Rollouts({}, executor, "nvcc-opt")
    messages = [{"role": "tool", "content": shared.submit(lambda i=i: call(i))} for i in range(4)]
    assert all(m["content"].startswith(PENDING) for m in messages)
    for message in messages:  # one rollout at a time, as trl's loop asks
        shared.resolve([message])
    assert [m["content"] for m in messages] == [f"result {i}" for i in range(4)]
    executor.shutdown()


def test_serial_pool_runs_inline_and_a_failed_call_is_an_observation() -> None:
    from nvcc_opt_train.grpo_env import Rollouts
    from nvcc_opt_train.toolpool import PoolSpecError, open_executor

    shared = Rollouts({}, open_executor("serial"), "nvcc-opt")
    message = {"role": "tool", "content": shared.submit(lambda: 1 / 0)}  # type: ignore[arg-type, return-value]
    shared.resolve([message])
    assert message["content"].startswith("error: the tool call failed in the pool")
    with pytest.raises(PoolSpecError, match="unknown pool 'cluster'"):
        open_executor("cluster")
    with pytest.raises(PoolSpecError, match="cannot go to a Parsl pool yet"):
        open_executor("parsl:cluster.py")


def test_bad_settings_are_one_line(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from nvcc_opt_train.grpo_cli import grpo

    config = tmp_path / "grpo.yaml"
    config.write_text("generations: 12\nbogus: 1\n")
    args = [str(tmp_path), "--model", str(tmp_path), "--out", str(tmp_path / "o")]
    done = CliRunner().invoke(grpo, [*args, "--config", str(config)])
    assert done.exit_code == 1 and "unknown settings ['bogus']" in done.output
    assert len(done.output.strip().splitlines()) == 1
    done = CliRunner().invoke(grpo, [*args, "--vllm", "colocate"])
    if importlib.util.find_spec("vllm") is None:
        assert done.exit_code == 1 and "needs vLLM, which is not installed" in done.output
        assert len(done.output.strip().splitlines()) == 1
    done = CliRunner().invoke(grpo, [*args, "--pool", "parsl:cluster.py"])
    assert done.exit_code == 1 and "cannot go to a Parsl pool yet" in done.output
    assert not (tmp_path / "o").exists()


# --- two real GRPO steps ----------------------------------------------------------------


def _problem_set(tmp: Path) -> Path:
    from nvcc_opt_train.exclusion import list_sha256

    root = tmp / "set"
    problemset = ProblemSet.begin(root, [{"from": "test"}])
    host = root / "problems" / "host"
    shutil.copytree(HOSTAPP, host, ignore=shutil.ignore_patterns("build"))
    toml = (host / "nvcc-opt.toml").read_text()
    (host / "nvcc-opt.toml").write_text(toml.replace("repeats = 8", "repeats = 6").replace(
        "final_repeats = 10", "final_repeats = 6"))  # fmt: skip
    hang = root / "problems" / "hang"
    shutil.copytree(host, hang)
    with (hang / "CMakeLists.txt").open("a") as f:
        f.write("add_custom_target(forever ALL COMMAND sleep 600)\n")
    (hang / "nvcc-opt.toml").write_text(
        (hang / "nvcc-opt.toml")
        .read_text()
        .replace('dir = "build"', 'dir = "build"\ntimeout_s = 12')
    )
    problems = [
        Problem(p, "apps", p, ("src/work.cu:accumulate",), ("accumulate",))
        for p in ("host", "hang")
    ]
    exclusion = {"list_sha256": list_sha256(), "names": 0, "texts": 0, "exclude_from": []}
    problemset.finish(problems, {"exclusion": exclusion})
    return root


def _prompts() -> list[str]:
    """What the prompts hold (optimize's system prompt, the tool catalog and schemas): the tiny
    tokenizer learns them, so a prompt is ~3k tokens rather than ~10k on a 2-core CI machine."""
    from transformers.utils import get_json_schema

    from nvcc_opt.agent.answer import ANSWER_FORMAT
    from nvcc_opt.tools.catalog import _DECLARED, declarations
    from nvcc_opt.tools.prompt import render

    system = render(
        "system", gpu="NVIDIA H200", compile_target="sm_90", answer_format=ANSWER_FORMAT
    )
    schemas = [json.dumps(get_json_schema(f)["function"]) for f in _DECLARED.values()]
    return [system, declarations().prompt_text(list(_DECLARED)), *schemas]


def _script(trainer: Any) -> None:
    """The model's replies: per group, rollout 0 calls benchmark_code and then answers HALF,
    rollout 1 answers WRONG, rollout 2 never answers, rollout 3 answers the region unchanged."""
    tokenizer = trainer.processing_class
    first_turn = [
        '<tool_call>\n{"name": "benchmark_code", "arguments": ' + json.dumps({"code": HALF})
        + "}\n</tool_call>",
        answer(WRONG),
        "I could not find anything to improve.",
        answer(ORIGINAL),
    ]  # fmt: skip

    def generate(prompt_ids: list[list[int]], *_: Any, **__: Any) -> tuple[list[list[int]], None]:
        texts = []
        for i, ids in enumerate(prompt_ids):
            seen = tokenizer.decode(ids)
            texts.append(answer(HALF) if "<tool_response>" in seen else first_turn[i % K])
        ids = [tokenizer(t + "<|im_end|>", add_special_tokens=False)["input_ids"] for t in texts]
        return ids, None

    trainer.scripted = generate


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path, Any]:
    from nvcc_opt_train.grpo_run import GRPOSettings, train_grpo
    from nvcc_opt_train.tiny import tiny_student

    tmp = tmp_path_factory.mktemp("grpo")
    mp = pytest.MonkeyPatch()
    mp.setenv("XDG_CACHE_HOME", str(tmp / "cache"))
    mp.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    mp.setenv(CREDIT_UNAVAILABLE, "1")  # this machine has no GPU: credit what it lacks
    problems = _problem_set(tmp)
    texts = [ORIGINAL, HALF, answer(HALF), "benchmark_code <tool_call> </tool_call>", *_prompts()]
    model = tiny_student(tmp / "tiny", texts)
    settings = GRPOSettings(
        generations=K, batch=K, max_steps=2, samples=1, save_steps=1, max_completion_length=4096,
        max_tool_turns=2, pool="local:4", gpu_name="NVIDIA H200", seed=1,
    )  # fmt: skip
    out = tmp / "run"
    trainer = train_grpo(problems, model, out, settings, trainer_hook=_script)
    mp.undo()
    return problems, model, out, trainer


@needs_nvcc
@pytest.mark.slow
def test_two_steps_with_real_tools_and_verification(trained: tuple[Path, Path, Path, Any]) -> None:
    _, _, out, trainer = trained
    steps = [json.loads(line) for line in (out / "grpo_steps.jsonl").read_text().splitlines()]
    assert len(steps) == 2 and all(s["rollouts"] == K for s in steps)
    by_problem = {s["rollout_details"][0]["problem"]: s for s in steps}
    host = [d["r_perf"] for d in by_problem["host"]["rollout_details"]]
    assert host[0] > 0, by_problem["host"]  # HALF: verified faster, min(10, t_base/t - 1)
    assert host[1:] == [-2.0, -2.0, -1.0]  # wrong, no answer, unchanged (correct, not faster)
    assert by_problem["host"]["valid_answer_share"] == 0.75
    assert by_problem["host"]["tool_calls_per_rollout"] == {"benchmark_code": 0.25}
    tools = by_problem["host"]["rollout_details"][0]
    assert tools["r_tools"] == pytest.approx(0.5 / tools["offered"])
    # the problem whose build hangs: every rollout -2, and training went on to step 2
    assert [d["r_perf"] for d in by_problem["hang"]["rollout_details"]] == [-2.0] * K
    assert any("did not finish within [build] timeout_s" in n for n in by_problem["hang"]["notes"])
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    assert len(losses) == 2 and all(abs(x) < 1e6 for x in losses)
    assert (out / "checkpoint-2" / "model.safetensors").is_file()
    assert (out / "checkpoint-2" / "nvcc_opt_model.json").is_file()
    assert (out / "final" / "config.json").is_file()


@needs_nvcc
@pytest.mark.slow
def test_resume_from_a_checkpoint_of_another_model_is_refused_in_one_line(
    trained: tuple[Path, Path, Path, Any], tmp_path: Path
) -> None:
    from nvcc_opt_train.grpo_data import fingerprint
    from nvcc_opt_train.grpo_run import GRPOSettings, _checkpoint_to_resume, train_grpo
    from nvcc_opt_train.tiny import tiny_student

    problems, model, out, _ = trained
    # the same model resumes from the last checkpoint
    assert _checkpoint_to_resume(out, model, fingerprint(model), True) == out / "checkpoint-2"
    other = tiny_student(tmp_path / "other", [ORIGINAL, "something else"], seed=1)
    with pytest.raises(GRPOError) as err:
        train_grpo(problems, other, out, GRPOSettings(generations=K, batch=K), resume=True)
    message = str(err.value)
    assert "\n" not in message and "refusing to resume" in message and "checkpoint-2" in message
    with pytest.raises(GRPOError, match="pass --resume"):
        train_grpo(problems, other, out, GRPOSettings(generations=K, batch=K))


def test_tool_runs_spread_over_the_tool_gpus_one_rollout_at_a_time(tmp_path: Path) -> None:
    """--tool-gpus: each rollout's configuration names the next GPU (its runs take that GPU's
    lease); without it, the problem's own [gpu] devices."""
    from concurrent.futures import ThreadPoolExecutor

    from nvcc_opt.config import load
    from nvcc_opt_train.grpo_env import Rollouts

    (tmp_path / "build").mkdir()
    (tmp_path / "nvcc-opt.toml").write_text(
        '[build]\ndir = "build"\n[run]\ncommand = "true"\n[gpu]\ndevices = ["0"]\n',
        encoding="utf-8",
    )
    config = load(tmp_path)
    with ThreadPoolExecutor(1) as pool:
        shared = Rollouts({}, pool, "nvcc-opt", gpus=("1", "2", "3"))
        chosen = [shared.config_for(config).gpu.devices for _ in range(4)]
        assert chosen == [("1",), ("2",), ("3",), ("1",)]
        assert Rollouts({}, pool, "nvcc-opt").config_for(config).gpu.devices == ("0",)
    assert config.gpu.devices == ("0",)  # the problem's own is left as it was
