"""The tools a model calls: typed functions whose schemas, prompt text and validation come from
their declarations, with capped output and errors returned as observations. `open_catalog`
builds the six of them for a project (and a region)."""

from nvcc_opt.tools.catalog import (
    REGION_TOOLS,
    TOOL_NAMES,
    Catalog,
    declarations,
    launcher_path,
    open_catalog,
)
from nvcc_opt.tools.files import ProjectFiles
from nvcc_opt.tools.output import cap
from nvcc_opt.tools.schema import Tool, Toolbox, ToolError, is_error, tool

__all__ = [
    "REGION_TOOLS",
    "TOOL_NAMES",
    "Catalog",
    "ProjectFiles",
    "Tool",
    "ToolError",
    "Toolbox",
    "cap",
    "declarations",
    "is_error",
    "launcher_path",
    "open_catalog",
    "tool",
]
