"""nvcc_opt.config: loading nvcc-opt.toml or [tool.nvcc-opt], errors at the right line, what a
loaded configuration renders, and `nvcc-opt init` against a really configured CMake project."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from nvcc_opt.cli.config import init
from nvcc_opt.config import (
    ConfigError,
    ProjectConfig,
    Settings,
    architectures,
    find_build_trees,
    find_root,
    load,
)
from nvcc_opt.config.errors import key_lines
from nvcc_opt.config.model import CheckConfig, GpuConfig, Section, TimeConfig, VerifyConfig
from tests.conftest import needs_nvcc

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "saxpy-stencil"

FULL = """\
store = "state/store.db"

[build]
dir = "out/rel"
command = ["cmake", "--build", "{build}", "--target", "app"]
timeout_s = 600

[run]
command = "./scripts/run.sh {build} --out '{work}/result file.txt'"
cwd = "{work}"
env = { OMP_NUM_THREADS = 1, DATA = "{source}/data" }
timeout_s = 60.5
repeats = 7
final_repeats = 9
warmup = 0

[time]
source = "file"
file = "timing-{gpu}.txt"
regex = 'elapsed (\\S+) us'
unit = "us"

[check]
exit_status = false
require = ['check: PASS', 'done']
forbid = 'nan'
numbers = ['checksum: (\\S+)', 'energy = ([-0-9.e]+)']
files = ["sums.txt", "{build}/out.txt"]
rtol = 1e-5
atol = 1e-12

[gpu]
devices = [0, "2", "GPU-5f1c"]

[verify]
min_speedup = 1.05
ceiling = 4.0
"""


def _cache(tree: Path, home: Path) -> Path:
    """A CMakeCache.txt in CMake's own format (enough for the reader)."""
    tree.mkdir(parents=True, exist_ok=True)
    (tree / "CMakeCache.txt").write_text(
        f"# This is the CMakeCache file.\n//Source dir\nCMAKE_HOME_DIRECTORY:INTERNAL={home}\n"
        "CMAKE_GENERATOR:INTERNAL=Ninja\n",
        encoding="utf-8",
    )
    return tree


def _project(tmp_path: Path, text: str, name: str = "nvcc-opt.toml") -> Path:
    root = tmp_path / "proj"
    _cache(root / "build", root)
    (root / name).write_text(text, encoding="utf-8")
    return root


def _error(tmp_path: Path, text: str, name: str = "nvcc-opt.toml") -> str:
    root = _project(tmp_path, text, name)
    with pytest.raises(ConfigError) as caught:
        load(root)
    return str(caught.value)


def test_loads_every_documented_field(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    (root / "out" / "rel").mkdir(parents=True)
    (root / "nvcc-opt.toml").write_text(FULL, encoding="utf-8")
    config = load(root)
    assert config.root == root.resolve() and config.file == root / "nvcc-opt.toml"
    assert config.store_path == root.resolve() / "state" / "store.db"
    assert config.build_dir == root.resolve() / "out" / "rel"
    assert config.build.timeout_s == 600
    run = config.run
    assert (run.timeout_s, run.repeats, run.final_repeats, run.warmup) == (60.5, 7, 9, 0)
    assert run.env == {"OMP_NUM_THREADS": "1", "DATA": "{source}/data"}
    time = config.time
    assert (time.source, time.file, time.unit) == ("file", "timing-{gpu}.txt", "us")
    assert time.regex is not None and time.regex.search("elapsed 12.5 us")[1] == "12.5"  # type: ignore[index]
    check = config.check
    assert check.exit_status is False
    assert [p.pattern for p in check.require] == ["check: PASS", "done"]
    assert [p.pattern for p in check.forbid] == ["nan"]
    assert [p.groups for p in check.numbers] == [1, 1]
    assert check.files == ("sums.txt", "{build}/out.txt")
    assert (check.rtol, check.atol) == (1e-5, 1e-12)
    assert config.gpu.devices == ("0", "2", "GPU-5f1c")
    assert (config.verify.min_speedup, config.verify.ceiling) == (1.05, 4.0)


def test_renders_commands_per_argument(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    (root / "out" / "rel").mkdir(parents=True)
    (root / "nvcc-opt.toml").write_text(FULL, encoding="utf-8")
    config = load(root)
    src = root.resolve()
    build, work = tmp_path / "private build", tmp_path / "w"
    assert config.render_build(build) == ["cmake", "--build", str(build), "--target", "app"]
    # The program is found from the run's folder ({work}); a space stays inside one argument.
    assert config.render_run(build, "2", work) == [
        str(work / "scripts" / "run.sh"),
        str(build),
        "--out",
        f"{work}/result file.txt",
    ]
    assert config.run_cwd(build, "2", work) == work
    assert config.run_env(build, "2", work) == {
        "OMP_NUM_THREADS": "1",
        "DATA": f"{src}/data",
        "CUDA_VISIBLE_DEVICES": "2",
    }
    assert config.output_path(config.check.files[1], build, "2", work) == build / "out.txt"
    assert config.output_path("timing-{gpu}.txt", build, "2", work) == work / "timing-2.txt"
    with pytest.raises(ValueError, match=r"\{work\}"):
        config.render_run(build, "2")
    assert config.time.seconds(250.0) == pytest.approx(250e-6)


def test_settings_kept_apart_from_the_sources_name_them(tmp_path: Path) -> None:
    """`source`: one settings folder per kernel inside the checkout, as the RAJAPerf integration
    writes them; {source} and the file tools' folder are the checkout, not the settings'."""
    checkout = tmp_path / "checkout"
    settings = checkout / ".settings" / "kernel_a"
    (checkout / "build").mkdir(parents=True)
    settings.mkdir(parents=True)
    toml = settings / "nvcc-opt.toml"
    toml.write_text(
        'source = "../.."\n[build]\ndir = "../../build"\ncommand = "make -C {source}"\n'
        '[run]\ncommand = "{source}/run.sh"\n'
    )
    config = load(settings)
    assert config.source_root == checkout and config.root == settings.resolve()
    assert config.render_build(config.build_dir) == ["make", "-C", str(checkout)]
    assert config.render_run(config.build_dir, "0", tmp_path) == [f"{checkout}/run.sh"]
    (checkout / "nvcc-opt.toml").write_text('[build]\ndir = "build"\n')
    assert load(checkout).source_root == checkout.resolve()  # the default: its own folder
    toml.write_text('store = "s.db"\nsource = "../missing"\n[build]\ndir = "../../build"\n')
    with pytest.raises(ConfigError, match=rf"^{re.escape(str(toml))}:2: source: .*missing is not"):
        load(settings)


def test_defaults_use_the_one_build_tree(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    _cache(root / "cmake-build-release", root)
    config = load(root)
    assert config.file is None and config.build_dir == root.resolve() / "cmake-build-release"
    assert config.render_build(config.build_dir)[:2] == ["cmake", "--build"]
    assert (config.run.repeats, config.run.final_repeats, config.time.source) == (10, 20, "wall")
    assert config.gpu.devices == ("0",) and config.check.exit_status is True
    with pytest.raises(ConfigError, match=r"\[run\] command: not set"):
        config.render_run(config.build_dir, "0")


def test_defaults_without_a_usable_build_tree_explain(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    with pytest.raises(ConfigError, match="no nvcc-opt.toml and no CMake build tree"):
        load(root)
    _cache(root / "a", root)
    _cache(root / "b", root)
    _cache(root / "c", tmp_path / "elsewhere")  # another project's tree is not ours
    with pytest.raises(ConfigError, match=r"several build trees .*/a, .*/b\)"):
        load(root)


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ('[time]\nsource = "walltime"\n', 2, '[time] source: must be one of "wall", "regex" or '),
        ("\n[run]\nrepeat = 3\n", 3, "[run] repeat: unknown key; did you mean repeats?"),
        ("[check]\nrequire = ['ok',\n  '[bad']\n", 2, "[check] require[1]: invalid regular"),
        ("[check]\nnumbers = 'checksum: \\S+'\n", 2, "needs a group around the number"),
        ('[build]\ncommand = "make -C {bild}"\n', 2, "unknown placeholder {bild}; allowed:"),
        ('[build]\ncommand = "make \'oops"\n', 2, "cannot split"),
        ('[run]\ncommand = ""\n', 2, "[run] command: must not be empty"),
        ('\n[time]\nsource = "regex"\n', 2, '[time] regex: required when source = "regex"'),
        ("[time]\nregex = 't (\\d+)'\n", 2, '[time] regex: not used when source = "wall"'),
        ("[run]\nenv.CUDA_VISIBLE_DEVICES = '1'\n", 2, "set [gpu] devices, not CUDA_VIS"),
        ("[run]\n\nenv = { X = '{gpus}' }\n", 3, "[run] env: X: unknown placeholder {gpus}"),
        ('[gpu]\n\ndevices = ["0", 0]\n', 3, "[gpu] devices: an entry appears twice"),
        ("[verify]\nmin_speedup = 1.5\nceiling = 1.2\n", 3, "ceiling: must be above min_sp"),
        ("[check]\nforbid = [1]\n", 2, "[check] forbid[0]: must be a regular expression in"),
        ("[gpu]\ndevices = []\n", 2, '[gpu] devices: list at least one, e.g. ["0"]'),
        ('[run]\nrepeats = "five"\n', 2, '[run] repeats: must be an integer (got "five")'),
        ("[run]\nwarmup = -1\n", 2, "[run] warmup: must be greater than or equal to 0"),
        ("time = 3\n", 1, "[time]: must be a table (got 3)"),
        ('store = ""\n', 1, "store: must not be empty"),
        ("[build]\ndir = 'missing'\n", 2, "[build] dir: "),
        ("[run]\nrepeats = 3\nrepeats = 4\n", 3, "invalid TOML: Cannot overwrite a value"),
    ],
)
def test_errors_name_file_line_and_what_is_allowed(
    tmp_path: Path, text: str, line: int, message: str
) -> None:
    error = _error(tmp_path, text)
    assert error.startswith(f"{tmp_path / 'proj' / 'nvcc-opt.toml'}:{line}: "), error
    assert message in error


def test_every_error_is_reported_in_line_order(tmp_path: Path) -> None:
    error = _error(tmp_path, '[verify]\nceil = 2\n[time]\nsource = "x"\n[run]\nwarmup = "a"\n')
    assert [int(m) for m in re.findall(r"\.toml:(\d+):", error)] == [2, 4, 6]


def test_pyproject_table(tmp_path: Path) -> None:
    text = '[project]\nname = "app"\n\n[tool.nvcc-opt.run]\ncommand = "./run.sh {build}"\n'
    root = _project(tmp_path, text, "pyproject.toml")
    assert find_root(root / "build") == root.resolve()
    config = load(root)
    assert config.file == root / "pyproject.toml"
    assert config.run.command == ("./run.sh", "{build}")
    error = _error(tmp_path / "2", text + "\n[tool.nvcc-opt.time]\nsource = 1\n", "pyproject.toml")
    assert ':8: [tool.nvcc-opt.time] source: must be one of "wall"' in error
    error = _error(tmp_path / "3", '[tool.nvcc-opt]\nstore = "s.db"\n', "pyproject.toml")
    assert ":2: [tool.nvcc-opt] store: the build reads `store` only from nvcc-opt.toml" in error


def test_nvcc_opt_toml_wins_and_plain_pyproject_is_not_a_root(tmp_path: Path) -> None:
    root = _project(tmp_path, '[tool.nvcc-opt.run]\ncommand = "a"\n', "pyproject.toml")
    (root / "nvcc-opt.toml").write_text('[run]\ncommand = "b"\n', encoding="utf-8")
    assert load(root).run.command == ("b",)
    other = tmp_path / "other" / "sub"
    other.mkdir(parents=True)
    (other.parent / "pyproject.toml").write_text("[tool.ruff]\nline-length = 9\n", encoding="utf-8")
    assert find_root(other) is None


def test_key_lines_follow_tables_dotted_keys_and_skip_multiline_strings() -> None:
    text = (
        'a = 1\n[run]\nenv.X = "1"\ncommand = """\nfake = 1\n"""\n'
        '[ "time" ]\nsource = "wall"  # [x]\n'
    )
    lines = key_lines(text)
    assert lines[("a",)] == 1 and lines[("run",)] == 2 and lines[("run", "env", "X")] == 3
    assert ("run", "fake") not in lines and lines[("time", "source")] == 8


def test_example_configuration_reads_the_example_output(tmp_path: Path) -> None:
    root = tmp_path / "example"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("build"))
    (root / "build").mkdir()
    config = load(root)
    output = "time_ms: 0.267190\nchecksum: 25167912.51\ncheck: PASS max_rel_err=3.56e-07\n"
    assert config.time.regex is not None and config.time.source == "regex"
    match = config.time.regex.search(output)
    assert match is not None and config.time.seconds(float(match[1])) == pytest.approx(267.19e-6)
    assert all(p.search(output) for p in config.check.require)
    assert [m[1] for p in config.check.numbers for m in p.finditer(output)] == ["25167912.51"]
    assert config.render_run(root / "build", "0") == [str(root / "run.sh"), str(root / "build")]


def test_defaults_of_every_field_are_described() -> None:
    sections = [Settings, *(f.annotation for f in Settings.model_fields.values())]
    for model in sections:
        if isinstance(model, type) and issubclass(model, Section):
            for name, field in model.model_fields.items():
                assert field.description, f"{model.__name__}.{name}"
    assert issubclass(ProjectConfig, Settings)


# `nvcc-opt init` against a project CMake really configured.


@pytest.fixture(scope="module")
def configured(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("cmake") is None or shutil.which("ninja") is None:
        pytest.skip("needs cmake and ninja")
    root = tmp_path_factory.mktemp("init") / "app"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("build", "nvcc-opt.toml"))
    env = {k: v for k, v in os.environ.items() if k not in ("CMAKE_GENERATOR", "CUDAARCHS")}
    done = subprocess.run(
        ["cmake", "-S", ".", "-B", "build", "-G", "Ninja", "-DCMAKE_CUDA_ARCHITECTURES=90"],
        cwd=root,
        capture_output=True,
        text=True,
        env=env,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return root


@pytest.fixture
def app(configured: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.chdir(configured)
    yield configured
    (configured / "nvcc-opt.toml").unlink(missing_ok=True)


@needs_nvcc
@pytest.mark.slow
def test_init_writes_a_loadable_commented_file(app: Path) -> None:
    result = CliRunner().invoke(init, [])
    assert result.exit_code == 0, result.output
    assert f"wrote {app / 'nvcc-opt.toml'}" in result.output
    assert f"build tree: build (Ninja, Release, source {app})" in result.output
    assert "CUDA architectures: 90 (from build.ninja)" in result.output
    assert 'run: command = "./run.sh {build}"' in result.output
    # the targets of the tagged sources, through CMake's File API (the tree configured once more)
    assert "targets: read through CMake's File API (configured build once more" in result.output
    assert "tagged: src/stencil.cu (target saxpy_kernels)" in result.output
    assert "tagged: src/update.cu (target saxpy_kernels)" in result.output
    assert "tagged: src/main.cu" not in result.output
    script = Path(sys.executable).parent / "nvcc-opt"  # this installation's, by absolute path
    assert f"after cmake -B build -DCMAKE_CUDA_COMPILER_LAUNCHER={script}\n" in result.output
    text = (app / "nvcc-opt.toml").read_text(encoding="utf-8")
    assert "# Regexes that must each match the run's output" in text
    assert "# numbers = ['checksum: (\\S+)', 'weighted: (\\S+)']" in text
    comments = " ".join(line.lstrip("# ") for line in text.splitlines() if line.startswith("#"))
    assert "Print numbers that see each element" in comments
    config = load(app)
    assert config.build_dir == app / "build" and config.run.command == ("./run.sh", "{build}")
    assert config.render_run(config.build_dir, "0") == [str(app / "run.sh"), str(app / "build")]
    assert (config.time, config.check) == (TimeConfig(), CheckConfig())
    assert (config.gpu, config.verify, config.store) == (GpuConfig(), VerifyConfig(), None)


@needs_nvcc
@pytest.mark.slow
def test_init_never_overwrites_without_force(app: Path) -> None:
    (app / "nvcc-opt.toml").write_text("# mine\n", encoding="utf-8")
    result = CliRunner().invoke(init, [])
    assert result.exit_code == 1 and "nvcc-opt.toml exists; --force replaces it" in result.output
    assert (app / "nvcc-opt.toml").read_text(encoding="utf-8") == "# mine\n"
    assert CliRunner().invoke(init, ["--force"]).exit_code == 0
    assert load(app).run.command == ("./run.sh", "{build}")


@needs_nvcc
@pytest.mark.slow
def test_init_chooses_among_trees_with_build(app: Path) -> None:
    second = _cache(app / "debug", app)
    try:
        assert find_build_trees(app) == [app / "build", second]
        assert CliRunner().invoke(init, ["--build", "debug"]).exit_code == 0
        assert load(app).build_dir == second
        result = CliRunner().invoke(init, ["--force", "--build", "nowhere"])
        assert result.exit_code == 1 and "nowhere: no CMakeCache.txt" in result.output
    finally:
        shutil.rmtree(second)


def test_init_without_a_build_tree_or_run_script_says_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(init, [])
    assert result.exit_code == 1 and "no CMake build tree" in result.output
    _cache(tmp_path / "a", tmp_path)
    _cache(tmp_path / "b", tmp_path)
    result = CliRunner().invoke(init, [])
    assert result.exit_code == 1 and "several build trees (a, b); choose one with --build" in (
        result.output
    )
    result = CliRunner().invoke(init, ["--build", "b"])
    assert result.exit_code == 0, result.output
    assert "fill in: [run] command" in result.output
    assert "note: targets not read through CMake's File API: cmake " in result.output
    text = (tmp_path / "nvcc-opt.toml").read_text(encoding="utf-8")
    assert '# command = "./run.sh {build}"' in text
    assert load(tmp_path).run.command is None


# The architectures a real build tree compiles for, whatever its cache's default says.

TARGET_ARCHITECTURES = """\
cmake_minimum_required(VERSION 3.18)
project(archs LANGUAGES CUDA)
add_library(k STATIC k.cu)
set_target_properties(k PROPERTIES CUDA_ARCHITECTURES "90;80-real")
"""


def _configure(root: Path, generator: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CMAKE_GENERATOR", "CUDAARCHS")}
    env.pop("VIRTUAL_ENV", None)
    return subprocess.run(
        ["cmake", "-S", ".", "-B", "build", "-G", generator, *args],
        cwd=root,
        capture_output=True,
        text=True,
        env=env,
    )


@pytest.fixture(scope="module", params=["Ninja", "Unix Makefiles"])
def archs_tree(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("cmake") is None or shutil.which("ninja") is None:
        pytest.skip("needs cmake and ninja")
    root = tmp_path_factory.mktemp("archs") / "app"
    root.mkdir()
    (root / "CMakeLists.txt").write_text(TARGET_ARCHITECTURES, encoding="utf-8")
    (root / "k.cu").write_text("__global__ void k(float* x) { x[0] = 1.0f; }\n", encoding="utf-8")
    done = _configure(root, request.param)
    assert done.returncode == 0, done.stdout + done.stderr
    return root


@needs_nvcc
@pytest.mark.slow
def test_init_reports_the_architectures_the_targets_build_for(
    archs_tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = archs_tree / "build"
    cached = architectures.cached_value(tree)
    assert cached and cached not in (
        "90",
        "80-real;90",
    )  # CMake's default, which the target overrides
    found = architectures.read(tree)
    ninja = (tree / "build.ninja").is_file()
    where = "build.ninja" if ninja else "CMakeFiles/k.dir/flags.make"
    assert found == architectures.Architectures(("80-real", "90"), where)
    monkeypatch.chdir(archs_tree)
    result = CliRunner().invoke(init, [])
    assert result.exit_code == 0, result.output
    assert f"CUDA architectures: 80-real, 90 (from {where})" in result.output
    assert (
        f"note: CMakeCache.txt says CMAKE_CUDA_ARCHITECTURES={cached}, a default" in result.output
    )


def test_architectures_fall_back_to_the_database_then_the_cache(tmp_path: Path) -> None:
    tree = _cache(tmp_path / "build", tmp_path)
    assert architectures.read(tree).describe().startswith("not set")
    with (tree / "CMakeCache.txt").open("a", encoding="utf-8") as cache:
        cache.write("CMAKE_CUDA_ARCHITECTURES:STRING=86;90a\n")
    assert architectures.read(tree) == architectures.Architectures(("86", "90a"), "CMakeCache.txt")
    command = "/usr/local/cuda/bin/nvcc -gencode arch=compute_75,code=sm_75 -c a.cu -o a.o"
    (tree / "compile_commands.json").write_text(json.dumps([{"command": command}]))
    found = architectures.read(tree)
    assert found == architectures.Architectures(("75-real",), "compile_commands.json")


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["-arch=sm_90"], ("90",)),
        (["-arch", "compute_80"], ("80-virtual",)),
        (["--gpu-architecture=sm_90a"], ("90a",)),
        (["-arch=native"], ("native",)),
        (["-arch=compute_80", "-code=sm_80,sm_86"], ("80-real", "86-real")),
        (["-gencode=arch=compute_90,code=[compute_90,sm_90]"], ("90",)),
        (["--generate-code", "arch=compute_70,code=sm_70", "-gencode=arch=compute_90"],
         ("70-real", "90-virtual")),
        (["-O3", "-DARCH=sm_90", "-c", "a.cu"], ()),
    ],
)  # fmt: skip
def test_architectures_from_nvcc_arguments(args: list[str], expected: tuple[str, ...]) -> None:
    assert architectures.from_arguments(args) == expected


# A launcher named without a folder fails where the virtual environment is not active.


def _no_venv_env() -> dict[str, str]:
    """The environment of a shell where nvcc-opt's virtual environment is not active."""
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "CMAKE_GENERATOR")}
    venv_bin = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join(
        p for p in env.get("PATH", "").split(os.pathsep) if p and Path(p) != Path(venv_bin)
    )
    assert shutil.which("nvcc-opt", path=env["PATH"]) is None, "nvcc-opt must be off PATH here"
    return env


@needs_nvcc
@pytest.mark.slow
def test_init_gives_the_absolute_launcher_that_builds_without_the_venv(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if shutil.which("ninja") is None:
        pytest.skip("needs ninja")
    root = tmp_path / "app"
    root.mkdir()
    (root / "CMakeLists.txt").write_text(TARGET_ARCHITECTURES, encoding="utf-8")
    (root / "k.cu").write_text("__global__ void k(float* x) { x[0] = 1.0f; }\n", encoding="utf-8")
    bare = _configure(root, "Ninja", "-DCMAKE_CUDA_COMPILER_LAUNCHER=nvcc-opt")
    assert bare.returncode == 0, bare.stderr
    build = ["cmake", "--build", "build"]
    failed = subprocess.run(build, cwd=root, capture_output=True, text=True, env=_no_venv_env())
    assert failed.returncode != 0  # the bare name: not found outside the venv
    monkeypatch.chdir(root)
    result = CliRunner().invoke(init, [])
    assert result.exit_code == 0, result.output
    script = Path(sys.executable).parent / "nvcc-opt"
    assert "note: its launcher names nvcc-opt without a folder (nvcc-opt)" in result.output
    fix = result.output.split("not active); ", 1)[1].splitlines()[0]
    assert fix == f"cmake -B build -DCMAKE_CUDA_COMPILER_LAUNCHER={script}"
    reconfigure = subprocess.run(
        shlex.split(fix), cwd=root, capture_output=True, text=True, env=_no_venv_env()
    )
    assert reconfigure.returncode == 0, reconfigure.stderr
    done = subprocess.run(build, cwd=root, capture_output=True, text=True, env=_no_venv_env())
    assert done.returncode == 0, done.stdout + done.stderr
    assert "without a folder" not in CliRunner().invoke(init, ["--force"]).output
