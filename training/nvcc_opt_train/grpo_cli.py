"""`nvcc-opt train grpo PROBLEMS --model PATH --out DIR [...]`: click wiring only."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from nvcc_opt.config import ConfigError
from nvcc_opt_train.grpo_data import GRPOError
from nvcc_opt_train.grpo_run import VLLM_MODES, GRPOSettings, load_settings, train_grpo
from nvcc_opt_train.problemset import ProblemSetError
from nvcc_opt_train.student import StudentError
from nvcc_opt_train.toolpool import PoolError

D = GRPOSettings()
F = TypeVar("F", bound=Callable[..., Any])


def _opt(name: str, kind: Any, text: str) -> Callable[[F], F]:
    default = getattr(D, name.lstrip("-").replace("-", "_"))
    option: Callable[[F], F] = click.option(
        name, type=kind, default=None, help=f"{text} [default: {default}]"
    )
    return option


@click.command("grpo")
@click.argument("problems", type=click.Path(path_type=Path))
@click.option(
    "--model",
    required=True,
    type=click.Path(path_type=Path),
    help="A local HF model folder with a tool template (a student or SFT checkpoint).",
)
@click.option(
    "--out",
    required=True,
    type=click.Path(path_type=Path),
    help="The run folder: checkpoints, logs, the final model.",
)
@click.option(
    "--config",
    "config_file",
    type=click.Path(path_type=Path),
    help="A YAML file of settings (the option names, with _ for -).",
)
@click.option(
    "--resume",
    is_flag=True,
    help="Continue the run in --out from its last checkpoint (the same --model only).",
)
@_opt("--generations", click.IntRange(min=2), "K: rollouts per prompt (one group).")
@_opt("--beta", float, "KL weight to the frozen reference model.")
@_opt("--scale-rewards", click.Choice(["group", "batch", "none"]), "Advantage normalization.")
@_opt("--loss-type", str, "trl's loss type.")
@_opt("--max-steps", click.IntRange(min=1), "Optimizer steps.")
@_opt("--lr", float, "Learning rate.")
@_opt("--batch", click.IntRange(min=1), "Completions per device per step (a multiple of K).")
@_opt("--grad-accum", click.IntRange(min=1), "Forward passes per optimizer step.")
@_opt(
    "--max-completion-length",
    click.IntRange(min=16),
    "Tokens per rollout after its prompt, tool results included (trl's limit); default: the "
    "context, so that --context decides.",
)
@_opt(
    "--context",
    click.IntRange(min=16),
    "Tokens of context the model runs in at inference (hf:PATH?context=N): a rollout ends where "
    "its next prompt and --reply-tokens would not fit, where inference would elide old tool "
    "results; default: the model's max_position_embeddings.",
)
@_opt(
    "--reply-tokens",
    click.IntRange(min=1),
    "Tokens per turn, as the backend caps a reply (hf:PATH?max_new_tokens=N); default: the hf "
    "backend's.",
)
@_opt("--max-tool-turns", click.IntRange(min=1), "Tool-calling rounds per rollout.")
@_opt("--temperature", float, "Sampling temperature.")
@_opt("--samples", click.IntRange(min=1), "Prompts per problem region (each its own tool subset).")
@_opt("--save-steps", click.IntRange(min=1), "A checkpoint every N steps.")
@_opt("--seed", int, "Seed of sampling, tool subsets and trl.")
@_opt("--pool", str, "Where tool calls run: serial | local | local:N.")
@_opt(
    "--tool-gpus",
    str,
    "GPUs the rollouts' tool runs spread over, e.g. 1,2,3 (generation and training on others);"
    " default: each problem's [gpu] devices.",
)
@_opt(
    "--vllm", click.Choice(VLLM_MODES), "Generate with vLLM (trl's modes); default: transformers."
)
@_opt("--vllm-server-url", str, "The vLLM server for --vllm server (trl vllm-serve).")
@click.option("--bf16/--no-bf16", default=None, help="bfloat16 training (GPUs).")
def grpo(
    problems: Path,
    model: Path,
    out: Path,
    config_file: Path | None,
    resume: bool,
    **overrides: Any,
) -> None:
    """GRPO with nvcc-opt's tools in every rollout (the paper's opt-r1), rewarded by the
    independent final verification: r = r_perf + r_tools."""
    try:
        settings = load_settings(config_file, overrides)
        train_grpo(problems, model, out, settings, resume=resume, echo=click.echo)
    except (GRPOError, StudentError, ProblemSetError, PoolError, ConfigError) as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"written: {out / 'final'} (steps logged in {out / 'grpo_steps.jsonl'})")
