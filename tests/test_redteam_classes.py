"""The red-team classes (tests/redteam/classes): every file's header, the README's table, enough
cheats of every class and honest rewrites, and every file compiled spliced into the example with
real nvcc and CMake (one configured tree; each build recompiles the one file that changed). Their
run on a GPU is tests/test_redteam_gpu.py."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from nvcc_opt.regions.scan import scan
from nvcc_opt.regions.splice import splice
from tests.conftest import needs_nvcc
from tests.redteam_files import (
    CHEAT_CLASSES,
    CLASSES,
    EXAMPLE,
    HONEST,
    REGION_SOURCES,
    Candidate,
    candidates,
    read,
)

FILES = sorted(CLASSES.glob("*.cu"))
README_ROW = re.compile(r"\| `([^`]+)` \| ([^|]+) \| ([^|]+) \| [^|]+ \| ([^|]+) \|")
# Settings from the caller's environment that would change what CMake configures.
CMAKE_ENV = ("CMAKE_CUDA_COMPILER_LAUNCHER", "CMAKE_GENERATOR", "CUDAARCHS")


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_file_has_its_header(path: Path) -> None:
    candidate = read(path)
    assert candidate.kind in (*CHEAT_CLASSES, HONEST), f"{path.name}: unknown class"
    assert "__" in path.stem and path.suffix == ".cu"
    assert candidate.honest == (candidate.kind == HONEST), f"{path.name}: class and expect disagree"
    # what the rest of the example calls must still be there
    needed = "launch_update(" if candidate.region == "pair" else "smooth_kernel("
    assert needed in path.read_text(), f"{path.name}: no {needed}"


def test_readme_lists_exactly_the_files() -> None:
    rows = README_ROW.findall((CLASSES / "README.md").read_text(encoding="utf-8"))
    listed = {
        name: (region.strip(), kind.strip(), expect.strip()) for name, region, kind, expect in rows
    }
    assert len(listed) == len(rows), "a file is listed twice"
    assert sorted(listed) == [p.name for p in FILES]
    for candidate in candidates():
        expect = " ".join(candidate.expect) or "accept"
        row = (candidate.region, candidate.kind, expect)
        assert listed[candidate.path.name] == row, candidate.path.name


def test_every_class_is_covered() -> None:
    found = candidates()
    per_class = Counter(c.kind for c in found)
    cheats = [c for c in found if not c.honest]
    assert len(cheats) >= 40
    assert all(per_class[kind] >= 3 for kind in CHEAT_CLASSES), per_class
    assert per_class[HONEST] >= 12
    # cheats that only running can show: no static line is expected to stop them
    runtime_only = [c for c in cheats if not any(_static(p) for p in c.expect)]
    assert len(runtime_only) >= 8, [c.path.name for c in runtime_only]


def _static(prefix: str) -> bool:
    return prefix.startswith(("guard_", "allowlist", "objects", "ptx", "flags"))


class SplicedExample:
    """A configured copy of the example; `build` puts one candidate in its region's file (the
    other region's file back to the original) and rebuilds."""

    def __init__(self, root: Path, env: dict[str, str]) -> None:
        self.root = root
        self.env = env
        self.originals = {
            name: (EXAMPLE / "src" / name).read_bytes() for name in REGION_SOURCES.values()
        }

    def build(self, candidate: Candidate) -> subprocess.CompletedProcess[str]:
        own = REGION_SOURCES[candidate.region]
        source = self.originals[own]
        span = next(s for s in scan(source).regions if s.name == candidate.region)
        code = candidate.path.read_text(encoding="utf-8")
        for name, original in self.originals.items():
            text = (
                splice(source, [(span, code)], str(EXAMPLE / "src" / own))
                if name == own
                else original
            )
            path = self.root / "src" / name
            if path.read_bytes() != text:  # an unchanged file keeps its object
                path.write_bytes(text)
        return self.cmake("--build", str(self.root / "build"))

    def cmake(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["cmake", *args], capture_output=True, text=True, env=self.env)


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SplicedExample]:
    if shutil.which("cmake") is None or shutil.which("ninja") is None:
        pytest.skip("needs cmake and ninja")
    root = tmp_path_factory.mktemp("redteam-classes") / "example"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("build"))
    env = {k: v for k, v in os.environ.items() if k not in CMAKE_ENV}
    spliced = SplicedExample(root, env)
    configured = spliced.cmake(
        "-S", str(root), "-B", str(root / "build"), "-G", "Ninja", "-DCMAKE_CUDA_ARCHITECTURES=90"
    )
    assert configured.returncode == 0, configured.stdout + configured.stderr
    built = spliced.cmake("--build", str(root / "build"))
    assert built.returncode == 0, built.stdout + built.stderr
    yield spliced


@needs_nvcc
@pytest.mark.slow
@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_file_compiles_and_links_in_the_example(example: SplicedExample, path: Path) -> None:
    done = example.build(read(path))
    errors = [line for line in done.stdout.splitlines() if "error" in line.lower()]
    assert done.returncode == 0, f"{path.name} does not build:\n" + "\n".join(errors[:20])
    assert (example.root / "build" / "saxpy_stencil").is_file()
