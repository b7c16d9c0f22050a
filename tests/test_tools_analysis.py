"""compiler_analysis: the parsers on real ptxas and PTX output of nvcc 13.0, occupancy against
hand-computed values, and the tool end to end on real CMake projects through the launcher."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from nvcc_opt.config import load
from nvcc_opt.search.observe import read_analysis
from nvcc_opt.toolbox.schema import Toolbox, is_error
from nvcc_opt.tools import ptxas
from nvcc_opt.tools.analysis import NO_KERNELS, Analysis
from nvcc_opt.tools.bench import Benchmark
from nvcc_opt.tools.region import Region
from nvcc_opt.workspace.runner import ProcessRunner
from nvcc_opt.workspace.unit import UnitError, analysis_command, compile_command
from tests.conftest import needs_nvcc

FIXTURES = Path(__file__).parent / "fixtures"
CAPTURED = FIXTURES / "kernelapp" / "captured"  # compiler output, verbatim

# nvcc 13.0: `nvcc -O3 -arch=sm_90 -Xptxas -v -maxrregcount=16 -c spilling.cu`
SPILLING = (CAPTURED / "spilling.txt").read_text()

# nvcc 13.0: `nvcc -O3 -rdc=true -Xptxas -v -c rdc.cu` for compute_80/sm_80 and compute_90/sm_90
TWO_ARCHS = (CAPTURED / "two_archs.txt").read_text()

# nvcc 13.0 `--keep`: the PTX of a kernel copying float4 through shared memory (shortened).
PTX = """\
.version 9.0
.target sm_90
.address_size 64

.extern .func  (.param .b32 func_retval0) vprintf
(
\t.param .b64 vprintf_param_0
)
;
.visible .entry _Z5tiledPK6float4PS_i(
\t.param .u64 _Z5tiledPK6float4PS_i_param_0,
\t.param .u32 _Z5tiledPK6float4PS_i_param_2
)
.maxntid 256, 1, 1
{
\t.reg .pred \t%p<3>;
\tld.param.u64 \t%rd1, [_Z5tiledPK6float4PS_i_param_0];
\tsetp.ge.s32 \t%p1, %r2, %r3;
\t@%p1 bra \t$L__BB1_2;

\tld.global.nc.v4.u32 \t{%r9, %r10, %r11, %r12}, [%rd5];
\tst.shared.v4.u32 \t[%r8], {%r9, %r10, %r11, %r12};

$L__BB1_2:
\tbar.sync \t0;
\tld.shared.v4.u32 \t{%r22, %r23, %r24, %r25}, [%r21];
\tst.global.v4.u32 \t[%rd8], {%r22, %r23, %r24, %r25};
\tld.local.f64 \t%fd1, [%rd9];
\tret;

}
"""

# cuobjdump -sass's layout (cuobjdump is not installed on the build machine: written by hand).
SASS = """
Fatbin elf code:
================
arch = sm_90
code version = [1,8]

\tcode for sm_90
\t.target\tsm_90

\t\tFunction : _Z5tiledPK6float4PS_i
\t.headerflags\t@"EF_CUDA_SM90 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)"
        /*0000*/                   LDC R1, c[0x0][0x28] ;      /* 0x00000a00ff017b82 */
                                                               /* 0x000ff00000000800 */
        /*0010*/                   LDG.E.128.CONSTANT R4, desc[UR4][R2.64] ;
        /*0020*/              @!P0 BRA 0x50 ;                  /* 0x0000002000008947 */
        /*0030*/                   STS.128 [R0], R4 ;
        /*0040*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;
        /*0050*/                   STL.64 [R1], R8 ;
        /*0060*/                   LDL.64 R8, [R1] ;
        /*0070*/                   FFMA R6, R0, R4, R5 ;
        /*0080*/                   FFMA R7, R6, R4, R5 ;
        /*0090*/                   STG.E desc[UR4][R2.64], R7 ;
        /*00a0*/                   EXIT ;
\t\t..........
"""


def test_ptxas_kernels_with_spills_registers_shared_memory_and_warnings() -> None:
    report = ptxas.parse_ptxas(SPILLING)
    by_name = {f.name: f for f in report.functions}
    heavy = by_name["_Z5heavyPKdPdi"]
    assert (heavy.arch, heavy.entry, heavy.registers) == ("sm_90", True, 24)
    assert (heavy.stack_frame, heavy.spill_stores, heavy.spill_loads) == (1400, 2464, 2880)
    assert heavy.cumulative_stack == 1400
    tiled = by_name["_Z5tiledPK6float4PS_i"]
    assert (tiled.registers, tiled.barriers, tiled.shared_bytes) == (14, 1, 4096)
    assert by_name["_Z5dynshPf"].spill_stores == 0
    assert report.warnings == (
        "ptxas warning : For profile sm_90 adjusting per thread register count of 16 to lower "
        "bound of 24",
    )


def test_ptxas_runs_per_architecture_and_device_functions() -> None:
    functions = ptxas.parse_ptxas(TWO_ARCHS).functions
    kernels = [(f.arch, f.registers, f.constant_bytes) for f in functions if f.entry]
    assert kernels == [
        ("sm_80", 10, 360),
        ("sm_80", 24, 372),
        ("sm_80", 4, 352),
        ("sm_90", 10, 0),
        ("sm_90", 24, 0),
        ("sm_90", 4, 0),
    ]
    helpers = [(f.name, f.arch, f.registers, f.stack_frame) for f in functions if not f.entry]
    # each run reports a device function before it names its arch: it still belongs to that arch
    assert helpers == [
        ("_Z6helperPKfi$1", "sm_80", None, 72),
        ("_Z6helperPKfi", "sm_80", None, 72),
        ("_Z6helperPKfi$1", "sm_90", None, 72),
        ("_Z6helperPKfi", "sm_90", None, 72),
    ]
    assert ptxas.parse_ptxas("nvcc warning : nothing of ptxas\n").functions == ()


@pytest.mark.parametrize(
    ("mangled", "base"),
    [
        ("_Z5heavyPKdPdi", "heavy"),
        ("_Z5scaleIfEvPT_S0_i", "scale"),
        ("_ZN2ns5heavyIiEEvPT_", "heavy"),
        ("_ZNK3Foo3barEv", "bar"),
        ("_ZN12_GLOBAL__N_16kernelEPf", "kernel"),
        ("_Z6helperPKfi$1", "helper"),
        ("extern_c_kernel", "extern_c_kernel"),
    ],
)
def test_mangled_base(mangled: str, base: str) -> None:
    assert ptxas.mangled_base(mangled).split("$")[0] == base


# (arch, registers, static shared, block, dynamic shared) -> (blocks/SM, warps/SM, limiters),
# worked by hand from the architecture's limits.
OCCUPANCY = [
    # 54 regs -> 1792 per warp; 16384 per sub-partition holds 9 warps, 36 per SM: 4 blocks of 8
    (("sm_90", 54, 0, 256, 0), (4, 32, ("registers",))),
    # 64 warps per SM / 8 per block = 8; shared (4096 + 1024 reserved) allows 45
    (("sm_90", 14, 4096, 256, 0), (8, 64, ("threads per SM",))),
    # 49152 + 1024 reserved = 50176 B per block: 233472 / 50176 = 4 blocks
    (("sm_90", 16, 48 * 1024, 256, 0), (4, 32, ("shared memory",))),
    # 102400 + 1024 B per block on 164 KB: 1 block
    (("sm_80", 32, 0, 256, 100 * 1024), (1, 8, ("shared memory",))),
    # sm_86: 48 warps / 4 per block = 12; registers would allow 16
    (("sm_86", 32, 0, 128, 0), (12, 48, ("threads per SM",))),
    # one-warp blocks of a tiny kernel: sm_89's 24 blocks per SM come first
    (("sm_89", 8, 0, 32, 0), (24, 24, ("blocks per SM",))),
    # 32 regs/thread at 256 threads: registers and threads both allow exactly 8
    (("sm_90", 32, 0, 256, 0), (8, 64, ("registers", "threads per SM"))),
    # 255 registers x 1024 threads needs 262144 registers: no block fits
    (("sm_90", 255, 0, 1024, 0), (0, 0, ("registers",))),
    (("sm_90", 8, 0, 2048, 0), (0, 0, ("threads per SM",))),
]


@pytest.mark.parametrize(("given", "expected"), OCCUPANCY)
def test_occupancy_matches_hand_computed_values(
    given: tuple[str, int, int, int, int], expected: tuple[int, int, tuple[str, ...]]
) -> None:
    arch, registers, shared, block, dynamic = given
    limits = ptxas.limits_for(arch)
    assert limits is not None
    o = ptxas.occupancy(limits, registers, shared, block, dynamic)
    assert (o.blocks, o.warps, o.limiters) == expected
    assert o.max_warps == limits.threads_per_sm // 32


def test_architecture_table() -> None:
    hopper = ptxas.limits_for("sm_90a")
    assert hopper is not None and hopper.shared_per_sm == 228 * 1024
    assert ptxas.limits_for("sm_75") is None and ptxas.limits_for("compute_90") is None
    assert sorted(ptxas.ARCHS) == ["sm_80", "sm_86", "sm_89", "sm_90"]


def test_sass_listing_mix_and_skeleton() -> None:
    listing = ptxas.parse_sass(SASS)
    instructions = listing[("sm_90", "_Z5tiledPK6float4PS_i")]
    assert len(instructions) == 11 and instructions[2] == "@!P0 BRA 0x50"
    digest = ptxas.sass_digest(instructions)
    assert digest == ptxas.sass_digest(list(instructions)) and len(digest) == 12
    assert digest != ptxas.sass_digest([*instructions[:-1], "NOP"])
    mix = ptxas.sass_mix(instructions)
    assert (mix["LDG.128"], mix["STS.128"], mix["STL.64"], mix["LDL.64"]) == (1, 1, 1, 1)
    assert (mix["STG.32"], mix["FFMA"], mix["BAR"], mix["BRA"]) == (1, 2, 1, 1)
    assert "FFMA R6, R0, R4, R5" not in ptxas.skeleton(instructions)
    assert "STL.64 [R1], R8" in ptxas.skeleton(instructions)
    nvdisasm = ".text._Z1kv:\n        /*0000*/                   EXIT ;\n"
    assert ptxas.parse_sass(nvdisasm, "sm_90") == {("sm_90", "_Z1kv"): ["EXIT"]}


def test_ptx_functions_and_memory_widths() -> None:
    assert ptxas.ptx_target(PTX) == "sm_90"
    functions = ptxas.parse_ptx(PTX)
    assert list(functions) == ["_Z5tiledPK6float4PS_i"]  # the extern declaration has no body
    memory = ptxas.ptx_memory(functions["_Z5tiledPK6float4PS_i"])
    assert memory == {
        "ld.global.nc.v4.u32": 1,
        "st.shared.v4.u32": 1,
        "ld.shared.v4.u32": 1,
        "st.global.v4.u32": 1,
        "ld.local.f64": 1,
    }
    skeleton = ptxas.skeleton(functions["_Z5tiledPK6float4PS_i"])
    assert skeleton[0] == "@%p1 bra $L__BB1_2;" and "$L__BB1_2:" in skeleton
    assert not any("param" in line or "setp" in line for line in skeleton)


SOURCE = """
#define TILE 16  // the tile's width
constexpr int kThreads = 256;
/* __global__ void commented_out(int* p) {} */
template <int B>
__global__ void __launch_bounds__(kThreads, 2) scale(float* x, int n) { x[0] = "__global__"[0]; }
__launch_bounds__(TILE * TILE) __global__ void tiled(float* x) {}
__host__ __device__ inline float twice(float v) { return 2 * v; }
__device__ float table[64];

void host(float* x, int n, int m) {
    int variable = 64;
    variable += n;
    dim3 square(TILE, TILE);
    scale<4><<<n / kThreads, kThreads>>>(x, n);
    scale<4><<<1, 128, TILE * sizeof(float)>>>(x, n);
    tiled<<<dim3(n), square, 0, 0>>>(x);
    tiled<<<1, variable>>>(x);
    tiled<<<1, m>>>(x);
}
"""


def test_kernels_and_launch_bounds_in_source() -> None:
    code = ptxas.code_only(SOURCE)
    kernels, devices = ptxas.kernels(code)
    assert kernels == [ptxas.Kernel("scale", "kThreads"), ptxas.Kernel("tiled", "TILE * TILE")]
    assert devices == ["twice"]
    assert ptxas.constant("TILE * TILE", code) == 256


def test_launch_shapes_are_constants_only_when_the_text_says_so() -> None:
    code = ptxas.code_only(SOURCE)
    scale = ptxas.launches(code, "scale")
    assert [(s.block, s.dynamic_shared) for s in scale] == [(256, 0), (128, None)]
    assert scale[0].text == "<<<n / kThreads, kThreads>>>"
    tiled = [s.block for s in ptxas.launches(code, "tiled")]
    assert tiled == [256, None, None]  # `variable` is assigned again; `m` is a parameter


def test_analysis_command_replaces_outputs_and_drops_depfiles() -> None:
    words = [
        "/venv/bin/nvcc-opt",
        "/usr/local/bin/nvcc",
        "-DX=1",
        "--generate-code=arch=compute_90,code=[compute_90,sm_90]",
        "-MD",
        "-MT",
        "obj.o",
        "-MF",
        "obj.o.d",
        "-x",
        "cu",
        "-c",
        "/src/k.cu",
        "--output-file=obj.o",
        "-o",
        "obj.o",
    ]
    command = analysis_command(words, "nvcc-opt", Path("/t/r.o"), Path("/t/keep"))
    assert command == [
        "nvcc-opt",
        "/usr/local/bin/nvcc",
        "-DX=1",
        "--generate-code=arch=compute_90,code=[compute_90,sm_90]",
        "-x",
        "cu",
        "-c",
        "/src/k.cu",
        "-o",
        "/t/r.o",
        "-Xptxas",
        "-v",
        "--keep",
        "--keep-dir",
        "/t/keep",
    ]


def test_compile_command_of_a_source(tmp_path: Path) -> None:
    (tmp_path / "k.cu").write_text("")
    database = tmp_path / "compile_commands.json"
    entries = [
        {"directory": str(tmp_path), "command": "nvcc -c a.cu -o a.o", "file": "a.cu"},
        {"directory": str(tmp_path), "arguments": ["nvcc", "-c", "k.cu"], "file": "k.cu"},
    ]
    database.write_text(json.dumps(entries))
    assert compile_command(database, tmp_path / "k.cu") == (["nvcc", "-c", "k.cu"], tmp_path)
    with pytest.raises(UnitError, match="not in compile_commands.json"):
        compile_command(database, tmp_path / "other.cu")


# ---- end to end -------------------------------------------------------------------------------


def _digest(folder: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        if path.is_file() and ".ninja" not in path.name:
            h.update(str(path.relative_to(folder)).encode() + path.read_bytes())
    return h.hexdigest()


def _project(fixture: str, root: Path, exe: str) -> None:
    shutil.copytree(FIXTURES / fixture, root, dirs_exist_ok=True)
    configure = ["cmake", "-S", str(root), "-B", str(root / "build"), "-G", "Ninja"]
    subprocess.run(
        [*configure, f"-DCMAKE_CUDA_COMPILER_LAUNCHER={exe}"], check=True, capture_output=True
    )


@pytest.fixture(scope="module")
def kernelapp(tmp_path_factory: pytest.TempPathFactory, exe: str) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("kernelapp")
    mp = pytest.MonkeyPatch()
    mp.setenv("XDG_CACHE_HOME", str(root / "cache"))
    mp.setenv("NVCC_OPT_STORE", str(root / "state" / "store.db"))
    _project("kernelapp", root, exe)
    yield root
    mp.undo()


def _analysis(root: Path, source: str, region: str, exe: str) -> Analysis:
    found = Region.find(root / "src" / source, region)
    return Analysis(Benchmark(load(root), found, ProcessRunner(), launcher=exe))


def _plain_registers(root: Path, kernel: str) -> int:
    """The kernel's registers from nvcc itself, with the flags the CMake build uses."""
    out = root / "plain.o"
    done = subprocess.run(
        ["nvcc", "--generate-code=arch=compute_90,code=[compute_90,sm_90]", "-std=c++17"]
        + ["-Xptxas", "-v", "-x", "cu", "-c", str(root / "src/kernels.cu"), "-o", str(out)],
        capture_output=True,
        text=True,
        check=True,
    )
    functions = ptxas.parse_ptxas(done.stderr).functions
    registers = next(f.registers for f in functions if ptxas.mangled_base(f.name) == kernel)
    assert registers is not None
    return registers


def _sass_expected() -> bool:
    return shutil.which("cuobjdump") is not None


@needs_nvcc
@pytest.mark.slow
def test_region_as_it_is(kernelapp: Path, exe: str) -> None:
    before = (_digest(kernelapp / "src"), _digest(kernelapp / "build"))
    text = _analysis(kernelapp, "kernels.cu", "stencil", exe).compiler_analysis()
    assert text.startswith("region 'stencil' (the region as it is), compiled for sm_90"), text
    assert f"sm_90: registers {_plain_registers(kernelapp, 'stencil')}," in text
    assert "static shared 1032 B" in text and "spill stores 0 B" in text
    assert "<<<blocks, kBlock>>>: 256 threads/block: 8 blocks/SM, 64 of 64 warps" in text
    assert "limited by threads per SM" in text
    assert "stencil: ld.global.f32 x3" in text
    if _sass_expected():  # the SASS excerpt stands in for the PTX one
        assert "SASS of stencil (sm_90, cuobjdump)" in text and "LDG" in text
        assert [k for k, _, _ in read_analysis(text).machine_code] == ["stencil"]  # digests
    else:
        assert "bar.sync 0;" in text and "SASS: cuobjdump not found" in text
    assert (_digest(kernelapp / "src"), _digest(kernelapp / "build")) == before


@needs_nvcc
@pytest.mark.slow
def test_candidate_code_and_compile_args_are_what_is_compiled(kernelapp: Path, exe: str) -> None:
    analysis = _analysis(kernelapp, "kernels.cu", "heavy", exe)
    squeezed = analysis.compiler_analysis(compile_args=["-maxrregcount=24"])
    assert "(the region as it is with -maxrregcount=24)" in squeezed
    assert "registers 24," in squeezed
    spilled = int(squeezed.split("spill stores ", 1)[1].split(" B", 1)[0])
    assert spilled > 0
    assert "<<<(n + 127) / 128, block>>>: 128 threads/block" in squeezed
    assert "device function pick(double const*, int) (sm_90, not inlined)" in squeezed
    small = analysis.bench.region.text.replace("acc[24]", "acc[4]").replace("< 24", "< 4")
    smaller = analysis.compiler_analysis(small.replace("% 24", "% 4"), ["-maxrregcount=24"])
    assert "(the code given with -maxrregcount=24)" in smaller
    assert "spill stores 0 B" in smaller.split("device function")[0]


@needs_nvcc
@pytest.mark.slow
def test_build_error_is_an_observation_with_the_region_line(kernelapp: Path, exe: str) -> None:
    analysis = _analysis(kernelapp, "kernels.cu", "stencil", exe)
    broken = analysis.bench.region.text.replace("int t = ", "int t = undeclared_thing + ")
    observation = Toolbox.from_objects(analysis).call("compiler_analysis", {"code": broken})
    assert is_error(observation) and "does not compile" in observation
    assert "kernels.cu" in observation and "undeclared_thing" in observation
    assert "(region line 5)" in observation and "call compiler_analysis again" in observation


@needs_nvcc
@pytest.mark.slow
def test_device_function_region_shows_the_files_kernels(kernelapp: Path, exe: str) -> None:
    text = _analysis(kernelapp, "kernels.cu", "smooth3", exe).compiler_analysis()
    assert "holds device functions only: every kernel of the file is shown" in text
    assert "kernel stencil:" in text and "kernel heavy:" in text


@needs_nvcc
@pytest.mark.slow
def test_host_region_has_no_kernels(
    tmp_path: Path, exe: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("NVCC_OPT_STORE", str(tmp_path / "state" / "store.db"))
    _project("hostapp", tmp_path, exe)
    analysis = _analysis(tmp_path, "work.cu", "accumulate", exe)
    assert analysis.compiler_analysis() == NO_KERNELS
    assert "no kernels in this region" in NO_KERNELS


def test_tool_declaration(tmp_path: Path) -> None:
    (tmp_path / "build").mkdir()
    (tmp_path / "nvcc-opt.toml").write_text('[build]\ndir = "build"\n')
    (tmp_path / "k.cu").write_text("// @optimize\n__global__ void k() {}\n")
    region = Region.find(tmp_path / "k.cu", "k")
    bench = Benchmark(load(tmp_path), region, ProcessRunner(), launcher="nvcc-opt")
    tools = Toolbox.from_objects(Analysis(bench))
    assert tools.names == ["compiler_analysis"]
    schema = tools.tools["compiler_analysis"].schema()["function"]
    assert set(schema["parameters"]["properties"]) == {"code", "compile_args"}
    assert "required" not in schema["parameters"]
