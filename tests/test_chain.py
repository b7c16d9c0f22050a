from __future__ import annotations

import shutil
import subprocess

import pytest

from nvcc_opt.launcher.chain import Chain, ccache_first_fix, is_nvcc, is_self, split_chain

SPLITS = [
    (["nvcc", "-c", "a.cu"], [], "nvcc", ["-c", "a.cu"]),
    (["/usr/local/bin/nvcc", "-c", "a.cu"], [], "/usr/local/bin/nvcc", ["-c", "a.cu"]),
    (["ccache", "nvcc", "-c"], ["ccache"], "nvcc", ["-c"]),
    (["sccache", "/usr/local/bin/nvcc", "-c"], ["sccache"], "/usr/local/bin/nvcc", ["-c"]),
    (["/opt/bin/buildcache", "nvcc"], ["/opt/bin/buildcache"], "nvcc", []),
    (
        ["cmake", "-E", "env", "FOO=1", "--unset=BAR", "nvcc", "-c"],
        ["cmake", "-E", "env", "FOO=1", "--unset=BAR"],
        "nvcc",
        ["-c"],
    ),
    (
        ["/usr/bin/cmake", "-E", "env", "--modify", "P=path_list_prepend:/x", "--", "nvcc"],
        ["/usr/bin/cmake", "-E", "env", "--modify", "P=path_list_prepend:/x", "--"],
        "nvcc",
        [],
    ),
    (
        ["cmake", "-E", "env", "--", "FOO=1", "nvcc"],
        ["cmake", "-E", "env", "--"],
        "FOO=1",
        ["nvcc"],
    ),
    (["/usr/bin/env", "A=B", "nvcc", "x.cu"], ["/usr/bin/env", "A=B"], "nvcc", ["x.cu"]),
    (
        ["env", "-i", "-u", "HOME", "-uPATH", "--unset=X", "A=1", "--", "nvcc"],
        ["env", "-i", "-u", "HOME", "-uPATH", "--unset=X", "A=1", "--"],
        "nvcc",
        [],
    ),
    (
        ["ccache", "cmake", "-E", "env", "X=1", "nvcc", "-c"],
        ["ccache", "cmake", "-E", "env", "X=1"],
        "nvcc",
        ["-c"],
    ),
    (["env", "A=1", "ccache", "nvcc"], ["env", "A=1", "ccache"], "nvcc", []),
    (["cmake", "--build", "."], [], "cmake", ["--build", "."]),
    (["g++", "-c", "a.cc"], [], "g++", ["-c", "a.cc"]),
]


@pytest.mark.parametrize(("rest", "wrappers", "compiler", "args"), SPLITS)
def test_split_chain(rest: list[str], wrappers: list[str], compiler: str, args: list[str]) -> None:
    chain = split_chain(rest)
    assert chain == Chain(tuple(wrappers), compiler, tuple(args))
    assert chain is not None and chain.command(args) == rest


@pytest.mark.parametrize(
    "rest",
    [
        [],
        ["ccache"],
        ["cmake", "-E", "env", "A=1"],
        ["env", "-u"],
        ["env", "-C", "/tmp", "nvcc"],  # runs the compiler elsewhere: we cannot follow it
        ["env", "-S", "nvcc -c", "a.cu"],
    ],
)
def test_split_chain_without_compiler(rest: list[str]) -> None:
    assert split_chain(rest) is None


def test_command_keeps_wrappers_and_swaps_args() -> None:
    chain = split_chain(["ccache", "nvcc", "-c", "a.cu"])
    assert chain is not None
    assert chain.command(["-c", "/tmp/copy.cu"]) == ["ccache", "nvcc", "-c", "/tmp/copy.cu"]


@pytest.mark.skipif(shutil.which("cmake") is None, reason="needs cmake")
def test_rebuilt_command_runs_through_real_wrappers() -> None:
    rest = ["cmake", "-E", "env", "--unset=HOME", "FOO=1", "env", "-u", "BAR", "B=2", "sh", "-c"]
    chain = split_chain(rest)
    assert chain is not None and chain.compiler == "sh"
    out = subprocess.run(
        chain.command([*chain.args, 'echo "$FOO $B ${HOME-unset}"']),
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout == "1 2 unset\n"


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("nvcc", True),
        ("/usr/local/cuda-13.0/bin/nvcc", True),
        ("C:\\CUDA\\bin\\nvcc.exe", True),
        ("NVCC.EXE", True),
        ("nvcc-12.4", True),
        ("nvcc-opt", False),
        ("nvcc_opt", False),
        ("nvcc.sh", False),
        ("clang++", False),
        ("/usr/bin/nvcc/", False),
    ],
)
def test_is_nvcc(word: str, expected: bool) -> None:
    assert is_nvcc(word) is expected


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("nvcc-opt", True),
        ("/home/u/.venv/bin/nvcc-opt", True),
        ("nvcc_opt", True),
        ("nvcc-opt.exe", True),
        ("nvcc", False),
        ("nvcc-optimizer", False),
    ],
)
def test_is_self(word: str, expected: bool) -> None:
    assert is_self(word) is expected


@pytest.mark.parametrize("parent", ["ccache", "sccache", "ccache\n"])
def test_ccache_first_fix_names_the_fix(parent: str) -> None:
    message = ccache_first_fix(parent)
    assert message is not None
    name = parent.strip()
    assert "\n" not in message
    assert f'-DCMAKE_CUDA_COMPILER_LAUNCHER="nvcc-opt;{name}"' in message


@pytest.mark.parametrize("parent", ["ninja", "make", "gmake", "bash", "", "ccache-wrapper"])
def test_ccache_first_fix_silent_otherwise(parent: str) -> None:
    assert ccache_first_fix(parent) is None
