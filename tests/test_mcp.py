"""`nvcc-opt mcp` as an agent meets it: the installed script started by the SDK's own stdio
client, tools listed with their schemas, file tools confined to the root, benchmark_code on a
real region, and `submit` storing a proposed rewrite only after the final verification."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
import pytest

from nvcc_opt.records import RewriteState
from nvcc_opt.store.api import Store
from tests.conftest import PAPER_SIX, needs_nvcc
from tests.test_tools_bench import FIXTURE, HALF

pytest.importorskip("mcp")

from mcp import ClientSession, StdioServerParameters, types  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

T = TypeVar("T")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A copy of the fixture; its build folder is empty until a test configures it."""
    root = tmp_path / "hostapp"
    shutil.copytree(FIXTURE, root)
    (root / "build").mkdir()
    return root


def _env(root: Path) -> dict[str, str]:
    return {
        **os.environ,
        "XDG_CACHE_HOME": str(root / "cache"),
        "NVCC_OPT_STORE": str(root / "state" / "store.db"),
    }


def _session(exe: str, root: Path, body: Callable[[ClientSession], Awaitable[T]]) -> T:
    """Start `nvcc-opt mcp` for the fixture's region and run `body` with a connected client."""
    server = StdioServerParameters(
        command=exe,
        args=["mcp", "--region", "src/work.cu:accumulate", "--root", str(root)],
        env=_env(root),
        cwd=root,
    )

    async def main() -> T:
        async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return await body(session)

    return anyio.run(main)


def _text(result: types.CallToolResult) -> str:
    assert len(result.content) == 1 and isinstance(result.content[0], types.TextContent)
    return result.content[0].text


def test_tools_are_listed_with_schemas_and_file_tools_stay_in_the_root(
    exe: str, project: Path
) -> None:
    async def body(session: ClientSession) -> dict[str, Any]:
        listed = await session.list_tools()
        found: dict[str, Any] = {t.name: t for t in listed.tools}
        found["list_dir"] = await session.call_tool("list_dir", {"path": "src"})
        found["view"] = await session.call_tool("file_viewer", {"path": "src/work.cu"})
        found["escape"] = await session.call_tool("file_viewer", {"path": "../secret.txt"})
        found["bad"] = await session.call_tool("list_dir", {"path": 3})
        return found

    (project.parent / "secret.txt").write_text("do not show\n")
    found = _session(exe, project, body)
    assert set(PAPER_SIX) | {"submit"} <= set(found)
    submit = found["submit"].input_schema
    assert submit["required"] == ["final_code", "explanation"]
    assert submit["properties"]["final_code"]["type"] == "string"
    assert "compile_args" in submit["properties"]
    assert found["benchmark_code"].input_schema["properties"]["code"]["type"] == "string"
    assert "work.cu" in _text(found["list_dir"]) and not found["list_dir"].is_error
    assert "accumulate" in _text(found["view"])
    escape = _text(found["escape"])
    assert found["escape"].is_error and "outside the project root" in escape
    assert "do not show" not in escape
    assert found["bad"].is_error and "path" in _text(found["bad"])


def test_missing_region_is_a_usage_error(exe: str, project: Path) -> None:
    done = subprocess.run(
        [exe, "mcp", "--region", "src/work.cu:nope", "--root", str(project)],
        cwd=project,
        env=_env(project),
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2 and "nope" in done.stderr


@needs_nvcc
@pytest.mark.slow
def test_benchmark_and_submit_store_a_proposed_rewrite(exe: str, project: Path) -> None:
    build = project / "build"
    for args in (
        ["cmake", "-S", str(project), "-B", str(build), "-G", "Ninja",
         f"-DCMAKE_CUDA_COMPILER_LAUNCHER={exe}"],
        ["cmake", "--build", str(build)],
    ):  # fmt: skip
        subprocess.run(args, check=True, capture_output=True, env=_env(project))

    async def body(session: ClientSession) -> tuple[str, types.CallToolResult]:
        bench = await session.call_tool("benchmark_code", {"code": HALF})
        final = {"final_code": HALF, "explanation": "half the passes"}
        return _text(bench), await session.call_tool("submit", final)

    bench, submitted = _session(exe, project, body)
    assert "verdict: improved" in bench, bench
    assert not submitted.is_error and "stored as proposed rewrite #" in _text(submitted)
    with Store.open(project / "state" / "store.db") as store:
        (rewrite,) = store.rewrites()
    assert rewrite.state == RewriteState.PROPOSED and rewrite.origin == "mcp"
    assert rewrite.code == HALF and rewrite.region_name == "accumulate"
    assert rewrite.last_verification is not None and rewrite.last_verification.passed
    assert isinstance(rewrite.trace, dict)
    assert [c["tool"] for c in rewrite.trace["calls"]] == ["benchmark_code"]
