"""integration/lulesh without a build: checkout detection, tagging, output, config, table."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from integration.lulesh import checkout, project, table, tagging, timing
from integration.lulesh.output import KERNEL, OutputError, compare, parse
from nvcc_opt.config import load
from nvcc_opt.regions.scan import scan
from nvcc_opt.verify.checks import RunOutput, check_run

FIXTURE = Path(__file__).parent / "fixtures" / "lulesh"

BASE_OUTPUT = """\
Running until t=0.010000, Problem size=45x45x45
Run completed:
   Problem size        =  45
   MPI tasks           =  1
   Iteration count     =  932
   Final Origin Energy = 7.130703e+04
   Testing Plane 0 of Energy Array on rank 0:
        MaxAbsDiff   = 1.455192e-11
        TotalAbsDiff = 1.163234e-10
        MaxRelDiff   = 2.003210e-14


Elapsed time         =       0.42 (s)
Grind time (us/z/c)  = 0.0049527108 (per dom)  (0.0049527108 overall)
FOM                  =  201909.99 (z/s)

"""


@pytest.fixture
def lulesh(tmp_path: Path) -> Path:
    """A writable copy of the fixture checkout."""
    dest = tmp_path / "LULESH"
    shutil.copytree(FIXTURE, dest)
    return dest


def test_checkout_found_from_repo_cuda_or_src(lulesh: Path) -> None:
    for given in (lulesh, lulesh / "cuda", lulesh / "cuda" / "src"):
        found = checkout.find(given)
        assert found.src == (lulesh / "cuda" / "src").resolve()
        assert found.kernel_file.name == "lulesh.cu"


def test_cpu_layout_of_master_is_named(tmp_path: Path) -> None:
    (tmp_path / "lulesh.cc").write_text("int main() {}\n")
    (tmp_path / "lulesh.h").write_text("\n")
    with pytest.raises(checkout.CheckoutError, match=r"CPU layout \(lulesh.cc, no cuda/src"):
        checkout.find(tmp_path)


def test_missing_files_are_named(lulesh: Path) -> None:
    (lulesh / "cuda" / "src" / "lulesh-comms-gpu.cu").unlink()
    with pytest.raises(checkout.CheckoutError, match="lacks lulesh-comms-gpu.cu"):
        checkout.find(lulesh)


def test_other_output_version_is_named(lulesh: Path) -> None:
    cu = lulesh / "cuda" / "src" / "lulesh.cu"
    cu.write_text(cu.read_text().replace("Final Origin Energy", "Origin energy"))
    with pytest.raises(checkout.CheckoutError, match="prints no 'Final Origin Energy'"):
        checkout.find(lulesh)


def test_renamed_kernel_is_named(lulesh: Path) -> None:
    cu = lulesh / "cuda" / "src" / "lulesh.cu"
    cu.write_text(cu.read_text().replace(KERNEL, "CalcKinematics_kernel"))
    with pytest.raises(checkout.CheckoutError, match=f"no {KERNEL} definition"):
        checkout.find(lulesh)


def test_tag_round_trip_makes_exactly_the_kernel_a_region() -> None:
    text = (FIXTURE / "cuda" / "src" / "lulesh.cu").read_text()
    tagged = tagging.tag(text)
    assert tagged != text and tagging.is_tagged(tagged)
    assert tagging.tag(tagged) == tagged  # idempotent
    assert tagging.untag(tagged) == text
    assert tagging.untag(text) == text
    regions = scan(tagged.encode()).regions
    assert [r.name for r in regions] == [KERNEL]
    lines = tagged.splitlines()
    pragma = lines.index(tagging.PRAGMA)
    assert lines[pragma - 1] == tagging.NOTE and lines[pragma + 1] == "__global__"
    assert "#ifdef DOUBLE_PRECISION" in (regions[0].text if hasattr(regions[0], "text") else tagged)


def test_tag_keeps_crlf_and_refuses_an_edited_tag() -> None:
    text = (FIXTURE / "cuda" / "src" / "lulesh.cu").read_text().replace("\n", "\r\n")
    tagged = tagging.tag(text)
    assert tagging.untag(tagged) == text
    with pytest.raises(tagging.TagError, match="the tag was edited"):
        tagging.untag(tagged.replace(tagging.PRAGMA, "// @optimize name=mine"))


def test_tag_refuses_a_kernel_without_global_above() -> None:
    with pytest.raises(tagging.TagError, match="no __global__ line"):
        tagging.tag(f"int x;\nvoid {KERNEL}(int n) {{}}\n")


def test_cli_tag_and_untag_in_place(lulesh: Path) -> None:
    from click.testing import CliRunner

    from integration.lulesh.__main__ import main

    cu = lulesh / "cuda" / "src" / "lulesh.cu"
    before = cu.read_bytes()
    result = CliRunner().invoke(main, ["tag", str(lulesh)])
    assert result.exit_code == 0 and "tagged" in result.output
    assert tagging.is_tagged(cu.read_text())
    result = CliRunner().invoke(main, ["untag", str(lulesh)])
    assert result.exit_code == 0 and cu.read_bytes() == before
    result = CliRunner().invoke(main, ["check", str(lulesh.parent)])
    assert result.exit_code == 1 and "expected LULESH branch 2.0.2-dev" in result.output


def test_parse_reads_every_figure_and_the_precise_elapsed_time() -> None:
    got = parse(BASE_OUTPUT)
    assert (got.size, got.iterations, got.origin_energy) == (45, 932, 7.130703e04)
    assert got.max_rel_diff == 2.003210e-14 and got.printed_elapsed_s == 0.42
    assert got.elapsed_s == pytest.approx(0.0049527108 * 932 * 45**3 * 1e-6, rel=1e-12)


def test_parse_refuses_unfinished_and_doubled_output() -> None:
    with pytest.raises(OutputError, match="no 'Run completed' line"):
        parse("Running until t=0.01\nSegmentation fault\n")
    with pytest.raises(OutputError, match="2 'origin_energy' line"):
        parse(BASE_OUTPUT + "   Final Origin Energy = 1.0e+00\n")


def test_compare_catches_energy_iterations_and_symmetry() -> None:
    base = parse(BASE_OUTPUT)
    same = parse(BASE_OUTPUT.replace("7.130703e+04", "7.130704e+04"))
    assert compare(base, same, 1e-5, 1e-8) == []
    energy = parse(BASE_OUTPUT.replace("7.130703e+04", "7.140703e+04"))
    assert "final origin energy" in compare(base, energy, 1e-5, 1e-8)[0]
    its = parse(BASE_OUTPUT.replace("=  932", "=  933"))
    assert "iteration count 933 vs baseline 932" in compare(base, its, 1e-5, 1e-8)[0]
    skew = parse(BASE_OUTPUT.replace("MaxAbsDiff   = 1.455192e-11", "MaxAbsDiff   = 3.0e-03"))
    assert "symmetry max_abs_diff_per_energy" in compare(base, skew, 1e-5, 1e-8)[0]
    rel = parse(BASE_OUTPUT.replace("MaxRelDiff   = 2.003210e-14", "MaxRelDiff   = 1.0e-07"))
    assert "symmetry max_rel_diff" in compare(base, rel, 1e-5, 1e-8)[0]


def test_symmetry_is_judged_scale_free() -> None:
    """Measured on an H100 at -s 120 -i 100: the original and a rewrite that changes the last
    bits; the absolute figures differ by more than 1e-8 while every scale-free one is < 1e-13."""
    big = BASE_OUTPUT.replace("=  45\n", "=  120\n").replace("7.130703e+04", "8.465100e+07")
    big = big.replace("0.42 (s)", "7.98 (s)")  # the grind time's elapsed time at -s 120
    base = parse(
        big.replace("1.455192e-11", "7.450581e-09").replace("1.163234e-10", "1.972461e-08")
    )
    cand = parse(
        big.replace("1.455192e-11", "1.117587e-08").replace("1.163234e-10", "3.150074e-08")
    )
    assert compare(base, cand, 1e-5, 1e-9) == []
    assert all(v < 1e-13 for v in cand.symmetry().values())
    assert cand.symmetry()["mean_abs_diff_per_energy"] == pytest.approx(
        3.150074e-08 / (120 * 119 // 2) / 8.4651e07
    )
    lines = cand.symmetry_lines()
    assert lines.startswith("lulesh_max_abs_diff_per_energy = 1.3202") and lines.count("\n") == 2


def _config(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    (work / "build").mkdir(parents=True)
    found = checkout.find(FIXTURE)
    project.write_config(found, work, project.Problem(size=30, iters=100, gpu="1"))
    return work


def _wrapped(out: str) -> str:
    """`out` as run_lulesh.py passes it on: with its time and symmetry lines when it parses."""
    try:
        figures = parse(out)
    except OutputError:
        return out
    return f"{out}lulesh_elapsed_s = {figures.elapsed_s:.9g}\n{figures.symmetry_lines()}"


def _checked(work: Path, out: str, base: str) -> tuple[bool, tuple[str, ...]]:
    out, base = _wrapped(out), _wrapped(base)
    config = load(work)
    rules = config.check
    outcome = check_run(
        RunOutput(0, out, "", {}),
        require=[r.pattern for r in rules.require],
        forbid=[r.pattern for r in rules.forbid],
        rtol=rules.rtol,
        atol=rules.atol,
        baseline=RunOutput(0, base, "", {}),
    )
    numbers = [r.pattern for r in rules.numbers]
    per_number = [
        check_run(
            RunOutput(0, out, "", {}),
            numbers=n,
            rtol=rules.rtol,
            atol=rules.atol,
            baseline=RunOutput(0, base, "", {}),
        )  # fmt: skip
        for n in numbers
    ]
    reasons = outcome.reasons + tuple(r for c in per_number for r in c.reasons)
    return not reasons, reasons


def test_config_loads_and_its_checks_accept_the_baseline(tmp_path: Path) -> None:
    work = _config(tmp_path)
    config = load(work)
    assert config.store_path == (work / "store.db").resolve()
    assert config.gpu.devices == ("1",)
    argv = config.render_run(work / "build", "0", tmp_path)
    assert argv[:3] == [sys.executable, "-m", "integration.lulesh.run_lulesh"]
    assert argv[3:] == [str(work / "build" / "lulesh"), "--size", "30", "--iters", "100"]
    assert config.time.regex is not None
    assert config.time.regex.search("x\nlulesh_elapsed_s = 0.25\n") is not None
    assert [r.pattern for r in config.check.numbers][:2] == [
        r"Iteration count\s*=\s*(\d+)", r"Final Origin Energy\s*=\s*(\S+)"]  # fmt: skip
    ok, reasons = _checked(work, BASE_OUTPUT, BASE_OUTPUT)
    assert ok, reasons


@pytest.mark.parametrize(
    ("old", "new", "reason"),
    [
        ("7.130703e+04", "7.150703e+04", "numbers_differ"),
        ("=  932", "=  931", "numbers_differ"),
        ("MaxAbsDiff   = 1.455192e-11", "MaxAbsDiff   = 2.5e-02", "numbers_differ"),
        ("TotalAbsDiff = 1.163234e-10", "TotalAbsDiff = 9.0e+00", "numbers_differ"),
        ("MaxRelDiff   = 2.003210e-14", "MaxRelDiff   = 5.0e-08", "numbers_differ"),
        ("Run completed:", "Run aborted:", "missing"),
        ("7.130703e+04", "nan", "forbidden"),
    ],
)
def test_config_checks_reject_a_changed_run(
    tmp_path: Path, old: str, new: str, reason: str
) -> None:
    work = _config(tmp_path)
    ok, reasons = _checked(work, BASE_OUTPUT.replace(old, new), BASE_OUTPUT)
    assert not ok and any(r.startswith(reason) for r in reasons), reasons


def test_nsys_kernel_summary_is_read() -> None:
    csv_text = (
        "Generating SQLite file rep.sqlite\n"
        '"Time (%)","Total Time (ns)","Instances","Avg (ns)","Med (ns)","Min (ns)","Max (ns)",'
        '"StdDev (ns)","Name"\n'
        f'"31.2","1500000","932","1609.4","1600.0","1500","1800","20.1","{KERNEL}(int, int, '
        'double, const int *, const double *)"\n'
        '"20.0","900000","932","965.6","960.0","900","1000","10.0","CalcFBHourglassForceForElems"\n'
    )
    assert timing.kernel_total_ms(csv_text) == pytest.approx(1.5)
    with pytest.raises(OutputError, match="not in nsys's kernel summary"):
        timing.kernel_total_ms(csv_text.replace(KERNEL, "Other_kernel"))


NEITHER = "not measured: neither nsys (Nsight Systems) nor ncu (Nsight Compute) is on PATH"

# What ncu 2025 prints for ncu_command: the program's output, ==PROF== lines, then one CSV row
# per profiled launch and metric. A second kernel (as a wider -k regex would let through) and a
# demangled name with parameters; values in base units, one with a thousands separator.
NCU_HEADER = (
    '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size",'
    '"Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"'
)


def _ncu_row(launch: int, kernel: str, unit: str, value: str) -> str:
    return (
        f'"{launch}","4242","lulesh","127.0.0.1","{kernel}","1","7","(64, 1, 1)",'
        f'"(27000, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum",'
        f'"{unit}","{value}"'
    )


NCU_OUTPUT = "\n".join([
    "==PROF== Connected to process 4242 (/work/bin/lulesh-baseline)",
    "Running until t=0.010000, Problem size=45x45x45",
    f'==PROF== Profiling "{KERNEL}" - 0: 0%....50%....100% - 1 pass',
    '==PROF== Profiling "CalcMonotonicQRegionForElems_kernel" - 1: 0%....50%....100% - 1 pass',
    f'==PROF== Profiling "{KERNEL}" - 2: 0%....50%....100% - 1 pass',
    BASE_OUTPUT,
    "==PROF== Disconnected from process 4242",
    NCU_HEADER,
    _ncu_row(0, f"{KERNEL}(int, int, double, const int *, const double *)", "nsecond", "1,250"),
    _ncu_row(1, "CalcMonotonicQRegionForElems_kernel(double, double)", "nsecond", "99,999,999"),
    _ncu_row(2, f"{KERNEL}(int, int, double, const int *, const double *)", "nsecond", "1750"),
    "",
])  # fmt: skip


def test_ncu_csv_is_read_as_the_mean_per_launch_of_the_kernel_only() -> None:
    assert timing.kernel_mean_ms(NCU_OUTPUT) == pytest.approx(1.5e-3)
    # ==PROF== lines on stderr, the CSV on stdout: read together, as ncu_kernel_ms does.
    prof = "\n".join(ln for ln in NCU_OUTPUT.splitlines() if ln.startswith("==PROF=="))
    rest = "\n".join(ln for ln in NCU_OUTPUT.splitlines() if not ln.startswith("==PROF=="))
    assert timing.kernel_mean_ms(f"{rest}\n{prof}") == pytest.approx(1.5e-3)
    templated = NCU_OUTPUT.replace(f"{KERNEL}(int", f"{KERNEL}<double>(int")
    assert timing.kernel_mean_ms(templated) == pytest.approx(1.5e-3)


@pytest.mark.parametrize(
    ("unit", "value", "ms"),
    [
        ("nsecond", "2,500", 2.5e-3), ("ns", "2500", 2.5e-3), ("usecond", "2.5", 2.5e-3),
        ("us", "1,234.5", 1.2345), ("msecond", "2.5", 2.5), ("ms", "0.5", 0.5),
        ("second", "0.002", 2.0),
    ],
)  # fmt: skip
def test_ncu_time_units_are_converted_to_ms(unit: str, value: str, ms: float) -> None:
    text = "\n".join([NCU_HEADER, _ncu_row(0, KERNEL, unit, value)])
    assert timing.kernel_mean_ms(text) == pytest.approx(ms)


def test_ncu_output_without_the_kernels_row_is_an_error() -> None:
    other = NCU_OUTPUT.replace(KERNEL, "CalcKinematicsAndMonotonicQGradient_kernel2")
    with pytest.raises(
        OutputError, match=f"ncu printed no gpu__time_duration.sum row for {KERNEL}"
    ):
        timing.kernel_mean_ms(other)
    with pytest.raises(OutputError, match="did the run launch it"):
        timing.kernel_mean_ms(BASE_OUTPUT)
    refused = "==PROF== Connected to process 1\n==ERROR== ERR_NVGPUCTRPERM - no permission\n"
    with pytest.raises(OutputError, match="ERR_NVGPUCTRPERM"):
        timing.kernel_mean_ms(refused + BASE_OUTPUT)


def test_ncu_command_profiles_only_a_window_of_the_kernels_launches() -> None:
    argv = ["/w/bin/lulesh-baseline", "-s", "120"]
    assert timing.ncu_command("/opt/ncu", argv) == [
        "/opt/ncu", "--csv", "--print-units", "base", "--metrics", "gpu__time_duration.sum",
        "-k", f"regex:^{KERNEL}$", "--launch-skip", str(timing.NCU_LAUNCH_SKIP),
        "--launch-count", str(timing.NCU_LAUNCH_COUNT), *argv,
    ]  # fmt: skip
    assert timing.NCU_LAUNCH_SKIP >= 1 and 10 <= timing.NCU_LAUNCH_COUNT <= 100


def test_kernel_note_names_the_tool_or_says_neither_is_there() -> None:
    assert timing.kernel_note(None).startswith(NEITHER)
    with_ncu = timing.kernel_note(timing.Profiler("ncu", "/usr/bin/ncu"))
    for words in ("ncu", "per launch", "serialization", "base clocks", "cache control",
                  "baseline and optimized are measured the same way"):  # fmt: skip
        assert words in with_ncu, words
    assert "per run, nsys" in timing.kernel_note(timing.Profiler("nsys", "/usr/bin/nsys"))


def test_nsys_is_preferred_then_ncu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(timing, "nsys_path", lambda: "/a/nsys")
    monkeypatch.setattr(timing, "ncu_path", lambda: "/a/ncu")
    assert timing.profiler() == timing.Profiler("nsys", "/a/nsys")
    monkeypatch.setattr(timing, "nsys_path", lambda: None)
    assert timing.profiler() == timing.Profiler("ncu", "/a/ncu")
    monkeypatch.setattr(timing, "ncu_path", lambda: None)
    assert timing.profiler() is None


def test_table_without_kernel_times_still_has_the_application_row(tmp_path: Path) -> None:
    rows = [
        table.row("kernel", "ms", [], [], timing.kernel_note(None)),
        table.row("application", "s", [0.50, 0.52, 0.51], [0.49, 0.50, 0.48], "main loop"),
    ]
    result = {
        "schema": table.SCHEMA, "kernel": KERNEL, "lulesh": {"src": "x", "commit": ""},
        "model": "search", "rewrite_id": 3, "problem": {"size": 45, "iters": -1}, "pairs": 3,
        "gpu": "", "correct": True, "check_reasons": [], "baseline_figures": None,
        "rows": rows, "failures": [], "notes": [],
    }  # fmt: skip
    js, md = table.write(result, tmp_path / "out" / "t")
    assert json.loads(js.read_text())["rows"][1]["speedup"] == pytest.approx(0.51 / 0.49)
    text = md.read_text()
    assert f"| {KERNEL} (ms) | - | - | - |" in text
    assert "| application (s) | 0.51 | 0.49 | 1.041x |" in text
    assert f"kernel: {NEITHER}" in text


def test_optimize_json_is_found_after_progress_lines_with_brackets() -> None:
    from integration.lulesh.pipeline import last_json_list

    out = (
        "[lulesh.cu:Calc gpu0] building and timing the baseline\n[1/5] Building CUDA object\n"
        '[\n  {\n    "rewrite_id": 4,\n    "reasons": []\n  }\n]\n'
    )
    assert last_json_list(out) == [{"rewrite_id": 4, "reasons": []}]
    assert last_json_list("[gpu0] nothing\n") is None


def test_table_command_names_a_wrong_checkout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")  # restored after: `table` pins its runs

    from integration.lulesh.__main__ import main

    (tmp_path / "lulesh.cc").write_text("int main() {}\n")
    result = CliRunner().invoke(
        main,
        ["table", str(tmp_path), "--model", "search", "--work", str(tmp_path / "w"),
         "--launcher", sys.executable],
    )  # fmt: skip
    assert result.exit_code == 1
    assert result.output.strip().splitlines()[-1:] == [
        f"Error: {tmp_path}: a LULESH CPU layout (lulesh.cc, no cuda/src: master or 2.0 release);"
        " expected LULESH branch 2.0.2-dev with cuda/src"
    ]
    assert not (tmp_path / "w" / "nvcc-opt.toml").exists()


def test_a_failed_optimize_is_a_reason_not_an_error(tmp_path: Path) -> None:
    from integration.lulesh.pipeline import Options, optimize
    from nvcc_opt.workspace.runner import ScriptedRunner, completed

    runner = ScriptedRunner(
        [completed(1, "[]\n", "Error: cannot optimize the region: the original could not run")]
    )
    rewrite, why, summary = optimize(runner, Options(FIXTURE, tmp_path, "search"))
    assert rewrite is None and summary is None
    assert why == [
        "nvcc-opt optimize failed (exit status 1): Error: cannot optimize the region: the "
        "original could not run"
    ]
