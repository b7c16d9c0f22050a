"""The keeper that ends unsandboxed runs with their caller (lifeline.py): one per process, gone
with it, started again if it was killed, its tag held by the runs only. The caller's SIGKILL
itself is tested through the runner (test_workspace_runner.py)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from nvcc_opt.workspace import lifeline
from nvcc_opt.workspace.runner import ProcessRunner
from tests.test_workspace_runner import _gone

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="a keeper on Linux only")


def _keeper_pid() -> int:
    assert lifeline._keeper is not None
    return lifeline._keeper.pid


def _tags(pid: int) -> int:
    """How many descriptors of `pid` are the keeper's tag."""
    assert lifeline._keeper is not None
    inode = os.fstat(lifeline._keeper.tag).st_ino
    links = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(FileNotFoundError):  # the listing's own, closed by now
            links.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
    return links.count(f"pipe:[{inode}]")


def test_a_run_holds_the_tag_and_the_caller_only_its_own(tmp_path: Path) -> None:
    done = ProcessRunner().run(
        ["sh", "-c", "ls -l /proc/$$/fd"], cwd=tmp_path, timeout_s=10, sandbox=False
    )
    assert done.ok and lifeline._keeper is not None
    assert f"pipe:[{os.fstat(lifeline._keeper.tag).st_ino}]" in done.stdout
    assert _tags(os.getpid()) == 1  # the run's copy was closed once it started
    sandboxed = ProcessRunner().run(["sh", "-c", "ls -l /proc/$$/fd"], cwd=tmp_path, timeout_s=10)
    assert f"pipe:[{os.fstat(lifeline._keeper.tag).st_ino}]" not in sandboxed.stdout


def test_a_killed_keeper_is_started_again(tmp_path: Path) -> None:
    ProcessRunner().run(["true"], cwd=tmp_path, timeout_s=10, sandbox=False)
    first = _keeper_pid()
    os.kill(first, signal.SIGKILL)
    assert _gone([first])
    done = ProcessRunner().run(["true"], cwd=tmp_path, timeout_s=10, sandbox=False)
    assert done.ok and _keeper_pid() != first


def test_a_forked_child_does_not_hold_the_tag(tmp_path: Path) -> None:
    ProcessRunner().run(["true"], cwd=tmp_path, timeout_s=10, sandbox=False)
    reading, writing = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover (the child reports through the pipe)
        os.write(writing, b"%d" % (lifeline._keeper is None))
        os._exit(0)
    os.close(writing)
    os.waitpid(child, 0)
    assert os.read(reading, 16) == b"1"
    os.close(reading)


def test_the_keeper_ends_with_its_caller() -> None:
    caller = (
        "from pathlib import Path\n"
        "from nvcc_opt.workspace import lifeline\n"
        "from nvcc_opt.workspace.runner import ProcessRunner\n"
        "ProcessRunner().run(['true'], cwd=Path('.'), timeout_s=10, sandbox=False)\n"
        "print(lifeline._keeper.pid)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", caller], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert _gone([int(done.stdout)], within_s=5)
