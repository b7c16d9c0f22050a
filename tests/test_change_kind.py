"""What a final answer changes, measured on the answer (nvcc_opt/change_kind.py), and how bench
reports count improvements by it: a speedup from fast math alone is never a code change."""

from __future__ import annotations

import doctest

import pytest

from nvcc_opt import change_kind as module
from nvcc_opt.bench.results import KEPT, PROPOSED, Kernel, KernelRun, classify
from nvcc_opt.bench.summary import summarize, summarize_kernel
from nvcc_opt.change_kind import change_kind

ORIGINAL = """__global__ void k(float* out, const float* in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = expf(in[i]);  // one per element
}"""


def test_the_doctests() -> None:
    assert doctest.testmod(module).failed == 0


@pytest.mark.parametrize(
    ("final", "args", "kind"),
    [
        (ORIGINAL, ["-use_fast_math"], "fast math only"),
        # comments and spacing are not code: a reformatted region with fast math is fast math
        (ORIGINAL.replace("  // one per element", "").replace("  ", "    "), ["--ftz=true"],
         "fast math only"),
        (ORIGINAL, ["-maxrregcount=32"], "flags only"),
        (ORIGINAL, ["-fmad=false", "-Xptxas", "-O3"], "fast math only"),
        (ORIGINAL.replace("expf(in[i])", "__expf(__ldg(&in[i]))"), [], "code"),
        (ORIGINAL.replace("in[i]", "__ldg(&in[i])"), ["--use_fast_math"], "code + fast math"),
        (ORIGINAL, [], "nothing"),
    ],
)  # fmt: skip
def test_change_kind_reads_the_answer_not_its_explanation(
    final: str, args: list[str], kind: str
) -> None:
    assert change_kind(ORIGINAL, final, args) == kind


def _proposed(region: str, speedup: float, change: str) -> KernelRun:
    return KernelRun(
        "app", "src/k.cu", region, 1, PROPOSED, speedup, outcome=classify(PROPOSED, ()),
        explanation="Restructured the loop (says the model)", change=change,
    )  # fmt: skip


def test_bench_reports_count_code_changes_and_fast_math_apart() -> None:
    rows = [
        summarize_kernel(Kernel("app", "src/k.cu", "a"), [_proposed("a", 2.0, "code")], 1),
        summarize_kernel(
            Kernel("app", "src/k.cu", "b"), [_proposed("b", 2.1, "fast math only")], 1
        ),
        summarize_kernel(
            Kernel("app", "src/k.cu", "c"), [_proposed("c", 1.5, "code + fast math")], 1
        ),
        summarize_kernel(Kernel("app", "src/k.cu", "d"), [_proposed("d", 1.3, "")], 1),
        summarize_kernel(
            Kernel("app", "src/k.cu", "e"),
            [KernelRun("app", "src/k.cu", "e", 1, KEPT, outcome=classify(KEPT, ()))],
            1,
        ),
    ]
    assert rows[1].changed.startswith("[fast math only] ")  # not the model's word for it
    assert not rows[0].changed.startswith("[")
    overall = summarize(rows)
    assert overall.improved_by == {
        "code": 1, "fast math only": 1, "code + fast math": 1, "unknown": 1
    }  # fmt: skip


def test_one_unchanged_rule_for_optimize_and_training() -> None:
    """optimize and GRPO's judge skip verifying exactly the answers this rule calls unchanged."""
    import inspect

    from nvcc_opt import optimize
    from nvcc_opt.change_kind import unchanged

    region = "__global__ void k(float* y) {\n  y[threadIdx.x] = 1.0f;\n}\n"
    assert unchanged(region, region.replace("{\n", "{  // nothing faster found\n"), [])
    assert unchanged(region, "  " + region.replace("\n", "\n\n"), ())
    assert not unchanged(region, region.replace("1.0f", "2.0f"), [])
    assert not unchanged(region, region, ["-maxrregcount=32"])
    assert "unchanged(region.text, answer.final_code" in inspect.getsource(optimize)
