"""The object line (nvcc_opt/verify/objects.py) on real objects and PTX from real nvcc.

Every region of tests/fixtures/objects/ is spliced into unit.cu, each in a folder of its own
(the same file name in another folder, as the launcher's private copy of a candidate is), and
compiled once per session with `nvcc -c --keep` (the object and its PTX from one compile). The
original is compiled twice, and each candidate is compared with the first original; the second
original stands for a candidate identical to it.
"""

from __future__ import annotations

import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from nvcc_opt.verify import host_rules, objects, ptx_facts, ptx_rules
from nvcc_opt.verify.host_symbols import Elsewhere, HostSymbol, HostSymbols
from nvcc_opt.verify.object_names import in_library_scope, may_call, normalize, outer_scope
from nvcc_opt.workspace.runner import ProcessRunner, ScriptedRunner, completed
from tests.conftest import needs_nvcc

FIXTURES = Path(__file__).parent / "fixtures" / "objects"
FLAGS = ["-arch=sm_90", "-O3", "-std=c++17"]

HONEST = sorted(p.stem for p in FIXTURES.glob("honest__*.cu"))
# Each refused region and what its reasons must say (every fragment in some reason).
REFUSED = {
    "defines_reference": [
        "objects: defines _Z15check_referencePKfS0_i (check_reference(",
        "libreference.a[reference.o] defines too",
    ],
    "extern_c_printf": ["objects: defines printf with C linkage"],
    "atexit": ["(launch_scale(float const*, float*, float*, int)), ", "now use atexit"],
    "getenv": ["objects: uses getenv, which the original does not"],
    "token_pasted_getenv": ["objects: uses getenv, which the original does not"],
    "std_thread": ["objects: uses _ZNSt6thread15_M_start_thread", "objects: uses _Znwm"],
    "static_counter": ["objects: keeps writable data _ZZ12launch_scalePKfPfS1_iE5calls"],
    "static_malloc": ["objects: keeps writable data _ZL4seen", "objects: uses malloc"],
    "lambda_state": ["objects: keeps writable data _ZL9next_call"],
    "reused_copy": ["launch_scale(float const*, float*, float*, int)) now uses cudaMemcpy"],
    "file_state": ["now uses writable data _ZL6g_runs (g_runs) of the file"],
    "operator_new": ["objects: defines _Znwm (operator new(unsigned long)), which replaces"],
    "fake_clock": ["std::chrono::_V2::steady_clock::now()) in a namespace of the C++"],
    "constant_uploaded": ["uses _ZL6factor (factor), the host copy", "uses cudaMemcpyToSymbol"],
    "managed_flag": ["ptx: declares managed variable launches", "data _ZL8launches"],
    "device_flag": ["ptx: declares device variable done_flag", "writable data _ZL9done_flag"],
    "device_printf": ["calls external device function vprintf"],
    "clock64": ["reads special register %clock64"],
    "globaltimer": ["reads special register %globaltimer"],
    "nanosleep": ["uses nanosleep, which the original does not"],
    "evict_last": ["uses .L2::evict_last, which the original does not"],
}
KERNEL = "_Z23scale_shift_sums_kernelPKfPfS1_i (scale_shift_sums_kernel(float const*, float*"
# Builds without optimization and position-independent (inline functions kept as weak
# definitions, data reached through the GOT), and with relocatable device code (device
# variables become global names).
OTHER_FLAGS = {
    "O0-pic": ["-arch=sm_90", "-O0", "-std=c++17", "-Xcompiler", "-fPIC"],
    "rdc": ["-arch=sm_90", "-O3", "-std=c++17", "-rdc=true"],
}
OTHER_FLAG_REGIONS = [
    "original",
    "honest__constant_table",
    "honest__template_kernel",
    "refused__static_counter",
    "refused__reused_copy",
]


@dataclass(frozen=True)
class Compiled:
    obj: Path
    keep: Path  # nvcc's intermediates: the PTX


def _splice(region: str) -> str:
    unit = (FIXTURES / "unit.cu").read_text()
    return unit.replace("// REGION\n", (FIXTURES / f"{region}.cu").read_text())


def _compile(root: Path, label: str, region: str, flags: list[str]) -> Compiled:
    folder = root / label
    folder.mkdir(parents=True)
    (folder / "unit.cu").write_text(_splice(region))
    shutil.copy(FIXTURES / "reference.h", folder)
    argv = ["nvcc", *flags, "-c", "unit.cu", "-o", "unit.o", "--keep", "--keep-dir", "."]
    done = subprocess.run(argv, cwd=folder, capture_output=True, text=True)
    assert done.returncode == 0, f"{region}: {done.stderr}"
    return Compiled(folder / "unit.o", folder)


@pytest.fixture(scope="session")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Compiled]:
    root = tmp_path_factory.mktemp("objects")
    jobs = {"original": ("original", FLAGS), "original_again": ("original", FLAGS)}
    jobs |= {name: (name, FLAGS) for name in HONEST}
    jobs |= {f"refused__{name}": (f"refused__{name}", FLAGS) for name in REFUSED}
    for label, flags in OTHER_FLAGS.items():
        jobs |= {f"{label}/{region}": (region, flags) for region in OTHER_FLAG_REGIONS}
        jobs[f"{label}/original_again"] = ("original", flags)
    with ThreadPoolExecutor(max_workers=2) as pool:  # the machine's cores are shared
        futures = {
            label: pool.submit(_compile, root, label, region, flags)
            for label, (region, flags) in jobs.items()
        }
        return {label: future.result() for label, future in futures.items()}


@pytest.fixture(scope="session")
def build(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """The rest of the program: a static library with the CPU check, and main's object."""
    folder = tmp_path_factory.mktemp("build")
    for source in ("reference.cpp", "main.cpp"):
        argv = ["g++", "-O2", "-c", str(FIXTURES / source), "-o", source.replace(".cpp", ".o")]
        subprocess.run(argv, cwd=folder, check=True)
    subprocess.run(["ar", "rcs", "libreference.a", "reference.o"], cwd=folder, check=True)
    (folder / "reference.o").unlink()
    return [folder / "libreference.a", folder / "main.o"]


def _reasons(
    compiled: dict[str, Compiled], build: list[Path], label: str, original: str = "original"
) -> list[str]:
    runner = ProcessRunner()
    candidate = compiled[label]
    original_compiled = compiled[original]
    return objects.object_reasons(
        original_compiled.obj,
        candidate.obj,
        objects.ptx_texts(original_compiled.keep),
        objects.ptx_texts(candidate.keep),
        objects.defined_elsewhere(build, runner),
        runner,
    )


@needs_nvcc
def test_the_original_compiled_again_gives_no_reason(
    compiled: dict[str, Compiled], build: list[Path]
) -> None:
    assert _reasons(compiled, build, "original_again") == []


@needs_nvcc
@pytest.mark.parametrize("label", HONEST)
def test_an_honest_rewrite_gives_no_reason(
    compiled: dict[str, Compiled], build: list[Path], label: str
) -> None:
    assert _reasons(compiled, build, label) == []


@needs_nvcc
@pytest.mark.parametrize("name", sorted(REFUSED))
def test_a_cheat_gives_its_reason(
    compiled: dict[str, Compiled], build: list[Path], name: str
) -> None:
    reasons = _reasons(compiled, build, f"refused__{name}")
    for fragment in REFUSED[name]:
        assert any(fragment in reason for reason in reasons), (fragment, reasons)
    assert all(r.startswith(("objects: ", "ptx: ")) for r in reasons)


@needs_nvcc
@pytest.mark.parametrize("flags", sorted(OTHER_FLAGS))
def test_other_builds_tell_the_same(
    compiled: dict[str, Compiled], build: list[Path], flags: str
) -> None:
    def reasons(label: str) -> list[str]:
        return _reasons(compiled, build, f"{flags}/{label}", original=f"{flags}/original")

    assert reasons("original_again") == []
    assert reasons("honest__constant_table") == []
    assert reasons("honest__template_kernel") == []
    assert any(
        "keeps writable data _ZZ12launch_scale" in r for r in reasons("refused__static_counter")
    )
    assert any("now uses cudaMemcpy" in r for r in reasons("refused__reused_copy"))


@needs_nvcc
def test_device_reasons_name_the_kernel(compiled: dict[str, Compiled], build: list[Path]) -> None:
    for name in ("device_flag", "device_printf", "clock64", "nanosleep", "evict_last"):
        reasons = [r for r in _reasons(compiled, build, f"refused__{name}") if r.startswith("ptx")]
        assert reasons and all(KERNEL in r for r in reasons), reasons


@needs_nvcc
def test_the_host_copy_of_a_constant_table_is_registered_and_nothing_else(
    compiled: dict[str, Compiled],
) -> None:
    host = objects.read_host(compiled["honest__constant_table"].obj, ProcessRunner())
    ptx = ptx_facts.ptx_facts(objects.ptx_texts(compiled["honest__constant_table"].keep))
    assert host.defined["_ZL13kCoefficients"].writable
    assert "kCoefficients" in ptx.read_only_variables()
    assert {"_Z12launch_scalePKfPfS1_i"}.isdisjoint(host.referrers("_ZL13kCoefficients"))


@needs_nvcc
def test_elsewhere_names_archive_members_and_leaves_out_excluded_objects(
    build: list[Path], tmp_path: Path
) -> None:
    runner = ProcessRunner()
    found = objects.defined_elsewhere(build, runner)
    assert str(found["_Z15check_referencePKfS0_i"]).endswith("libreference.a[reference.o]")
    assert found["main"].where == str(build[1])
    assert not found["_Z15check_referencePKfS0_i"].weak
    excluded = objects.defined_elsewhere(build, runner, exclude=[tmp_path / "reference.o"])
    assert "_Z15check_referencePKfS0_i" not in excluded and "main" in excluded


def _symbol(raw: str, letter: str, size: int = 16) -> HostSymbol:
    return HostSymbol(raw, letter, ".text", 0, size, letter in "TtW")


def _host(*symbols: HostSymbol) -> HostSymbols:
    return HostSymbols({normalize(s.raw): s for s in symbols}, {}, {})


def test_a_weak_definition_others_share_must_have_their_size() -> None:
    original = _host()
    inline = _symbol("_Z10num_blocksi", "W", 16)
    shared = {"_Z10num_blocksi": Elsewhere("main.o", weak=True, size=16)}
    assert host_rules.host_reasons(original, _host(inline), shared) == []
    other_size = {"_Z10num_blocksi": Elsewhere("main.o", weak=True, size=48)}
    assert host_rules.host_reasons(original, _host(inline), other_size) == [
        "objects: defines _Z10num_blocksi, which main.o defines too: the linker keeps one of "
        "them for the whole program"
    ]
    strong = {"_Z10num_blocksi": Elsewhere("main.o", weak=False, size=16)}
    assert host_rules.host_reasons(original, _host(inline), strong)


def test_library_instantiations_may_be_weak_but_never_strong() -> None:
    vector = _symbol(
        "_ZNSt6vectorIfSaIfEE17_M_realloc_insertIJRKfEEEvN9__gnu_cxx17__normal_iteratorIPfS1_EEDpOT_",
        "W",
    )
    dim3 = _symbol("_ZN4dim3C1Ejjj", "W")
    elsewhere = {s.raw: Elsewhere("main.o", weak=True, size=99) for s in (vector, dim3)}
    assert host_rules.host_reasons(_host(), _host(vector, dim3), elsewhere) == []
    strong = _symbol("_ZNSt6chrono3_V212steady_clock3nowEv", "T")
    assert (
        "in a namespace of the C++ or CUDA libraries"
        in host_rules.host_reasons(_host(), _host(strong), {})[0]
    )


def test_names_are_normalized_where_nvcc_writes_a_compile_or_a_path() -> None:
    assert normalize("_GLOBAL__sub_I_tmpxft_0000159e_00000000-6_w.cudafe1.cpp") == (
        "_GLOBAL__sub_I_"
    )
    first = "_ZN37_GLOBAL__N__7cae10d3_5_ns_cu_e5469d91L1wE"
    second = "_ZN37_GLOBAL__N__942239fd_5_ns_cu_0a1b2c3dL1wE"
    assert normalize(first) == normalize(second) != first
    assert len(normalize(first)) == len(first)  # the length prefixes stay right
    static = "__nv_static_24__5c8d0840_5_an_cu__Z1fPf__Z2skPf"
    assert normalize(static) == "__nv_static_24__xxxxxxxx_5_an_cu__Z1fPf__Z2skPf"
    assert normalize("_Z1fPf") == "_Z1fPf"


def test_mangled_scopes() -> None:
    assert outer_scope("_ZNKSt6vectorIiSaIiEE4sizeEv") == "std"
    assert outer_scope("_ZN4dim3C1Ejjj") == "dim3"
    assert outer_scope("_ZN6thrust6detail5mergeEv") == "thrust"
    assert outer_scope("_ZL5table") == "table"
    assert outer_scope("_Znwm") == "nw"
    assert outer_scope("printf") is None
    assert in_library_scope("_ZSt4sortIPfEvT_S1_") and not in_library_scope("_Z4sortPf")


def test_the_call_allowlist() -> None:
    assert may_call("cudaLaunchKernel") and may_call("cudaLaunchKernel_ptsz")
    assert may_call("__cudaRegisterLinkedBinary_") and may_call("sqrtf") and may_call("fprintf")
    for name in ("cudaMemcpy", "cudaMemcpy_ptds", "getenv", "printf", "stdout", "lgammaf"):
        assert not may_call(name), name


PTX = """
.version 9.0
.target sm_90
.address_size 64

.extern .func  (.param .b32 func_retval0) vprintf
(
	.param .b64 vprintf_param_0,
	.param .b64 vprintf_param_1
)
;
.global .align 4 .b8 table[16] = {0, 0, 128, 63, 0, 0, 0, 64, 0, 0, 64, 64, 0, 0, 128, 64};
.global .align 4 .u32 counter;
.global .align 8 .u64 leaked;
.global .align 1 .b8 $str[3] = {104, 105, 0};
.const .align 4 .b8 coefficients[8];

.visible .entry kernel(
	.param .u64 kernel_param_0
)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<8>;
	.reg .b64 	%rd<12>;

	ld.param.u64 	%rd1, [kernel_param_0];
	mov.u32 	%r1, %tid.x;
	mul.wide.u32 	%rd2, %r1, 4;
	mov.u64 	%rd3, table;
	add.s64 	%rd4, %rd3, %rd2;
	ld.global.u32 	%r2, [%rd4];
	// a comment naming %clock64 is not code
	atom.global.add.u32 	%r3, [counter], 1;
	mov.u64 	%rd5, leaked;
	cvta.global.u64 	%rd6, %rd5;
	st.global.u64 	[%rd1], %rd6;
	mov.u32 	%r4, %envreg3;
	{ .reg .b64 %tmp;
	cvt.u64.u32 	%tmp, %r4;
	}
	mov.u64 	%rd7, $str;
	cvta.global.u64 	%rd8, %rd7;
	{ // callseq 0, 0
	.param .b64 param0;
	st.param.b64 	[param0+0], %rd8;
	.param .b64 param1;
	st.param.b64 	[param1+0], 0;
	.param .b32 retval0;
	call.uni (retval0),
	vprintf,
	(
	param0,
	param1
	);
	}
	@%p1 bra 	$L__BB0_2;
	ld.global.L2::cache_hint.u32 	%r5, [%rd1], %rd9;
$L__BB0_2:
	ret;
}
"""


def test_ptx_facts_from_text() -> None:
    facts = ptx_facts.ptx_facts(PTX)
    variables = facts.variables
    assert variables["table"].read_only  # its address only feeds a load
    assert variables["counter"].writers == {"kernel"}  # an atomic writes it
    assert variables["leaked"].writers == {"kernel"}  # its address is stored: it escapes
    assert variables["$str"].read_only  # passed to an external function only: printf's format
    assert variables["coefficients"].read_only  # constant memory: no device code writes it
    assert facts.externs == {"vprintf": {"kernel"}}
    assert set(facts.special) == {"%tid", "%envreg3"}  # %tmp and %r4 are declared
    assert facts.policies == {".L2::cache_hint": {"kernel"}}


def test_ptx_reasons_compare_with_the_original() -> None:
    original = ptx_facts.ptx_facts(PTX.replace("%envreg3", "%laneid"))
    candidate = ptx_facts.ptx_facts(PTX)
    assert ptx_rules.ptx_reasons(candidate, candidate) == []
    assert ptx_rules.ptx_reasons(original, candidate) == [
        "ptx: kernel reads special register %envreg3, which the original does not (timers, "
        "environment and performance-monitor registers are not allowed)"
    ]
    empty = ptx_facts.ptx_facts(".version 9.0\n.target sm_90\n.address_size 64\n")
    reasons = ptx_rules.ptx_reasons(empty, candidate)
    assert any(r.startswith("ptx: declares device variable counter") for r in reasons)
    assert any(r.startswith("ptx: declares device variable leaked") for r in reasons)
    assert not any("table" in r or "$str" in r for r in reasons)
    assert any("calls external device function vprintf" in r for r in reasons)
    assert any("uses .L2::cache_hint" in r for r in reasons)


def test_a_read_only_device_variable_the_rewrite_now_writes() -> None:
    written = PTX.replace("ld.global.u32 \t%r2, [%rd4];", "st.global.u32 \t[%rd4], %r1;")
    reasons = ptx_rules.ptx_reasons(ptx_facts.ptx_facts(PTX), ptx_facts.ptx_facts(written))
    assert reasons == [
        "ptx: kernel now writes device variable table, which the original only read: state "
        "kept across launches"
    ]


def test_a_tool_that_fails_names_the_object() -> None:
    runner = ScriptedRunner([completed(1, "", "nm: 'x.o': No such file\n")])
    with pytest.raises(objects.ObjectsError, match=r"x\.o: nm failed: nm: 'x.o': No such file"):
        objects.read_host(Path("/build/x.o"), runner)


def test_linkable_files_skip_compiler_identification_and_private_copies(tmp_path: Path) -> None:
    for name in (
        "CMakeFiles/app.dir/src/a.cu.o",
        "CMakeFiles/3.28.1/CompilerIdCUDA/tmp/a.o",
        "src/.nvcc-opt/a.cu.o/a.cu",
        "libkernels.a",
        "lib/libshared.so.1",
        "app",
    ):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    found = [p.relative_to(tmp_path).as_posix() for p in objects.linkable_files(tmp_path)]
    assert found == ["CMakeFiles/app.dir/src/a.cu.o", "lib/libshared.so.1", "libkernels.a"]
