"""integration/lulesh with real CMake, Ninja and nvcc on the fixture tree (tests/fixtures/lulesh,
which imitates LULESH 2.0.2-dev cuda/src). Its program runs here for real: where no GPU exists the
fixture's kernel body runs on the host. Only `nvcc-opt optimize` and `review --accept`, which need
a GPU to measure, are scripted in the table test, and only where no GPU exists.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import pytest

from integration.lulesh import checkout, pipeline, timing
from integration.lulesh.output import KERNEL, OutputError, parse
from integration.lulesh.pipeline import Options
from integration.lulesh.project import Problem
from nvcc_opt.config import load
from nvcc_opt.verify.checks import RunOutput, check_run
from nvcc_opt.workspace.runner import Completed, ProcessRunner, completed
from tests.conftest import gpu_available, needs_nvcc

pytestmark = [needs_nvcc, pytest.mark.slow]
FIXTURE = Path(__file__).parent / "fixtures" / "lulesh"
REPO = Path(__file__).resolve().parent.parent


def _launcher() -> str:
    found = Path(sys.executable).parent / "nvcc-opt"
    return str(found) if found.exists() else shutil.which("nvcc-opt") or "nvcc-opt"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path, Path]]:
    """(checkout copy, work folder, program) after `prepare` with nvcc-opt as the launcher."""
    base = tmp_path_factory.mktemp("lulesh")
    lulesh = base / "LULESH"
    shutil.copytree(FIXTURE, lulesh)
    work = base / "work"
    saved = os.environ.get("NVCC_OPT_STORE")
    os.environ["NVCC_OPT_STORE"] = str(work / "store.db")
    try:
        opts = Options(
            lulesh, work, "", Problem(size=12, iters=40, timeout_s=60), launcher=_launcher()
        )
        _, program = pipeline.prepare(ProcessRunner(), opts)
        yield lulesh, work, program
    finally:
        if saved is None:
            os.environ.pop("NVCC_OPT_STORE", None)
        else:
            os.environ["NVCC_OPT_STORE"] = saved


def test_builds_as_the_makefile_intends_through_the_launcher(
    built: tuple[Path, Path, Path],
) -> None:
    lulesh, work, program = built
    assert program.is_file() and os.access(program, os.X_OK)
    ninja = (work / "build" / "build.ninja").read_text()
    rules = (work / "build" / "CMakeFiles" / "rules.ninja").read_text()
    assert f"command = {_launcher()} " in rules
    for flag in ("-O3", "-DNDEBUG", "code=[compute_90,sm_90]", f"-I{work / 'src'}"):
        assert flag in ninja, flag
    assert "USE_MPI" not in ninja and "mpich" not in ninja
    for name in ("allocator.cu", "lulesh.cu", "lulesh-comms.cu", "lulesh-comms-gpu.cu"):
        assert f"{work / 'src' / name}" in ninja
    # The copy is tagged; the user's checkout is untouched.
    assert "// @optimize" in (work / "src" / "lulesh.cu").read_text()
    assert (lulesh / "cuda" / "src" / "lulesh.cu").read_bytes() == (
        FIXTURE / "cuda" / "src" / "lulesh.cu"
    ).read_bytes()
    assert checkout.find(lulesh).src == (lulesh / "cuda" / "src").resolve()


def test_the_build_saw_the_region(built: tuple[Path, Path, Path]) -> None:
    _, work, _ = built
    done = subprocess.run(
        [_launcher(), "status"], cwd=work, capture_output=True, text=True, check=False,
        env={**os.environ, "NVCC_OPT_STORE": str(work / "store.db")},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert KERNEL in done.stdout


def test_run_command_output_passes_the_configs_checks(built: tuple[Path, Path, Path]) -> None:
    _, work, _ = built
    config = load(work)
    argv = config.render_run(work / "build", "0", work)
    env = {**os.environ, **config.run_env(work / "build", "0", work)}
    base = subprocess.run(argv, cwd=work, capture_output=True, text=True, env=env, check=False)
    assert base.returncode == 0, base.stderr
    assert config.time.regex is not None and config.time.regex.search(base.stdout)
    figures = parse(base.stdout)
    assert (figures.size, figures.iterations) == (12, 40)
    skewed = subprocess.run(
        argv, cwd=work, capture_output=True, text=True, check=False,
        env={**env, "LULESH_FIXTURE_SKEW": "1"},
    )  # fmt: skip
    extra = subprocess.run(
        argv, cwd=work, capture_output=True, text=True, check=False,
        env={**env, "LULESH_FIXTURE_EXTRA": "1"},
    )  # fmt: skip
    asymmetric = subprocess.run(
        argv, cwd=work, capture_output=True, text=True, check=False,
        env={**env, "LULESH_FIXTURE_ASYMMETRY": "1"},
    )  # fmt: skip
    baseline = RunOutput(0, base.stdout, "", {})
    runs = ((base, True), (skewed, False), (extra, False), (asymmetric, False))
    for run, ok in runs:
        results = [
            check_run(RunOutput(run.returncode, run.stdout, "", {}), numbers=rx.pattern,
                      require=[r.pattern for r in config.check.require],
                      rtol=config.check.rtol, atol=config.check.atol, baseline=baseline)
            for rx in config.check.numbers
        ]  # fmt: skip
        assert all(r.ok for r in results) is ok, [r.reasons for r in results]


def test_a_crash_and_a_hang_are_failures(built: tuple[Path, Path, Path]) -> None:
    _, work, program = built
    runner = ProcessRunner()
    with pytest.raises(OutputError, match=r"exited with status -6 \(signal 6\)"):
        timing.run_once(runner, timing.lulesh_argv(program, 13, 5), work, 30)
    with pytest.raises(OutputError, match="timed out"):
        timing.run_once(runner, timing.lulesh_argv(program, 17, 5), work, 2)
    samples = timing.interleaved(
        runner, {"baseline": program}, size=17, iters=5, pairs=1, cwd=work, timeout_s=1
    )
    assert samples["baseline"].figures == [] and len(samples["baseline"].failures) == 2


class _NoGpuNvccOpt:
    """Real processes, but `nvcc-opt optimize` and `review` scripted: they need a GPU to time.
    The scripted accept makes the copy's kernel compute something else, as a wrong rewrite would
    when the build substitutes it, unless `honest`."""

    def __init__(self, work: Path, honest: bool) -> None:
        self.real = ProcessRunner()
        self.work, self.honest = work, honest
        self.calls: list[list[str]] = []

    def run(self, argv: Sequence[str], *, cwd: Path, env: Mapping[str, str] | None = None,
            timeout_s: float, **kw: object) -> Completed:  # fmt: skip
        if len(argv) > 1 and argv[1] in ("optimize", "review"):
            self.calls.append(list(argv))
            if argv[1] == "optimize":
                answer = [{"rewrite_id": 7, "status": "proposed", "reasons": [],
                           "explanation": "Search policy: loops fused", "wall_s": 12.0,
                           "trace": "traces/x.json"}]  # fmt: skip
                return completed(0, "agent stopped\n" + json.dumps(answer))
            if not self.honest:
                cu = self.work / "src" / "lulesh.cu"
                wrong = cu.read_text().replace("relax(e[k], dt, 0)", "relax(e[k], 2 * dt, 0)")
                cu.write_text(wrong)
            return completed(0, "accepted 7\n")
        return self.real.run(argv, cwd=cwd, env=env, timeout_s=timeout_s, **kw)  # type: ignore[arg-type]


FAKE_NCU = """#!/bin/sh
# Stands in for Nsight Compute, which needs a GPU: checks the options of timing.ncu_command,
# runs the program (its output passes through, as under ncu), then prints ==PROF== lines on
# stderr and the profiled launches as ncu 2025's --csv does: two of KERNEL (shorter ones for
# lulesh-optimized) and one of another kernel.
[ "$1 $2 $3 $4 $5" = "--csv --print-units base --metrics gpu__time_duration.sum" ] || {
  echo "==ERROR== unexpected options: $*" >&2; exit 9; }
shift 5
[ "$1 $2 $3 $4 $5 $6" = "-k regex:^KERNEL$ --launch-skip SKIP --launch-count COUNT" ] || {
  echo "==ERROR== unexpected selection: $*" >&2; exit 9; }
shift 6
echo "==PROF== Connected to process $$ ($1)" >&2
"$@" || exit $?
case "$1" in *optimized) a=1,500; b=1700 ;; *) a=2,000; b=2000 ;; esac
echo '==PROF== Disconnected from process' >&2
h='"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size"'
echo "$h"',"Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"'
r='"1","lulesh","127.0.0.1"'
m='"1","7","(64, 1, 1)","(1728, 1, 1)","0","9.0","Command line profiler metrics"'
echo '"0",'"$r"',"KERNEL(int, int, double *)",'"$m"',"gpu__time_duration.sum","nsecond","'$a'"'
echo '"1",'"$r"',"Other_kernel(double)",'"$m"',"gpu__time_duration.sum","nsecond","9,999,999"'
echo '"2",'"$r"',"KERNEL(int, int, double *)",'"$m"',"gpu__time_duration.sum","nsecond","'$b'"'
"""


def _fake_ncu(folder: Path) -> Path:
    ncu = folder / "ncu"
    folder.mkdir(exist_ok=True)
    text = FAKE_NCU.replace("KERNEL", KERNEL).replace("SKIP", str(timing.NCU_LAUNCH_SKIP))
    ncu.write_text(text.replace("COUNT", str(timing.NCU_LAUNCH_COUNT)))
    ncu.chmod(0o755)
    return ncu


@pytest.mark.skipif(gpu_available(), reason="scripts nvcc-opt optimize, only where no GPU exists")
@pytest.mark.parametrize(("honest", "with_ncu"), [(True, False), (False, False), (True, True)])
def test_table_without_nsys_and_without_gpu(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, honest: bool, with_ncu: bool
) -> None:
    monkeypatch.setattr(timing, "nsys_path", lambda: None)  # as on a machine without nsys
    if with_ncu:  # a fake ncu on PATH, as on the GPU machine (ncu, no nsys)
        ncu = _fake_ncu(tmp_path / "bin")
        monkeypatch.setenv("PATH", f"{ncu.parent}{os.pathsep}{os.environ['PATH']}")
        assert timing.profiler() == timing.Profiler("ncu", str(ncu))
    else:  # neither tool
        monkeypatch.setattr(timing, "ncu_path", lambda: None)
        assert timing.profiler() is None
    lulesh = tmp_path / "LULESH"
    shutil.copytree(FIXTURE, lulesh)
    work = tmp_path / "work"
    monkeypatch.setenv("NVCC_OPT_STORE", str(work / "store.db"))
    runner = _NoGpuNvccOpt(work, honest)
    opts = Options(lulesh, work, "search", Problem(size=12, iters=40, timeout_s=60), pairs=2,
                   launcher=_launcher())  # fmt: skip
    result = pipeline.run_table(runner, opts)
    assert [c[1] for c in runner.calls] == ["optimize", "review"]
    assert runner.calls[0][-1] == f"{work / 'src' / 'lulesh.cu'}:{KERNEL}"
    assert runner.calls[1][2:4] == ["--accept", "7"]
    assert result["rewrite_id"] == 7 and result["correct"] is honest
    assert result["optimize"]["explanation"] == "Search policy: loops fused"  # what was tried
    assert "Search policy: loops fused" in (work / "lulesh-table.md").read_text()
    if not honest:
        assert "final origin energy" in " ".join(result["check_reasons"])
    kernel, app = result["rows"]
    if with_ncu:  # the mean per profiled launch of KERNEL alone, in ms
        assert kernel["baseline_samples"] == pytest.approx([2e-3, 2e-3]), result["failures"]
        assert kernel["optimized_samples"] == pytest.approx([1.6e-3, 1.6e-3])
        assert kernel["speedup"] == pytest.approx(1.25)
        assert "ncu gpu__time_duration.sum" in kernel["note"] and "per launch" in kernel["note"]
    else:
        assert kernel["baseline"] is None and kernel["optimized"] is None
        assert "neither nsys (Nsight Systems) nor ncu (Nsight Compute)" in kernel["note"]
    assert len(app["baseline_samples"]) == 2 and len(app["optimized_samples"]) == 2
    assert app["speedup"] is not None and result["failures"] == []
    written = json.loads((work / "lulesh-table.json").read_text())
    assert written["schema"] == "nvcc-opt-lulesh-table/1"
    assert "| application (s) |" in (work / "lulesh-table.md").read_text()
    assert (work / "bin" / "lulesh-baseline").is_file()
    # The baseline is built without the launcher: no accepted rewrite can reach it.
    rules = (work / "build-baseline" / "CMakeFiles" / "rules.ninja").read_text()
    assert (
        "nvcc-opt" not in rules and "-O3" in (work / "build-baseline" / "build.ninja").read_text()
    )
    assert (work / "bin" / "lulesh-optimized").is_file()


FAKE_NSYS = """#!/bin/sh
# Stands in for Nsight Systems, which is not installed here: `profile` runs the program and
# writes the report; `stats` prints a kernel summary as nsys 2024 does.
if [ "$1" = profile ]; then
  shift
  out=""
  while [ $# -gt 0 ]; do
    case "$1" in
      -o) out="$2"; shift 2 ;;
      --*) shift ;;
      *) break ;;
    esac
  done
  "$@" || exit $?
  echo report > "$out.nsys-rep"
  exit 0
fi
for last; do :; done
test -f "$last" || { echo "no report $last" >&2; exit 1; }
echo 'Processing [x.sqlite] with [cuda_gpu_kern_sum.py]... '
printf '%s%s\\n' '"Time (%)","Total Time (ns)","Instances","Avg (ns)","Med (ns)",' \\
  '"Min (ns)","Max (ns)","StdDev (ns)","Name"'
printf '%s%s\\n' '"100.0","2500000","40","62500.0","62500.0","60000","65000","10.0",' \\
  '"KERNEL(int, int, double, double *)"'
"""


def test_kernel_time_through_nsys(
    built: tuple[Path, Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, work, program = built
    nsys = tmp_path / "bin" / "nsys"
    nsys.parent.mkdir()
    nsys.write_text(FAKE_NSYS.replace("KERNEL", KERNEL))
    nsys.chmod(0o755)
    monkeypatch.setenv("PATH", f"{nsys.parent}{os.pathsep}{os.environ['PATH']}")
    assert timing.nsys_path() == str(nsys)
    samples = timing.interleaved(
        ProcessRunner(), {"baseline": program, "optimized": program}, size=12, iters=40,
        pairs=2, cwd=tmp_path, timeout_s=30,
    )  # fmt: skip
    for name in ("baseline", "optimized"):
        assert samples[name].kernel_ms == [2.5, 2.5], samples[name].failures
        assert len(samples[name].figures) == 2
        assert (tmp_path / f"{name}.nsys-rep").is_file()
