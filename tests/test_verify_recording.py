"""Every run of a final verification counts for its `uncontained:` caveat, not only the timed
pairs (nvcc_opt/verify/final.py `Recording`)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from nvcc_opt.verify.final import Recording
from nvcc_opt.verify.measure import uncontained
from nvcc_opt.workspace.runner import Completed, ScriptedRunner


def done(note: str, contained: bool) -> Completed:
    return Completed((), 0, "", "", False, 0.1, contained, note, contained)


def test_a_run_outside_the_timed_pairs_that_was_not_contained_is_a_caveat() -> None:
    answers = [done("contained: bubblewrap", True)] * 7 + [done("uncontained: subreaper", False)]
    recording = Recording(ScriptedRunner(answers))
    with ThreadPoolExecutor(4) as pool:  # builds, checks and runs side by side
        list(
            pool.map(lambda i: recording.run(["run", str(i)], cwd=Path("."), timeout_s=1), range(8))
        )
    assert len(recording.completed) == 8
    assert uncontained(recording.completed) == ("uncontained: subreaper",)
    assert sum(not c.contained for c in recording.completed) == 1
