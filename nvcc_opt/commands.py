"""The `nvcc-opt` subcommands: name -> (where the click command is, its one-line help).

Plain data and no imports: the console entry reads the names to tell a subcommand from a compiler
on every compile, and the CLI group imports a command's module only when that command runs, so
`nvcc-opt --help` lists them from here (tests/test_startup.py checks each line against the
command's own help). Adding a command is one entry.

It also holds the environment names that make nvcc-opt a pass-through, for the same reason: the
fast path reads them, and the layers that start compilers import them from this leaf rather
than from `entry.py` (which would put the whole CLI in their import graph).
"""

GUARD = "NVCC_OPT_ACTIVE"  # set for the compilers we start: a nested nvcc-opt passes through
DISABLE = "NVCC_OPT_DISABLE"  # set by a user: every compile passes through untouched

COMMANDS: dict[str, tuple[str, str]] = {
    "status": (
        "nvcc_opt.cli.report:status",
        "Every region the build has seen, how it was compiled, and its rewrites.",
    ),
    "explain": (
        "nvcc_opt.cli.report:explain",
        "Why each region of FILE does or does not get a rewrite.",
    ),
    "report": (
        "nvcc_opt.html_report.cli:report",
        "Write one self-contained HTML report of bench reports, traces, a store and LULESH.",
    ),
    "import": (
        "nvcc_opt.cli.transfer:import_command",
        "Add the rewrites of FILE (JSON, as `export` writes) as proposed.",
    ),
    "export": (
        "nvcc_opt.cli.exchange:export",
        "Write rewrites as JSON that `import` reads (to OUTPUT, default stdout).",
    ),
    "review": (
        "nvcc_opt.cli.review:review",
        "Accept, reject or revoke rewrites; without options, step through them interactively.",
    ),
    "tool": (
        "nvcc_opt.tools.cli:tool_command",
        "Call tool NAME and print what the model would see (exit 1 when it reports an error).",
    ),
    "init": (
        "nvcc_opt.cli.config:init",
        "Write a commented nvcc-opt.toml here for the CMake build tree found.",
    ),
    "verify": (
        "nvcc_opt.cli.verify:verify",
        "Verify rewrites on this machine and record the verdicts (default: every proposed or "
        "accepted rewrite never verified here, or whose compiler, flags, file or targets changed).",
    ),
    "optimize": (
        "nvcc_opt.cli.optimize:optimize",
        "Optimize regions (default: every region the build has seen without a proposed or "
        "accepted rewrite).",
    ),
    "mcp": ("nvcc_opt.cli.mcp:mcp", "Serve the six tools for one region, and `submit`, over MCP."),
    "bench": ("nvcc_opt.cli.bench:bench", "Benchmarks of the optimizer."),
    "recover": (
        "nvcc_opt.cli.recover:recover",
        "Rebuild the store's rewrites, decisions and verifications from its journal.",
    ),
    "cmake-dir": (
        "nvcc_opt.cli.cmake:cmake_dir_command",
        "Print the folder of NvccOpt.cmake, for list(APPEND CMAKE_MODULE_PATH ...).",
    ),
    "train": (
        "nvcc_opt.cli.train:train",
        "Problem sets, teacher traces, distillation and evaluation (pip install ./training).",
    ),
}
