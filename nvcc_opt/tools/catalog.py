"""The six tools of the paper, in its order, and the optional profile_kernel, built in one place
for a project root and, when a region is given, for that region.

`TOOL_NAMES` are the paper's six: what a model is offered by default, and what training parity
draws from. `OPTIONAL_TOOLS` (profile_kernel) exist only when asked for by name.
`declarations()` describes every tool, the optional ones too, without building anything (schemas,
prompt text); `open_catalog` builds the tools that can run, and `Catalog.close()` removes the
scratch folders they made. benchmark_code, compiler_analysis and profile_kernel work on one
region, so they exist only when a region is given; microbench_code and the file tools need only
the root.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import types
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from nvcc_opt.config import ProjectConfig, load
from nvcc_opt.config.project import PYPROJECT, has_tool_table
from nvcc_opt.paths import CONFIG_NAME, store_path
from nvcc_opt.toolbox.schema import Tool, Toolbox
from nvcc_opt.tools.analysis import Analysis
from nvcc_opt.tools.bench import Benchmark
from nvcc_opt.tools.files import ProjectFiles
from nvcc_opt.tools.microbench import Microbench
from nvcc_opt.tools.profile import Profile
from nvcc_opt.tools.region import Region
from nvcc_opt.workspace.runner import ProcessRunner, Runner

_DECLARED: dict[str, Callable[..., str]] = {
    "benchmark_code": Benchmark.benchmark_code,
    "microbench_code": Microbench.microbench_code,
    "compiler_analysis": Analysis.compiler_analysis,
    "file_viewer": ProjectFiles.file_viewer,
    "list_dir": ProjectFiles.list_dir,
    "search": ProjectFiles.search,
}
_OPTIONAL: dict[str, Callable[..., str]] = {
    "profile_kernel": Profile.profile_kernel,
}
TOOL_NAMES = tuple(_DECLARED)  # the paper's six: the default everywhere
OPTIONAL_TOOLS = tuple(_OPTIONAL)  # offered only when named (e.g. --tools ...,profile_kernel)
ALL_TOOL_NAMES = TOOL_NAMES + OPTIONAL_TOOLS
REGION_TOOLS = frozenset({"benchmark_code", "compiler_analysis", "profile_kernel"})


def launcher_path() -> str:
    """The nvcc-opt that private trees build through: this one."""
    me = Path(sys.argv[0])
    if me.name == "nvcc-opt" and me.exists():
        return str(me.resolve())
    # The console script installed with this interpreter is this installation, wherever PATH
    # points (under pytest or `python -m`, argv[0] is not the script).
    beside = Path(sys.executable).parent / "nvcc-opt"
    if beside.is_file():
        return str(beside)
    return shutil.which("nvcc-opt") or "nvcc-opt"


def declarations() -> Toolbox:
    """Every tool's declaration, the paper's six in its order and then the optional ones, bound
    to no project: for schemas and prompt text only (a call fails)."""
    unbound = object()  # a method's schema leaves out `self`, so bind it to a placeholder
    declared = [*_DECLARED.values(), *_OPTIONAL.values()]
    return Toolbox(Tool.from_function(types.MethodType(f, unbound)) for f in declared)


def has_config(root: Path) -> bool:
    """Whether `root` holds nvcc-opt.toml or a [tool.nvcc-opt] table."""
    return (root / CONFIG_NAME).is_file() or has_tool_table(root / PYPROJECT)


@dataclass
class Catalog:
    """The tools built for one project root (and region); `close()` or `with` cleans up."""

    toolbox: Toolbox
    files: ProjectFiles
    microbench: Microbench
    bench: Benchmark | None  # with the region: its `history` holds every verdict

    def close(self) -> None:
        if self.bench is not None:
            self.bench.close()
        shutil.rmtree(self.microbench.workdir, ignore_errors=True)

    def __enter__(self) -> Catalog:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()


def open_catalog(
    root: Path,
    region: Region | None = None,
    *,
    config: ProjectConfig | None = None,
    runner: Runner | None = None,
    launcher: str | None = None,
    label: str = "explore",
    extra: Iterable[str] = (),
) -> Catalog:
    """The tools for `root`: all six with a region, else microbench_code and the file tools.

    `extra` names optional tools to build too, with a region (names of the six in it are
    ignored, so a model's whole selection may be passed; ValueError for an unknown name).
    `config` defaults to the configuration at `root` (read when a region is given or a
    configuration file exists; ConfigError when it is wrong). microbench_code runs on the
    configuration's first GPU, else on the inherited CUDA_VISIBLE_DEVICES. `label` names the
    private build trees of benchmark_code and compiler_analysis."""
    unknown = sorted(set(extra) - set(ALL_TOOL_NAMES))
    if unknown:
        raise ValueError(f"unknown tools {unknown}; the tools are {', '.join(ALL_TOOL_NAMES)}")
    if config is None and (region is not None or has_config(root)):
        config = load(root)
    runner = runner or ProcessRunner()
    gpu = config.gpu.devices[0] if config is not None else None
    workdir = Path(tempfile.mkdtemp(prefix="nvcc-opt-microbench-"))
    microbench = Microbench(runner, workdir, gpu=gpu)
    files = ProjectFiles(config.source_root if config is not None else root, _private(root))
    if region is None or config is None:
        return Catalog(Toolbox.from_objects(microbench, files), files, microbench, None)
    bench = Benchmark(config, region, runner, launcher or launcher_path(), label=label)
    contexts: list[object] = [bench, microbench, Analysis(bench), files]
    if "profile_kernel" in set(extra):
        contexts.append(Profile(bench))
    tools = Toolbox.from_objects(*contexts)
    return Catalog(tools, files, microbench, bench)


STORE_SIDE = ("traces", "stamps", "seen", "said", "accepted-files")  # beside the store (paths.py)


def _private(root: Path) -> tuple[Path, ...]:
    """nvcc-opt's own state the file tools never show: the store's folder (traces, stamps), or,
    where that folder is the project's root or above it, the store's own files in it."""
    try:
        store = store_path(root)
    except ValueError:  # a broken configuration: `load` has said so already
        return ()
    folder = store.parent.resolve()
    if folder != root.resolve() and folder.is_relative_to(root.resolve()):
        return (folder,)
    side = [folder / name for name in STORE_SIDE]
    return (*side, *store.parent.glob(store.name + "*"))  # the database, its -wal and -shm
