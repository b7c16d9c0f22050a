"""NVCC_OPT_LOG: one line when each process starts and one when it ends, with its duration and
exit status; a log that cannot be written changes nothing."""

from __future__ import annotations

import re
import threading
from pathlib import Path

import pytest

from nvcc_opt.workspace.process_log import LOG_ENV, SHOWN
from nvcc_opt.workspace.runner import ProcessRunner

_LINE = re.compile(
    r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3} \[\d+\] pid (\d+) (start|end)( .*)?: (.*)$"
)


def test_each_process_has_a_start_and_an_end_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "nvcc-opt.log"
    monkeypatch.setenv(LOG_ENV, str(log))
    runner = ProcessRunner()
    ok = runner.run(["sh", "-c", "sleep 0.3"], cwd=tmp_path, timeout_s=10, sandbox=False)
    bad = runner.run(["sh", "-c", "exit 3"], cwd=tmp_path, timeout_s=10, sandbox=False)
    slow = runner.run(["sleep", "5"], cwd=tmp_path, timeout_s=0.5, sandbox=False)
    assert (ok.exit_status, bad.exit_status, slow.timed_out) == (0, 3, True)
    lines = log.read_text().splitlines()
    assert len(lines) == 6, lines
    parsed = [_LINE.match(line) for line in lines]
    assert all(parsed), lines
    kinds = [(m[1], m[2]) for m in parsed if m]
    # start before end, and each end names the pid its start named
    assert [k for _, k in kinds] == ["start", "end"] * 3
    assert kinds[0][0] == kinds[1][0] != kinds[2][0] == kinds[3][0]
    assert lines[0].endswith(f"start (timeout 10 s, in {tmp_path}): sh -c 'sleep 0.3'")
    took = float(re.search(r"end after ([0-9.]+) s, exit 0: sh -c 'sleep 0.3'$", lines[1])[1])  # type: ignore[index]
    assert 0.25 <= took < 5
    assert lines[3].endswith("exit 3: sh -c 'exit 3'")
    assert "timed out after 0.5 s; process group killed: sleep 5" in lines[5]


def test_long_commands_are_cut_and_concurrent_lines_stay_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "log"
    monkeypatch.setenv(LOG_ENV, str(log))
    long_arg = "x" * 2000
    threads = [
        threading.Thread(
            target=ProcessRunner().run,
            args=(["true", long_arg],),
            kwargs={"cwd": tmp_path, "timeout_s": 10, "sandbox": False},
        )
        for _ in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    lines = log.read_text().splitlines()
    assert len(lines) == 16 and all(_LINE.match(line) for line in lines)
    assert all(line.endswith("...") and len(line.split(": ", 1)[1]) == SHOWN for line in lines)


def test_an_unwritable_log_changes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(LOG_ENV, str(tmp_path))  # a folder: it cannot be opened for writing
    done = ProcessRunner().run(["sh", "-c", "echo hi"], cwd=tmp_path, timeout_s=10, sandbox=False)
    assert done.ok and done.stdout == "hi\n"
    monkeypatch.setenv(LOG_ENV, str(tmp_path / "missing" / "log"))
    assert ProcessRunner().run(["true"], cwd=tmp_path, timeout_s=10, sandbox=False).ok
