"""The committed table of what each transform fires on is the code's: a refactor that changes
any rewrite (or what is refused, and why) shows up here until the table is regenerated."""

from __future__ import annotations

import json

import pytest

from nvcc_opt.search import snapshot
from nvcc_opt.search.transforms import TRANSFORMS


@pytest.mark.slow
def test_committed_snapshot_is_current() -> None:
    data, text = snapshot.render()
    assert snapshot.JSON.read_text() == data, "run: python -m nvcc_opt.search.snapshot --write"
    assert snapshot.MARKDOWN.read_text() == text, "run: python -m nvcc_opt.search.snapshot --write"


def test_snapshot_covers_every_transform_and_every_source() -> None:
    table = json.loads(snapshot.JSON.read_text())
    assert all(set(row) == {t.name for t in TRANSFORMS} for row in table.values())
    for _, folder in snapshot.SOURCES:
        assert any(name.startswith(folder) for name in table), folder


def test_reasons_are_measured() -> None:
    code = (
        "__global__ void k(float* y, const float* x, int n) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i < n) y[i] = 2.0f * x[i];\n"
        "}\n"
    )
    unit = snapshot.Unit("classes", "k.cu", code, snapshot.Facts())
    by_name = {t.name: t for t in TRANSFORMS}
    assert snapshot.outcome(by_name["const_restrict"], unit) == snapshot.ALIASING
    assert snapshot.outcome(by_name["launch_bounds"], unit) == snapshot.BLOCK
    assert snapshot.outcome(by_name["tile_matmul"], unit) == snapshot.PATTERN
    facts = snapshot.Facts(no_alias=frozenset({"k"}))
    fired = snapshot.outcome(by_name["const_restrict"], snapshot.Unit("c", "k.cu", code, facts))
    assert fired.startswith("fires ")
    host = snapshot.Unit("c", "h.cu", "int main() { return 0; }\n", snapshot.Facts())
    assert snapshot.outcome(by_name["ldg"], host) == snapshot.NO_KERNEL
