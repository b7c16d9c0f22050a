"""nvcc_opt.pool.lease: one measurement per GPU at a time, across threads and processes; other
GPUs at once; a lease whose holder was killed is free again; the runs nvcc-opt starts on a GPU
(the application through verify.measure, microbenchmarks) hold their GPU's lease."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import pytest

from nvcc_opt.config import load
from nvcc_opt.pool import gpu_lease, lease_stats, open_pool, timed
from nvcc_opt.tools.microbench import Microbench
from nvcc_opt.tools.profile import Profile
from nvcc_opt.verify import final
from nvcc_opt.verify.measure import Build, observed_run
from nvcc_opt.workspace.runner import ProcessRunner, ScriptedRunner, completed

HOLD_S = 0.02
REPO = Path(__file__).resolve().parents[1]

# A separate process taking the lease of GPU argv[1] argv[2] times; prints its intervals.
HOLDER = """
import sys, time
from nvcc_opt.pool import gpu_lease
for _ in range(int(sys.argv[2])):
    with gpu_lease(sys.argv[1]):
        start = time.monotonic(); time.sleep(float(sys.argv[3])); print(start, time.monotonic())
"""
# A process that takes the lease, says so, and sleeps until killed.
SLEEPER = """
import sys, time
from nvcc_opt.pool import gpu_lease
with gpu_lease(sys.argv[1]):
    print("held", flush=True)
    time.sleep(120)
"""


@pytest.fixture(autouse=True)
def lease_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "leases"
    monkeypatch.setenv("NVCC_OPT_LEASE_DIR", str(folder))
    return folder


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "training")])}


def _assert_disjoint(intervals: list[tuple[float, float]]) -> None:
    ordered = sorted(intervals)
    for (_, end), (start, _) in zip(ordered, ordered[1:], strict=False):
        assert start >= end, f"two leases of one GPU overlapped: {ordered}"


def _hold(gpu: str | None, times: int, out: list[tuple[float, float]]) -> None:
    for _ in range(times):
        with gpu_lease(gpu):
            start = time.monotonic()
            time.sleep(HOLD_S)
            out.append((start, time.monotonic()))


def _threads(target: Callable[[], None], n: int) -> list[threading.Thread]:
    threads = [threading.Thread(target=target) for _ in range(n)]
    for t in threads:
        t.start()
    return threads


def _busy(gpu: str | None, within_s: float = 0.3) -> bool:
    """Whether another thread would have to wait for the lease of `gpu` right now."""
    got = threading.Event()

    def take() -> None:
        with gpu_lease(gpu):
            got.set()

    threading.Thread(target=take, daemon=True).start()
    return not got.wait(within_s)


def test_one_gpu_never_two_leases_across_threads_and_processes() -> None:
    intervals: list[tuple[float, float]] = []
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", HOLDER, "0", "6", str(HOLD_S)],
            stdout=subprocess.PIPE,
            text=True,
            env=_env(),
        )
        for _ in range(3)
    ]
    threads = _threads(lambda: _hold("0", 6, intervals), 6)
    for t in threads:
        t.join(60)
    for proc in procs:
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == 0
        intervals += [(float(a), float(b)) for a, b in (line.split() for line in out.splitlines())]
    assert len(intervals) == 6 * 6 + 3 * 6
    _assert_disjoint(intervals)


def test_leases_on_different_gpus_are_held_at_once() -> None:
    both = threading.Barrier(2, timeout=10)  # broken unless both leases are held together
    errors: list[BaseException] = []

    def run(gpu: str) -> None:
        try:
            with gpu_lease(gpu):
                both.wait()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(g,)) for g in ("0", "1")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert errors == []


def test_a_multi_gpu_run_and_the_whole_host_exclude_what_they_share() -> None:
    with gpu_lease("1, 2"):
        assert _busy("2") and _busy("1")
        assert not _busy("0")
        assert _busy(None)  # unset CUDA_VISIBLE_DEVICES: the run may use any GPU
    with gpu_lease(None):
        assert _busy("0") and _busy("7")
    assert not _busy("")  # no GPU visible: nothing to take


def test_reentrant_in_one_thread() -> None:
    done = threading.Event()

    def nested() -> None:
        with gpu_lease("0"), gpu_lease("0"), gpu_lease("0,1"):
            done.set()

    threading.Thread(target=nested, daemon=True).start()
    assert done.wait(5), "taking a held GPU again in the same thread waited on itself"


def test_a_lease_of_a_killed_holder_is_recovered() -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", SLEEPER, "0"], stdout=subprocess.PIPE, text=True, env=_env()
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        got = threading.Event()

        def take() -> None:
            with gpu_lease("0"):
                got.set()

        threading.Thread(target=take, daemon=True).start()
        assert not got.wait(0.5), "the lease was taken while a live process held it"
        os.kill(holder.pid, signal.SIGKILL)
        assert got.wait(10), "the lease of a killed holder was never released"
    finally:
        holder.kill()
        holder.wait()


def test_wait_for_a_gpu_is_recorded_apart_from_tool_time() -> None:
    holding = threading.Event()

    def hold() -> None:
        with gpu_lease("0"):
            holding.set()
            time.sleep(0.4)

    threading.Thread(target=hold).start()
    assert holding.wait(5)
    with lease_stats() as outer:
        result = timed(lambda: _hold("0", 1, []) or "ran")
    assert result.value == "ran" and result.leases == 1
    assert result.gpu_wait_s >= 0.25 and result.gpu_held_s >= HOLD_S
    assert result.wall_s >= result.gpu_wait_s + result.gpu_held_s
    assert outer.leases == 1 and outer.waited_s == pytest.approx(result.gpu_wait_s)
    assert outer.gpus == {"0"}


PROJECT = """\
[build]
dir = "build"
command = ["true"]

[run]
command = ["sh", "-c", "s=$(date +%s.%N); sleep 0.1; echo \\"$s $(date +%s.%N)\\" >> $0", "LOG"]
timeout_s = 60

[time]
source = "wall"
"""


def test_app_runs_of_a_pool_never_share_a_gpu(tmp_path: Path) -> None:
    """Real runs through verify.measure.observed_run, submitted concurrently to a local pool:
    each one's start and end, as the run itself saw them, never overlap another's."""
    root, logs = tmp_path / "project", tmp_path / "logs"
    (root / "build").mkdir(parents=True)
    logs.mkdir()
    log = logs / "runs.txt"
    (root / "nvcc-opt.toml").write_text(PROJECT.replace("LOG", str(log)), encoding="utf-8")
    config = load(root)
    build = Build(root / "build", writable=(logs,))
    runner = ProcessRunner()
    pool = open_pool("local:4")
    try:
        futures = [pool.submit(observed_run, config, runner, build, "0") for _ in range(6)]
        runs = [f.result(timeout=120) for f in futures]
    finally:
        pool.shutdown()
    assert all(run.completed.ok for run in runs), [run.completed.stderr for run in runs]
    lines = log.read_text(encoding="utf-8").split("\n")
    intervals = [(float(a), float(b)) for a, b in (line.split() for line in lines if line)]
    assert len(intervals) == 6
    _assert_disjoint(intervals)


class _LeaseProbe(ScriptedRunner):
    """A scripted runner (no GPU here to run a microbenchmark on) that notes whether the GPU of
    each run was leased while it ran."""

    def __init__(self) -> None:
        super().__init__([completed(0, "")] * 4)
        self.leased: list[bool] = []

    def run(self, argv, **kwargs):  # type: ignore[no-untyped-def]
        env = kwargs.get("env") or {}
        self.leased.append(_busy(env.get("CUDA_VISIBLE_DEVICES"), 0.2))
        return super().run(argv, **kwargs)


def test_microbenchmark_runs_hold_their_gpu(tmp_path: Path) -> None:
    probe = _LeaseProbe()
    Microbench(probe, tmp_path, gpu="3")._run(tmp_path, [], 2)
    assert probe.leased == [True]
    assert not _busy("3")


def _project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "build").mkdir(parents=True)
    (root / "nvcc-opt.toml").write_text(PROJECT.replace("LOG", "/dev/null"), encoding="utf-8")
    return root


def test_profiler_runs_hold_their_gpu(tmp_path: Path) -> None:
    root = _project(tmp_path)
    probe = _LeaseProbe()
    bench = SimpleNamespace(config=load(root), gpu="5", runner=probe, build_of=Build)
    Profile(bench)._run(["ncu", "--csv"], root / "build")  # type: ignore[arg-type]
    assert probe.leased == [True] and probe.calls[0].argv[0] == "ncu"
    assert not _busy("5")


def test_sanitizer_runs_hold_their_gpu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No GPU here: compute-sanitizer and nvidia-smi are said to exist, the runs are scripted."""
    root = _project(tmp_path)
    probe = _LeaseProbe()
    monkeypatch.setattr(final.shutil, "which", lambda name: f"/usr/bin/{name}")
    problems = final._sanitize(
        load(root), probe, Build(root / "base"), Build(root / "build"), "6", []
    )
    assert problems == [] and probe.leased == [True, True]  # memcheck, racecheck
    assert [c.argv[2] for c in probe.calls] == ["memcheck", "racecheck"]


def test_sanitizer_runs_render_work_as_their_own_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A project whose run starts in `{work}` (LULESH writes a 90 MB file where it runs): the
    sanitizer's runs get a folder of their own, as timed runs do, instead of failing to render."""
    root = _project(tmp_path)
    toml = root / "nvcc-opt.toml"
    toml.write_text(toml.read_text().replace("[run]\n", '[run]\ncwd = "{work}"\n', 1))
    probe = _LeaseProbe()
    monkeypatch.setattr(final.shutil, "which", lambda name: f"/usr/bin/{name}")
    assert (
        final._sanitize(load(root), probe, Build(root / "base"), Build(root / "build"), "6", [])
        == []
    )
    folders = [Path(str(c.cwd)) for c in probe.calls]
    assert len(folders) == 2 and all(f.name.startswith("nvcc-opt-sanitize-") for f in folders)
