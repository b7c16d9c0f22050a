"""Bad input to the `nvcc-opt train` commands: one clear line naming the file or path, exit 1,
and nothing written or overwritten. A half-written problem set (a killed run) opened by each
reader; a trace (v1 or not) given where a conversation dataset belongs; conversations that cannot
be traced back to a problem set's train split; a checkpoint whose chat template hides the tools;
a model path that does not exist, refused before any work; output folders that hold something
else; an empty dataset and a folder given as one."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

pytest.importorskip("transformers")
pytest.importorskip("nvcc_opt_train")

from nvcc_opt.agent.backends import load  # noqa: E402
from nvcc_opt.agent.backends.templates import TEMPLATE_NAME  # noqa: E402
from nvcc_opt.agent.model import ModelError  # noqa: E402
from nvcc_opt.agent.trace import TRACE_FORMAT  # noqa: E402
from nvcc_opt_train.cli import train  # noqa: E402
from nvcc_opt_train.conversations import conversation, write_dataset  # noqa: E402
from nvcc_opt_train.model_spec import ModelSpecError, check_model  # noqa: E402
from nvcc_opt_train.problemset import ProblemSet  # noqa: E402
from nvcc_opt_train.provenance import ProvenanceError, check_source  # noqa: E402
from nvcc_opt_train.runs import RUNS, SETTINGS, RegionResult, RunRecord  # noqa: E402
from nvcc_opt_train.tiny import tiny_student  # noqa: E402
from tests.test_train_collect import CLAIMED, VERIFIED, problem_set  # noqa: E402
from tests.test_train_conversations import SCRIPTS, scripted_traces  # noqa: E402

PLAIN_CHATML = (
    "{% for m in messages %}{{ '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>\\n' }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


def nvcc_opt_train(*args: str | Path) -> Any:
    return CliRunner().invoke(train, [str(a) for a in args])


def refused(result: Any, *expected: str) -> str:
    """The one line of a refusal; asserts exit 1 and each expected text in that line."""
    assert result.exit_code == 1, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    for text in expected:
        assert text in lines[0], lines[0]
    return str(lines[0])


def snapshot(folder: Path) -> dict[str, str]:
    """Every file under `folder` with a hash of its bytes: to show nothing changed."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def student(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_student(tmp_path_factory.mktemp("tiny") / "student", ["hello world " * 20])


@pytest.fixture(scope="module")
def plain(student: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A checkpoint whose own chat template drops the tools (as SmolLM2's does)."""
    folder = tmp_path_factory.mktemp("plain") / "checkpoint"
    shutil.copytree(student, folder)
    (folder / "chat_template.jinja").write_text(PLAIN_CHATML)
    return folder


def half_written(root: Path) -> Path:
    """A problem set as a killed `nvcc-opt train problems` leaves it."""
    ProblemSet.begin(root, [{"from": "suite", "path": "/somewhere", "only": []}])
    (root / "problems" / "a").mkdir(parents=True)
    return root


def collect_folder(tmp_path: Path, problems: Path, split: str = "train") -> Path:
    """A collect output folder as `nvcc-opt train collect` leaves it: settings naming the set,
    one recorded run per trace (problem id = the script's name), the traces, sft.jsonl."""
    out = tmp_path / "collect"
    traces = scripted_traces(out)
    settings = {"problems": str(problems), "split": split, "model": "search", "optimize_args": []}
    (out / SETTINGS).write_text(json.dumps(settings))
    lines = []
    for trace in traces:
        result = RegionResult(
            file="src/k.cu", region="k", status="proposed", speedup=1.5, rewrite_id=1,
            stopped="final_answer", reasons=(), outcome="proposed",
            trace=f"traces/{trace.name}",
        )  # fmt: skip
        record = RunRecord(trace.stem, 1, 7, None, 1.0, None, (result,))
        lines.append(json.dumps(record.to_row()) + "\n")
    (out / RUNS).write_text("".join(lines))
    write_dataset([conversation(t) for t in traces], out / "sft.jsonl")
    return out


# --- a half-written problem set, opened by every reader ---------------------------------------


def test_a_half_written_set_is_refused_by_every_reader(tmp_path: Path, student: Path) -> None:
    root = half_written(tmp_path / "set")
    before = snapshot(root)
    half = "half-written problem set"
    out = tmp_path / "out"
    refused(nvcc_opt_train("collect", root, "--model", "search", "--out", out), str(root), half)
    refused(
        nvcc_opt_train("eval", "--model", "search", "--problems", root, "--out", out),
        str(root),
        half,
    )
    refused(nvcc_opt_train("baseline", root, "--gpus", "0"), str(root), half)
    dataset = collect_folder(tmp_path, root) / "sft.jsonl"
    refused(
        nvcc_opt_train("sft", dataset, "--student", student, "--out", out),
        str(dataset),
        "its source cannot be checked",
        half,
    )
    refused(
        nvcc_opt_train("problems", root, "--from", "apps", tmp_path / "other-apps"),
        str(root),
        "a half-written problem set made from other sources",
    )
    assert snapshot(root) == before and not out.exists()


# --- sft: a trace instead of a dataset; where the conversations came from ----------------------


def test_a_trace_given_to_sft_is_named_as_one_with_its_version(
    tmp_path: Path, student: Path
) -> None:
    (trace,) = scripted_traces(tmp_path)[:1]
    out = tmp_path / "out"
    refused(
        nvcc_opt_train("sft", trace, "--student", student, "--out", out),
        f"{trace}: a trace, not a conversation dataset",
    )
    data = json.loads(trace.read_text())
    old = tmp_path / "old-trace.json"
    old.write_text(json.dumps({**data, "version": 0}))
    refused(
        nvcc_opt_train("sft", old, "--student", student, "--out", out),
        f"{old}: an {TRACE_FORMAT} file of version 0",
        "reads 1",
    )
    assert not out.exists()


def test_sft_takes_only_conversations_from_a_train_split(tmp_path: Path, student: Path) -> None:
    names = list(SCRIPTS)
    out = tmp_path / "ckpt"
    root = problem_set(tmp_path, {n: VERIFIED for n in names})
    dataset = collect_folder(tmp_path, root) / "sft.jsonl"
    assert check_source(dataset, [json.loads(x) for x in dataset.read_text().splitlines()]) == root

    # a problem of the eval split among them
    mixed = problem_set(
        tmp_path / "mixed", {n: VERIFIED for n in names[1:]}, eval_plans={names[0]: CLAIMED}
    )
    settings = json.loads((dataset.parent / SETTINGS).read_text())
    (dataset.parent / SETTINGS).write_text(json.dumps({**settings, "problems": str(mixed)}))
    refused(
        nvcc_opt_train("sft", dataset, "--student", student, "--out", out),
        f"{dataset}:1: problem {names[0]} is not in the train split",
        "--unchecked-source",
    )
    # runs of the eval split
    (dataset.parent / SETTINGS).write_text(json.dumps({**settings, "split": "eval"}))
    refused(
        nvcc_opt_train("sft", dataset, "--student", student, "--out", out),
        f"{dataset.parent / SETTINGS}: these runs are of the 'eval' split",
    )
    # a conversation whose trace is no recorded run
    (dataset.parent / SETTINGS).write_text(json.dumps(settings))
    runs = (dataset.parent / RUNS).read_text().splitlines()
    (dataset.parent / RUNS).write_text(runs[0] + "\n")
    refused(
        nvcc_opt_train("sft", dataset, "--student", student, "--out", out),
        f"{dataset}:2: its trace (traces/{names[1]}.json) is not a run recorded",
    )
    # a dataset with no collect folder around it
    alone = tmp_path / "alone.jsonl"
    shutil.copyfile(dataset, alone)
    refused(
        nvcc_opt_train("sft", alone, "--student", student, "--out", out),
        f"{alone}: no {SETTINGS} beside it",
        "--unchecked-source",
    )
    with pytest.raises(ProvenanceError, match="no runs-settings.json"):
        check_source(alone, [])
    assert not out.exists()


def test_empty_and_misplaced_datasets(tmp_path: Path, student: Path) -> None:
    out = tmp_path / "ckpt"
    empty = tmp_path / "collect" / "sft.jsonl"
    empty.parent.mkdir()
    empty.write_text("")  # collect kept nothing
    refused(
        nvcc_opt_train("sft", empty, "--student", student, "--out", out),
        f"{empty}: no conversations in it",
    )
    refused(
        nvcc_opt_train("sft", empty.parent, "--student", student, "--out", out),
        f"{empty.parent}: a folder, not a conversation dataset file",
        f"(its dataset: {empty})",
    )
    assert not out.exists()


# --- models: a checkpoint that hides the tools, a path that does not exist ---------------------


def test_model_specs_are_refused_before_any_work(
    tmp_path: Path, plain: Path, student: Path
) -> None:
    root = problem_set(tmp_path, {"a": VERIFIED})
    before = snapshot(root)
    out = tmp_path / "out"
    for command in (["collect", root], ["eval", "--problems", root]):
        refused(
            nvcc_opt_train(*command, "--model", "hf:/nope", "--out", out),
            "--model 'hf:/nope': /nope: no such model folder or file",
        )
        refused(
            nvcc_opt_train(*command, "--model", f"hf:{plain}", "--out", out),
            f"{plain}: its chat template does not render tools",
            f"nvcc-opt train student NEW --from {plain} --chat-template",
        )
        refused(
            nvcc_opt_train(*command, "--model", f"hf:{tmp_path}", "--out", out),
            f"{tmp_path}: not a model folder (no config.json)",
        )
        refused(
            nvcc_opt_train(*command, "--model", "vllm:/nope/model", "--out", out),
            "--model 'vllm:/nope/model'",
        )
        refused(
            nvcc_opt_train(*command, "--model", "hf:", "--out", out),
            "--model 'hf:': hf needs a model",
        )
    assert not out.exists() and snapshot(root) == before
    # a hub id: only from the Hugging Face cache, unless the user allows a download
    with pytest.raises(ModelSpecError, match=r"nobody/nothing: no such local folder, and not in"):
        check_model("hf:nobody/nothing")
    check_model("hf:nobody/nothing?allow_download=1")
    with pytest.raises(ModelSpecError, match=r"nope.gguf: no such GGUF file"):
        check_model(f"hf:{tmp_path}#nope.gguf")
    check_model(f"hf:{student}")
    # the student's own template renders tools: taken (the run then refuses the output folder)
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "notes.txt").write_text("mine")
    refused(
        nvcc_opt_train("collect", root, "--model", f"hf:{student}", "--out", taken),
        f"{taken}: not empty and not the output of runs over a problem set",
    )
    assert snapshot(taken) == {"notes.txt": hashlib.sha256(b"mine").hexdigest()}


def test_output_folders_holding_something_else_are_left_alone(tmp_path: Path) -> None:
    root = problem_set(tmp_path, {"a": VERIFIED}, eval_plans={"e": CLAIMED})
    before = snapshot(root)
    # a problem set given as the output of collect or eval
    refused(
        nvcc_opt_train("collect", root, "--model", "search", "--out", root),
        f"{root}: not empty and not the output of runs over a problem set",
    )
    refused(
        nvcc_opt_train("eval", "--model", "search", "--problems", root, "--out", root),
        f"{root}: not empty",
    )
    # a folder of something else given to problems
    other = tmp_path / "other"
    other.mkdir()
    (other / "data.txt").write_text("mine")
    refused(
        nvcc_opt_train("problems", other, "--from", "apps", tmp_path),
        f"{other}: not a problem set (no problemset.json)",
    )
    # a complete set given to problems again
    refused(
        nvcc_opt_train("problems", root, "--from", "apps", tmp_path),
        f"{root}: already a complete problem set",
    )
    assert snapshot(root) == before and (other / "data.txt").read_text() == "mine"


def test_a_checkpoint_whose_template_hides_the_tools_through_hf(
    tmp_path: Path, plain: Path
) -> None:
    """`--model hf:PATH` (optimize's loader): a ChatML checkpoint whose template drops tools is
    served by nvcc-opt's ChatML tool template (as the untrained SmolLM2 is); one of another
    family, which that template cannot serve, is refused in one line naming it."""
    tool = {"type": "function", "function": {"name": "list_dir", "parameters": {"type": "object"}}}
    hello = [{"role": "user", "content": "hello"}]
    served = load(f"hf:{plain}?max_new_tokens=2")
    assert served.complete(hello, [tool]).raw["chat_template"] == TEMPLATE_NAME
    other = tiny_student(tmp_path / "other", ["hello world " * 20], chatml=False)
    with pytest.raises(ModelError) as caught:
        load(f"hf:{other}?max_new_tokens=2").complete(hello, [tool])
    message = str(caught.value)
    assert len(message.splitlines()) == 1 and f"hf:{other}: its chat template" in message
    assert "no <|im_start|> and <|im_end|> tokens" in message
    refused(
        nvcc_opt_train(
            "eval", "--model", f"hf:{other}", "--problems", tmp_path, "--out", tmp_path / "o"
        ),
        f"{other}: its chat template does not render tools",
    )
