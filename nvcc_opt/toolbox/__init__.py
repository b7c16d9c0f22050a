"""The generic tool framework: `@tool` declarations (schema, prompt text, validation from type
hints and docstrings), `Toolbox.call` that never raises, and output caps. It knows nothing of
CUDA: the agent loop, the MCP server and the search policy call tools through it, and
`nvcc_opt.tools` declares the CUDA tools with it."""
