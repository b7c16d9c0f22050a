"""What the file tools never show the model: the final verification's own settings, and
nvcc-opt's own state (the store's folder: earlier runs' traces and verdicts, which name the fresh
inputs that failed) where a project keeps it inside its tree (`store = ".nvcc-opt/store.db"`).

`[verify] fresh_inputs` and `sanitizer_args` are argument lists that only the final verification
runs (other seeds, a size never shown while exploring). A model that read them could write code
that special-cases them as well as the benchmark's own input. So the file tools (file_viewer and
search) show a configuration file (nvcc-opt.toml, pyproject.toml) with every line of its verify
table replaced by a note, line numbers kept. The result is then parsed: where any verify setting
is still there (an inline table, a dotted key, a layout the line scan misread) or the file no
longer parses, the file is not shown at all. The rule keeps what it can prove hidden, not what a
list of known layouts would hide.
"""

from __future__ import annotations

import re
import tomllib
from typing import Any

from nvcc_opt.paths import CONFIG_NAME

CONFIG_FILES = frozenset({CONFIG_NAME, "pyproject.toml"})
NOTE = "# [hidden from the model: nvcc-opt's final verification settings]"
REFUSED = (
    "holds nvcc-opt's final verification settings in a form that cannot be shown without them; "
    "it is hidden from the model (the build and run settings are in the tool descriptions)"
)
PRIVATE = (
    "holds nvcc-opt's own state (its store, the traces and verdicts of earlier runs): hidden from "
    "the model"
)
_HEADER = re.compile(r"^\s*\[\[?([^\[\]#]+)\]\]?\s*(#.*)?$")


def shown_text(name: str, text: str) -> str | None:
    """`text` of the file called `name` as the model may see it; None where it must not."""
    if name not in CONFIG_FILES or "verify" not in text:
        return text
    lines = text.split("\n")
    inside = False
    for number, line in enumerate(lines):
        header = _HEADER.match(line)
        if header:
            inside = _is_verify(header.group(1))
        elif inside and line.strip():
            lines[number] = NOTE
    redacted = "\n".join(lines)
    try:
        data = tomllib.loads(redacted)
    except tomllib.TOMLDecodeError:
        return None
    return None if _verify_settings(data) else redacted


def _is_verify(header: str) -> bool:
    """Whether a table header names a verify table (nvcc-opt.toml's or pyproject's): any header
    whose last key is `verify`, however quoted or spaced, so that no spelling escapes."""
    keys = [k.strip().strip("\"'") for k in header.split(".")]
    return bool(keys) and keys[-1] == "verify"


def _verify_settings(data: dict[str, Any]) -> bool:
    """Whether any table in the parsed file still holds a setting under a `verify` key."""
    for key, value in data.items():
        if key == "verify" and value != {}:
            return True
        if isinstance(value, dict) and _verify_settings(value):
            return True
    return False
