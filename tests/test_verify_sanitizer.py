"""compute-sanitizer in the final verification: only a clean pass passes silently.

A candidate's sanitizer errors reject it when the original passes the same tool; anything the
sanitizer could not establish (not installed, timed out, the original failing too) is an
`unmeasured:` caveat, which review will not accept without --force. Runs are scripted (no GPU
here); compute-sanitizer and nvidia-smi are said to exist."""

from __future__ import annotations

from pathlib import Path

import pytest

from nvcc_opt.config import load
from nvcc_opt.records import CAVEATS
from nvcc_opt.verify import final
from nvcc_opt.verify.measure import Build
from nvcc_opt.workspace.runner import Completed, ScriptedRunner, completed

PROJECT = """\
[build]
dir = "build"
command = ["true"]

[run]
command = ["./app"]
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


def test_too_slow_on_both_even_for_a_few_launches_is_a_caveat(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A whole run, then the first launches, then the original the same way: all too slow."""
    problems, notes, runner = _sanitize(
        tmp_path, monkeypatch, [TIMED_OUT, TIMED_OUT, TIMED_OUT, CLEAN]
    )
    assert problems == []
    assert _caveats(notes) == [
        "unmeasured: compute-sanitizer memcheck took longer than 300 s on the candidate and on "
        "the original, even checking only the first 8 launches, so its findings are unknown"
    ]
    assert [c.timeout_s for c in runner.calls] == [300, 300, 300, 300]
    whole, first, original, _ = (list(c.argv) for c in runner.calls)
    assert "--launch-count" not in whole
    assert first[first.index("--launch-count") + 1] == "8"
    assert original == first  # the original watched exactly as the candidate was


def test_a_whole_run_too_slow_checks_the_first_launches_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """HeCBench's moe on an H100: racecheck of its 1,000 launches ran past 3.5 minutes and the
    verification hung for the 100 minutes 20 x its run timeout allowed."""
    problems, notes, runner = _sanitize(
        tmp_path, monkeypatch, [CLEAN, TIMED_OUT, CLEAN], sanitizer_timeout_s="120"
    )
    assert problems == [] and _caveats(notes) == []
    assert notes == [
        "sanitizer: racecheck checked the first 8 launches of kernels only (a whole run under it "
        "took longer than 120 s)"
    ]
    assert [c.timeout_s for c in runner.calls] == [120, 120, 120]


def test_a_candidate_that_hangs_only_when_watched_is_rejected(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A candidate that never finishes under the sanitizer, where the original finishes under
    the same settings, behaves differently when watched: a failure, not a caveat to wave
    through."""
    slow_original = completed(0, "========= ERROR SUMMARY: 0 errors\n")
    problems, notes, _ = _sanitize(
        tmp_path, monkeypatch, [TIMED_OUT, TIMED_OUT, slow_original, CLEAN]
    )
    assert problems == [
        "sanitizer_memcheck: the candidate did not finish under it in 300 s; the original did "
        "in 0 s"
    ]
    assert _caveats(notes) == []


def test_the_limit_never_exceeds_twenty_run_timeouts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, _, runner = _sanitize(tmp_path, monkeypatch, [CLEAN, CLEAN], sanitizer_timeout_s="5000")
    assert [c.timeout_s for c in runner.calls] == [600, 600]


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
