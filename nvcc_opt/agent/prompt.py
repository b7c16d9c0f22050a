"""Prompt templates from files, rendered strictly; the agent's own (`prompts/repair.txt`).

Templates are `string.Template` texts (`$name`; `$$` is a literal dollar sign) in a package's
`prompts/` folder. Rendering fails loudly: a placeholder without a value, or a value the template
does not use, is a `PromptError` naming the template and the variable, so a renamed placeholder
cannot silently drop a part of a prompt.
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping
from importlib import resources

_NAME = re.compile(r"[a-z_]+")


class PromptError(ValueError):
    """A template or a value for it is wrong; the message names what and where."""


def render(template_name: str, **values: str) -> str:
    """The agent's `prompts/<template_name>.txt` with every placeholder filled from `values`."""
    return render_template("nvcc_opt.agent", template_name, values)


def render_template(package: str, template_name: str, values: Mapping[str, str]) -> str:
    """`package`'s `prompts/<template_name>.txt` with every placeholder filled from `values`."""
    template = string.Template(_read(package, template_name))
    if not template.is_valid():
        raise PromptError(f"prompt template {template_name!r} has a malformed placeholder")
    used = set(template.get_identifiers())
    missing = sorted(used - values.keys())
    unused = sorted(values.keys() - used)
    if missing:
        raise PromptError(f"prompt template {template_name!r} needs a value for {missing}")
    if unused:
        raise PromptError(f"prompt template {template_name!r} does not use {unused}")
    return template.substitute(values)


def _read(package: str, template_name: str) -> str:
    if not _NAME.fullmatch(template_name):
        raise PromptError(f"no prompt template {template_name!r}")
    path = resources.files(package).joinpath("prompts", f"{template_name}.txt")
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PromptError(f"no prompt template {template_name!r}") from None


def fenced(text: str, language: str = "cuda") -> str:
    """`text` in a Markdown code block whose fence is longer than any backtick run inside."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    body = text if text.endswith("\n") else text + "\n"
    return f"{fence}{language}\n{body}{fence}"
