"""compile_args that would run a command, write a file or change code outside the region, refused
at every entry point: `nvcc-opt import`, the launcher applying a stored rewrite (a store edited by
hand), candidate mode, benchmark_code (and through it the final verification, `nvcc-opt verify`
and submit), compiler_analysis, profile_kernel and microbench_code.

Each attack points at executables planted in `evil/` (a host compiler, gcc's helpers, a wrapper)
that would record their run in a marker file; after every entry point the marker must not exist,
and where the entry point starts processes through a runner, none was started."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from nvcc_opt import review, submit
from nvcc_opt.config import load
from nvcc_opt.launcher import candidate
from nvcc_opt.records import NewRewrite, Rewrite
from nvcc_opt.regions.scan import scan
from nvcc_opt.store.api import Store
from nvcc_opt.toolbox.schema import Toolbox, is_error
from nvcc_opt.tools.analysis import Analysis
from nvcc_opt.tools.bench import Benchmark
from nvcc_opt.tools.microbench import Microbench
from nvcc_opt.tools.profile import Profile
from nvcc_opt.tools.region import Region
from nvcc_opt.workspace.runner import Completed, ProcessRunner
from tests.cli_helpers import FAST_SCALE, invoke, write_source
from tests.conftest import needs_nvcc, run
from tests.test_launcher_substitution import COMPILE, REWRITE, SOURCE
from tests.test_tools_bench import FIXTURE, HALF

HELPERS = ("g++", "gcc", "c++", "cc", "as", "ld", "collect2", "cc1plus", "wrap", "nvlink")
ATTACKS = [
    "ccbin",
    "ccbin=",
    "compiler-bindir",
    "Xcompiler -B",
    "Xcompiler=-B",
    "Xcompiler -wrapper",
    "compiler-options=-fplugin",
    "options-file",
    "optf=",
    "@file",
    "-o",
    "odir",
    "dryrun",
    "-E",
    "-run",
    "Xnvlink",
    "Xlinker",
    "-D",
    "-U",
    "-I",
    "-include",
    "$()",
    "backtick",
    ";",
    "value with a space",
    "newline",
]


def attack(name: str, evil: Path, marker: Path) -> list[str]:
    """The compile_args of one attack, aimed at the executables in `evil`."""
    return {
        "ccbin": ["-ccbin", str(evil)],
        "ccbin=": [f"-ccbin={evil}/g++"],
        "compiler-bindir": [f"--compiler-bindir={evil}"],
        "Xcompiler -B": ["-Xcompiler", f"-B{evil}/"],
        "Xcompiler=-B": [f"-Xcompiler=-B{evil}/"],
        "Xcompiler -wrapper": ["-Xcompiler", f"-wrapper,{evil}/wrap"],
        "compiler-options=-fplugin": [f"--compiler-options=-fplugin={evil}/plugin.so"],
        "options-file": ["--options-file", str(evil / "evil.opts")],
        "optf=": [f"-optf={evil}/evil.opts"],
        "@file": [f"@{evil}/evil.opts"],
        "-o": ["-o", str(evil / "out.o")],
        "odir": [f"-odir={evil}"],
        "dryrun": ["--dryrun"],
        "-E": ["-E"],
        "-run": ["-run"],
        "Xnvlink": ["-Xnvlink", f"-B{evil}"],
        "Xlinker": ["-Xlinker", f"-plugin={evil}/plugin.so"],
        "-D": ["-Dvariant=evil_variant"],
        "-U": ["-U__CUDACC__"],
        "-I": [f"-I{evil}"],
        "-include": ["-include", str(evil / "evil.h")],
        "$()": [f"-DX=$({evil}/wrap)"],
        "backtick": [f"-use_fast_math`{evil}/wrap`"],
        ";": [f"-Xptxas=-v;{evil}/wrap"],
        "value with a space": ["-maxrregcount", f"32 -ccbin={evil}"],
        "newline": ["-Xptxas", f"-v\n-ccbin={evil}"],
    }[name]


@pytest.fixture
def evil(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """(folder of planted executables, the marker any of them writes when run)."""
    folder = tmp_path / "evil"
    folder.mkdir()
    marker = tmp_path / "EXECUTED"
    for name in HELPERS:
        script = folder / name
        script.write_text(f'#!/bin/sh\necho "$0 $*" >> "{marker}"\nexit 1\n')
        script.chmod(0o755)
    (folder / "evil.opts").write_text(f"-ccbin={folder}\n")
    (folder / "evil.h").write_text('#error "the injected header was included"\n')
    yield folder, marker
    assert not marker.exists(), f"an injected command ran: {marker.read_text()}"


class Recording:
    """The real process runner, remembering every command it is asked to start."""

    def __init__(self) -> None:
        self.real = ProcessRunner()
        self.started: list[tuple[str, ...]] = []

    def run(self, argv: Sequence[str], **options: Any) -> Completed:
        self.started.append(tuple(argv))
        return self.real.run(argv, **options)


# --- nvcc-opt import ------------------------------------------------------------------------


@pytest.mark.parametrize("name", ATTACKS)
def test_import_reports_the_entry_and_stores_nothing(
    name: str, evil: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    write_source(tmp_path)
    good = {"file": "src/k.cu", "region": "pair", "code": "// pair\n", "compile_args": ["-O3"]}
    bad = {
        "file": "src/k.cu",
        "region": "scale",
        "code": FAST_SCALE,
        "compile_args": attack(name, *evil),
    }
    bundle = tmp_path / "r.json"
    bundle.write_text(json.dumps({"rewrites": [good, bad]}, indent=2))
    db = tmp_path / "store.db"
    result = invoke(db, "import", str(bundle))
    assert result.exit_code == 1
    line = bundle.read_text().splitlines().index("    {", 3) + 1
    assert f"{bundle}:{line}: rewrites[1]: compile_args: " in result.output, result.output
    assert "is refused" in result.output and "Traceback" not in result.output
    assert not db.exists() or _stored(db) == []


def test_import_binds_a_gpu_target_to_the_entrys_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    write_source(tmp_path)
    own = ["-gencode=arch=compute_90a,code=sm_90a"]
    entry = {"file": "src/k.cu", "region": "scale", "code": FAST_SCALE, "compile_args": own}
    db = tmp_path / "store.db"
    bundle = tmp_path / "r.json"
    bundle.write_text(json.dumps({"rewrites": [{**entry, "targets": ["compute_80", "sm_80"]}]}))
    result = invoke(db, "import", str(bundle))
    assert result.exit_code == 1
    assert "this compile's GPU is sm_80: only its arch-specific variant sm_80a" in result.output
    bundle.write_text(json.dumps({"rewrites": [{**entry, "targets": ["compute_90", "sm_90"]}]}))
    assert invoke(db, "import", str(bundle)).exit_code == 0
    assert [r.compile_args for r in _stored(db)] == [("-gencode=arch=compute_90a,code=sm_90a",)]


def _stored(db: Path) -> list[Rewrite]:
    with Store.open(db) as store:
        return store.rewrites()


# --- the launcher: a store edited by hand, and candidate mode ---------------------------------


@needs_nvcc
def test_a_stored_rewrite_with_any_attack_is_not_applied_and_the_build_says_why(
    tmp_path: Path, exe: str, store_env: Path, evil: tuple[Path, Path]
) -> None:
    """One region per attack in one file, each with an accepted rewrite carrying that attack:
    one real compile shows every one refused (a flag conflict would also drop them, so each
    warning must say which argument is refused)."""
    source = tmp_path / "k.cu"
    source.write_text(
        "".join(
            f'// @optimize\nconst char* f{i}() {{ return "original-{i}"; }}\n'
            for i in range(len(ATTACKS))
        )
    )
    regions = scan(source.read_bytes()).regions
    ids = []
    with Store.open(store_env) as store:
        for i, (name, region) in enumerate(zip(ATTACKS, regions, strict=True)):
            rewrite, _ = store.add_rewrite(
                NewRewrite(
                    file=str(source.resolve()),
                    region_name=region.name,
                    region_hash=region.text_hash,
                    code=f'const char* f{i}() {{ return "rewritten-{i}"; }}\n',
                    compile_args=tuple(attack(name, *evil)),
                )
            )
            review.decide(store, rewrite.id, "accept", "test", force=True)
            ids.append(rewrite.id)
    done = run([exe, "nvcc", "-c", "k.cu", "-arch=sm_90", "-o", "k.o"], tmp_path)
    assert done.returncode == 0, done.stderr
    obj = (tmp_path / "k.o").read_bytes()
    assert b"rewritten-" not in obj
    assert all(f"original-{i}".encode() in obj for i in range(len(ATTACKS)))
    warnings = done.stderr.decode().splitlines()
    for rewrite_id in ids:
        mine = [w for w in warnings if f"rewrite #{rewrite_id} not applied: compile_args" in w]
        assert len(mine) == 1 and "is refused" in mine[0] and ": warning: nvcc-opt: " in mine[0]


@needs_nvcc
def test_a_stored_gpu_target_applies_only_to_a_build_for_that_gpu(
    tmp_path: Path, exe: str, store_env: Path
) -> None:
    source = tmp_path / "k.cu"
    source.write_text(SOURCE)
    region = next(r for r in scan(source.read_bytes()).regions if r.name == "variant")
    with Store.open(store_env) as store:
        rewrite, _ = store.add_rewrite(
            NewRewrite(
                file=str(source.resolve()),
                region_name="variant",
                region_hash=region.text_hash,
                code=REWRITE,
                compile_args=("-gencode=arch=compute_90a,code=sm_90a",),
            )
        )
        review.decide(store, rewrite.id, "accept", "test", force=True)
    done = run([exe, *COMPILE], tmp_path)  # -arch=sm_90
    assert done.returncode == 0, done.stderr
    assert b"variant-REWRITTEN" in (tmp_path / "k.o").read_bytes()
    eighty = [a.replace("sm_90", "sm_80") for a in COMPILE]
    done = run([exe, *eighty], tmp_path)
    assert done.returncode == 0, done.stderr
    assert b"variant-original" in (tmp_path / "k.o").read_bytes()
    assert b"this compile's GPU is sm_80: only its arch-specific variant sm_80a" in done.stderr


@needs_nvcc
@pytest.mark.parametrize("name", ATTACKS)
def test_a_candidate_with_any_attack_fails_closed(
    name: str, tmp_path: Path, exe: str, store_env: Path, evil: tuple[Path, Path]
) -> None:
    source = tmp_path / "k.cu"
    source.write_text(SOURCE)
    done = run([exe, *COMPILE], tmp_path, _candidate(tmp_path, source, attack(name, *evil)))
    assert done.returncode != 0
    assert b"bad candidate" in done.stderr and b"is refused" in done.stderr, done.stderr
    assert not (tmp_path / "k.o").exists()


@needs_nvcc
def test_a_candidate_may_take_only_its_own_gpus_arch_specific_variant(
    tmp_path: Path, exe: str, store_env: Path
) -> None:
    source = tmp_path / "k.cu"
    source.write_text(SOURCE)
    done = run([exe, *COMPILE], tmp_path, _candidate(tmp_path, source, ["-arch=sm_80a"]))
    assert done.returncode != 0 and b"only its arch-specific variant sm_90a" in done.stderr
    own = ["-gencode", "arch=compute_90a,code=sm_90a"]
    done = run([exe, *COMPILE], tmp_path, _candidate(tmp_path, source, own))
    assert done.returncode == 0, done.stderr
    assert b"variant-REWRITTEN" in (tmp_path / "k.o").read_bytes()


def _candidate(tmp_path: Path, source: Path, args: list[str]) -> dict[str, str]:
    region = next(r for r in scan(source.read_bytes()).regions if r.name == "variant")
    path = tmp_path / "candidate.json"
    candidate.write(str(path), str(source), region.text_hash, REWRITE, args)
    return {candidate.ENV: str(path)}


# --- the tools, the final verification, `nvcc-opt verify` and submit ---------------------------


@pytest.fixture(scope="module")
def hostapp(tmp_path_factory: pytest.TempPathFactory, exe: str) -> Iterator[Path]:
    """The host-code CMake project, built through the launcher (its run works without a GPU)."""
    root = tmp_path_factory.mktemp("hostapp")
    shutil.copytree(FIXTURE, root, dirs_exist_ok=True)
    mp = pytest.MonkeyPatch()
    mp.setenv("XDG_CACHE_HOME", str(root / "cache"))
    mp.setenv("NVCC_OPT_STORE", str(root / "state" / "store.db"))
    launcher = f"-DCMAKE_CUDA_COMPILER_LAUNCHER={exe}"
    build = root / "build"
    subprocess.run(["cmake", "-S", root, "-B", build, "-G", "Ninja", launcher], check=True)
    subprocess.run(["cmake", "--build", build], check=True, capture_output=True)
    yield root
    mp.undo()


def _bench(root: Path, runner: Recording, exe: str) -> Benchmark:
    region = Region.find(root / "src" / "work.cu", "accumulate")
    return Benchmark(load(root), region, runner, launcher=exe)


def _no_private_tree(root: Path) -> bool:
    return not (root / "cache" / "nvcc-opt" / "trees").exists()


@needs_nvcc
@pytest.mark.slow
@pytest.mark.parametrize("name", ATTACKS)
def test_benchmark_code_rejects_before_building_or_running(
    name: str, hostapp: Path, exe: str, evil: tuple[Path, Path]
) -> None:
    runner = Recording()
    with _bench(hostapp, runner, exe) as bench:
        text = Toolbox.from_objects(bench).call(
            "benchmark_code", {"code": HALF, "compile_args": attack(name, *evil)}
        )
    assert "verdict: rejected" in text and "  flags: compile_args: " in text, text
    assert "only code-generation options are allowed" in text
    assert runner.started == [] and _no_private_tree(hostapp)


@needs_nvcc
@pytest.mark.slow
@pytest.mark.parametrize("tool", ["compiler_analysis", "profile_kernel"])
@pytest.mark.parametrize("name", ATTACKS)
def test_analysis_and_profile_refuse_before_compiling(
    tool: str, name: str, hostapp: Path, exe: str, evil: tuple[Path, Path]
) -> None:
    runner = Recording()
    with _bench(hostapp, runner, exe) as bench:
        tools = Toolbox.from_objects(Analysis(bench), Profile(bench))
        text = tools.call(tool, {"code": HALF, "compile_args": attack(name, *evil)})
    assert is_error(text) and "compile_args: " in text and "is refused" in text, text
    assert "only code-generation options are allowed" in text
    assert runner.started == [] and _no_private_tree(hostapp)


@pytest.mark.parametrize("name", ATTACKS)
def test_microbench_refuses_before_compiling(
    name: str, tmp_path: Path, evil: tuple[Path, Path]
) -> None:
    runner = Recording()
    bench = Microbench(runner, tmp_path / "work")
    source = "int main() { return 0; }\n"
    text = Toolbox.from_objects(bench).call(
        "microbench_code", {"source": source, "compile_args": attack(name, *evil)}
    )
    assert is_error(text) and "only code-generation options are allowed" in text, text
    assert runner.started == []


@needs_nvcc
@pytest.mark.slow
def test_verify_rejects_stored_rewrites_with_attacks_and_records_it(
    hostapp: Path, exe: str, evil: tuple[Path, Path]
) -> None:
    """`nvcc-opt verify` of rewrites put in the store by hand: rejected, recorded, nothing run."""
    region = Region.find(hostapp / "src" / "work.cu", "accumulate")
    store_db = hostapp / "state" / "store.db"
    with Store.open(store_db) as store:
        ids = [
            store.add_rewrite(
                NewRewrite(
                    file=str(region.file),
                    region_name=region.name,
                    region_hash=region.text_hash,
                    code=HALF,
                    compile_args=tuple(attack(name, *evil)),
                )
            )[0].id
            for name in ATTACKS
        ]
    done = subprocess.run(
        [exe, "verify", *map(str, ids)], cwd=hostapp, capture_output=True, text=True
    )
    assert done.returncode == 1
    for rewrite_id in ids:
        assert f"#{rewrite_id}: rejected" in done.stdout, done.stdout + done.stderr
    assert done.stdout.count("  flags: compile_args: ") >= len(ids)
    with Store.open(store_db) as store:
        for rewrite_id in ids:
            last = store.rewrite(rewrite_id).last_verification
            assert last is not None and not last.passed
    assert _no_private_tree(hostapp)


@needs_nvcc
@pytest.mark.slow
def test_submit_never_stores_an_answer_with_an_attack(
    hostapp: Path, exe: str, tmp_path: Path, evil: tuple[Path, Path]
) -> None:
    """The final answer's path (optimize and MCP's submit): verified first, so rejected."""
    region = Region.find(hostapp / "src" / "work.cu", "accumulate")
    runner = Recording()
    with Store.open(tmp_path / "store.db") as store:
        for name in ATTACKS:
            answer = submit.Answer(HALF, "faster", tuple(attack(name, *evil)), "m", None, "test")
            done = submit.verify_and_store(
                store, load(hostapp), region, answer, runner=runner, launcher=exe
            )
            assert not done.stored and done.verdict.status == "rejected"
            assert any(r.startswith("flags: compile_args: ") for r in done.verdict.reasons)
        assert store.rewrites() == []
    assert runner.started == [] and _no_private_tree(hostapp)
