"""The tools a model calls: typed functions whose schemas, prompt text and validation come from
their declarations, with capped output and errors returned as observations."""

from nvcc_opt.tools.files import ProjectFiles
from nvcc_opt.tools.output import cap
from nvcc_opt.tools.schema import Tool, Toolbox, ToolError, is_error, tool

__all__ = ["ProjectFiles", "Tool", "ToolError", "Toolbox", "cap", "is_error", "tool"]
