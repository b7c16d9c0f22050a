"""`nvcc-opt cmake-dir`: the folder holding NvccOpt.cmake, for CMAKE_MODULE_PATH.

The module ships inside the package (like `pybind11 --cmakedir`), so every installation has it:
`cmake -DCMAKE_MODULE_PATH="$(nvcc-opt cmake-dir)"`, then `include(NvccOpt)`.
"""

from __future__ import annotations

from pathlib import Path

import click

MODULE = "NvccOpt.cmake"


def cmake_dir() -> Path:
    """The installed folder of NvccOpt.cmake."""
    return Path(__file__).resolve().parent.parent / "cmake"


@click.command("cmake-dir")
def cmake_dir_command() -> None:
    """Print the folder of NvccOpt.cmake, for list(APPEND CMAKE_MODULE_PATH ...)."""
    folder = cmake_dir()
    if not (folder / MODULE).is_file():
        raise click.ClickException(f"{folder / MODULE} is missing: reinstall nvcc-opt")
    click.echo(str(folder))
