"""`nvcc-opt mcp --region FILE:NAME`: serve one region's tools to any MCP-capable agent.

The MCP SDK is an optional extra, imported only when this command runs.
"""

from __future__ import annotations

from pathlib import Path

import click

from nvcc_opt.cli.common import open_store
from nvcc_opt.config import ConfigError, find_root, load
from nvcc_opt.tools.catalog import launcher_path, open_catalog
from nvcc_opt.tools.cli import find_region
from nvcc_opt.workspace.runner import ProcessRunner

MISSING = "the MCP server needs the mcp package (2.x): pip install 'nvcc-opt[mcp]'"
LABEL = "mcp"  # its own private trees: an optimize run's trees are not disturbed


@click.command("mcp")
@click.option(
    "--region",
    "region_spec",
    metavar="FILE:NAME",
    required=True,
    help="The region to optimize: its file (relative to here) and its name, e.g. src/k.cu:k.",
)
@click.option(
    "--root",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    help="The project root (default: the nearest folder at or above the region's file with "
    "nvcc-opt.toml, else here).",
)
@click.option(
    "--transport",
    type=click.Choice(["stdio", "http"]),
    default="stdio",
    show_default=True,
    help="stdio for an agent that starts this command; http for streamable HTTP at /mcp.",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="HTTP only.")
@click.option("--port", type=int, default=8765, show_default=True, help="HTTP only.")
@click.pass_context
def mcp(
    ctx: click.Context,
    region_spec: str,
    root: Path | None,
    transport: str,
    host: str,
    port: int,
) -> None:
    """Serve the six tools for one region, and `submit`, over MCP.

    `submit` verifies a final rewrite independently and stores it as proposed (for
    `nvcc-opt review`) only when it is a verified speedup.
    """
    try:
        from nvcc_opt import mcp_server
    except ImportError as exc:  # not installed, or an mcp 1.x whose API differs
        raise click.ClickException(f"{MISSING} ({exc})") from exc

    region = find_region(region_spec)
    project = (root or find_root(region.file.parent) or Path.cwd()).resolve()
    try:
        config = load(project)
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from exc
    runner, launcher = ProcessRunner(), launcher_path()
    with (
        open_store(ctx) as store,
        open_catalog(
            project, region, config=config, runner=runner, launcher=launcher, label=LABEL
        ) as catalog,
    ):
        tools = mcp_server.RegionTools(
            catalog, store, config, region, runner=runner, launcher=launcher
        )
        about = mcp_server.instructions(region, _shown(region.file, config.source_root))
        server = mcp_server.build_server(tools, about)
        if transport == "http":
            click.echo(f"nvcc-opt mcp: serving http://{host}:{port}/mcp", err=True)
            mcp_server.serve_http(server, host, port)
        else:
            mcp_server.serve_stdio(server)


def _shown(file: Path, root: Path) -> str:
    """The file as the file tools name it: relative to the root when it is inside."""
    return str(file.relative_to(root)) if file.is_relative_to(root) else str(file)
