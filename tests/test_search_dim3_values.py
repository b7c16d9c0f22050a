"""Block shapes written as dim3 in the forms a declaration's parse misses (`dim3 b (N);`, the
most vexing parse; `dim3 b; b.x = N;`), and block sizes whose value names another constant,
found by the policy's `search` in two rounds."""

from __future__ import annotations

from typing import Any

from nvcc_opt.search.launches import constant, definitions
from nvcc_opt.search.policy import SearchPolicy
from tests.test_search_policy import ALL_TOOLS, drive, gpu


def test_the_most_vexing_parse_is_a_dim3_with_names() -> None:
    code = (
        "void f() { dim3 blocks (BLOCK_SIZE); dim3 grid (n_rows, TILE); }\n#define BLOCK_SIZE 256"
    )
    names = definitions(code)
    assert names["blocks"] == "dim3(BLOCK_SIZE)" and names["grid"] == "dim3(n_rows, TILE)"
    assert constant("blocks", names) == 256
    # a prototype with a parameter of a builtin type, or a named one, is a function
    assert definitions("dim3 shape(int); dim3 other(Sizes s);") == {}


def test_extents_given_by_assignment() -> None:
    code = (
        "void f() {\n dim3 threads;\n threads.x = 16;\n threads.y = 8;\n"
        " dim3 flat; flat.x = TILE * 2;\n"
        " dim3 twice; twice.x = 32; twice.x = 64;\n"  # two values: none
        " dim3 grown; grown.x = 32; grown.x *= 2;\n"  # updated: none
        " dim3 sideways; sideways.y = 4;\n"  # no x extent: none
        " dim3 later; later.x = 32; later = dim3(64);\n}\n"  # assigned whole: none
    )
    names = definitions(code)
    assert names["threads"] == "dim3(16, 8)" and names["flat"] == "dim3(TILE * 2)"
    assert not {"twice", "grown", "sideways", "later"} & set(names)
    assert constant("threads", names) == 128 and constant("flat", {**names, "TILE": "64"}) == 128


def test_the_policy_follows_a_block_size_through_a_dim3_to_its_constant() -> None:
    asked: list[str] = []

    def tools(name: str, args: dict[str, Any]) -> str:
        if name == "search" and "<<<" in args["pattern"]:
            return "[1 match]\nsrc/main.cu (1)\n   80 |   rows<<<grid, threads>>>(n, A, x, y);"
        if name == "search" and "Finding" not in args["pattern"] and "threads" in args["pattern"]:
            asked.append("threads")
            return (
                "[2 matches]\nsrc/main.cu (2)\n   70 |   dim3 threads;\n"
                "   71 |   threads.x = ROWS_PER_BLOCK;"
            )
        if name == "search" and "ROWS_PER_BLOCK" in args["pattern"]:
            asked.append("ROWS_PER_BLOCK")
            return "[1 match]\nsrc/config.h (1)\n    4 | #define ROWS_PER_BLOCK 128"
        if name == "search":
            return "no matches"
        return gpu(name, args)

    calls, _ = drive(SearchPolicy(), tools, offered=[*ALL_TOOLS])
    assert asked == ["threads", "ROWS_PER_BLOCK"]
    timed = [args["code"] for name, args in calls if name == "benchmark_code"]
    assert any("__launch_bounds__(128)" in code for code in timed)
