"""The README's install, for the start-up benchmarks: a new venv and `pip install .` (not
editable) of a clean copy of this checkout, with the pip the venv comes with unless told.

Standard library only, so a bare `python3` can run it. As a script (the install alone, for a
machine where the benchmark runs under the new venv's interpreter):

    python3 benchmarks/fresh_install.py DIR [--pip-spec pip==23.2.1] [--pip-arg=--no-index ...]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# Never part of the package, and some are large: what the copy leaves out.
SKIPPED = (".git", ".venv", ".whl", "build", "results", "__pycache__", "*.egg-info", ".*_cache")


@dataclass(frozen=True)
class Installed:
    python: str  # the venv's interpreter
    exe: str  # the `nvcc-opt` script pip wrote
    pip: str  # `pip --version` of the pip that installed it
    script_head: list[str]  # the script's first lines, as installed

    def facts(self) -> dict[str, object]:
        return asdict(self)


def _create(folder: Path, base: str, pip_args: list[str]) -> Path:
    """A venv with pip; where the base interpreter lacks ensurepip, pip is installed from a
    `pip-*.whl` in a `--find-links` folder of `pip_args`."""
    target = folder / "venv"
    done = subprocess.run([base, "-m", "venv", str(target)], capture_output=True, text=True)
    python = target / "bin" / "python"
    if done.returncode == 0:
        return python
    shutil.rmtree(target, ignore_errors=True)
    subprocess.run([base, "-m", "venv", "--without-pip", str(target)], check=True)
    links = [a.split("=", 1)[1] for a in pip_args if a.startswith("--find-links=")]
    wheels = sorted(w for link in links for w in Path(link).glob("pip-*.whl"))
    if not wheels:
        raise RuntimeError(f"{base} has no ensurepip and no pip wheel was given:\n{done.stderr}")
    bootstrap = f"{wheels[-1]}/pip"
    subprocess.run(
        [str(python), bootstrap, "install", "-q", "--no-index", str(wheels[-1])], check=True
    )
    return python


def install(
    folder: Path, base: str = sys.executable, pip_spec: str = "", pip_args: list[str] | None = None
) -> Installed:
    """Copy the checkout to `folder/src`, make `folder/venv`, `pip install` the copy into it."""
    args = list(pip_args or [])
    source = folder / "src"
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(*SKIPPED))
    python = _create(folder, base, args)
    pip = [str(python), "-m", "pip"]
    quiet = ["-q", "--disable-pip-version-check"]
    if pip_spec:
        subprocess.run([*pip, "install", *quiet, *args, pip_spec], check=True)
    subprocess.run([*pip, "install", *quiet, *args, str(source)], check=True)
    version = subprocess.run([*pip, "--version"], capture_output=True, text=True, check=True)
    exe = python.parent / "nvcc-opt"
    head = exe.read_text(encoding="utf-8").splitlines()[:6]
    return Installed(str(python), str(exe), version.stdout.split(" from ")[0], head)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--pip-spec", default="", help="install this pip first, e.g. pip==23.2.1")
    parser.add_argument("--pip-arg", action="append", default=[], help="passed to pip install")
    args = parser.parse_args(argv)
    args.folder.mkdir(parents=True, exist_ok=True)
    done = install(args.folder.resolve(), sys.executable, args.pip_spec, args.pip_arg)
    print("\n".join(f"{k}: {v}" for k, v in done.facts().items()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
