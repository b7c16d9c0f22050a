"""compute-sanitizer in the final verification: only a clean pass passes silently.

A candidate's sanitizer errors reject it when the original passes the same tool, and so does a
candidate that does not finish under it where the original does; anything the sanitizer could
not establish (not installed, the original failing or too slow too, only the first launches
checked) is an `unmeasured:` caveat, which review will not accept without --force. Runs are
scripted (no GPU here); compute-sanitizer and nvidia-smi are said to exist."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from nvcc_opt.config import load
from nvcc_opt.records import CAVEATS
from nvcc_opt.verify import final
from nvcc_opt.verify.kernels import region_kernels
from nvcc_opt.verify.measure import Build
from nvcc_opt.workspace.runner import Completed, ScriptedRunner, completed

PROJECT = """\
[build]
dir = "build"
command = ["true"]

[run]
command = ["{build}/app"]
timeout_s = 30
"""
REPORT = (
    "========= COMPUTE-SANITIZER\n"
    "========= Invalid __global__ write of size 4 bytes\n"
    "=========     at k(float *)+0x70\n"
    "========= ERROR SUMMARY: 1 error\n"
)
CLEAN = completed(0, "========= ERROR SUMMARY: 0 errors\n")
FOUND = completed(final.SANITIZER_EXIT, REPORT)


def _sanitize(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    answers: list[Completed],
    only: frozenset[str] | None = None,
    **toml: str,
) -> tuple[list[str], list[str], ScriptedRunner]:
    root = tmp_path / "project"
    for d in ("build", "base", "cand"):
        (root / d).mkdir(parents=True, exist_ok=True)
    text = PROJECT + "".join(f"\n[verify]\n{k} = {v}\n" for k, v in toml.items())
    (root / "nvcc-opt.toml").write_text(text, encoding="utf-8")
    monkeypatch.setattr(final.shutil, "which", lambda name: f"/usr/bin/{name}")
    runner = ScriptedRunner(answers)
    notes: list[str] = []
    problems = final._sanitize(
        load(root), runner, Build(root / "base"), Build(root / "cand"), "0", notes, only
    )
    return problems, notes, runner


def _caveats(notes: list[str]) -> list[str]:
    return [n for n in notes if n.startswith(CAVEATS)]


def test_clean_candidate_passes_without_running_the_original(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    problems, notes, runner = _sanitize(tmp_path, monkeypatch, [CLEAN, CLEAN])
    assert problems == [] and _caveats(notes) == []
    assert [c.argv[2] for c in runner.calls] == ["memcheck", "racecheck"]


def test_errors_the_original_does_not_have_reject(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    problems, notes, runner = _sanitize(tmp_path, monkeypatch, [FOUND, CLEAN, CLEAN])
    assert problems == [
        "sanitizer_memcheck: Invalid __global__ write of size 4 bytes (the original passes it)"
    ]
    assert _caveats(notes) == []


def test_a_crash_under_the_sanitizer_the_original_does_not_have_rejects(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not the sanitizer's error code, but the candidate fails under it and the original does not:
    a candidate that behaves differently when watched is a failure, not a pass."""
    problems, _, _ = _sanitize(tmp_path, monkeypatch, [CLEAN, completed(3), CLEAN])
    assert problems == [
        "sanitizer_racecheck: exit status 3 under the sanitizer (the original passes it)"
    ]


def test_errors_the_original_has_too_are_a_caveat_not_a_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    problems, notes, _ = _sanitize(tmp_path, monkeypatch, [CLEAN, FOUND, FOUND])
    assert problems == []
    [caveat] = _caveats(notes)
    assert caveat.startswith("unmeasured: compute-sanitizer racecheck on the candidate")
    assert "the original does not pass it either" in caveat


TIMED_OUT = completed(-9, timed_out=True)


def _whose(runner: ScriptedRunner) -> list[str]:
    """Each call's build ("base" or "cand") and whether it checked the first launches only."""
    return [
        next(Path(a).parent.name for a in c.argv if a.endswith("/app"))
        + (" first" if "--launch-count" in c.argv else "")
        for c in runner.calls
    ]


def test_too_slow_on_both_even_for_a_few_launches_is_a_caveat(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whole runs of both, then the first launches of both: all too slow."""
    problems, notes, runner = _sanitize(
        tmp_path, monkeypatch, [TIMED_OUT, TIMED_OUT, TIMED_OUT, TIMED_OUT, CLEAN]
    )
    assert problems == []
    assert _caveats(notes) == [
        "unmeasured: compute-sanitizer memcheck took longer than 300 s on the candidate and the "
        "original, even over its first 8 launches, so the candidate could not be judged by it"
    ]
    assert [c.timeout_s for c in runner.calls] == [300] * 5
    assert _whose(runner) == ["cand", "base", "cand first", "base first", "cand"]
    first = list(runner.calls[2].argv)
    assert first[first.index("--launch-count") + 1] == "8"


def test_a_program_too_slow_when_watched_has_its_first_launches_checked_with_a_caveat(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """HeCBench's moe on an H100: racecheck of its 1,000 launches ran past 210 s, and the
    verification would have waited the 6,000 s that 20 x its run timeout allowed. The original
    is as slow, so the first launches of both are watched; a clean pass of those leaves the
    rest unchecked, which review must be told."""
    problems, notes, runner = _sanitize(
        tmp_path, monkeypatch, [CLEAN, TIMED_OUT, TIMED_OUT, CLEAN], sanitizer_timeout_s="120"
    )
    assert problems == []
    assert _caveats(notes) == [
        "unmeasured: compute-sanitizer racecheck passed the candidate over its first 8 launches "
        "only: a whole run under it took longer than 120 s (the original's too)"
    ]
    assert [c.timeout_s for c in runner.calls] == [120] * 4
    assert _whose(runner) == ["cand", "cand", "base", "cand first"]


def test_a_candidate_that_hangs_only_when_watched_is_rejected(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A candidate that never finishes under the sanitizer, where the original finishes under
    the same settings, behaves differently when watched: a failure, not a caveat to wave
    through, and its first launches alone are not enough to pass it."""
    finished = dataclasses.replace(CLEAN, wall_s=42.0)
    problems, notes, runner = _sanitize(tmp_path, monkeypatch, [TIMED_OUT, finished, CLEAN])
    assert problems == [
        "sanitizer_memcheck: the candidate did not finish under it in 300 s; the original did "
        "in 42 s"
    ]
    assert _caveats(notes) == []
    assert _whose(runner) == ["cand", "base", "cand"]


def test_errors_where_the_original_is_too_slow_are_compared_over_the_first_launches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    problems, _, runner = _sanitize(tmp_path, monkeypatch, [FOUND, TIMED_OUT, FOUND, CLEAN, CLEAN])
    assert problems == [
        "sanitizer_memcheck: Invalid __global__ write of size 4 bytes (the original passes it)"
    ]
    assert _whose(runner) == ["cand", "base", "cand first", "base first", "cand"]
    _, notes, _ = _sanitize(tmp_path, monkeypatch, [FOUND, TIMED_OUT, CLEAN, CLEAN])
    assert _caveats(notes) == [
        "unmeasured: compute-sanitizer memcheck passed the candidate over its first 8 launches "
        "only: a whole run of the candidate found Invalid __global__ write of size 4 bytes, and "
        "the original's took longer than 300 s"
    ]


def test_the_limit_never_exceeds_twenty_run_timeouts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, _, runner = _sanitize(tmp_path, monkeypatch, [CLEAN, CLEAN], sanitizer_timeout_s="5000")
    assert [c.timeout_s for c in runner.calls] == [600, 600]


def alone(original: str, candidate: str) -> frozenset[str] | None:
    return region_kernels(original, candidate).alone


def test_only_regions_of_kernels_alone_are_watched_by_their_kernels() -> None:
    """A `__device__` helper may be called by kernels outside the region, a host function by
    host code, and a macro may hide a launch: then every kernel is watched. Otherwise the
    kernels of both regions (one the candidate dropped or added included)."""
    kernel = "__global__ void k(float* p) { p[threadIdx.x] = 0; }\n"
    assert alone(kernel, kernel.replace("void k", "void k2")) == {"k", "k2"}
    assert alone(kernel, "namespace n { " + kernel + "}") == {"k"}
    helper = "__device__ float h(float x) { return x; }\n"
    assert (
        alone(helper, helper.replace("return x", "return x * 2") + "__global__ void z() {}") is None
    )
    assert alone(kernel, helper + kernel) is None
    assert alone(kernel, "#define L(f) f<<<1, 1>>>()\n" + kernel) is None
    assert alone(kernel, kernel + "void launch(float* p) { k<<<1, 32>>>(p); }\n") is None
    assert alone(kernel, "__host__ __device__ int f() { return 1; }\n" + kernel) is None
    assert alone("int table[4];\n", "int table[4];\n") is None


def test_device_code_alone_is_watched_kernel_by_kernel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the region is device code alone, only its kernels changed: the sanitizer watches
    those (any kernel whose mangled name holds the name), and the rest of the program runs
    unwatched, as in the original."""
    _, _, runner = _sanitize(tmp_path, monkeypatch, [CLEAN, CLEAN], frozenset({"scale", "axpy"}))
    argv = list(runner.calls[0].argv)
    assert argv[7:11] == ["--kernel-name", "kns=axpy", "--kernel-name", "kns=scale"]
    assert argv[11].endswith("app")


def test_no_sanitizer_here_is_a_caveat(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "p"
    (root / "build").mkdir(parents=True)
    (root / "nvcc-opt.toml").write_text(PROJECT, encoding="utf-8")
    monkeypatch.setattr(final.shutil, "which", lambda name: None)
    notes: list[str] = []
    runner = ScriptedRunner([])
    assert final._sanitize(load(root), runner, Build(root), Build(root), "0", notes) == []
    assert len(_caveats(notes)) == 1 and "did not run" in notes[0] and runner.calls == []


def test_switched_off_by_the_project_is_said_but_not_a_caveat(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    problems, notes, runner = _sanitize(tmp_path, monkeypatch, [], sanitizer="false")
    assert problems == [] and runner.calls == []
    assert notes == ["sanitizer: off ([verify] sanitizer = false)"] and _caveats(notes) == []


def _races(n: int) -> Completed:
    """racecheck's output as compute-sanitizer 2025 writes it: a banner first."""
    return completed(
        final.SANITIZER_EXIT,
        "========= COMPUTE-SANITIZER\n"
        + "========= Error: Race reported between Write access at k(float*)+0x60\n" * n
        + "=========     and Read access at k(float*)+0x90\n========= \n"
        + f"========= RACECHECK SUMMARY: {n} hazard displayed ({n} error, 0 warnings)\n",
    )


def test_the_reason_quotes_the_finding_not_the_banner(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """LULESH on an H100: its original has a racecheck hazard too, and the caveat read
    "COMPUTE-SANITIZER", the banner, where the finding belonged."""
    _, notes, _ = _sanitize(tmp_path, monkeypatch, [CLEAN, _races(1), _races(1)])
    [caveat] = _caveats(notes)
    assert "1 errors, the original 1; Error: Race reported between Write access" in caveat
    assert "COMPUTE-SANITIZER" not in caveat


def test_more_errors_than_the_original_has_reject(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    problems, notes, _ = _sanitize(tmp_path, monkeypatch, [CLEAN, _races(3), _races(1)])
    assert problems == [
        "sanitizer_racecheck: 3 errors where the original has 1 (Error: Race reported between "
        "Write access at k(float*)+0x60)"
    ]
    assert _caveats(notes) == []


def test_a_program_that_exits_nonzero_by_design_is_clean_when_the_project_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`[check] exit_status = false` (the program's own status is not a verdict): a run under
    the sanitizer that exits 1 with no finding is clean; one with findings the original lacks
    is still rejected."""
    root = tmp_path / "project"
    for d in ("build", "base", "cand"):
        (root / d).mkdir(parents=True)
    text = PROJECT + "\n[check]\nexit_status = false\n"
    (root / "nvcc-opt.toml").write_text(text, encoding="utf-8")
    monkeypatch.setattr(final.shutil, "which", lambda name: f"/usr/bin/{name}")
    runner = ScriptedRunner([completed(1), FOUND, completed(1)])
    notes: list[str] = []
    problems = final._sanitize(
        load(root), runner, Build(root / "base"), Build(root / "cand"), "0", notes
    )
    assert _caveats(notes) == []
    assert problems == [
        "sanitizer_racecheck: Invalid __global__ write of size 4 bytes (the original passes it)"
    ]
