"""`vllm:PATH`: vLLM in-process, offline. `LLM.chat(tools=...)` only renders the tools into the
prompt, so replies are text; the loop parses the <tool_call> blocks the model writes.
vllm is imported when the model is first used, so a missing install fails with a clear message.
A conversation longer than the engine's context (`max_model_len`) less `max_tokens` has its
oldest tool results elided first, as the hf backend does (`agent/context.py`), counted with the
engine's own tokenizer and chat template.
"""

from __future__ import annotations

import importlib.util
from typing import Any

from nvcc_opt.agent.context import within_context
from nvcc_opt.agent.model import ModelError, Reply

NOT_INSTALLED = (
    "vLLM is not installed: pip install vllm (or serve the model and use openai:MODEL@URL)"
)


class VLLMModel:
    """One vLLM engine over a local model, created on the first `complete` and kept."""

    def __init__(self, path: str, max_tokens: int = 2048, temperature: float = 0.0) -> None:
        self.path = path
        self.name = f"vllm:{path}"
        self.max_tokens = max_tokens
        self.temperature = temperature
        self._llm: Any = None
        self._params: Any = None

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Reply:
        """One assistant turn. Raises ModelError."""
        self.load()
        messages, elided = self._within_context(messages, tools)
        try:
            results = self._llm.chat(messages, self._params, tools=tools or None, use_tqdm=False)
        except (RuntimeError, ValueError) as err:
            raise ModelError(f"{self.name}: generation failed: {err}") from err
        result = results[0]
        output = result.outputs[0]
        return Reply(
            text=output.text,
            prompt_tokens=len(result.prompt_token_ids or ()),
            completion_tokens=len(output.token_ids),
            raw={"finish_reason": output.finish_reason, "elided_tool_results": elided},
        )

    def _within_context(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> tuple[list[dict[str, Any]], int]:
        """The conversation with as few of its oldest tool results elided as it takes for it and
        `max_tokens` to fit the engine's context, and how many were. Raises ModelError."""
        tokenizer = self._llm.get_tokenizer()
        context = int(self._llm.llm_engine.model_config.max_model_len)

        def tokens(candidate: list[dict[str, Any]]) -> int:
            ids = tokenizer.apply_chat_template(
                candidate, tools=tools or None, add_generation_prompt=True, tokenize=True
            )
            return len(ids["input_ids"] if isinstance(ids, dict) else ids)

        fitted, elided = within_context(
            messages, tokens, context, self.max_tokens, name=self.name, reserve="max_tokens"
        )
        return fitted, elided

    def load(self) -> None:
        if self._llm is not None:
            return
        try:
            import vllm  # type: ignore[import-not-found, unused-ignore]
        except ModuleNotFoundError as err:
            raise ModelError(NOT_INSTALLED) from err
        try:
            self._llm = vllm.LLM(model=self.path)
        except (OSError, RuntimeError, ValueError) as err:
            raise ModelError(f"vLLM cannot load {self.path!r}: {err}") from err
        self._params = vllm.SamplingParams(temperature=self.temperature, max_tokens=self.max_tokens)


def from_spec(rest: str) -> VLLMModel:
    """`vllm:PATH`; ModelError at once when vLLM is not installed."""
    if not rest.strip():
        raise ValueError("vllm needs a model: vllm:PATH")
    if importlib.util.find_spec("vllm") is None:
        raise ModelError(NOT_INSTALLED)
    return VLLMModel(rest.strip())
