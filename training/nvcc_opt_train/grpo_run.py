"""Settings and the run of `nvcc-opt train grpo`: check everything, prepare the problems through
the pool, build the rows and the trainer, train, checkpoint, resume.

Defaults are the paper's: K = 12 generations per prompt, the GRPO loss with a KL term to a frozen
reference (beta > 0), group-normalized advantages (trl's scale_rewards="group"). Every setting
can come from a YAML file (`--config`, keys as the fields below) and be overridden on the
command line. The run folder OUT holds trl's checkpoints (checkpoint-N, each with the model
fingerprint), grpo.json (the settings), grpo_steps.jsonl, and the final model.
"""

from __future__ import annotations

import importlib.util
import json
import os
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from nvcc_opt.tools.catalog import launcher_path
from nvcc_opt_train.grpo import STEPS_LOG, StepStats, reward_functions, trainer_class
from nvcc_opt_train.grpo_data import (
    GRPOError,
    check_resume,
    fingerprint,
    rows,
    write_fingerprint,
)
from nvcc_opt_train.grpo_env import Prepared, Rollouts, environment_class, prepare
from nvcc_opt_train.problemset import ProblemSet
from nvcc_opt_train.toolpool import open_executor
from nvcc_opt_train.turns import counters, hf_reply_tokens, model_context

SETTINGS = "grpo.json"
VLLM_MODES = ("colocate", "server")


@dataclass(frozen=True)
class GRPOSettings:
    """Every setting of a GRPO run (YAML keys and CLI options share these names)."""

    generations: int = 12  # K: rollouts per prompt, one group (the paper's 12)
    beta: float = 0.04  # KL weight to the frozen reference model (> 0: the paper's KL term)
    scale_rewards: str = "group"  # advantages normalized per group ("group"), "batch" or "none"
    loss_type: str = "grpo"  # trl's loss: grpo (the paper's), dapo, dr_grpo, bnpo, ...
    max_steps: int = 100  # optimizer steps
    lr: float = 1e-6
    batch: int = 12  # completions per device per step (a multiple of K over all devices)
    grad_accum: int = 1
    # tokens of a rollout after its prompt, tool results included (trl's limit, none at
    # inference); None: the context, so that the context below decides where a rollout ends
    max_completion_length: int | None = None
    # the context the model runs in at inference (hf:PATH?context=N) and the tokens its backend
    # keeps for a reply (max_new_tokens): each turn writes at most `reply_tokens`, and a rollout
    # ends where its next prompt would not fit `context` less them, where inference would elide
    # old tool results (grpo.py). None: the model's own context (max_position_embeddings), the
    # hf backend's default max_new_tokens
    context: int | None = None
    reply_tokens: int | None = None
    max_tool_turns: int = 30  # tool-calling rounds per rollout (optimize's turn limit)
    temperature: float = 1.0
    samples: int = 4  # prompts per problem region, each with its own seeded 4-6 tool subset
    save_steps: int = 10  # a checkpoint every N steps (and at the end)
    seed: int = 0
    pool: str = "local"  # where tool calls run: serial | local | local:N (nvcc_opt.pool)
    # GPUs the rollouts' tool runs spread over (comma-separated CUDA_VISIBLE_DEVICES values, one
    # per rollout in turn, each run under that GPU's lease); "": each problem's [gpu] devices
    tool_gpus: str = ""
    vllm: str | None = None  # None: transformers in-process; colocate | server: trl's vLLM modes
    vllm_server_url: str | None = None  # for vllm=server (trl's vllm_server_base_url)
    bf16: bool = False
    gpu_name: str = ""  # the GPU the prompt names; "" reads it from nvidia-smi

    def __post_init__(self) -> None:
        if self.generations < 2:
            raise GRPOError(f"generations = {self.generations}: a group needs at least 2")
        if self.vllm is not None and self.vllm not in VLLM_MODES:
            raise GRPOError(f"vllm = {self.vllm!r}: expected one of {', '.join(VLLM_MODES)}")


def load_settings(config: Path | None, overrides: dict[str, Any]) -> GRPOSettings:
    """The YAML file's values, then the overrides (None: not given). GRPOError, one line."""
    values: dict[str, Any] = {}
    if config is not None:
        import yaml  # type: ignore[import-untyped, unused-ignore]

        try:
            loaded = yaml.safe_load(config.read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise GRPOError(f"{config}: cannot read: {str(exc).splitlines()[0]}") from exc
        if not isinstance(loaded, dict):
            raise GRPOError(f"{config}: expected a mapping of settings")
        known = {f.name for f in fields(GRPOSettings)}
        unknown = sorted(set(loaded) - known)
        if unknown:
            raise GRPOError(
                f"{config}: unknown settings {unknown}; known: {', '.join(sorted(known))}"
            )
        values.update(loaded)
    values.update({k: v for k, v in overrides.items() if v is not None})
    try:
        return GRPOSettings(**values)
    except TypeError as exc:
        raise GRPOError(f"{config or 'settings'}: {exc}") from exc


def _vllm_args(settings: GRPOSettings) -> dict[str, Any]:
    if settings.vllm is None:
        return {}
    if importlib.util.find_spec("vllm") is None:
        raise GRPOError(
            f"--vllm {settings.vllm} needs vLLM, which is not installed here: pip install vllm "
            "(trl 1.16 supports vLLM 0.22-0.31), or leave out --vllm to generate with transformers"
        )
    args: dict[str, Any] = {"use_vllm": True, "vllm_mode": settings.vllm}
    if settings.vllm == "server" and settings.vllm_server_url:
        args["vllm_server_base_url"] = settings.vllm_server_url
    return args


def _tokenizer(model: Path) -> Any:
    from trl.chat_template_utils import qwen3_template

    from nvcc_opt_train.student import check_student

    tokenizer = check_student(model)  # StudentError: no model, or no tool template
    if getattr(tokenizer, "response_template", None) is None:
        # nvcc-opt's template is Hermes style, as Qwen's: <tool_call>{json}</tool_call><|im_end|>
        tokenizer.response_template = qwen3_template
    tokenizer.padding_side = "left"
    return tokenizer


def _prepare_all(
    problems: ProblemSet, work: Path, executor: Executor, echo: Callable[[str], None]
) -> list[Prepared]:
    from nvcc_opt_train.appcheck import default_cmake_args, gpus_here

    cmake_args = default_cmake_args(bool(gpus_here()))
    jobs = [
        executor.submit(prepare, problems.app_dir(p), ref, work, launcher_path(), cmake_args)
        for p in problems.problems("train")
        for ref in p.regions
    ]
    prepared = [job.result() for job in jobs]
    for p in prepared:
        if p.error is not None:
            echo(f"{p.id}: {p.error} (its rollouts get r_perf = -2)")
    return prepared


def train_grpo(
    problems_dir: Path,
    model: Path,
    out: Path,
    settings: GRPOSettings,
    resume: bool = False,
    echo: Callable[[str], None] = lambda _: None,
    trainer_hook: Callable[[Any], None] | None = None,
) -> Any:
    """Train; return the trainer. GRPOError / StudentError / ProblemSetError / PoolError (one
    line each) before anything loads when the input is wrong. `trainer_hook` sees the trainer
    before it trains (tests script the model's replies there)."""
    from nvcc_opt_train.exclusion import require_exclusion

    vllm_args = _vllm_args(settings)
    open_executor(settings.pool).shutdown()  # a bad --pool is one line before anything loads
    problemset = ProblemSet.open(problems_dir)
    require_exclusion(problemset)
    print_ = fingerprint(model) if model.is_dir() else {"model": str(model), "sha256": ""}
    checkpoint = _checkpoint_to_resume(out, model, print_, resume)
    tokenizer = _tokenizer(model)
    inference_context(model, settings)  # a reply that leaves no room: one line, before any work
    out.mkdir(parents=True, exist_ok=True)
    if _rank() == "0":
        write_fingerprint(out, print_)
        text = json.dumps(asdict(settings), indent=1) + "\n"
        (out / SETTINGS).write_text(text, encoding="utf-8")
    work = out / "work" / f"rank{_rank()}"  # each process of a multi-GPU run its own copies
    os.environ["NVCC_OPT_STORE"] = str(work / "state" / "store.db")  # never the user's store
    executor = open_executor(settings.pool)
    try:
        prepared = _prepare_all(problemset, work, executor, echo)
        gpus = tuple(g.strip() for g in settings.tool_gpus.split(",") if g.strip())
        shared = Rollouts({p.id: p for p in prepared}, executor, launcher_path(), gpus=gpus)
        baselines = {k: v.get("ms") for k, v in problemset.baselines().items() if v.get("ok")}
        data = rows(prepared, settings.samples, settings.seed, _gpu(settings), baselines)
        factories = {row["environment"]: None for row in data}
        envs = {key: environment_class(tuple(key.split("+")), shared) for key in factories}
        trainer = _trainer(model, tokenizer, out, settings, data, envs, shared, vllm_args, print_)
        if trainer_hook is not None:
            trainer_hook(trainer)
        try:
            trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint else None)
        finally:  # the rollouts' scratch folders and private trees
            for pool in getattr(trainer, "_environment_pool", {}).values():
                for env in pool:
                    env._close()
        trainer.save_model(str(out / "final"))
        tokenizer.save_pretrained(str(out / "final"))
        return trainer
    finally:
        executor.shutdown(wait=True)


def _rank() -> str:
    """This process's rank in an accelerate/torchrun launch ("0" alone)."""
    return os.environ.get("RANK", "0")


def _gpu(settings: GRPOSettings) -> str:
    if settings.gpu_name:
        return settings.gpu_name
    from nvcc_opt.verify import final
    from nvcc_opt.workspace.runner import ProcessRunner

    return final.machine(ProcessRunner()).split(" / ", 1)[-1]


def _checkpoint_to_resume(
    out: Path, model: Path, print_: dict[str, str], resume: bool
) -> Path | None:
    from transformers.trainer_utils import get_last_checkpoint

    exists = out.is_dir() and any(out.iterdir())
    if not resume:
        if exists and _rank() == "0":  # other ranks may see what rank 0 just wrote
            raise GRPOError(
                f"{out}: holds a run already: pass --resume to continue it, or use a new --out"
            )
        return None
    if not exists:
        raise GRPOError(f"{out}: no run to resume (nothing there)")
    last = get_last_checkpoint(str(out))  # type: ignore[no-untyped-call, unused-ignore]
    if last is None:
        raise GRPOError(f"{out}: no checkpoint-N folder to resume from")
    check_resume(Path(last), model, print_)
    return Path(last)


def _trainer(
    model: Path,
    tokenizer: Any,
    out: Path,
    settings: GRPOSettings,
    data: list[dict[str, Any]],
    envs: dict[str, type[Any]],
    shared: Rollouts,
    vllm_args: dict[str, Any],
    print_: dict[str, str],
) -> Any:
    from datasets import Dataset  # type: ignore[import-not-found, import-untyped, unused-ignore]
    from transformers import TrainerCallback
    from trl import GRPOConfig  # type: ignore[attr-defined, import-not-found, unused-ignore]

    class Fingerprint(TrainerCallback):  # type: ignore[misc, unused-ignore]
        def on_save(self, args: Any, state: Any, control: Any, **_: Any) -> None:
            folder = Path(args.output_dir) / f"checkpoint-{state.global_step}"
            if folder.is_dir():
                write_fingerprint(folder, print_)

    context, reply = inference_context(model, settings)
    config = GRPOConfig(
        output_dir=str(out),
        num_generations=settings.generations,
        beta=settings.beta,
        scale_rewards=settings.scale_rewards,
        loss_type=settings.loss_type,
        max_steps=settings.max_steps,
        learning_rate=settings.lr,
        per_device_train_batch_size=settings.batch,
        gradient_accumulation_steps=settings.grad_accum,
        max_completion_length=settings.max_completion_length or context,
        # each turn's reply capped as the backend caps it (vLLM's name for it: max_tokens)
        generation_kwargs={_reply_key(settings): reply},
        max_tool_calling_iterations=settings.max_tool_turns,
        temperature=settings.temperature,
        save_strategy="steps",
        save_steps=settings.save_steps,
        logging_steps=1,
        seed=settings.seed,
        bf16=settings.bf16,
        report_to=[],
        shuffle_dataset=True,
        **vllm_args,
    )
    stats = StepStats()
    trainer = trainer_class()(
        model=str(model),
        reward_funcs=reward_functions(stats, shared.executor),
        args=config,
        train_dataset=Dataset.from_list(data),
        processing_class=tokenizer,
        environment_factory=dict(envs),
        callbacks=[Fingerprint()],
    )
    trainer.rollouts, trainer.stats, trainer.steps_log = shared, stats, out / STEPS_LOG
    trainer.prompt_room, trainer.prompt_tokens = context - reply, counters(tokenizer)[0]
    return trainer


def inference_context(model: Path, settings: GRPOSettings) -> tuple[int, int]:
    """The context the model runs in at inference and the tokens kept for its reply: the
    settings', else the hf backend's own (the model's max_position_embeddings, its default
    max_new_tokens). GRPOError when the reply leaves no room for a prompt."""
    context = settings.context if settings.context is not None else model_context(model)
    reply = settings.reply_tokens if settings.reply_tokens is not None else hf_reply_tokens()
    if reply >= context:
        raise GRPOError(f"reply_tokens = {reply} leaves no room for a prompt in context {context}")
    return context, reply


def _reply_key(settings: GRPOSettings) -> str:
    return "max_tokens" if settings.vllm is not None else "max_new_tokens"
