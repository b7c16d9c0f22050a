"""The compile_args allowlist: every spelling nvcc 13 accepts of the allowed options, every other
option of nvcc's own table refused in every spelling, GPU targets bound to the compile's own,
and real nvcc compiling with every accepted spelling."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from nvcc_opt import flags
from nvcc_opt.launcher import argv
from nvcc_opt.launcher.option_table import ALL_OPTIONS, Opt
from tests.conftest import needs_nvcc

HOPPER = ("compute_90", "sm_90")  # what `-arch=sm_90` normalises to (CompileJob.targets)

ACCEPTED: list[list[str]] = [
    ["-use_fast_math"],
    ["--use_fast_math"],
    ["-ftz=true"],
    ["-ftz", "false"],
    ["--ftz=false"],
    ["--ftz", "true"],
    ["-prec-div=false"],
    ["--prec-div", "true"],
    ["-prec-sqrt", "false"],
    ["--prec-sqrt=true"],
    ["-fmad=false"],
    ["--fmad", "true"],
    ["-maxrregcount=64"],
    ["-maxrregcount", "1"],
    ["--maxrregcount=255"],
    ["--maxrregcount", "32"],
    ["-Xptxas", "-v"],
    ["-Xptxas=-O3"],
    ["-Xptxas", "-O0,-v,--warn-on-spills"],
    ["--ptxas-options=--verbose,-warn-spills,-warn-lmem-usage"],
    ["--ptxas-options", "--warn-on-local-memory-usage"],
    ["-Xptxas", "--allow-expensive-optimizations=true"],
    ["-Xptxas=-allow-expensive-optimizations=false"],
    ["-Xptxas=-dlcm=ca,-dlcm=cg,-dlcm=cs,-dlcm=lu,-dlcm=cv"],
    ["-Xptxas=--def-load-cache=cg"],
    ["-Xptxas=-dscm=cg,-dscm=cs,-dscm=wb,-dscm=wt"],
    ["-Xptxas=--def-store-cache=wt"],
    ["-Xptxas", "-maxrregcount=40"],
    ["-Xptxas", "--maxrregcount=40,--opt-level=2"],
    ["-lineinfo"],
    ["--generate-line-info"],
    ["-restrict"],
    ["--restrict"],
    ["-extra-device-vectorization"],
    ["--extra-device-vectorization"],
    ["-O0"],
    ["-O3"],
    ["-O=2"],
    ["-O", "1"],
    ["--optimize=3"],
    ["--optimize", "2"],
    ["--expt-relaxed-constexpr"],
    ["-expt-relaxed-constexpr"],
    ["--extended-lambda"],
    ["-extended-lambda"],
    ["--expt-extended-lambda"],
    ["-expt-extended-lambda"],
    ["-dopt=on"],
    ["-dopt", "on"],
    ["--dopt=on"],
    ["-arch=sm_90a"],
    ["-arch", "sm_90a"],
    ["--gpu-architecture=sm_90a"],
    ["--gpu-architecture", "sm_90a"],
    ["-gencode=arch=compute_90a,code=sm_90a"],
    ["-gencode", "arch=compute_90a,code=sm_90a"],
    ["--generate-code=arch=compute_90a,code=sm_90a"],
    ["--generate-code", "arch=compute_90a,code=sm_90a"],
    ["-use_fast_math", "-Xptxas", "-O3", "-maxrregcount", "32", "-lineinfo"],
]

EVIL = "/tmp/evil"
REFUSED: list[tuple[list[str], str]] = [
    (["-ccbin", EVIL], "'-ccbin' is refused: not an option"),
    ([f"-ccbin={EVIL}/g++"], "not an option"),
    ([f"--compiler-bindir={EVIL}"], "not an option"),
    (["--compiler-bindir", EVIL], "not an option"),
    (["-Xcompiler", f"-B{EVIL}/"], "'-Xcompiler' is refused"),
    ([f"-Xcompiler=-B{EVIL}/"], "not an option"),
    (["-Xcompiler", f"-wrapper,{EVIL}/wrap"], "not an option"),
    ([f"--compiler-options=-fplugin={EVIL}/p.so"], "not an option"),
    ([f"-Xcompiler=-fplugin={EVIL}/p.so"], "not an option"),
    (["--options-file", f"{EVIL}/opts"], "not an option"),
    ([f"-optf={EVIL}/opts"], "not an option"),
    ([f"@{EVIL}/opts"], "not an option"),
    (["-o", f"{EVIL}/x.o"], "not an option"),
    ([f"--output-file={EVIL}/x.o"], "not an option"),
    ([f"-odir={EVIL}"], "not an option"),
    (["--output-directory", EVIL], "not an option"),
    (["--keep"], "not an option"),
    ([f"--keep-dir={EVIL}"], "not an option"),
    (["-save-temps"], "not an option"),
    (["--dryrun"], "not an option"),
    (["-dryrun"], "not an option"),
    (["-E"], "not an option"),
    (["-M"], "not an option"),
    (["-MD"], "not an option"),
    ([f"-MF{EVIL}/d"], "not an option"),
    (["-run"], "not an option"),
    (["--run-args", "x"], "not an option"),
    (["-Xnvlink", "-v"], "not an option"),
    (["-Xlinker", f"-plugin={EVIL}/p.so"], "not an option"),
    (["--linker-options=-v"], "not an option"),
    (["-Xarchive", "x"], "not an option"),
    (["-lcublas"], "not an option"),
    (["-L", EVIL], "not an option"),
    (["-DNDEBUG"], "not an option"),
    (["-D", "X=1"], "not an option"),
    (["--define-macro=X"], "not an option"),
    (["-UNDEBUG"], "not an option"),
    ([f"-I{EVIL}"], "not an option"),
    (["-include", f"{EVIL}/h.h"], "not an option"),
    ([f"--pre-include={EVIL}/h.h"], "not an option"),
    ([f"-isystem{EVIL}"], "not an option"),
    (["-G"], "not an option"),
    (["-g"], "not an option"),
    (["-std=c++20"], "not an option"),
    (["--std", "c++20"], "not an option"),
    (["-x", "cu"], "not an option"),
    (["-c"], "not an option"),
    (["-rdc=true"], "not an option"),
    (["-forward-unknown-to-host-compiler"], "not an option"),
    (["-fno-inline"], "not an option"),
    (["-code=sm_90a"], "not an option"),
    (["-v"], "not an option"),
    (["k.cu"], "not an option: a value"),
    (["-use_fast_math", "x"], "'x' is refused: not an option: a value"),
    (["-DX=$(touch /tmp/m)"], "it holds '$'"),
    (["-use_fast_math`touch /tmp/m`"], "it holds '`'"),
    (["-use_fast_math;touch /tmp/m"], "it holds ';'"),
    (["-use_fast_math|x"], "it holds '|'"),
    (["-use_fast_math&&x"], "it holds '&'"),
    (["-use_fast_math>x"], "it holds '>'"),
    (["-use_fast_math<x"], "it holds '<'"),
    (["-use_fast_math\\"], "it holds '\\\\'"),
    (['-use_fast_math"'], "it holds '\"'"),
    (["-use_fast_math'"], 'it holds "\'"'),
    (["-use_fast_math -ccbin=x"], "it holds ' '"),
    (["-use_fast_math\t"], "it holds '\\t'"),
    (["-use_fast_math\n-ccbin=x"], "it holds '\\n'"),
    (["-use_fast_math\0"], "it holds '\\x00'"),
    (["-use_fast_math\u00a0"], "it holds '\\xa0'"),
    (["-use_fast_math=true"], "not an option"),
    (["-lineinfo=1"], "not an option"),
    (["-Use_fast_math"], "not an option"),
    (["-use-fast-math"], "not an option"),
    (["--lineinfo"], "not an option"),
    (["-ftz"], "-ftz needs a value"),
    (["-ftz=1"], "-ftz takes true or false"),
    (["-ftz=TRUE"], "-ftz takes true or false"),
    (["-ftz", "-ccbin=x"], "-ftz takes true or false"),
    (["-maxrregcount=0"], "integer from 1 to 255"),
    (["-maxrregcount=256"], "integer from 1 to 255"),
    (["-maxrregcount=064"], "integer from 1 to 255"),
    (["-maxrregcount=３２"], "integer from 1 to 255"),
    (["-maxrregcount", f"32 -ccbin={EVIL}"], "it holds"),
    (["-maxrregcount"], "needs a value"),
    (["-maxrregcount32"], "not an option"),
    (["-O4"], "-O takes 0, 1, 2 or 3"),
    (["-Ofast"], "-O takes 0, 1, 2 or 3"),
    (["-O", "-ccbin=x"], "-O takes 0, 1, 2 or 3"),
    (["--optimize3"], "not an option"),
    (["-dopt=off"], "-dopt takes on"),
    (["-Xptxas"], "needs a value"),
    (["-Xptxas=-O4"], "'-O4' is not an allowed ptxas option"),
    (["-Xptxas", "-v,"], "'' is not an allowed ptxas option"),
    (["-Xptxas=-v,-o,/tmp/x"], "'-o' is not an allowed ptxas option"),
    (["-Xptxas", "--allow-expensive-optimizations"], "not an allowed ptxas option"),
    (["-Xptxas=-dscm=ca"], "'-dscm=ca' is not an allowed ptxas option"),
    (["-Xptxas=-dlcm=wb"], "not an allowed ptxas option"),
    (["-Xptxas=-maxrregcount=0"], "not an allowed ptxas option"),
    (["-Xptxas=-arch=sm_80"], "not an allowed ptxas option"),
    (["-Xptxas=-g"], "not an allowed ptxas option"),
    (["-Xptxas", "-use_fast_math"], "not an allowed ptxas option"),
    (["-arch=sm_90"], "takes only sm_XXa"),
    (["-arch=compute_90a"], "takes only sm_XXa"),
    (["-arch=native"], "takes only sm_XXa"),
    (["-arch=sm_a"], "takes only sm_XXa"),
    (["-arch=sm_90aa"], "takes only sm_XXa"),
    (["-arch", "sm_90a,sm_80a"], "takes only sm_XXa"),
    (["-gencode=arch=compute_90,code=sm_90"], "takes only arch=compute_XXa,code=sm_XXa"),
    (["-gencode=arch=compute_90a,code=sm_80a"], "takes only arch=compute_XXa,code=sm_XXa"),
    (["-gencode=arch=compute_90a,code=[sm_90a]"], "it holds '['"),
    (["-gencode=arch=compute_90a,code=sm_90a,code=compute_90a"], "takes only arch="),
    (["-gencode=arch=compute_90a"], "takes only arch=compute_XXa,code=sm_XXa"),
]


@pytest.mark.parametrize("args", ACCEPTED, ids=" ".join)
def test_code_generation_options_are_allowed_in_every_spelling(args: list[str]) -> None:
    assert flags.refused(args) == []
    assert flags.refused(args, HOPPER) == []
    flags.check(args, HOPPER)


@pytest.mark.parametrize(("args", "why"), REFUSED, ids=lambda v: repr(v)[:60])
def test_everything_else_is_refused_with_a_reason(args: list[str], why: str) -> None:
    for targets in (None, HOPPER):
        reasons = flags.refused(args, targets)
        assert reasons and all(r.startswith("compile_args: ") for r in reasons)
        assert any(why in r for r in reasons), reasons
        assert flags.ALLOWED in reasons[0]
    with pytest.raises(flags.FlagError) as raised:
        flags.check(args)
    assert raised.value.reasons == tuple(flags.refused(args))
    assert str(raised.value) == "\n".join(flags.refused(args))


def test_one_reason_per_refused_argument_and_allowed_ones_in_between_pass() -> None:
    args = ["-use_fast_math", "-Xcompiler", f"-B{EVIL}/", "-maxrregcount", "300", "-lineinfo"]
    reasons = flags.refused(args)
    assert [r.split(" is refused")[0] for r in reasons] == [
        "compile_args: '-Xcompiler'",
        f"compile_args: '-B{EVIL}/'",
        "compile_args: '-maxrregcount 300'",
    ]
    assert sum(flags.ALLOWED in r for r in reasons) == 1  # said once, in the first


def test_data_that_is_not_a_list_of_strings_is_refused() -> None:
    """A store edited by hand can hold anything its JSON can."""
    assert flags.refused([64]) == [  # type: ignore[list-item]
        f"compile_args: '64' is refused: not a string but int; {flags.ALLOWED}"
    ]
    assert flags.refused(["-maxrregcount", 64])  # type: ignore[list-item]
    assert flags.refused("-use_fast_math") == []  # one string: one argument, not characters
    assert flags.refused("-ccbin=/x")


@pytest.mark.parametrize(
    ("targets", "allowed"),
    [
        (HOPPER, True),
        (("sm_90",), True),  # -code=sm_90
        (("compute_90a", "sm_90a"), True),
        (("compute_90", "sm_90", "sm_90a"), True),
        (("compute_80", "sm_80"), False),
        (("compute_80", "compute_90", "sm_80", "sm_90"), False),  # one added target would drop one
        ((), False),  # nvcc's default architecture: not known here
        (("native",), False),
        (("all",), False),
        (("compute_100f", "sm_100f"), False),
    ],
)
def test_a_gpu_target_is_only_the_arch_specific_variant_of_the_compiles_own(
    targets: tuple[str, ...], allowed: bool
) -> None:
    for args in (["-arch=sm_90a"], ["-gencode", "arch=compute_90a,code=sm_90a"]):
        assert (flags.refused(args, targets) == []) is allowed, (args, targets)
        assert flags.refused(args) == []  # no build at hand: the syntax only


def test_the_reason_names_the_variant_the_compile_may_take() -> None:
    (reason,) = flags.refused(["-arch=sm_80a"], HOPPER)
    assert "this compile's GPU is sm_90: only its arch-specific variant sm_90a" in reason
    (reason,) = flags.refused(["-arch=sm_90a"], ("compute_80", "compute_90", "sm_80", "sm_90"))
    assert "compute_80, compute_90, sm_80, sm_90" in reason and "not one architecture" in reason
    (reason,) = flags.refused(["-arch=sm_90a"], ())
    assert "nvcc's default GPU architecture" in reason


ALLOWED_NAMES = {a for args in ACCEPTED for a in args if a.startswith("-")}
ALLOWED_NAMES |= {a.split("=")[0] for a in ALLOWED_NAMES}


@pytest.mark.parametrize(
    "opt", [o for o in ALL_OPTIONS if {o.long, o.short}.isdisjoint(ALLOWED_NAMES)]
)
def test_every_other_option_of_nvccs_table_is_refused_in_every_spelling(opt: Opt) -> None:
    """Measured against the launcher's table of nvcc 13's options, not a list of known attacks."""
    for name in filter(None, (opt.long, opt.short)):
        for args in ([name], [f"{name}=1"], [name, "1"], [f"{name}1"]):
            assert flags.refused(args), args


@pytest.mark.parametrize("args", ACCEPTED, ids=" ".join)
def test_allowed_flags_never_change_what_the_launcher_reads_of_a_compile(args: list[str]) -> None:
    """Appended to a compile (as the launcher does), allowed flags leave it a compile of the same
    source to the same object, with the same host compiler, depfile and no options file."""
    base = ["-c", "k.cu", "-o", "k.o", "-MD", "-MF", "k.d", "-arch=sm_90"]
    plain = argv.parse(base, _no_file, "/w")
    job = argv.parse([*base, *args], _no_file, "/w")
    assert isinstance(plain, argv.CompileJob) and isinstance(job, argv.CompileJob), job
    kept = ("source", "output", "depfile", "depfile_mode", "host_compiler", "options_files")
    assert [getattr(job, k) for k in kept] == [getattr(plain, k) for k in kept]


def _no_file(path: str) -> str:
    raise OSError(f"no options file may be read: {path}")


@needs_nvcc
def test_real_nvcc_accepts_every_allowed_spelling(tmp_path: Path) -> None:
    """One compile per spelling would take minutes: nvcc stops at the first option it does not
    take, so compiles with all of them (in a few groups: -O levels and targets repeat) prove it."""
    (tmp_path / "k.cu").write_text(
        "__global__ void k(float* a, float b) { a[threadIdx.x] = sqrtf(a[threadIdx.x]) / b; }\n"
    )
    everything = [a for args in ACCEPTED for a in args]
    for group in (everything[: len(everything) // 2], everything[len(everything) // 2 :]):
        command = ["nvcc", "-c", "k.cu", "-o", "k.o", "-arch=sm_90", *group]
        done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True)
        assert done.returncode == 0, (command, done.stderr)
        assert "fatal" not in done.stderr and "Unknown option" not in done.stderr, done.stderr


def test_importing_the_allowlist_costs_the_launcher_no_heavy_module() -> None:
    code = (
        "import sys\nimport nvcc_opt.flags\n"
        "print(sorted(m for m in ('re', 'typing', 'enum', 'pydantic', 'json') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
