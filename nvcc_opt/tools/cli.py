"""`nvcc-opt tool NAME --args JSON`: call one tool by hand, exactly as a model would."""

from __future__ import annotations

import json
from pathlib import Path

import click

from nvcc_opt.tools.files import ProjectFiles
from nvcc_opt.tools.schema import Toolbox, is_error


def toolbox(root: Path) -> Toolbox:
    """The tools this command offers for a project root."""
    return Toolbox.from_objects(ProjectFiles(root))


@click.command("tool")
@click.argument("name", required=False)
@click.option("--args", "args_json", default="{}", help='Arguments as a JSON object: {"path": "."}')
@click.option(
    "--root",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=Path("."),
    help="The project root that tool paths are relative to (default: here).",
)
@click.option("--schema", is_flag=True, help="Print NAME's JSON schema instead of calling it.")
def tool_command(name: str | None, args_json: str, root: Path, schema: bool) -> None:
    """Call tool NAME and print what the model would see (exit 1 when it reports an error).

    Without NAME, describe every tool as a prompt does.
    """
    tools = toolbox(root)
    if name is None:
        click.echo(tools.prompt_text())
        return
    if schema:
        if name not in tools.tools:
            raise click.BadParameter(f"choose from {', '.join(tools.names)}", param_hint="NAME")
        click.echo(json.dumps(tools.tools[name].schema(), indent=2))
        return
    observation = tools.call(name, args_json)
    click.echo(observation)
    if is_error(observation):
        raise SystemExit(1)
