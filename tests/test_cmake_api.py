"""nvcc_opt.cmake_api against replies of a real CMake, and against broken reply folders."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from nvcc_opt.cmake_api import CLIENT, CMakeApiError, CodeModel, read_reply, write_query

EXAMPLE = (Path(__file__).resolve().parents[1] / "examples" / "saxpy-stencil").resolve()
SRC = EXAMPLE / "src"
CUDA_SOURCES = [SRC / "main.cu", SRC / "reduce.cu", SRC / "stencil.cu", SRC / "update.cu"]


@pytest.fixture(scope="session", params=["Ninja", "Unix Makefiles"])
def configured(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, CodeModel]:
    build = tmp_path_factory.mktemp("api-" + request.param.replace(" ", "-")).resolve()
    write_query(build)
    env = {k: v for k, v in os.environ.items() if k not in ("CMAKE_GENERATOR", "CUDAARCHS")}
    done = subprocess.run(
        ["cmake", "-S", str(EXAMPLE), "-B", str(build), "-G", request.param],
        capture_output=True,
        text=True,
        env=env,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return build, read_reply(build)


@pytest.mark.slow
def test_reads_targets_and_artifacts(configured: tuple[Path, CodeModel]) -> None:
    build, model = configured
    assert (model.source_dir, model.build_dir) == (EXAMPLE, build)
    assert model.generator in ("Ninja", "Unix Makefiles")
    assert model.configuration == "Release"
    targets = {t.name: t for t in model.targets}
    assert {n: t.type for n, t in targets.items()} == {
        "saxpy_kernels": "STATIC_LIBRARY",
        "saxpy_stencil": "EXECUTABLE",
    }
    assert targets["saxpy_kernels"].artifacts == [build / "libsaxpy_kernels.a"]
    assert targets["saxpy_stencil"].artifacts == [build / "saxpy_stencil"]
    assert targets["saxpy_stencil"].build_dir == build


@pytest.mark.slow
def test_finds_cuda_sources_and_their_targets(configured: tuple[Path, CodeModel]) -> None:
    _, model = configured
    assert model.cuda_sources() == CUDA_SOURCES
    kernels = model.target_for_source(SRC / "stencil.cu")
    assert kernels is not None and kernels.name == "saxpy_kernels"
    relative = model.target_for_source(Path("src/main.cu"))
    assert relative is not None and relative.name == "saxpy_stencil"
    assert model.target_for_source(SRC / "pipeline.cuh") is None
    languages = {s.path.name: s.language for s in kernels.sources}
    assert languages == {
        "stencil.cu": "CUDA",
        "update.cu": "CUDA",
        "reduce.cu": "CUDA",
        "reference.cpp": "CXX",
    }


@pytest.mark.slow
def test_reads_how_sources_compile(configured: tuple[Path, CodeModel]) -> None:
    _, model = configured
    kernels = model.target_for_source(SRC / "update.cu")
    assert kernels is not None
    by_name = {s.path.name: kernels.group_for(s) for s in kernels.sources}
    cuda, cxx = by_name["update.cu"], by_name["reference.cpp"]
    assert cuda is not None and cxx is not None
    assert cuda.language == "CUDA" and cxx.language == "CXX"
    assert cuda.cuda_architectures == ("90",) and cxx.cuda_architectures == ()
    assert "--generate-code=arch=compute_90,code=[compute_90,sm_90]" in cuda.flags
    assert "-O3" in cuda.flags and "-std=c++17" in cuda.flags
    assert cuda.standard == "17"
    assert cuda.defines == ("SMOOTH_RADIUS=4",)
    assert cuda.includes == (SRC,)


@pytest.mark.slow
def test_reads_the_cache(configured: tuple[Path, CodeModel]) -> None:
    _, model = configured
    assert model.cache["CMAKE_BUILD_TYPE"] == "Release"
    assert model.cache["SMOOTH_RADIUS"] == "4"


def test_query_asks_for_codemodel_and_cache(tmp_path: Path) -> None:
    write_query(tmp_path)
    query = json.loads((tmp_path / ".cmake/api/v1/query" / CLIENT / "query.json").read_text())
    assert {(r["kind"], r["version"]) for r in query["requests"]} == {
        ("codemodel", 2),
        ("cache", 2),
    }


def test_missing_reply_says_what_to_do(tmp_path: Path) -> None:
    write_query(tmp_path)
    with pytest.raises(CMakeApiError, match="no CMake File API reply in .*write_query"):
        read_reply(tmp_path)


def write_reply(build: Path, files: dict[str, object]) -> Path:
    reply = build / ".cmake/api/v1/reply"
    reply.mkdir(parents=True)
    for name, content in files.items():
        text = content if isinstance(content, str) else json.dumps(content)
        (reply / name).write_text(text)
    return reply


INDEX = {
    "cmake": {"generator": {"name": "Ninja"}, "version": {"string": "3.25.1"}},
    "objects": [{"kind": "codemodel", "version": {"major": 2, "minor": 4}, "jsonFile": "cm.json"}],
}
CODEMODEL = {
    "paths": {"source": "/src", "build": "/build"},
    "configurations": [{"name": "", "targets": [{"name": "t", "jsonFile": "target-t.json"}]}],
}


def test_invalid_index_names_the_file(tmp_path: Path) -> None:
    reply = write_reply(tmp_path, {"index-2026-01-01T00-00-00-0000.json": "{"})
    with pytest.raises(CMakeApiError, match=f"invalid .*{reply}/index-2026"):
        read_reply(tmp_path)


def test_index_without_codemodel_says_so(tmp_path: Path) -> None:
    write_reply(tmp_path, {"index-1.json": {**INDEX, "objects": []}})
    with pytest.raises(CMakeApiError, match="holds no codemodel v2 reply"):
        read_reply(tmp_path)


def test_missing_target_file_names_it(tmp_path: Path) -> None:
    reply = write_reply(tmp_path, {"index-1.json": INDEX, "cm.json": CODEMODEL})
    with pytest.raises(CMakeApiError, match=f"cannot read .*{reply}/target-t.json"):
        read_reply(tmp_path)


def test_newest_index_wins_and_absolute_paths_stay(tmp_path: Path) -> None:
    target = {
        "name": "t",
        "type": "EXECUTABLE",
        "paths": {"source": "sub", "build": "sub"},
        "artifacts": [{"path": "/elsewhere/t"}],
        "sources": [{"path": "/gen/a.cu", "compileGroupIndex": 0, "isGenerated": True}],
        "compileGroups": [{"language": "CUDA", "sourceIndexes": [0], "future": 1}],
    }
    stale = {**INDEX, "objects": []}
    files = {"index-1.json": stale, "index-2.json": INDEX, "cm.json": CODEMODEL}
    write_reply(tmp_path, {**files, "target-t.json": target})
    (t,) = read_reply(tmp_path).targets
    assert (t.source_dir, t.build_dir) == (Path("/src/sub"), Path("/build/sub"))
    assert t.artifacts == [Path("/elsewhere/t")]
    assert t.sources[0].path == Path("/gen/a.cu") and t.sources[0].generated
