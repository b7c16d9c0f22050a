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


def _tools(mentions: str, asked: list[str]) -> Any:
    """Tools whose `search` finds the launch, `dim3 threads (ROWS_PER_BLOCK);`, every line that
    names `threads` (`mentions`), and the constant in a header."""
    declaration = "[1 match]\nsrc/main.cu (1)\n   70 |   dim3 threads (ROWS_PER_BLOCK);"

    def tools(name: str, args: dict[str, Any]) -> str:
        pattern = args.get("pattern", "")
        if name == "search" and "<<<" in pattern:
            return "[1 match]\nsrc/main.cu (1)\n   80 |   rows<<<grid, threads>>>(n, A, x, y);"
        if name == "search" and pattern == r"\bthreads\b":
            asked.append("mentions")
            return mentions
        if name == "search" and "threads" in pattern:
            asked.append("threads")
            return declaration
        if name == "search" and "ROWS_PER_BLOCK" in pattern:
            asked.append("ROWS_PER_BLOCK")
            return "[1 match]\nsrc/config.h (1)\n    4 | #define ROWS_PER_BLOCK 128"
        if name == "search":
            return "no matches"
        return gpu(name, args)

    return tools


UNTOUCHED = (
    "[2 matches]\nsrc/main.cu (2)\n   70 |   dim3 threads (ROWS_PER_BLOCK);\n"
    "   80 |   rows<<<grid, threads>>>(n, A, x, y);"
)


def test_the_policy_follows_a_block_size_through_a_dim3_to_its_constant() -> None:
    asked: list[str] = []
    calls, _ = drive(SearchPolicy(), _tools(UNTOUCHED, asked), offered=[*ALL_TOOLS])
    assert asked == ["threads", "mentions", "ROWS_PER_BLOCK"]
    timed = [args["code"] for name, args in calls if name == "benchmark_code"]
    assert any("__launch_bounds__(128)" in code for code in timed)


def test_a_dim3_found_by_search_is_dropped_where_any_line_may_change_it() -> None:
    for change in ("   75 |   if (n > 4096) threads.x *= 2;", "   75 |   resize(threads);"):
        asked: list[str] = []
        mentions = UNTOUCHED.replace("[2 matches]", "[3 matches]") + "\n" + change
        calls, _ = drive(SearchPolicy(), _tools(mentions, asked), offered=[*ALL_TOOLS])
        assert "ROWS_PER_BLOCK" not in asked, change
        timed = [args["code"] for name, args in calls if name == "benchmark_code"]
        assert not any("__launch_bounds__" in code for code in timed), change


def test_lines_found_by_search_give_no_extents_by_assignment() -> None:
    lines = "dim3 threads;\nthreads.x = 128;\nk<<<g, threads>>>(x);"
    assert "threads" in definitions("void f() {\n" + lines + "\n}")
    assert "threads" not in definitions(lines, whole=False)  # branches cannot be seen


def test_a_dim3_the_region_declares_with_an_outside_constant_has_it_looked_up() -> None:
    region = SCALE_REGION
    asked: list[str] = []

    def tools(name: str, args: dict[str, Any]) -> str:
        if name == "search" and "BLOCK_SIZE" in args.get("pattern", ""):
            asked.append("BLOCK_SIZE")
            return "[1 match]\nsrc/config.h (1)\n    2 | #define BLOCK_SIZE 64"
        if name == "search":
            return "no matches"
        return gpu(name, args)

    calls, _ = drive(SearchPolicy(), tools, offered=[*ALL_TOOLS], region=region)
    assert asked == ["BLOCK_SIZE"]
    timed = [args["code"] for name, args in calls if name == "benchmark_code"]
    assert any("__launch_bounds__(64)" in code for code in timed)


SCALE_REGION = """\
__global__ void scale(int n, float a, const float* x, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i];
}

void run(int n, float a, const float* x, float* y) {
  dim3 threads (BLOCK_SIZE);
  scale<<<(n + 63) / 64, threads>>>(n, a, x, y);
}
"""
