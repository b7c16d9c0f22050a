"""Inputs two reviews found where a structural rewrite would have compiled and computed
something else (tests/fixtures/unsafe_rewrites/, one small program each): every transform that
touches block shapes, grids or shared-memory reductions must leave them alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from nvcc_opt.search import blocks
from nvcc_opt.search.cuda import Source
from nvcc_opt.search.transforms import BY_NAME, Facts

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "unsafe_rewrites"
RESHAPES = {
    "block_half": blocks.block_half,
    "block_quarter": blocks.block_quarter,
    "block_double": blocks.block_double,
    "block_wide": blocks.block_wide,
    "block_warp_wide": blocks.block_warp_wide,
}
# fixtures whose reduction itself is sound for a 256-thread block: only reshapes are wrong there
REDUCTION_SOUND = {"lit_loop.cu", "other_launch.cu", "other_launch2.cu"}


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*.cu")), ids=lambda p: p.name)
def test_no_rewrite_is_made_where_it_would_change_the_result(path: Path) -> None:
    code = path.read_text()
    facts = Facts(block_sizes={k.name: 256 for k in Source(code).kernels()})
    made = [name for name, transform in RESHAPES.items() if transform(code, facts) is not None]
    if path.name not in REDUCTION_SOUND:
        for name in ("warp_shuffle_tail", "warp_shuffle_scan"):
            if BY_NAME[name].apply(code, facts) is not None:
                made.append(name)
    assert made == [], path.name


def test_there_are_fixtures() -> None:
    assert len(list(FIXTURES.glob("*.cu"))) >= 20
