"""`nvcc-opt optimize [FILE:NAME...]`: let a model optimize regions the build has seen."""

from __future__ import annotations

import json
import time
import traceback
from collections.abc import Callable
from pathlib import Path

import click

from nvcc_opt.agent.backends import load as load_model
from nvcc_opt.agent.loop import Limits
from nvcc_opt.agent.model import Model, ModelError
from nvcc_opt.agent.prompt import PromptError
from nvcc_opt.cli.common import open_store
from nvcc_opt.config import ConfigError, ProjectConfig, find_root, load
from nvcc_opt.optimize import CannotRun, RegionResult, no_gpu_here, optimize_region
from nvcc_opt.pool.gpu_queue import each_on_a_gpu
from nvcc_opt.records import RewriteState, unestablished
from nvcc_opt.regions.headers import is_header, never_substituted
from nvcc_opt.store.api import Store
from nvcc_opt.toolbox.schema import ToolError
from nvcc_opt.tools.catalog import OPTIONAL_TOOLS, TOOL_NAMES, launcher_path
from nvcc_opt.tools.cli import find_region
from nvcc_opt.tools.region import Region, RegionNotFound
from nvcc_opt.workspace.runner import ProcessRunner
from nvcc_opt.workspace.tree import TreeError


def undecided(store: Store) -> list[Region]:
    """Regions the build has seen whose current text has no proposed or accepted rewrite."""
    open_states = [RewriteState.PROPOSED, RewriteState.ACCEPTED]
    taken = {(r.file, r.region_hash) for r in store.rewrites(states=open_states)}
    found = []
    for record in store.regions():
        if (record.file, record.text_hash) in taken:
            continue
        try:
            region = Region.find(Path(record.file), record.text_hash)
        except RegionNotFound:
            continue  # the file changed since that build: not the region it holds now
        if region not in found:
            found.append(region)
    return found


DEFAULT_TURNS = 30


@click.command("optimize")
@click.argument("regions", nargs=-1, metavar="[FILE:NAME]...")
@click.option(
    "--model", "spec", required=True, help="search, openai:MODEL@URL, vllm:PATH, hf:PATH, smollm2"
)
@click.option(
    "--tools",
    default=None,
    help=f"Comma-separated subset of {','.join(TOOL_NAMES)} [default: all six]; may add the "
    f"optional {','.join(OPTIONAL_TOOLS)}.",
)
@click.option("--parity", is_flag=True, help="Offer 4-6 random tools (always benchmark_code).")
@click.option(
    "--no-tools",
    is_flag=True,
    help="The paper's no-tools baseline: the region in the prompt, no tool offered, one answer"
    " (verified like any other).",
)
@click.option(
    "--turns",
    type=click.IntRange(min=1),
    default=None,
    help="Model turns per region [default: 30; the search policy: its tool calls and one more].",
)
@click.option("--time", "wall_s", type=float, default=3600.0, show_default=True, help="Seconds.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option(
    "--gpus",
    default=None,
    help="Comma-separated GPUs (CUDA_VISIBLE_DEVICES values): regions run in parallel, one per"
    " GPU (default: one at a time on [gpu] devices' first).",
)
@click.option("--root", type=click.Path(file_okay=False, path_type=Path), default=None)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print a JSON list of the regions' results on stdout, alone: progress lines go to stderr.",
)
@click.pass_context
def optimize(
    ctx: click.Context,
    regions: tuple[str, ...],
    spec: str,
    tools: str | None,
    parity: bool,
    no_tools: bool,
    turns: int | None,
    wall_s: float,
    seed: int,
    gpus: str | None,
    root: Path | None,
    as_json: bool,
) -> None:
    """Optimize regions (default: every region the build has seen without a proposed or
    accepted rewrite). Each final answer is verified independently; only a verified speedup is
    stored, as *proposed*, for `nvcc-opt review`."""
    chosen_tools = [t.strip() for t in tools.split(",")] if tools else None
    if no_tools:
        if tools is not None or parity:
            raise click.UsageError(
                "--no-tools offers no tool: it takes neither --tools nor --parity"
            )
        chosen_tools, turns = [], turns or 1
    results: list[RegionResult] = []
    cannot: list[str] = []  # why each region that could not be optimized could not
    with open_store(ctx) as store:
        targets = [find_region(r, "REGION") for r in regions] or undecided(store)
        named = len(targets)
        for region in [t for t in targets if is_header(t.file)]:
            if not store.regions(file=str(region.file.resolve())):  # no build compiled it
                cannot.append(never_substituted(region.file))
                click.echo(f"{_tag(region, None)} cannot optimize: {cannot[-1]}", err=as_json)
                targets.remove(region)
        if not named:
            click.echo(
                "nothing to optimize: build through nvcc-opt first, or name FILE:NAME",
                err=as_json,
            )
        elif targets and no_gpu_here():  # said first: the baseline run will tell
            click.echo(
                "warning: there is no GPU here (nvidia-smi is not installed): a program that "
                "needs one can be neither run nor timed, so its regions cannot be optimized here",
                err=True,
            )
        # before the model: loading one takes a while
        configs = _configs(targets, root, cannot, as_json)
        targets = [t for t in targets if t in configs]
        model = _model(spec) if targets else None
        needed = getattr(model, "turns_needed", 0)
        limits = Limits(turns=turns or max(DEFAULT_TURNS, needed), wall_s=wall_s)
        traces = store.path.parent / "traces"

        def one(region: Region, gpu: str | None) -> RegionResult | None:
            def say(message: str) -> None:  # with --json, stdout holds the JSON alone
                click.echo(f"{_tag(region, gpu)} {message}", err=as_json)

            say(f"{region.file}:{region.span.start_line}: optimizing")
            trace = traces / f"{time.strftime('%Y%m%d-%H%M%S')}-{region.name}.json"
            config = configs[region]
            assert model is not None
            if gpu is not None:
                config = config.model_copy(
                    update={"gpu": config.gpu.model_copy(update={"devices": (gpu,)})}
                )
            try:
                result = optimize_region(
                    store=store, config=config, region=region, model=model,
                    runner=ProcessRunner(), launcher=launcher_path(), trace_path=trace,
                    tools=chosen_tools, parity=parity,
                    limits=limits, seed=seed,
                    label="explore" if gpu is None else f"explore-gpu{gpu}", progress=say,
                )  # fmt: skip
            except CannotRun as exc:
                cannot.append(f"{NOT_RUN}: {exc}")
                say(f"cannot optimize: {cannot[-1]}")
                return None
            except (ConfigError, PromptError, TreeError, ToolError, ModelError) as exc:
                cannot.append(str(exc))
                say(f"cannot optimize: {exc}")
                return None
            except Exception as exc:  # a bug of nvcc-opt: this region stops, the others go on
                click.echo(traceback.format_exc(), err=True)
                cannot.append(
                    f"{region.file}:{region.span.start_line}: {region.name}: internal error in "
                    f"nvcc-opt ({type(exc).__name__}: {exc}); nothing was stored for it; its "
                    f"trace so far is {trace} (where its model answered, `nvcc-opt verify "
                    f"--answer {trace}` verifies that answer without asking the model again); "
                    "please report it with the traceback above"
                )
                say(f"cannot optimize: {cannot[-1]}")
                return None
            _say(result, say)
            results.append(result)  # kept even if a later region is interrupted
            return result

        try:
            _run_all(targets, gpus, one)
        except KeyboardInterrupt:
            click.echo(
                f"interrupted: what was verified so far is kept; an answer whose verification "
                f"was cut off is verified again by `nvcc-opt verify --answer TRACE` (traces in "
                f"{traces})",
                err=True,
            )
    if as_json:
        click.echo(json.dumps([r.to_dict() for r in results], indent=2))
    if cannot:
        raise click.ClickException(_summary(cannot, len(cannot) + len(results)))


NOT_RUN = "the original could not be run or timed here"


def _tag(region: Region, gpu: str | None) -> str:
    return f"[{region.name}{'' if gpu is None else f' gpu {gpu}'}]"


def _model(spec: str) -> Model:
    try:
        return load_model(spec)
    except (ValueError, ModelError) as exc:
        raise click.BadParameter(str(exc), param_hint="--model") from exc


def _configs(
    targets: list[Region], root: Path | None, cannot: list[str], to_stderr: bool
) -> dict[Region, ProjectConfig]:
    """Each region's project configuration, where it can be loaded and has a run command (the
    others are said at once, and added to `cannot`): checked before anything slow."""
    loaded: dict[Region, ProjectConfig] = {}
    for region in targets:
        try:
            config = load(root or find_root(region.file.parent) or Path.cwd())
        except ConfigError as exc:
            cannot.append(str(exc))
        else:
            try:
                config.check_run_command()  # rendered per run: {work} is the run's own
                loaded[region] = config
                continue
            except ConfigError as exc:
                cannot.append(f"{NOT_RUN}: {exc}")
        click.echo(f"{_tag(region, None)} cannot optimize: {cannot[-1]}", err=to_stderr)
    return loaded


def _summary(cannot: list[str], regions: int) -> str:
    """The error line the command ends with: how many regions could not be optimized, and why
    when there is one reason."""
    reasons = sorted(set(cannot))
    what = f"{len(cannot)} of {regions} regions" if regions > 1 else "the region"
    why = f": {reasons[0]}" if len(reasons) == 1 else " (see above)"
    return f"cannot optimize {what}{why}"


def _run_all(
    targets: list[Region],
    gpus: str | None,
    one: Callable[[Region, str | None], RegionResult | None],
) -> list[RegionResult | None]:
    """One region after another; with --gpus, as many at once as GPUs, one GPU each."""
    ids = [g.strip() for g in (gpus or "").split(",") if g.strip()]
    return each_on_a_gpu(targets, ids, one)


def _say(result: RegionResult, say: Callable[[str], None]) -> None:
    held = unestablished(result.reasons)
    if result.rewrite_id is not None and held:
        say(
            f"proposed rewrite #{result.rewrite_id}: {result.speedup:.3f}x measured, not "
            f"established ({held[0]}; nvcc-opt review needs --force); trace {result.trace}"
        )
    elif result.rewrite_id is not None:
        say(
            f"proposed rewrite #{result.rewrite_id}: {result.speedup:.3f}x verified "
            f"(nvcc-opt review); trace {result.trace}"
        )
    else:
        why = result.reasons[0] if result.reasons else result.stopped
        say(f"no verified improvement, original kept ({why}); trace {result.trace}")
