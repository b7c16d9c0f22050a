"""`nvcc-opt tool NAME --args JSON`: call one tool by hand, exactly as a model would."""

from __future__ import annotations

import json
from pathlib import Path

import click

from nvcc_opt.config import ConfigError, find_root
from nvcc_opt.toolbox.schema import Toolbox, is_error
from nvcc_opt.tools.catalog import OPTIONAL_TOOLS, REGION_TOOLS, declarations, open_catalog
from nvcc_opt.tools.region import Region, RegionNotFound

NEEDS_REGION = "needs --region FILE:NAME, the region it works on"
OPTIONAL = "optional: not offered to a model unless named, e.g. optimize --tools ...,{name}"
LABEL = "tool"  # its own private trees: an optimize run's trees are not disturbed


def describe(tools: Toolbox, region_given: bool) -> str:
    """Every tool as a prompt shows it; without a region, the region tools say what they need;
    the optional tools say so."""
    texts = []
    for name, one in tools.tools.items():
        signature, rest = one.prompt_text().split("\n", 1)
        notes = [NEEDS_REGION] if name in REGION_TOOLS and not region_given else []
        notes += [OPTIONAL.format(name=name)] if name in OPTIONAL_TOOLS else []
        texts.append("\n".join([signature, *(f"    ({note})" for note in notes), rest]))
    return "\n\n".join(texts)


def find_region(spec: str, param_hint: str = "--region") -> Region:
    """The region FILE:NAME (FILE relative to the current folder; NAME or a text hash)."""
    file, colon, name = spec.rpartition(":")
    if not colon or not file or not name:
        raise click.BadParameter("write FILE:NAME, e.g. src/k.cu:my_kernel", param_hint=param_hint)
    try:
        return Region.find(Path(file), name)
    except RegionNotFound as exc:
        raise click.BadParameter(str(exc), param_hint=param_hint) from exc


@click.command("tool")
@click.argument("name", required=False)
@click.option("--args", "args_json", default="{}", help='Arguments as a JSON object: {"path": "."}')
@click.option(
    "--root",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    help="The project root that tool paths are relative to (default: the nearest folder at or "
    "above here with nvcc-opt.toml, else here).",
)
@click.option(
    "--region",
    "region_spec",
    metavar="FILE:NAME",
    default=None,
    help="The region benchmark_code, compiler_analysis and profile_kernel work on: its file "
    "(relative to here) and its name, e.g. src/k.cu:my_kernel.",
)
@click.option("--schema", is_flag=True, help="Print NAME's JSON schema instead of calling it.")
def tool_command(
    name: str | None, args_json: str, root: Path | None, region_spec: str | None, schema: bool
) -> None:
    """Call tool NAME and print what the model would see (exit 1 when it reports an error).

    Without NAME, describe every tool as a prompt does.
    """
    declared = declarations()
    if name is None:
        click.echo(describe(declared, region_spec is not None))
        return
    if schema:
        if name not in declared.tools:
            raise click.BadParameter(f"choose from {', '.join(declared.names)}", param_hint="NAME")
        click.echo(json.dumps(declared.tools[name].schema(), indent=2))
        return
    if name not in declared.tools:
        click.echo(declared.call(name, args_json))  # as the model hears it: the names to use
        raise SystemExit(1)
    if name in REGION_TOOLS and region_spec is None:
        raise click.UsageError(f"{name} {NEEDS_REGION}, e.g. --region src/k.cu:my_kernel")
    region = find_region(region_spec) if name in REGION_TOOLS and region_spec else None
    project = root or find_root(Path.cwd()) or Path.cwd()
    try:
        catalog = open_catalog(project, region, label=LABEL, extra=OPTIONAL_TOOLS)
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from exc
    with catalog:
        _finish(catalog.toolbox.call(name, args_json))


def _finish(observation: str) -> None:
    click.echo(observation)
    if is_error(observation):
        raise SystemExit(1)
