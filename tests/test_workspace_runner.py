"""The process runner: argv only, whole process groups killed, capped output, the bwrap sandbox.
Containment at each level (namespaces, subreaper) is in test_workspace_contain.py."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from nvcc_opt.workspace import containment, sandbox
from nvcc_opt.workspace.runner import GRACE_S, ProcessRunner, ScriptedRunner, completed

needs_bwrap = pytest.mark.skipif(
    bool(sandbox.unavailable()), reason=f"no sandbox here: {sandbox.unavailable()}"
)


def _gone(pids: list[int], within_s: float = 3.0) -> bool:
    """True once none of `pids` runs; SIGKILL is delivered asynchronously, so poll briefly."""
    deadline = time.monotonic() + within_s
    while any(_alive(pid) for pid in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _alive(pid: int) -> bool:
    """True while `pid` runs; a zombie waiting for a (possibly absent) reaper counts as dead."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _pids(text: str) -> list[int]:
    pids = [int(word) for word in text.split()]
    assert pids, "the command should have printed its children's pids"
    return pids


def _running(argument: str) -> list[int]:
    """Live processes whose command line holds `argument` as a word."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            words = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if entry.name.isdigit() and argument.encode() in words and _alive(int(entry.name)):
            found.append(int(entry.name))
    return found


def test_argv_is_never_a_shell_string(tmp_path: Path) -> None:
    word = "$(touch pwned); echo `id` > pwned2 | cat"
    done = ProcessRunner().run(["echo", word], cwd=tmp_path, timeout_s=10, sandbox=False)
    assert done.exit_status == 0 and done.ok and not done.timed_out
    assert done.stdout == word + "\n"
    assert list(tmp_path.iterdir()) == []


def test_status_streams_wall_time_and_environment(tmp_path: Path) -> None:
    script = "import os,sys,time; time.sleep(0.2); print(os.environ['ONLY']); sys.exit('bad')"
    env = {"ONLY": "this", "PATH": os.environ["PATH"]}
    argv = [sys.executable, "-c", script]
    done = ProcessRunner().run(argv, cwd=tmp_path, env=env, timeout_s=30, sandbox=False)
    assert (done.exit_status, done.stdout, done.stderr) == (1, "this\n", "bad\n")
    assert done.argv == tuple(argv) and not done.ok
    assert 0.2 <= done.wall_s < 10
    assert (done.sandboxed, done.contained, done.note) == (False, False, ""), "not asked"


def test_a_missing_program_is_exit_127_with_a_message(tmp_path: Path) -> None:
    done = ProcessRunner().run(["no-such-program-x"], cwd=tmp_path, timeout_s=5, sandbox=False)
    assert done.exit_status == 127 and "cannot run no-such-program-x" in done.stderr


def test_timeout_kills_the_whole_process_tree(tmp_path: Path) -> None:
    script = "sleep 100 & echo $!; sleep 100 & echo $!; wait"
    start = time.perf_counter()
    done = ProcessRunner().run(["sh", "-c", script], cwd=tmp_path, timeout_s=1, sandbox=False)
    assert done.timed_out and not done.ok and done.exit_status == -15
    assert time.perf_counter() - start < 1 + GRACE_S
    assert "timed out after 1 s" in done.note
    assert _gone(_pids(done.stdout))  # SIGKILL lands asynchronously


def test_a_process_ignoring_sigterm_is_killed_after_the_grace_period(tmp_path: Path) -> None:
    script = "trap '' TERM; sleep 100 & echo $!; wait"
    done = ProcessRunner().run(["sh", "-c", script], cwd=tmp_path, timeout_s=0.5, sandbox=False)
    assert done.timed_out and done.exit_status == -9
    assert 0.5 + GRACE_S <= done.wall_s < 0.5 + GRACE_S + 2
    assert _gone(_pids(done.stdout))  # SIGKILL lands asynchronously


def test_background_jobs_left_behind_are_killed(tmp_path: Path) -> None:
    done = ProcessRunner().run(
        ["sh", "-c", "sleep 100 & echo $!"], cwd=tmp_path, timeout_s=30, sandbox=False
    )
    assert done.ok and done.wall_s < 5
    assert _gone(_pids(done.stdout))


@pytest.mark.parametrize("background", ["sleep", "setsid sleep"])
def test_an_unsandboxed_run_ends_when_its_caller_is_killed(tmp_path: Path, background: str) -> None:
    """The caller SIGKILLed mid-run: the run's shell and the sleep it left in the background
    (in its group, or in a session of its own) end with it, as a sandboxed run does."""
    word = f"{600 + os.getpid() % 97}.{time.monotonic_ns() % 10**6}"  # finds what was left
    pids = tmp_path / "pids"
    written = f"echo $$ $! > {pids}.part && mv {pids}.part {pids}"
    script = f"{background} {word} & {written}; sleep {word}"
    caller = (
        "from pathlib import Path\n"
        "from nvcc_opt.workspace.runner import ProcessRunner\n"
        f"ProcessRunner().run(['sh', '-c', {script!r}], cwd=Path({str(tmp_path)!r}),"
        " timeout_s=120, sandbox=False)\n"
    )
    process = subprocess.Popen([sys.executable, "-c", caller], cwd=Path(__file__).parents[1])
    started: list[int] = []
    try:
        deadline = time.monotonic() + 30
        while not pids.exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        started = _pids(pids.read_text())
        assert len(started) == 2 and all(_alive(pid) for pid in started)
        process.kill()
        process.wait()
        assert _gone(started, within_s=5), "the run outlived its caller"
    finally:
        process.kill()
        process.wait()
        for pid in [*started, *_running(word)]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def test_output_is_capped_keeping_head_and_tail(tmp_path: Path) -> None:
    script = "import sys; sys.stdout.write('HEAD' + 'x' * 100000 + 'TAIL')"
    done = ProcessRunner().run(
        [sys.executable, "-c", script], cwd=tmp_path, timeout_s=30, sandbox=False, output_cap=1000
    )
    assert done.ok
    assert done.stdout.startswith("HEAD") and done.stdout.endswith("TAIL")
    assert "[... 99008 bytes of output cut ...]" in done.stdout
    assert len(done.stdout) < 1100


def test_stdout_lines_stream_to_a_callback_as_they_come(tmp_path: Path) -> None:
    seen: list[tuple[str, float]] = []
    script = "printf 'one\\ntw'; sleep 1; printf 'o\\nlast'"
    start = time.monotonic()
    done = ProcessRunner().run(
        ["sh", "-c", script],
        cwd=tmp_path,
        timeout_s=10,
        sandbox=False,
        on_line=lambda line: seen.append((line, time.monotonic() - start)),
    )
    assert done.ok and done.stdout == "one\ntwo\nlast"
    assert [line for line, _ in seen] == ["one", "two", "last"]  # the last without a newline
    assert seen[0][1] < 0.9 <= seen[1][1]  # the first before the program ended


def test_a_stop_event_ends_the_run_like_a_timeout(tmp_path: Path) -> None:
    stop = threading.Event()
    threading.Timer(0.5, stop.set).start()
    start = time.monotonic()
    done = ProcessRunner().run(
        ["sh", "-c", "echo started; sleep 30"],
        cwd=tmp_path,
        timeout_s=60,
        sandbox=False,
        stop=stop,
    )
    assert done.stopped and not done.timed_out and not done.ok
    assert done.stdout == "started\n" and "stopped" in done.note
    assert time.monotonic() - start < 0.5 + GRACE_S + 2


def test_a_first_sigint_lets_the_program_report_before_it_is_killed(tmp_path: Path) -> None:
    script = "trap 'echo interrupted; exit 3' INT; echo working; sleep 30 & wait"
    done = ProcessRunner().run(
        ["sh", "-c", script],
        cwd=tmp_path,
        timeout_s=1,
        sandbox=False,
        stop_signal=signal.SIGINT,
        grace_s=10,
    )
    assert done.timed_out and done.exit_status == 3
    assert done.stdout == "working\ninterrupted\n"
    assert done.wall_s < 5  # it exited on the SIGINT, not at the end of the grace


def test_a_sandboxed_run_is_ended_with_sigterm_only(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="SIGTERM"):
        ProcessRunner().run(["true"], cwd=tmp_path, timeout_s=1, stop_signal=signal.SIGINT)


def test_results_say_when_bubblewrap_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    sandbox.unavailable.cache_clear()
    containment.chosen.cache_clear()
    try:
        done = ProcessRunner().run(["/bin/true"], cwd=tmp_path, timeout_s=10)
        level = containment.chosen()
    finally:
        monkeypatch.undo()
        sandbox.unavailable.cache_clear()
        containment.chosen.cache_clear()
    assert done.ok and level.kind != containment.BUBBLEWRAP
    assert level.skipped.startswith("no bubblewrap (bubblewrap not installed)")
    if level.kind == containment.NONE:
        assert not done.contained and done.note == f"uncontained: {level.skipped}"
    else:
        assert done.contained and done.note.startswith("contained: "), done.note


@needs_bwrap
def test_sandbox_writes_only_inside_writable_folders(tmp_path: Path) -> None:
    work = tmp_path / "work"
    (work / "out").mkdir(parents=True)
    host_tmp = Path("/tmp") / f"nvcc-opt-sandbox-test-{os.getpid()}"
    script = f'echo in > out/a; echo t > "$TMPDIR/t"; echo tmp > {host_tmp}; echo no > b'
    done = ProcessRunner().run(
        ["sh", "-c", script], cwd=work, timeout_s=30, writable=[work / "out"]
    )
    assert done.sandboxed and done.contained and done.note == "contained: bubblewrap"
    assert done.exit_status != 0 and "Read-only file system" in done.stderr
    assert (work / "out" / "a").read_text() == "in\n"
    assert (work / "out" / "t").read_text() == "t\n", "TMPDIR is the last writable folder"
    assert not (work / "b").exists()
    assert not host_tmp.exists(), "/tmp is read-only"


@pytest.fixture
def listener() -> Iterator[int]:
    """A TCP server on 127.0.0.1 in this (the parent's) network namespace; yields its port."""
    server = socket.create_server(("127.0.0.1", 0))
    server.listen(5)
    try:
        yield server.getsockname()[1]
    finally:
        server.close()


@needs_bwrap
@pytest.mark.parametrize("network", [False, True])
def test_sandbox_has_no_network_unless_asked(tmp_path: Path, listener: int, network: bool) -> None:
    script = f"import socket; socket.create_connection(('127.0.0.1', {listener}), timeout=5)"
    done = ProcessRunner().run(
        [sys.executable, "-c", script], cwd=tmp_path, timeout_s=30, network=network
    )
    assert done.sandboxed
    assert done.ok == network, done.stderr


@needs_bwrap
def test_sandboxed_timeout_leaves_no_process_behind(tmp_path: Path) -> None:
    marker = str(900 + os.getpid() % 97)  # a sleep length no other test uses at the same time
    done = ProcessRunner().run(
        ["sh", "-c", f"sleep {marker} & sleep {marker}"], cwd=tmp_path, timeout_s=1
    )
    assert done.sandboxed and done.timed_out
    assert done.wall_s < 1 + GRACE_S
    time.sleep(0.2)  # the namespace's processes die as its init does, asynchronously
    assert _running(marker) == []


def test_scripted_runner_answers_in_order_and_records_calls(tmp_path: Path) -> None:
    runner = ScriptedRunner([completed(0, "one"), completed(2, stderr="two", contained=False)])
    first = runner.run(["a", "1"], cwd=tmp_path, timeout_s=5, readonly=[tmp_path / "base"])
    second = runner.run(["b"], cwd=tmp_path, timeout_s=7, writable=[tmp_path], network=True)
    assert (first.argv, first.stdout, first.ok, first.contained) == (("a", "1"), "one", True, True)
    assert (second.argv, second.exit_status, second.stderr) == (("b",), 2, "two")
    assert not second.contained
    calls = [(c.argv, c.timeout_s, c.writable, c.readonly, c.network) for c in runner.calls]
    assert calls == [
        (("a", "1"), 5, (), (tmp_path / "base",), False),
        (("b",), 7, (tmp_path,), (), True),
    ]
    with pytest.raises(AssertionError, match="exhausted"):
        runner.run(["c"], cwd=tmp_path, timeout_s=1)


def test_scripted_runner_answers_by_argv(tmp_path: Path) -> None:
    runner = ScriptedRunner({("make",): completed(0, "built"), ("run",): completed(1)})
    assert runner.run(["run"], cwd=tmp_path, timeout_s=1).exit_status == 1
    assert runner.run(["make"], cwd=tmp_path, timeout_s=1).stdout == "built"
    with pytest.raises(AssertionError, match="no answer"):
        runner.run(["other"], cwd=tmp_path, timeout_s=1)
