"""Containment without bubblewrap: every run and its descendants end with the run, at each level
this machine offers (levels it does not offer skip with the probe's reason)."""

from __future__ import annotations

import functools
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from nvcc_opt.workspace import containment
from nvcc_opt.workspace.containment import BUBBLEWRAP, LADDER, NAMESPACES, NONE, SUBREAPER, Level
from nvcc_opt.workspace.runner import GRACE_S, ProcessRunner
from tests.test_workspace_runner import _running

ROOT = Path(__file__).resolve().parents[1]
NOBODY = 65534


@functools.cache
def _level(kind: str) -> Level:
    return containment.probe(kind)


def _runner(kind: str) -> ProcessRunner:
    level = _level(kind)
    if level.kind != kind:
        pytest.skip(f"{kind} does not work here: {level.skipped}")
    return ProcessRunner(level)


@pytest.fixture(params=LADDER)
def runner(request: pytest.FixtureRequest) -> ProcessRunner:
    return _runner(request.param)


@pytest.fixture
def word() -> str:
    """A long sleep, of a length no other test uses at once: finds the processes a run left."""
    return f"{700 + os.getpid() % 97}.{time.monotonic_ns() % 10**6}"


def _none_left(word: str, within_s: float = 3.0) -> bool:
    deadline = time.monotonic() + within_s
    while _running(word):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _kill_left(word: str) -> None:
    for pid in _running(word):
        os.kill(pid, signal.SIGKILL)


def test_the_probe_takes_the_highest_level_that_works() -> None:
    working = [kind for kind in LADDER if _level(kind).kind == kind]
    chosen = containment.chosen()
    assert chosen.kind == (working[0] if working else NONE)
    for kind in LADDER[: LADDER.index(chosen.kind)] if chosen.kind in LADDER else LADDER:
        assert f"no {kind} (" in chosen.skipped, "every level skipped says why"


def test_where_nothing_works_every_result_says_so(tmp_path: Path) -> None:
    level = Level(NONE, "", "no bubblewrap (not installed), no namespaces (refused)")
    done = ProcessRunner(level).run(["echo", "hi"], cwd=tmp_path, timeout_s=10)
    assert done.ok and done.stdout == "hi\n"
    assert not done.contained and not done.sandboxed
    assert done.note == "uncontained: no bubblewrap (not installed), no namespaces (refused)"


def test_a_setsid_grandchild_dies_with_the_run(runner: ProcessRunner, tmp_path: Path) -> None:
    short = f"1.{os.getpid() % 97:02d}{time.monotonic_ns() % 10**5:05d}"  # about a second
    marker = tmp_path / "late"
    script = (
        f"setsid sh -c 'sleep {short}; echo late > {marker}' & "  # its own session
        f"( setsid sleep {short} & ) ; "  # and double-forked: an orphan at once
        "echo started"
    )
    try:
        done = runner.run(["sh", "-c", script], cwd=tmp_path, timeout_s=30, writable=[tmp_path])
        assert done.ok and done.stdout == "started\n", done
        assert done.contained, done.note
        assert _none_left(short), "every process the run started ended with it"
        time.sleep(float(short) + 0.5)
        assert not marker.exists(), "the grandchild never wrote its marker"
    finally:
        _kill_left(short)


def test_a_timeout_ends_what_left_the_group(
    runner: ProcessRunner, tmp_path: Path, word: str
) -> None:
    script = f"setsid sleep {word} & sleep {word}"
    try:
        done = runner.run(["sh", "-c", script], cwd=tmp_path, timeout_s=1)
        assert done.timed_out and done.exit_status == -15 and done.contained
        assert done.wall_s < 1 + GRACE_S
        assert done.note.startswith("timed out after 1 s; process group killed; contained: ")
        assert _none_left(word)
    finally:
        _kill_left(word)


@pytest.mark.parametrize("kind", [NAMESPACES, SUBREAPER])  # bwrap itself ends at SIGTERM
def test_sigterm_ignored_is_killed_after_the_grace_period(
    kind: str, tmp_path: Path, word: str
) -> None:
    script = f"trap '' TERM; setsid sleep {word} & sleep {word}"
    try:
        done = _runner(kind).run(["sh", "-c", script], cwd=tmp_path, timeout_s=0.5)
        assert done.timed_out and done.exit_status == -9 and done.contained
        assert 0.5 + GRACE_S <= done.wall_s < 0.5 + GRACE_S + 2
        assert _none_left(word)
    finally:
        _kill_left(word)


def test_status_and_streams_pass_through(runner: ProcessRunner, tmp_path: Path) -> None:
    script = "echo out; echo err >&2; exit 3"
    done = runner.run(["sh", "-c", script], cwd=tmp_path, timeout_s=30)
    assert (done.exit_status, done.stdout, done.stderr) == (3, "out\n", "err\n")
    killed = runner.run(["sh", "-c", "kill -SEGV $$"], cwd=tmp_path, timeout_s=30)
    bwrap = runner.level is not None and runner.level.kind == BUBBLEWRAP  # 128+N, as a shell
    assert killed.exit_status == (128 + signal.SIGSEGV if bwrap else -signal.SIGSEGV)
    assert killed.stderr == ""
    missing = runner.run(["no-such-program-x"], cwd=tmp_path, timeout_s=30)
    assert not missing.ok and "no-such-program-x: No such file or directory" in missing.stderr
    if not bwrap:  # bwrap says it its own way, with exit status 1
        assert missing.exit_status == 127
        assert missing.stderr == "cannot run no-such-program-x: No such file or directory\n"


def test_environment_folder_and_output_cap(runner: ProcessRunner, tmp_path: Path) -> None:
    script = "import os,sys; print(os.environ['ONLY'], os.getcwd()); sys.stdout.write('x'*9000)"
    env = {"ONLY": "this", "PATH": os.environ["PATH"]}
    done = runner.run(
        [sys.executable, "-c", script], cwd=tmp_path, env=env, timeout_s=30, output_cap=1000
    )
    assert done.ok and done.stdout.startswith(f"this {tmp_path}\n")
    assert "bytes of output cut" in done.stdout and len(done.stdout) < 1100


def test_readonly_folders_cannot_be_written(runner: ProcessRunner, tmp_path: Path) -> None:
    base, work = tmp_path / "base", tmp_path / "work"
    (base / "bin").mkdir(parents=True)
    work.mkdir()
    (base / "bin" / "app").write_text("baseline\n")
    script = (
        "echo cheat > ../base/bin/app; touch ../base/new; rm -f ../base/bin/app; echo ok > mine"
    )
    done = runner.run(
        ["sh", "-c", script], cwd=work, timeout_s=30, writable=[work], readonly=[base]
    )
    assert (work / "mine").read_text() == "ok\n"
    if runner.level is not None and runner.level.kind == SUBREAPER and os.geteuid() == 0:
        # root ignores permissions: the writes happen, and are found by their change times
        assert not done.contained
        assert done.note.startswith("uncontained: subreaper; the run wrote a read-only folder: ")
        assert "not protected (running as root, which permissions do not bind)" in done.note
        return
    assert done.contained, done.note
    assert done.stderr.count("\n") == 3, "all three writes refused"
    assert (base / "bin" / "app").read_text() == "baseline\n"
    assert not (base / "new").exists()


def test_a_run_that_leaves_readonly_folders_alone_is_contained(
    runner: ProcessRunner, tmp_path: Path
) -> None:
    (tmp_path / "base").mkdir()
    (tmp_path / "base" / "app").write_text("baseline\n")
    done = runner.run(["cat", "base/app"], cwd=tmp_path, timeout_s=30, readonly=[tmp_path / "base"])
    assert done.ok and done.stdout == "baseline\n" and done.contained, done.note
    if runner.level is not None and runner.level.kind == SUBREAPER:
        how = "checked for writes, not protected" if os.geteuid() == 0 else "protected"
        assert f"; read-only folders {how}" in done.note


@pytest.mark.parametrize("kind", [BUBBLEWRAP, NAMESPACES])
def test_the_deeper_folder_wins(kind: str, tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "build" / "out").mkdir(parents=True)
    (project / "build" / "keep").mkdir()
    script = "touch src; touch build/out/a; touch build/keep/b; touch /tmp/x-$$ 2>/dev/null; :"
    done = _runner(kind).run(
        ["sh", "-c", script],
        cwd=project,
        timeout_s=30,
        writable=[project / "build"],
        readonly=[project, project / "build" / "keep"],
    )
    assert done.contained and done.sandboxed, done.note
    assert (project / "build" / "out" / "a").exists(), "writable inside read-only"
    assert not (project / "src").exists()
    assert not (project / "build" / "keep" / "b").exists(), "read-only inside writable"


def test_namespaces_leave_the_file_system_read_only_but_writable_folders(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    shm = "/dev/shm/nvcc-opt-$$"  # device nodes and shared memory stay writable
    script = f'echo a > out/a; echo t > "$TMPDIR/t"; echo no > b; touch {shm} && rm {shm}'
    done = _runner(NAMESPACES).run(["sh", "-c", script], cwd=tmp_path, timeout_s=30, writable=[out])
    assert done.sandboxed and done.note.startswith("contained: PID, mount and network")
    assert "Read-only file system" in done.stderr and "shm" not in done.stderr
    assert (out / "a").read_text() == "a\n" and (out / "t").read_text() == "t\n"
    assert not (tmp_path / "b").exists()


@pytest.fixture
def listener() -> Iterator[int]:
    server = socket.create_server(("127.0.0.1", 0))
    server.listen(5)
    try:
        yield server.getsockname()[1]
    finally:
        server.close()


@pytest.mark.parametrize("network", [False, True])
def test_namespaces_have_no_network_unless_asked(
    tmp_path: Path, listener: int, network: bool
) -> None:
    script = f"import socket; socket.create_connection(('127.0.0.1', {listener}), timeout=5)"
    done = _runner(NAMESPACES).run(
        [sys.executable, "-c", script], cwd=tmp_path, timeout_s=30, network=network
    )
    assert done.ok == network, done.stderr
    kinds = "PID and mount namespaces" if network else "PID, mount and network namespaces"
    assert done.note.startswith(f"contained: {kinds}")


def test_the_run_cannot_kill_its_init_or_supervisor(tmp_path: Path, word: str) -> None:
    script = f"setsid sleep {word} & kill -9 1 $PPID; sleep 0.2; echo alive"
    try:
        done = _runner(NAMESPACES).run(["sh", "-c", script], cwd=tmp_path, timeout_s=30)
        assert done.ok and done.stdout == "alive\n" and done.contained
        assert _none_left(word)
    finally:
        _kill_left(word)


def test_a_killed_subreaper_is_reported_uncontained(tmp_path: Path, word: str) -> None:
    script = f"setsid sleep {word} & kill -9 $PPID"
    try:
        done = _runner(SUBREAPER).run(["sh", "-c", script], cwd=tmp_path, timeout_s=30)
        assert done.exit_status == -9 and not done.contained
        assert "the supervisor was killed: descendants may survive" in done.note
    finally:
        _kill_left(word)


class _Interrupted(Exception):
    pass


def _interrupt(signum: int, frame: object) -> None:
    raise _Interrupted


def test_an_interrupted_call_still_ends_every_process(
    runner: ProcessRunner, tmp_path: Path, word: str
) -> None:
    previous = signal.signal(signal.SIGALRM, _interrupt)
    signal.setitimer(signal.ITIMER_REAL, 0.5)
    try:
        with pytest.raises(_Interrupted):
            runner.run(["sh", "-c", f"setsid sleep {word} & wait"], cwd=tmp_path, timeout_s=30)
        assert _none_left(word)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        _kill_left(word)


@pytest.mark.parametrize("kind", [NAMESPACES, SUBREAPER])
def test_when_the_caller_dies_the_run_dies(kind: str, tmp_path: Path, word: str) -> None:
    _runner(kind)
    caller = textwrap.dedent(f"""
        from pathlib import Path
        from nvcc_opt.workspace import containment
        from nvcc_opt.workspace.runner import ProcessRunner
        runner = ProcessRunner(containment.probe({kind!r}))
        runner.run(["sh", "-c", "setsid sleep {word} & wait"], cwd=Path({str(tmp_path)!r}),
                   timeout_s=60)
    """)
    process = subprocess.Popen([sys.executable, "-c", caller], cwd=ROOT)
    try:
        deadline = time.monotonic() + 30
        while not _running(word) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _running(word), "the run started"
        process.kill()
        process.wait()
        assert _none_left(word)
    finally:
        _kill_left(word)


def _nobody() -> list[str]:
    setpriv = shutil.which("setpriv")
    assert setpriv is not None
    return [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]


@functools.cache
def _interpreter() -> str:
    """A Python that `nobody` may run (this one can live in root's home); the package is
    imported from this checkout, by path."""
    again = "import subprocess, sys; subprocess.run([sys.executable, '-c', ''], check=True)"
    for python in (sys.executable, "/usr/bin/python3"):
        if subprocess.run([*_nobody(), python, "-c", again], capture_output=True).returncode == 0:
            return python  # it can start itself again, as the runner starts the supervisor
    pytest.skip("no Python here that an unprivileged user can run")


@pytest.fixture
def nobody_folder() -> Iterator[Path]:
    """A folder of the unprivileged user `nobody` that it can reach (pytest's are root's)."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to become an unprivileged user")
    folder = Path(tempfile.mkdtemp(prefix="nvcc-opt-nobody-"))
    os.chown(folder, NOBODY, NOBODY)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _as_nobody(folder: Path, body: str) -> list[str]:
    """The lines `body` (Python, given `runner_for(kind)` and `folder`) prints as `nobody`."""
    script = textwrap.dedent(f"""
        import sys
        from pathlib import Path
        from nvcc_opt.workspace import containment
        from nvcc_opt.workspace.runner import ProcessRunner
        folder = Path({str(folder)!r})
        def runner_for(kind):
            level = containment.probe(kind)
            if level.kind != kind:
                print("SKIP", level.skipped)
                sys.exit(0)
            return ProcessRunner(level)
    """) + textwrap.dedent(body)
    env = {"PATH": os.environ["PATH"], "HOME": str(folder), "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [*_nobody(), _interpreter(), "-c", script],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    if done.stdout.startswith("SKIP"):
        pytest.skip(f"not for an unprivileged user here: {done.stdout[5:].strip()}")
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_unprivileged_namespaces_use_a_user_namespace(nobody_folder: Path, word: str) -> None:
    body = f"""
        (folder / "ro").mkdir()
        (folder / "ro" / "app").write_text("baseline")
        script = "setsid sleep {word} & echo cheat > ro/app; id -u"
        done = runner_for("namespaces").run(
            ["sh", "-c", script], cwd=folder, timeout_s=30, writable=[folder],
            readonly=[folder / "ro"])
        print(done.contained, done.stdout.strip(), (folder / "ro" / "app").read_text())
        print(done.note)
    """
    try:
        first, note = _as_nobody(nobody_folder, body)[:2]
        assert first == f"True {NOBODY} baseline"
        assert note.startswith("contained: PID, mount and network namespaces, in a user ")
        assert _none_left(word)
    finally:
        _kill_left(word)


def test_unprivileged_subreaper_protects_readonly_folders_by_permissions(
    nobody_folder: Path,
) -> None:
    body = """
        import os, stat
        base = folder / "base"
        (base / "bin").mkdir(parents=True)
        (base / "bin" / "app").write_text("baseline")
        (base / "out").mkdir()
        os.chmod(base / "bin" / "app", 0o751)
        script = "echo cheat > base/bin/app; touch base/new; touch base/out/ok"
        done = runner_for("subreaper").run(
            ["sh", "-c", script], cwd=folder, timeout_s=30, writable=[base / "out"],
            readonly=[base])
        print(done.contained, (base / "bin" / "app").read_text(), (base / "new").exists(),
              (base / "out" / "ok").exists())
        print(oct(stat.S_IMODE(os.stat(base / "bin" / "app").st_mode)),
              os.access(base, os.W_OK))
        print(done.note)
    """
    lines = _as_nobody(nobody_folder, body)
    assert lines[0] == "True baseline False True", lines
    assert lines[1] == "0o751 True", "the permissions are given back after the run"
    assert lines[2].startswith("contained: subreaper; read-only folders protected by permissions")
