"""Project configuration: how an application is built, run, timed and judged correct.

`load(root)` reads `nvcc-opt.toml` (or `[tool.nvcc-opt]` in pyproject.toml) and returns a frozen
`ProjectConfig`; any mistake is a `ConfigError` naming the file and line.
"""

from nvcc_opt.config.model import (
    BuildConfig,
    CheckConfig,
    ConfigError,
    GpuConfig,
    RunConfig,
    Settings,
    TimeConfig,
    VerifyConfig,
)
from nvcc_opt.config.project import (
    PYPROJECT,
    ProjectConfig,
    find_build_trees,
    find_root,
    load,
    read_cmake_cache,
)

__all__ = [
    "PYPROJECT",
    "BuildConfig",
    "CheckConfig",
    "ConfigError",
    "GpuConfig",
    "ProjectConfig",
    "RunConfig",
    "Settings",
    "TimeConfig",
    "VerifyConfig",
    "find_build_trees",
    "find_root",
    "load",
    "read_cmake_cache",
]
