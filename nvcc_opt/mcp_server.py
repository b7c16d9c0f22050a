"""The six tools for one region, plus `submit`, served over MCP (the official `mcp` SDK, v2).

Any MCP-capable coding agent can then optimize the region with the same tools, schemas,
confinement and verification as `nvcc-opt optimize`: each tool is served with the JSON schema
its declaration gives and runs through `Tool.invoke`, so a bad call is an observation, never a
crash. `submit` runs the independent final verification and stores a *proposed* rewrite only
when it passes. Calls run one at a time in a worker thread (they share private build trees) and
are recorded; the record is the stored rewrite's trace.

Imports the SDK at module level: import this module only once `mcp` is known to be installed.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import anyio
import anyio.to_thread
from mcp import types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server

from nvcc_opt.config import ProjectConfig
from nvcc_opt.store.api import Store
from nvcc_opt.submit import Answer, verify_and_store
from nvcc_opt.toolbox.schema import Tool, Toolbox, is_error, tool
from nvcc_opt.tools.bench import describe
from nvcc_opt.tools.catalog import Catalog
from nvcc_opt.tools.region import Region
from nvcc_opt.workspace.runner import Runner

NAME = "nvcc-opt"
ORIGIN = "mcp"
MODEL = "mcp client"  # the store's model field: the agent behind the client is not known


class RegionTools:
    """The catalog's tools for one region and `submit`; `call` serializes and records calls."""

    def __init__(
        self,
        catalog: Catalog,
        store: Store,
        config: ProjectConfig,
        region: Region,
        *,
        runner: Runner,
        launcher: str,
    ) -> None:
        self.store = store
        self.config = config
        self.region = region
        self.runner = runner
        self.launcher = launcher
        self.calls: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        own = Toolbox.from_objects(self).select(None)
        self.toolbox = Toolbox([*catalog.toolbox.select(None), *own])

    def call(self, name: str, arguments: Mapping[str, Any]) -> str:
        """Run one tool call to its observation (always text) and record it."""
        with self._lock:
            observation = self.toolbox.call(name, arguments)
            self.calls.append(
                {"tool": name, "arguments": dict(arguments), "observation": observation}
            )
        return observation

    @tool
    def submit(
        self, final_code: str, explanation: str, compile_args: list[str] | None = None
    ) -> str:
        """Submit your final rewrite of the region: it is rebuilt and re-measured independently
        (more runs, fresh inputs, sanitizers where available), and stored as a proposed rewrite
        for a person to review only when that verification finds a real speedup.

        Args:
            final_code: The complete new text of the region, as for benchmark_code.
            explanation: Why the rewrite is faster and why it computes the same results.
            compile_args: Extra nvcc flags the rewrite needs, code generation only (as
                benchmark_code takes them), e.g. ["-maxrregcount=64"].

        Returns:
            The final verdict, and the id of the stored rewrite when there is one.
        """
        answer = Answer(
            final_code, explanation, tuple(compile_args or ()), MODEL, {"calls": self.calls}, ORIGIN
        )
        done = verify_and_store(
            self.store, self.config, self.region, answer, runner=self.runner,
            launcher=self.launcher,
        )  # fmt: skip
        lines = [describe(done.verdict), *(f"note: {n}" for n in done.notes)]
        if done.rewrite_id is None:
            lines.append("not stored: the original is kept")
        else:
            lines.append(f"stored as proposed rewrite #{done.rewrite_id} (nvcc-opt review)")
        return "\n".join(lines)


def instructions(region: Region, root_relative: str) -> str:
    """What the server tells a connecting agent about its job."""
    return (
        f"Optimize the region '{region.name}' of {root_relative} (a CUDA project built with "
        "nvcc-opt) for speed without changing its results. Read the code with file_viewer, "
        "list_dir and search; try ideas with benchmark_code, compiler_analysis and "
        "microbench_code; the source tree is never edited. When done, call submit with the "
        "complete new region text: only a rewrite that the independent verification finds "
        "faster and correct is stored, for a person to review."
    )


def build_server(tools: RegionTools, about: str) -> Server[Any]:
    """A low-level MCP server that lists `tools` with their schemas and runs them."""
    listing = [_listed(t) for t in tools.toolbox.select(None)]

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listing)

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        text = await anyio.to_thread.run_sync(tools.call, params.name, params.arguments or {})
        content: list[types.ContentBlock] = [types.TextContent(type="text", text=text)]
        return types.CallToolResult(content=content, is_error=is_error(text))

    return Server(NAME, instructions=about, on_list_tools=list_tools, on_call_tool=call_tool)


def _listed(one: Tool) -> types.Tool:
    returns = f"\n\nReturns: {one.returns}" if one.returns else ""
    return types.Tool(
        name=one.name, description=one.description + returns, input_schema=one.parameters
    )


def serve_stdio(server: Server[Any]) -> None:
    """Serve on stdin/stdout until the client closes them."""

    async def main() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)


def serve_http(server: Server[Any], host: str, port: int) -> None:
    """Serve streamable HTTP at http://HOST:PORT/mcp until interrupted."""
    import uvicorn

    app = server.streamable_http_app(host=host)
    uvicorn.run(app, host=host, port=port, log_level="warning")
