"""`nvcc-opt train problems` over fixture apps (tests/fixtures/train_apps: saxpy passes, blur
builds but its run fails its check, broken does not build), with real CMake + nvcc builds.

There is no GPU on the CI machine: the fixtures' run scripts stand in for a GPU run (they require
the built program, then print what a passing or failing run prints), so the run level is tested
with real runs of real scripts; nothing is faked inside nvcc-opt.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from nvcc_opt_train.cli import train
from nvcc_opt_train.importers import Skip
from nvcc_opt_train.importers.apps import AppsError, AppsOptions, import_apps, import_suite
from nvcc_opt_train.problemset import Problem, ProblemSet, ProblemSetError
from nvcc_opt_train.splits import assign, position, split_of
from tests.conftest import gpu_available, nvcc_available

REPO = Path(__file__).resolve().parent.parent
APPS = REPO / "tests" / "fixtures" / "train_apps"
needs_nvcc = pytest.mark.skipif(not nvcc_available(), reason="needs nvcc and cmake")
BROKEN = 'build failed: src/main.cu(8): error: identifier "undeclared_offset" is undefined'


def problems(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(train, ["problems", *args])
    return result.exit_code, result.output


def quiet(_: str) -> None:
    pass


# --- importer and splits (no builds) ----------------------------------------------------------


def test_suite_import_copies_apps_and_shared_folders(tmp_path: Path) -> None:
    found = list(import_suite(APPS, tmp_path / "p", AppsOptions(), quiet))
    made = [p for p in found if isinstance(p, Problem)]
    assert [p.id for p in made] == ["suite-blur", "suite-broken", "suite-saxpy"]
    blur = made[0]
    assert blur.kind == "app" and blur.benchmark == "blur" and blur.source == "suite"
    assert blur.regions == ("src/main.cu:blur",)
    assert blur.kernels == ("blur3", "copy_edges")
    assert "__global__ void blur3" in blur.region_text
    assert (tmp_path / "p" / "common" / "fixture_check.cuh").is_file()
    assert (tmp_path / "p" / "suite-saxpy" / "run.sh").stat().st_mode & 0o111
    # a resumed import keeps what is there and yields the same problems
    (tmp_path / "p" / "suite-saxpy" / "marker").write_text("kept")
    again = list(import_suite(APPS, tmp_path / "p", AppsOptions(only=("saxpy",)), quiet))
    assert again == [made[2]] and (tmp_path / "p" / "suite-saxpy" / "marker").is_file()


def test_apps_import_skips_an_app_without_tags_and_rejects_bad_input(tmp_path: Path) -> None:
    apps = tmp_path / "apps"
    (apps / "plain" / "src").mkdir(parents=True)
    (apps / "plain" / "nvcc-opt.toml").write_text("[build]\ndir = 'build'\n")
    (apps / "plain" / "src" / "k.cu").write_text("__global__ void k() {}\n")
    host = "// @optimize begin h\nint h;\n// @optimize end h\n"
    (apps / "plain" / "src" / "host.cpp").write_text(host)
    (found,) = import_apps(apps, tmp_path / "p", AppsOptions(), quiet)
    why = "no tagged region (// @optimize) in its .cu files"
    assert found == Skip("apps", "plain", why)  # a .cpp region never goes through the launcher
    with pytest.raises(AppsError, match="--only: no app named nope"):
        list(import_apps(apps, tmp_path / "p", AppsOptions(only=("nope",)), quiet))
    with pytest.raises(AppsError, match="no such folder"):
        list(import_apps(tmp_path / "missing", tmp_path / "p", AppsOptions(), quiet))


def test_apps_import_names_regions_in_headers_the_launcher_never_substitutes(
    tmp_path: Path,
) -> None:
    """The launcher substitutes regions only in the file nvcc compiles: a region tagged in a
    header is no problem (`collect` would end it with "the build recorded no region"). An app
    with only such regions is skipped naming them; one with .cu regions too keeps those, and its
    notes name the left-out ones. A header under the build folder is not the app's."""
    apps = tmp_path / "apps"
    tagged = (
        "// @optimize begin {0}\n__global__ void {0}(float* x) {{ x[0] = 1; }}\n"
        "// @optimize end {0}\n"
    )
    for name, main in (("hdr", ""), ("both", tagged.format("in_cu"))):
        app = apps / name
        (app / "build").mkdir(parents=True)
        (app / "nvcc-opt.toml").write_text("[build]\ndir = 'build'\n")
        (app / "main.cu").write_text('#include "kernels.h"\n' + main + "int main() {}\n")
        (app / "kernels.h").write_text(tagged.format("in_header"))
        (app / "build" / "gen.cuh").write_text(tagged.format("generated"))
    both, hdr = import_apps(apps, tmp_path / "p", AppsOptions(), quiet)
    assert isinstance(hdr, Skip) and hdr.name == "hdr"
    assert hdr.reason.startswith("left out: kernels.h:in_header: tagged in a header")
    assert "generated" not in hdr.reason
    assert isinstance(both, Problem)
    assert both.regions == ("main.cu:in_cu",) and both.kernels == ("in_cu",)
    assert both.notes == (hdr.reason,)


def test_splits_keep_a_benchmark_together_and_are_stable() -> None:
    def made(benchmark: str, kind: str) -> Problem:
        return Problem(f"hecbench-{benchmark}-{kind}", "hecbench", benchmark, (), (), kind)

    many = [made(f"b{i}", k) for i in range(200) for k in ("a", "b", "pair")]
    split = assign(many, "auto", 0.25)
    by_benchmark: dict[str, set[str]] = {}
    for p in split:
        by_benchmark.setdefault(p.benchmark, set()).add(p.split)
    assert all(len(s) == 1 for s in by_benchmark.values())  # A, B and A+B never apart
    evals = sum(1 for s in by_benchmark.values() if s == {"eval"})
    assert 25 <= evals <= 75  # about a quarter of 200
    assert position("hecbench", "b1") == position("hecbench", "b1")
    assert {p.split for p in assign(many, "eval", 0.25)} == {"eval"}
    assert {p.split for p in assign(many, "auto", 0.0)} == {"train"}
    # raising the share only moves benchmarks to eval
    assert all(
        split_of("hecbench", f"b{i}", 0.5) == "eval"
        for i in range(200)
        if split_of("hecbench", f"b{i}", 0.25) == "eval"
    )


def test_bad_input_is_one_line_and_leaves_nothing(tmp_path: Path) -> None:
    code, output = problems(str(tmp_path / "set"), "--from", "suite", str(tmp_path / "none"))
    assert code == 1 and "no such suite folder" in output and len(output.splitlines()) == 1
    assert not (tmp_path / "set").exists()
    code, output = problems(str(tmp_path / "set"), "--from", "suite")
    assert code == 2 and "--from suite needs the folder to import" in output
    code, output = problems(str(tmp_path / "s"), "--from", "synthetic", "--count", "3")
    assert code == 2 and "--from synthetic needs --model SPEC" in output


# --- real builds ------------------------------------------------------------------------------


@pytest.mark.slow
@needs_nvcc
def test_run_check_requires_a_passing_run(tmp_path: Path) -> None:
    out = tmp_path / "set"
    args = [
        "--from",
        "suite",
        str(APPS),
        "--only",
        "saxpy",
        "--only",
        "blur",
        "--check",
        "run",
        "--gpus",
        "0",
    ]
    code, output = problems(str(out), *args)
    assert code == 0, output
    made = ProblemSet.open(out)
    assert [p.id for p in made.problems()] == ["suite-saxpy"]
    reasons = {row["name"]: row["reason"] for row in made.skipped()}
    assert reasons == {"blur": "run: fails its own check: missing: check: PASS"}
    assert made.manifest["check"]["level"] == "run" and made.manifest["check"]["ran"] is True
    assert "suite-saxpy: builds, runs and passes (1.25 ms)" in output


@pytest.mark.slow
@needs_nvcc
def test_a_killed_run_is_resumed_and_keeps_what_builds(tmp_path: Path) -> None:
    """The build check, through a run interrupted (Ctrl-C) after its first app, a rerun killed
    after its second, and the rerun that finishes."""
    out = tmp_path / "set"
    args = ["--from", "suite", str(APPS), "--check", "build", "--jobs", "1"]
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{REPO / 'training'}"}

    def stopped_after(app: str, sig: signal.Signals) -> tuple[int, str]:
        process = subprocess.Popen(
            [sys.executable, "-m", "nvcc_opt", "train", "problems", str(out), *args],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        checked = out / ".check" / f"suite-{app}.json"
        deadline = time.monotonic() + 300
        while not checked.exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        process.send_signal(sig)
        output, _ = process.communicate()
        assert checked.exists(), output
        with pytest.raises(ProblemSetError, match="half-written"):
            ProblemSet.open(out)
        return process.returncode, output

    code, output = stopped_after("blur", signal.SIGINT)
    assert code == 130 and "interrupted: " in output and "run the same command to resume" in output
    first = out / ".check" / "suite-blur.json"
    kept = first.read_text()
    code, _ = stopped_after("broken", signal.SIGKILL)
    assert code == -signal.SIGKILL and first.read_text() == kept
    code, output = problems(str(out), "--from", "suite", "--only", "blur", str(APPS))
    assert code == 1 and "made from other sources" in output
    code, output = problems(str(out), "--from", "suite", str(APPS), "--check", "build")
    assert code == 0, output
    assert first.read_text() == kept  # its check was not redone
    assert "suite-saxpy: builds" in output
    assert "suite-blur: builds" not in output and "suite-broken: build" not in output
    made = ProblemSet.open(out)
    assert sorted(p.id for p in made.problems()) == ["suite-blur", "suite-saxpy"]
    assert made.skipped() == [{"source": "suite", "name": "broken", "reason": BROKEN}]
    check = made.manifest["check"]
    assert check["level"] == "build" and check["ran"] is False
    assert (out / ".check" / "suite-saxpy" / "build" / "saxpy").is_file()
    assert not (out / "problems" / "suite-saxpy" / "build").exists()  # built outside the app
    if not gpu_available():
        assert "check: build only; not run: no GPU here" in output.splitlines()[-2:]
    assert "skipped: 1: 1 build failed" in output
    assert "candidates: 3 from 3 benchmarks; problems: 2 (train 2, eval 0) from 2" in output
    assert made.manifest["summary"]["skipped_by_class"] == {"build failed": 1}
    rows = [json.loads(line) for line in (out / "train.jsonl").read_text().splitlines()]
    assert {r["app"] for r in rows} == {"problems/suite-blur", "problems/suite-saxpy"}
    # a complete set is refused, nothing rewritten
    before = {p: p.stat().st_mtime_ns for p in out.glob("*.json*")}
    code, output = problems(str(out), "--from", "suite", str(APPS), "--check", "build")
    assert code == 1 and "already a complete problem set" in output
    assert before == {p: p.stat().st_mtime_ns for p in out.glob("*.json*")}


@pytest.mark.slow
@needs_nvcc
def test_an_app_without_cmake_is_built_in_a_copy_with_its_own_command(tmp_path: Path) -> None:
    out = tmp_path / "set"
    args = ["--from", "apps", str(APPS), "--only", "vecadd_make", "--check", "run", "--gpus", "0"]
    code, output = problems(str(out), *args)
    assert code == 0, output
    (made,) = ProblemSet.open(out).problems()
    assert made.id == "apps-vecadd_make" and made.regions == ("main.cu:vecadd",)
    assert "apps-vecadd_make: builds, runs and passes (0.75 ms)" in output
    assert (out / ".check" / "apps-vecadd_make" / "tree" / "main").is_file()
    assert not (out / "problems" / "apps-vecadd_make" / "main").exists()  # the app stays clean


def test_an_app_with_a_bad_config_is_one_skip_naming_the_file_and_line(tmp_path: Path) -> None:
    apps = tmp_path / "apps"
    (apps / "bad" / "src").mkdir(parents=True)
    (apps / "bad" / "nvcc-opt.toml").write_text(
        '[build]\ndir = "build"\n\n[run]\ntimeout_s = "x"\n'
    )
    (apps / "bad" / "CMakeLists.txt").write_text("project(bad LANGUAGES CUDA)\n")
    (apps / "bad" / "src" / "k.cu").write_text(
        "// @optimize\n__global__ void k(float* x) { x[0] = 1.0f; }\n"
    )
    code, output = problems(str(tmp_path / "set"), "--from", "apps", str(apps), "--check", "build")
    assert code == 0, output
    (row,) = ProblemSet.open(tmp_path / "set").skipped()
    assert (
        row["reason"].startswith("config: ") and "nvcc-opt.toml:5: [run] timeout_s" in row["reason"]
    )


@pytest.mark.slow
@needs_nvcc
def test_problems_that_differ_only_in_their_tags_are_built_once(tmp_path: Path) -> None:
    """A benchmark's A, B and A+B problems compile the same code: one build checks them all."""
    from nvcc_opt_train.appcheck import CHECK_DIR, CheckOptions, check_problems, untagged_hash

    root = tmp_path / "set"
    made = []
    for pid, tag in (("one", "// @optimize begin saxpy"), ("two", "// @optimize begin other")):
        app = root / "problems" / pid
        shutil.copytree(APPS / "saxpy", app)
        source = app / "src" / "main.cu"
        source.write_text(source.read_text().replace("// @optimize begin saxpy", tag))
        made.append(Problem(pid, "suite", "saxpy", ("src/main.cu:saxpy",), ("saxpy_kernel",)))
    shutil.copytree(APPS / "common", root / "problems" / "common")
    apps = [root / "problems" / p.id for p in made]
    assert untagged_hash(apps[0]) == untagged_hash(apps[1])
    options = CheckOptions(
        level="build", jobs=1, gpus=(), cmake_args=("-DCMAKE_CUDA_ARCHITECTURES=90",)
    )
    said: list[str] = []
    results = [(p.id, why) for p, why in check_problems(root, made, options, said.append)]
    assert results == [("one", None), ("two", None)]
    assert sorted(p.name for p in (root / CHECK_DIR).iterdir() if p.is_dir()) == ["one"]
    assert said == ["one: builds", "two: builds"]


@pytest.mark.slow
@needs_nvcc
def test_a_build_folder_left_by_a_killed_run_is_configured_again_from_clean(
    tmp_path: Path,
) -> None:
    """A stale or half-written CMake cache in a reused build folder (a run killed mid-configure)
    fails its configure; the build starts that folder again from clean instead of failing."""
    from nvcc_opt_train.appcheck import build_app, default_cmake_args

    app = tmp_path / "saxpy"
    shutil.copytree(APPS / "saxpy", app)
    shutil.copytree(APPS / "common", tmp_path / "common")  # what saxpy includes from beside it
    stale = tmp_path / "scratch" / "build"
    stale.mkdir(parents=True)
    (stale / "CMakeCache.txt").write_text(
        "CMAKE_HOME_DIRECTORY:INTERNAL=/somewhere/else\n", encoding="utf-8"
    )
    built = build_app(app, tmp_path / "scratch", default_cmake_args(False), 2)
    assert built.build_dir == stale
    assert str(app.resolve()) in (stale / "CMakeCache.txt").read_text(encoding="utf-8")


@pytest.mark.slow
@needs_nvcc
def test_a_region_in_a_file_the_build_does_not_compile_with_nvcc_is_skipped(
    tmp_path: Path,
) -> None:
    """The launcher substitutes only files nvcc compiles: a region tagged in a .cu file the
    CMakeLists does not list (and so in no compile) can never be optimized, so the check skips
    it, read from the build's compile_commands.json, whatever the reason it is not compiled."""
    apps = tmp_path / "apps"
    shutil.copytree(APPS / "saxpy", apps / "saxpy")
    shutil.copytree(APPS / "common", apps / "common")
    orphan = "// @optimize\n__global__ void orphan(float* x) { x[0] = 1.0f; }\n"
    (apps / "saxpy" / "src" / "unused.cu").write_text(orphan)
    out = tmp_path / "set"
    code, output = problems(str(out), "--from", "apps", str(apps), "--check", "build")
    assert code == 0, output
    made = ProblemSet.open(out)
    assert made.problems() == []
    (skipped,) = made.skipped()
    assert skipped["reason"] == (
        "region not compiled: the build compiles no src/unused.cu with nvcc, and the launcher "
        "substitutes regions only in the files nvcc compiles"
    )
    assert made.manifest["summary"]["skipped_by_class"] == {"region not compiled": 1}
