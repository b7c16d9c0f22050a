"""A bug inside nvcc-opt while one region is optimized (here: the verification raising an
unexpected exception) stops that region only: the next region is still optimized, the command
names the region, the error and the trace, prints the traceback, stores nothing for it and ends
with a failing status."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import nvcc_opt.cli.optimize as cli_optimize
from nvcc_opt.optimize import RegionResult
from nvcc_opt.store.api import Store
from tests.cli_helpers import invoke, write_source

TOML = """\
[build]
command = "true"
[run]
command = ["true"]
"""


def test_an_internal_error_stops_its_region_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = write_source(tmp_path)
    (tmp_path / "nvcc-opt.toml").write_text(TOML, encoding="utf-8")
    (tmp_path / "build").mkdir()
    seen: list[str] = []

    def optimize_region(**kwargs: Any) -> RegionResult:
        region = kwargs["region"]
        seen.append(region.name)
        if region.name == "scale":
            raise ValueError("'{work}' uses {work}, which was not given")
        return RegionResult(str(region.file), region.name, "final_answer", "original kept",
                            None, 1.0, (), "")  # fmt: skip

    monkeypatch.setattr(cli_optimize, "optimize_region", optimize_region)
    db = tmp_path / "store.db"
    done = invoke(db, "optimize", "--root", str(tmp_path), "--model", "search",
                  f"{source}:scale", f"{source}:pair")  # fmt: skip
    assert seen == ["scale", "pair"]  # the second region ran after the first one's error
    assert done.exit_code == 1
    out = done.output
    assert "Traceback (most recent call last)" in out and "ValueError" in out
    assert "[scale] cannot optimize: " in out
    assert "scale: internal error in nvcc-opt (ValueError: '{work}' uses {work}" in out
    assert "nothing was stored for it; its trace so far is " in out
    assert "please report it" in out
    with Store.open(db) as store:
        assert store.rewrites() == []
