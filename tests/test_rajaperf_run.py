"""drive.py around RAJAPerf's driver, and the paper's protocol over a prepared fixture checkout.

No GPU here: the driver is a script that writes the real driver's report formats
(fixtures/rajaperf/fake_raja_perf.py) and `nvcc-opt optimize` is a scripted stand-in
(fixtures/rajaperf/fake_optimize.py) printing optimize's JSON; processes, timeouts, files,
resumption and the report are real."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from integration.rajaperf import drive
from integration.rajaperf.prepare import prepare
from integration.rajaperf.protocol import Options, ProtocolError, chosen_kernels, run_protocol
from nvcc_opt.bench.render import write_report

FIXTURES = Path(__file__).parent / "fixtures" / "rajaperf"


def executable(source: Path, target: Path) -> Path:
    target.write_text(f"#!{sys.executable}\n" + source.read_text())
    target.chmod(0o755)
    return target


@pytest.fixture
def driver(tmp_path: Path) -> Path:
    return executable(FIXTURES / "fake_raja_perf.py", tmp_path / "raja-perf.exe")


def run_drive(driver: Path, out: Path, *extra: str, mode: str = "ok", timeout: float = 60):
    env = {**os.environ, "FAKE_RAJAPERF": mode}
    argv = [
        sys.executable, drive.__file__, "--exe", str(driver), "--kernel", "Apps_PRESSURE",
        "--tuning", "block_256", "--outdir", str(out), "--timeout", str(timeout), *extra,
    ]  # fmt: skip
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)


def test_drive_prints_the_drivers_time_and_checksum(driver: Path, tmp_path: Path) -> None:
    done = run_drive(driver, tmp_path / "out")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()[-3:]
    assert lines == [
        "rajaperf-ran: Apps_PRESSURE Base_CUDA-block_256",
        "rajaperf-time-s: 0.001235",
        "rajaperf-checksum: 1234.5678901234566638",
    ]
    fresh = run_drive(driver, tmp_path / "out", "--sizefact", "0.5")  # passed to the driver
    assert "rajaperf-checksum: 617.28394506172833189" in fresh.stdout


def test_drive_says_why_when_the_driver_crashes_hangs_or_skips(
    driver: Path, tmp_path: Path
) -> None:
    crashed = run_drive(driver, tmp_path / "a", mode="crash")
    assert crashed.returncode == 3
    why = "rajaperf-error: Apps_PRESSURE Base_CUDA-block_256: the driver exited with status -11"
    assert why in crashed.stderr
    hung = run_drive(driver, tmp_path / "b", mode="hang", timeout=1)
    assert hung.returncode == 3 and "ran past 1 s and was killed" in hung.stderr
    skipped = run_drive(driver, tmp_path / "c", mode="notuning")
    assert "has no Base_CUDA-block_256; it has Base_CUDA-block_128" in skipped.stderr


def test_drive_never_reads_a_report_left_by_an_earlier_run(driver: Path, tmp_path: Path) -> None:
    assert run_drive(driver, tmp_path / "out").returncode == 0
    crashed = run_drive(driver, tmp_path / "out", mode="crash")
    assert crashed.returncode == 3 and not (tmp_path / "out" / drive.TIMING).exists()


@pytest.fixture
def prepared(tmp_path: Path) -> Path:
    root = tmp_path / "RAJAPerf"
    shutil.copytree(FIXTURES / "checkout", root)
    prepare(root, root / "build-nvcc-opt")
    return root


def test_protocol_counts_failures_as_zero_and_resumes(
    prepared: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "calls.log"
    monkeypatch.setenv("FAKE_OPTIMIZE_LOG", str(log))
    monkeypatch.delenv("NVCC_OPT_STORE", raising=False)  # the checkout's nvcc-opt.toml names it
    fake = executable(FIXTURES / "fake_optimize.py", tmp_path / "nvcc-opt")
    out = tmp_path / "results"
    options = Options(prepared, "search", out, runs=2, timeout_s=3, nvcc_opt=(str(fake),))
    report = run_protocol(options, lambda _: None)
    paper = report.options["paper_speedups"]
    assert paper["Apps_PRESSURE"] == [1.3, 1.3]
    assert paper["Apps_ENERGY"] == [1.0, 1.0]  # kept as correct
    assert paper["Apps_VOL3D"] == [0.0, 0.0]  # incorrect final answer
    assert paper["Algorithm_REDUCE_SUM"] == [0.0, 0.0]  # optimize crashed
    assert paper["Polybench_POLYBENCH_JACOBI_1D"] == [0.0, 0.0]  # hung: timed out
    assert paper["Apps_LTIMES"] == [0.0, 0.0]  # not in the fixture: no build
    assert report.not_run == ("Algorithm_SORT", "Algorithm_SORTPAIRS")
    assert len(paper) == 34
    rows = {r.region: r for r in report.rows}
    assert rows["Apps_PRESSURE"].improved and rows["Apps_PRESSURE"].best_speedup == 1.3
    assert rows["Polybench_POLYBENCH_JACOBI_1D"].verdict.startswith("error: timed_out")
    assert "optimize exited 2" in rows["Algorithm_REDUCE_SUM"].verdict
    assert rows["Apps_LTIMES"].verdict.startswith("error: no_build:")
    calls = log.read_text().splitlines()
    assert len(calls) == 10  # 5 tagged kernels, 2 runs each
    assert "--root" in calls[0] and "--model search" in calls[0]
    assert calls[0].startswith("optimize ")  # after --store, the checkout's store (asserted there)
    json_path, md_path = write_report(report, out)
    assert json.loads(json_path.read_text())["options"]["paper_speedups"] == paper
    assert "Apps_PRESSURE" in md_path.read_text()

    again = run_protocol(Options(prepared, "search", out, runs=3, timeout_s=3,
                                 nvcc_opt=(str(fake),)), lambda _: None)  # fmt: skip
    assert len(log.read_text().splitlines()) == 15  # only the third runs were new
    assert again.options["paper_speedups"]["Apps_PRESSURE"] == [1.3, 1.3, 1.3]


def test_no_tools_mode_missing_from_optimize_is_said(
    prepared: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_OPTIMIZE_LOG", str(tmp_path / "calls.log"))
    fake = executable(FIXTURES / "fake_optimize.py", tmp_path / "nvcc-opt")
    options = Options(prepared, "search", tmp_path / "r", no_tools=True, nvcc_opt=(str(fake),))
    with pytest.raises(ProtocolError, match="has no no-tools mode"):
        run_protocol(options)
    assert not (tmp_path / "calls.log").exists()


def test_real_optimize_has_the_no_tools_mode(exe: str) -> None:
    """The protocol's --no-tools passes optimize's own --no-tools (the stand-in above has none:
    an older nvcc-opt is refused in one line rather than run with tools)."""
    from integration.rajaperf.protocol import has_no_tools_mode

    assert has_no_tools_mode((exe,))


def test_the_real_optimize_takes_the_prepared_kernels_settings(
    prepared: Path, tmp_path: Path, exe: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real nvcc-opt on a kernel's generated nvcc-opt.toml (its run command names {work}):
    the settings are taken, and with no configured build of the suite here the kernel ends at
    its build tree, said in one line, never as an error inside nvcc-opt."""
    monkeypatch.delenv("NVCC_OPT_STORE", raising=False)
    (prepared / "build-nvcc-opt").mkdir(exist_ok=True)
    options = Options(
        prepared, "search", tmp_path / "r", runs=1, only=("Apps_PRESSURE",), timeout_s=300,
        nvcc_opt=(exe,),
    )  # fmt: skip
    report = run_protocol(options, lambda _: None)
    (row,) = [r for r in report.rows if r.region == "Apps_PRESSURE"]
    assert row.verdict.endswith("build-nvcc-opt/CMakeCache.txt: No such file or directory")
    assert "internal error" not in row.verdict and "ValueError" not in row.verdict


def test_protocol_runs_one_kernel_run_per_gpu_at_once(
    prepared: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--gpus: the runs spread over the GPUs, never two at once on one GPU, and they overlap
    across GPUs (a serial protocol would fail the last assertion)."""
    spans = tmp_path / "spans.log"
    monkeypatch.setenv("FAKE_OPTIMIZE_LOG", str(tmp_path / "calls.log"))
    monkeypatch.setenv("FAKE_OPTIMIZE_SPANS", str(spans))
    monkeypatch.setenv("FAKE_OPTIMIZE_SLEEP", "0.6")
    monkeypatch.delenv("NVCC_OPT_STORE", raising=False)
    fake = executable(FIXTURES / "fake_optimize.py", tmp_path / "nvcc-opt")
    options = Options(
        prepared, "search", tmp_path / "r", runs=2, only=("PRESSURE", "ENERGY"),
        nvcc_opt=(str(fake),), gpus=("0", "1"),
    )  # fmt: skip
    report = run_protocol(options, lambda _: None)
    assert report.options["gpus"] == ["0", "1"]
    assert report.options["paper_speedups"]["Apps_PRESSURE"] == [1.3, 1.3]
    rows = [line.split() for line in spans.read_text().splitlines()]
    assert len(rows) == 4 and {gpu for gpu, _, _ in rows} == {"0", "1"}
    by_gpu: dict[str, list[tuple[float, float]]] = {}
    for gpu, start, end in rows:
        by_gpu.setdefault(gpu, []).append((float(start), float(end)))
    for one in by_gpu.values():
        one.sort()
        assert all(a_end <= b_start for (_, a_end), (b_start, _) in zip(one, one[1:], strict=False))
    first, second = by_gpu["0"][0], by_gpu["1"][0]
    assert first[0] < second[1] and second[0] < first[1]  # ran at the same time


def test_only_runs_the_named_kernels_in_the_order_given(tmp_path: Path) -> None:
    """A device call with little time runs the most wanted first (it ran them in the suite's
    order, and the three it reached were not the ones asked for first)."""

    def names(*only: str) -> list[str]:
        options = Options(tmp_path, "search", tmp_path / "r", only=only)
        return [k.full_name for k in chosen_kernels(options)]

    assert names("Polybench_POLYBENCH_GEMM", "PRESSURE", "Apps_PRESSURE") == [
        "Polybench_POLYBENCH_GEMM",
        "Apps_PRESSURE",
    ]
    assert names()[:2] == ["Apps_CONVECTION3DPA", "Apps_DEL_DOT_VEC_2D"]
    with pytest.raises(ProtocolError, match="unknown kernels: NOPE"):
        names("PRESSURE", "NOPE")
