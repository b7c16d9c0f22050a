"""What `nvcc-opt train grpo` trains on and resumes from: the rows (one prompt per problem region
and sample, with its seeded tool subset and optimize's own prompts), and the model fingerprint
that keeps a run from resuming a checkpoint of another model.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from nvcc_opt.config import architectures
from nvcc_opt.tools.prompt import build, choose_tools
from nvcc_opt_train.grpo_env import Prepared, subset_key

FINGERPRINT = "nvcc_opt_model.json"  # in the run folder and in each checkpoint
WEIGHT_BYTES = 1 << 20  # of each weights file: enough to tell fine-tuned weights apart


class GRPOError(RuntimeError):
    """`train grpo` cannot start or go on; the message is one line naming the file."""


def tool_subset(seed: int, problem: str, sample: int) -> tuple[str, ...]:
    """The paper's 4-6 tools for one sample, benchmark_code always among them, drawn from a
    generator seeded by the run's seed, the problem and the sample (stable across resumes).

    >>> a = tool_subset(0, "p", 0)
    >>> a == tool_subset(0, "p", 0) and "benchmark_code" in a and 4 <= len(a) <= 6
    True
    """
    digest = hashlib.sha256(f"{seed}:{problem}:{sample}".encode()).digest()
    return tuple(choose_tools(None, parity=True, rng=random.Random(digest)))


def rows(
    problems: Iterable[Prepared],
    samples: int,
    seed: int,
    gpu: str,
    baselines_ms: Mapping[str, float | None],
) -> list[dict[str, Any]]:
    """One row per problem and sample: optimize's system and user prompts with only the
    sample's tools rendered, the environment (tool subset) that offers them, the problem id."""
    out = []
    for sample in range(samples):
        for problem in problems:
            tools = tool_subset(seed, problem.id, sample)
            prompt = _prompt(problem, tools, gpu, baselines_ms.get(problem.id))
            out.append({"prompt": prompt, "environment": subset_key(tools), "problem": problem.id})
    return out


def _prompt(
    problem: Prepared, tools: tuple[str, ...], gpu: str, baseline: float | None
) -> list[dict[str, str]]:
    if problem.region is None or problem.config is None:  # broken: the prompt still names it
        text = (
            f"Optimize the region {problem.region_ref} of this project. Tools: {', '.join(tools)}."
        )
        return [{"role": "user", "content": text}]
    target = architectures.read(problem.config.build_dir).values
    prompt = build(
        problem.region,
        project_root=problem.config.source_root,
        baseline_ms=baseline,
        gpu=gpu,
        compile_target=",".join(f"sm_{a}" for a in target) or "unknown",
        tools=list(tools),
    )
    return [{"role": "system", "content": prompt.system}, {"role": "user", "content": prompt.user}]


def fingerprint(model: Path) -> dict[str, str]:
    """The identity of a model folder: its config and tokenizer files hashed, and the first MiB
    and size of each weights file (enough to tell a fine-tuned copy from its base)."""
    h = hashlib.sha256()
    names = sorted(
        p for p in model.iterdir() if p.suffix in (".json", ".safetensors", ".bin", ".model")
    )
    for path in names:
        if path.name == FINGERPRINT or path.name.startswith(("trainer_state", "training_args")):
            continue
        h.update(path.name.encode())
        with path.open("rb") as f:
            if path.suffix == ".json":
                h.update(f.read())
            else:
                h.update(str(path.stat().st_size).encode() + f.read(WEIGHT_BYTES))
    return {"model": str(model.resolve()), "sha256": h.hexdigest()}


def write_fingerprint(folder: Path, print_: Mapping[str, str]) -> None:
    (folder / FINGERPRINT).write_text(json.dumps(dict(print_), indent=1) + "\n", encoding="utf-8")


def check_resume(checkpoint: Path, model: Path, print_: Mapping[str, str]) -> None:
    """GRPOError (one line) unless `checkpoint` was trained from `model`."""
    path = checkpoint / FINGERPRINT
    try:
        recorded = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise GRPOError(f"{path}: cannot read which model this checkpoint is of ({exc})") from exc
    if recorded.get("sha256") != print_["sha256"]:
        raise GRPOError(
            f"{checkpoint}: a checkpoint of {recorded.get('model', 'another model')}, not of "
            f"--model {model}: refusing to resume (use a new --out for another model)"
        )
