"""transformers in-process, on CPU or GPU, GGUF files included: `hf:PATH[#FILE.gguf][?OPTIONS]`.

Replies are text only; the loop parses the Hermes <tool_call> blocks the model writes. The prompt
is the model's own chat template with the tools, unless that template silently drops them (as
SmolLM2's does): then the ChatML tool template of `templates` is used instead. Nothing is
downloaded unless the caller allows it (`?allow_download=1`), and then only for a hub model id.
torch and transformers are imported on the first `complete`, not before.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

from nvcc_opt.agent.backends.templates import HERMES_TOOLS_TEMPLATE, TEMPLATE_NAME
from nvcc_opt.agent.context import within_context
from nvcc_opt.agent.model import ModelError, Reply

INSTALL_HINT = "pip install torch transformers gguf accelerate"
_PROBE_TOOL = {
    "type": "function",
    "function": {
        "name": "nvcc_opt_probe_tool",
        "description": "Shows whether the chat template renders tools.",
        "parameters": {"type": "object", "properties": {}},
    },
}
_PROBE_MESSAGES = [{"role": "user", "content": "hello"}]
# The fallback template's turn markers: a tokenizer without them as tokens cannot use it.
CHATML_TOKENS = ("<|im_start|>", "<|im_end|>")


def _flag(text: str) -> bool:
    return text.strip().lower() in {"1", "true", "yes", "on"}


_SPEC_OPTIONS: dict[str, Callable[[str], Any]] = {
    "device": str,
    "max_new_tokens": int,
    "context": int,
    "temperature": float,
    "allow_download": _flag,
}


class HFModel:
    """One transformers model, loaded on the first `complete` and kept for later calls."""

    def __init__(
        self,
        path: str,
        gguf_file: str | None = None,
        device: str = "auto",
        max_new_tokens: int = 512,
        temperature: float = 0.0,
        allow_download: bool = False,
        context: int | None = None,
    ) -> None:
        where = Path(path).expanduser()
        if gguf_file is None and where.suffix == ".gguf" and where.is_file():
            where, gguf_file = where.parent, where.name  # hf:dir/model.gguf means the same
        self.path = str(where) if where.exists() else path
        self.gguf_file = gguf_file
        self.device = device
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.allow_download = allow_download
        self.context = context  # tokens, prompt and reply; None: the model's own (its config)
        self.name = f"hf:{self.path}" + (f"#{gguf_file}" if gguf_file else "")
        self.template: str | None = None  # None: the model's own; set when that drops tools
        self._tokenizer: Any = None
        self._model: Any = None

    def __repr__(self) -> str:
        return f"HFModel({self.name!r}, device={self.device!r})"

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Reply:
        """One assistant turn, greedy when temperature is 0. Raises ModelError."""
        self.load()
        import torch  # type: ignore[import-not-found, unused-ignore]

        prompt, elided = self._within_context(messages, tools)
        inputs = self._tokenizer(prompt, return_tensors="pt", add_special_tokens=False)
        inputs = inputs.to(self._model.device)
        sampling: dict[str, Any] = {"do_sample": False}
        if self.temperature > 0:
            sampling = {"do_sample": True, "temperature": self.temperature}
        try:
            with torch.inference_mode():
                output = self._model.generate(
                    **inputs,
                    max_new_tokens=self.max_new_tokens,
                    pad_token_id=self._tokenizer.pad_token_id or self._tokenizer.eos_token_id,
                    **sampling,
                )
        except (RuntimeError, ValueError) as err:
            raise ModelError(f"{self.name}: generation failed: {err}") from err
        prompt_tokens = int(inputs["input_ids"].shape[1])
        new = output[0][prompt_tokens:]
        text = self._tokenizer.decode(new, skip_special_tokens=True)
        return Reply(
            text=text,
            prompt_tokens=prompt_tokens,
            completion_tokens=int(new.shape[0]),
            raw={
                "finish_reason": "length" if new.shape[0] >= self.max_new_tokens else "stop",
                "chat_template": self.template_name,
                "elided_tool_results": elided,  # older results left out to fit the context
                # where it ran: a turn's time (the trace's model_s) reads differently on a CPU
                "device": str(self._model.device),
                "dtype": str(self._model.dtype).removeprefix("torch."),
            },
        )

    def _within_context(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> tuple[str, int]:
        """The prompt, with the oldest tool results elided where the whole conversation and
        `max_new_tokens` would not fit the context (`agent.context`), and how many were."""
        last: list[Any] = [None, ""]  # the conversation rendered last, and its text

        def tokens(candidate: list[dict[str, Any]]) -> int:
            last[:] = [candidate, self.render(candidate, tools)]
            return self.count(last[1])

        fitted, elided = within_context(
            messages, tokens, self.context_tokens(), self.max_new_tokens,
            name=self.name, reserve="max_new_tokens",
        )  # fmt: skip
        prompt = last[1] if last[0] is fitted else self.render(fitted, tools)
        return prompt, elided

    def count(self, text: str) -> int:
        """Tokens in `text` as the prompt is tokenized."""
        self.load()
        return len(self._tokenizer(text, add_special_tokens=False)["input_ids"])

    def context_tokens(self) -> int:
        """The context: `?context=N`, else the model's `max_position_embeddings`, else 8,192."""
        if self.context is not None:
            return self.context
        self.load()
        return int(getattr(self._model.config, "max_position_embeddings", None) or 8192)

    @property
    def template_name(self) -> str:
        return TEMPLATE_NAME if self.template else "model"

    def render(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> str:
        """The prompt text for `messages` with `tools`, ending with the assistant's turn."""
        self.load()
        text: str = self._tokenizer.apply_chat_template(
            messages,
            tools=tools or None,
            chat_template=self.template,
            add_generation_prompt=True,
            tokenize=False,
        )
        return text

    def load(self) -> None:
        """Load the tokenizer and model once; choose the chat template. Raises ModelError."""
        if self._model is not None:
            return
        try:
            import torch  # type: ignore[import-not-found, unused-ignore]
            import transformers  # type: ignore[import-not-found, unused-ignore]
        except ModuleNotFoundError as err:
            raise ModelError(
                f"the hf backend needs {err.name!r}, which is not installed: {INSTALL_HINT}"
            ) from err
        common: dict[str, Any] = {"local_files_only": not self.allow_download}
        if self.gguf_file:
            common["gguf_file"] = self.gguf_file
        device = self.device
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        # float32 on CPU: bfloat16 is slow there, and GGUF weights are dequantized anyway
        dtype = "auto" if device.startswith("cuda") else torch.float32
        try:
            tokenizer: Any = transformers.AutoTokenizer.from_pretrained(self.path, **common)
            model: Any = transformers.AutoModelForCausalLM.from_pretrained(
                self.path, dtype=dtype, **common
            )
        except (OSError, ValueError, ImportError) as err:
            raise ModelError(self._load_problem(err)) from err
        template = None if renders_tools(tokenizer) else HERMES_TOOLS_TEMPLATE
        if template is not None and not all(t in tokenizer.get_vocab() for t in CHATML_TOKENS):
            raise ModelError(
                f"{self.name}: its chat template does not render tools, and its tokenizer has "
                f"no {' and '.join(CHATML_TOKENS)} tokens for nvcc-opt's ChatML tool template; "
                "use a model whose own chat template renders tools"
            )
        self._tokenizer, self._model = tokenizer, model.to(device).eval()
        self.template = template

    def _load_problem(self, err: Exception) -> str:
        problem = f"cannot load {self.name}: {err}"
        if not Path(self.path).exists() and not self.allow_download:
            problem += (
                f"\n{self.path!r} is not a local folder or file, and downloads are off. To "
                f"download the hub model, allow it: hf:{self.path}?allow_download=1"
            )
        return problem


def renders_tools(tokenizer: Any) -> bool:
    """Whether the tokenizer's own chat template shows tools (rendering with and without them
    differs); False also when it has no template or cannot render a plain message."""
    if not getattr(tokenizer, "chat_template", None):
        return False
    try:
        plain = tokenizer.apply_chat_template(_PROBE_MESSAGES, tokenize=False)
        with_tools = tokenizer.apply_chat_template(
            _PROBE_MESSAGES, tools=[_PROBE_TOOL], tokenize=False
        )
    except Exception:  # a template that raises on tools cannot be used with them either
        return False
    return bool(plain != with_tools)


def from_spec(rest: str) -> HFModel:
    """`PATH[#FILE.gguf][?device=D&max_new_tokens=N&context=N&temperature=T&allow_download=1]`."""
    target, _, query = rest.partition("?")
    path, _, gguf_file = target.partition("#")
    if not path.strip():
        raise ValueError("hf needs a model: hf:PATH[#FILE.gguf][?max_new_tokens=N&...]")
    options: dict[str, Any] = {}
    for key, value in parse_qsl(query, keep_blank_values=True):
        convert = _SPEC_OPTIONS.get(key)
        if convert is None:
            raise ValueError(f"unknown hf option {key!r}; options: {', '.join(_SPEC_OPTIONS)}")
        try:
            options[key] = convert(value)
        except ValueError as err:
            raise ValueError(f"hf option {key}={value!r}: {err}") from err
    return HFModel(path.strip(), gguf_file=gguf_file.strip() or None, **options)
