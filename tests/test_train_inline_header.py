"""A region tagged in a header moves into the one .cu file that includes it, only where that is
mechanical and keeps the program the same (training/nvcc_opt_train/importers/inline_header.py)."""

from __future__ import annotations

from nvcc_opt_train.importers.inline_header import inline_header

HEADER = b'#pragma once\n#include "util.h"\n__global__ void k(int *x) { x[0] = 1; }\n'


def test_the_header_takes_the_place_of_its_include_line() -> None:
    files = {
        "main.cu": b'#include <cstdio>\n  # include "kernels.h" // the kernels\nint main() {}\n',
        "kernels.h": b"old text",
        "util.h": b"",
    }
    moved = inline_header(files, "kernels.h", HEADER)
    assert not isinstance(moved, str)
    name, text = moved
    assert name == "main.cu"
    assert text.startswith(b"#include <cstdio>\n// nvcc-opt train problems: kernels.h inlined")
    assert b'#include "util.h"\n__global__ void k(int *x) { x[0] = 1; }\n' in text
    assert text.endswith(b"// end of kernels.h\nint main() {}\n")
    assert b"pragma once" not in text and b'"kernels.h"' not in text


def test_includes_are_resolved_from_the_including_files_folder() -> None:
    files = {
        "src/main.cu": b'#include "../inc/kernels.h"\n',
        "inc/kernels.h": b"",
        "src/other.cu": b'#include "kernels.h"\n',  # src/kernels.h: another file
    }
    body = b"__global__ void k() {}"  # no quoted include of its own, no final newline
    moved = inline_header(files, "inc/kernels.h", body)
    assert not isinstance(moved, str)
    assert moved[0] == "src/main.cu"
    assert b"__global__ void k() {}\n// end of inc/kernels.h\n" in moved[1]


def test_what_cannot_move_safely_is_a_reason() -> None:
    def why(files: dict[str, bytes], header: str = "kernels.h", text: bytes = HEADER) -> str:
        moved = inline_header(files, header, text)
        assert isinstance(moved, str)
        return moved

    two = {"a.cu": b'#include "kernels.h"\n', "b.cu": b'#include "kernels.h"\n'}
    assert why(two) == "included 2 times (a.cu, b.cu), not once"
    twice = {"a.cu": b'#include "kernels.h"\n#include "kernels.h"\n'}
    assert why(twice) == "included 2 times (a.cu), not once"
    assert why({"a.cpp": b'#include "kernels.h"\n'}) == (
        "included by a.cpp, which is not a .cu file"
    )
    via = {"a.cu": b'#include "all.h"\n', "all.h": b'#include "kernels.h"\n'}
    assert why(via) == "included by all.h, which is not a .cu file"
    commented = {"a.cu": b'// #include "kernels.h"\n#include <kernels.h>\n'}
    assert why(commented) == "no file of the benchmark includes it from its own folder"
    elsewhere = {"src/a.cu": b'#include "../inc/kernels.h"\n'}
    assert why(elsewhere, "inc/kernels.h") == (
        "in another folder than src/a.cu, and its own includes (util.h) would move"
    )
