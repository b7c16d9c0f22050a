"""A model spec checked before a run over a problem set starts (`train collect`, `train eval`).

Those runs start one `nvcc-opt optimize` per problem, each of which loads the model only when its
agent first asks it for a turn: a model path that does not exist, or a checkpoint whose chat
template hides the tools from it, would otherwise surface once per problem, after the builds and
baselines, and fill the output folder with failed runs. `check_model` finds them up front and
says so in one line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

from nvcc_opt.agent.backends import load, split_spec
from nvcc_opt.agent.backends.templates import TEMPLATE_NAME
from nvcc_opt.agent.model import ModelError

LOCAL_PATH_BACKENDS = ("hf", "vllm")


class ModelSpecError(ValueError):
    """A model spec that cannot run here; the message is one line naming the spec (and path)."""


def check_model(spec: str) -> None:
    """ModelSpecError unless `spec` parses, its backend can run here, and the model it names
    (hf:PATH, vllm:PATH) exists: a local path, or for hf: a hub id in the Hugging Face cache (or
    one it may download). An hf: checkpoint must also render tools in its own chat template (the
    one a trained student answers in)."""
    try:
        load(spec)  # parses the spec; no backend loads weights before its first turn
    except (ValueError, ModelError) as exc:
        raise ModelSpecError(f"--model {spec!r}: {_one_line(exc)}") from exc
    name, rest = split_spec(spec)
    if name not in LOCAL_PATH_BACKENDS:
        return
    target, _, query = rest.partition("?")
    path_text, _, gguf_file = (part.strip() for part in target.partition("#"))
    path = Path(path_text).expanduser()
    if not path.exists():
        _check_hub_id(spec, name, path_text, dict(parse_qsl(query)))
        if name == "hf" and _cached(path_text):
            _check_template(spec, path_text)
        return
    if name == "vllm" or path.is_file() or gguf_file:
        if gguf_file and not (path / gguf_file).is_file():
            raise ModelSpecError(f"--model {spec!r}: {path / gguf_file}: no such GGUF file")
        return
    if not (path / "config.json").is_file():
        raise ModelSpecError(f"--model {spec!r}: {path}: not a model folder (no config.json)")
    _check_template(spec, str(path))


def _check_hub_id(spec: str, name: str, text: str, options: dict[str, str]) -> None:
    """A name that is no local path: refused when it is written as a path (/..., ./..., ~/...),
    or when hf: would have to download it and downloads are off."""
    if text.startswith(("/", ".", "~")):
        raise ModelSpecError(f"--model {spec!r}: {text}: no such model folder or file")
    allowed = options.get("allow_download", "").lower() in {"1", "true", "yes", "on"}
    if name == "hf" and not allowed and not _cached(text):
        raise ModelSpecError(
            f"--model {spec!r}: {text}: no such local folder, and not in the Hugging Face cache; "
            f"nothing is downloaded unless asked: hf:{text}?allow_download=1"
        )


def _cached(hub_id: str) -> bool:
    """Whether the Hugging Face cache holds the model `hub_id` names (its config.json)."""
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return False
    try:
        return isinstance(try_to_load_from_cache(hub_id, "config.json"), str)
    except ValueError:  # not a valid hub id either
        return False


def _check_template(spec: str, source: str) -> None:
    if not _renders_tools(spec, source):
        raise ModelSpecError(
            f"--model {spec!r}: {source}: its chat template does not render tools, so the model "
            "would not see them; give it nvcc-opt's: nvcc-opt train student NEW --from "
            f"{source} --chat-template {TEMPLATE_NAME}"
        )


def _renders_tools(spec: str, path: str) -> bool:
    try:
        import transformers  # type: ignore[import-not-found, unused-ignore]
    except ModuleNotFoundError:
        return True  # the backend says what to install, at its first turn
    from nvcc_opt.agent.backends.hf_local import renders_tools

    try:
        tokenizer: Any = transformers.AutoTokenizer.from_pretrained(path, local_files_only=True)
    except (OSError, ValueError) as exc:
        raise ModelSpecError(
            f"--model {spec!r}: {path}: cannot load its tokenizer: {_one_line(exc)}"
        ) from exc
    return renders_tools(tokenizer)


def _one_line(exc: Exception) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
