"""Static guards: the red-team candidates in tests/redteam are stopped, honest rewrites are not."""

from __future__ import annotations

from pathlib import Path

import pytest

from nvcc_opt.regions.scan import region_text, scan
from nvcc_opt.verify.checks import CheckResult
from nvcc_opt.verify.guards import check
from nvcc_opt.verify.verdict import decide

REDTEAM = Path(__file__).parent / "redteam"
EXAMPLE = Path(__file__).parent.parent / "examples" / "saxpy-stencil" / "src"
FILES = {"smooth_kernel": EXAMPLE / "stencil.cu", "pair": EXAMPLE / "update.cu"}

# Every candidate file and the guards it must trip: exactly these, no fewer, no more.
EXPECTED: dict[str, set[str]] = {
    "guard_graph__replayed_graph.cu": {"graph", "stream", "static_buffer"},
    "guard_l2__evict_last_asm.cu": {"l2"},
    "guard_l2__persisting_window.cu": {"l2"},
    "guard_library__cublas.cu": {"library"},
    "guard_library__thrust.cu": {"library"},
    "guard_outside__check_disabled.cu": {"outside"},
    "guard_outside__define_leak.cu": {"outside"},
    "guard_outside__pragma.cu": {"outside"},
    "guard_outside__unclosed_namespace.cu": {"outside"},
    "guard_outside__using_namespace.cu": {"outside"},
    "guard_precomputed__copied_result.cu": {"precomputed"},
    "guard_signature__default_param.cu": {"signature"},
    "guard_signature__launcher_changed.cu": {"signature"},
    "guard_signature__launcher_removed.cu": {"signature"},
    "guard_signature__renamed_kernel.cu": {"signature"},
    "guard_static_buffer__cached_output.cu": {"static_buffer"},
    "guard_static_buffer__run_once.cu": {"static_buffer"},
    "guard_stream__per_thread_stream.cu": {"stream"},
    "guard_stream__side_stream.cu": {"stream"},
    "guard_thread__detached_thread.cu": {"thread"},
    "guard_thread__openmp.cu": {"thread"},
    "guard_timer__clock64_spin.cu": {"timer"},
    "guard_timer__events.cu": {"timer"},
    "guard_timer__globaltimer.cu": {"timer"},
    "honest__comments_and_strings.cu": set(),
    "honest__fused_pair.cu": set(),
    "honest__launch_bounds_tiled.cu": set(),
    "honest__restrict_ldg_unroll.cu": set(),
}
ALL_GUARDS = {"signature", "outside", "stream", "thread", "graph", "l2", "static_buffer"}
ALL_GUARDS |= {"precomputed", "library", "timer"}


def _region(name: str) -> tuple[str, str]:
    """(region text, whole file text) of the example's region `name`."""
    data = FILES[name].read_bytes()
    span = next(r for r in scan(data).regions if r.name == name)
    return region_text(data, span), data.decode()


STENCIL_REGION = _region("smooth_kernel")[0]


def _guards(reasons: list[str]) -> set[str]:
    return {reason.split(":", 1)[0].removeprefix("guard_") for reason in reasons}


def _candidate(file_name: str) -> tuple[str, str, str]:
    """(code, region text, file text) of a red-team file; its first line names the region."""
    code = (REDTEAM / file_name).read_text()
    region, text = _region(code.splitlines()[0].removeprefix("// region:").strip())
    return code, region, text


@pytest.mark.parametrize("file_name", sorted(EXPECTED))
def test_redteam_candidate_trips_exactly_its_guards(file_name: str) -> None:
    code, region, text = _candidate(file_name)
    reasons = check(region, code, file_text=text)
    assert _guards(reasons) == EXPECTED[file_name], reasons
    if not file_name.startswith("honest__"):
        assert file_name.split("__")[0].removeprefix("guard_") in _guards(reasons)


def test_the_table_the_folder_and_its_readme_agree() -> None:
    files = {p.name for p in REDTEAM.glob("*.cu")}
    assert files == set(EXPECTED)
    readme = (REDTEAM / "README.md").read_text()
    assert all(f"`{name}`" in readme for name in files)
    assert set().union(*EXPECTED.values()) == ALL_GUARDS


def test_reasons_name_the_construct_and_the_candidate_line_sorted() -> None:
    code, region, text = _candidate("guard_stream__side_stream.cu")
    assert check(region, code, file_text=text) == [
        "guard_stream: creates a CUDA stream (cudaStreamCreateWithFlags) at line 22 of the "
        "candidate",
        "guard_stream: declares a CUDA stream (cudaStream_t) at line 21 of the candidate",
    ]


def test_comments_strings_and_switched_off_code_never_trigger() -> None:
    candidate = (
        "// cudaStreamCreate std::thread cudaGraphLaunch clock64() #pragma omp\n"
        "/* __device__ float cache[8]; #define num_blocks(n) 1 */\n"
        "#if 0\nvoid f() { cudaStream_t s; cudaStreamCreate(&s); }\n#endif\n"
        + STENCIL_REGION.replace(
            "float acc", 'const char* const t = "%globaltimer";\n    float acc'
        )
    )
    assert check(STENCIL_REGION, candidate) == []


def test_a_comment_or_string_does_not_hide_a_construct() -> None:
    candidate = STENCIL_REGION.replace(
        "float acc", '/* " */ long long t = clock64(); // "\n float acc'
    )
    assert _guards(check(STENCIL_REGION, candidate)) == {"timer"}


def test_constructs_the_original_region_had_may_stay() -> None:
    original = (
        "void launch(float* x, int n)\n{\n    cudaStream_t s;\n    cudaStreamCreate(&s);\n"
        "    cudaMemsetAsync(x, 0, n, s);\n}\n"
    )
    kept = original.replace("cudaStreamCreate(&s)", "cudaStreamCreateWithFlags(&s, 1)")
    assert check(original, original.replace("x, 0", "x, 1")) == []
    assert check(original, kept) == [
        "guard_stream: creates a CUDA stream (cudaStreamCreateWithFlags) at line 4 of the candidate"
    ]
    graph = original.replace("}\n", "    cudaGraphLaunch(g, s);\n}\n")
    assert _guards(check(original, graph)) == {"graph"}


KERNEL = "__global__ void k(const float* in, float* out, int n) { out[0] = in[0] + n; }\n"


@pytest.mark.parametrize(
    ("declaration", "same"),
    [
        ("__global__ void k(const float* a, float* b, int count)", True),
        ("__global__ void k(const float* __restrict__ in, float* __restrict__ out, int n)", True),
        (
            "__global__ void __launch_bounds__(256, 2) k(const float* in, float* out, const int n)",
            True,
        ),
        ("__global__ void k(float const* in, float* const out, int)", True),
        (
            "__global__ void k(const float* in, const float* out, int n)",
            True,
        ),  # pointee gains const
        ("__global__ void k(float* in, float* out, int n)", False),  # pointee loses const
        ("__global__ void k(const float* in, float* out, long n)", False),
        ("__global__ void k(const float* in, float** out, int n)", False),
        ("__global__ void k(const float* in, float* out, int n, int step = 2)", False),
        ("__device__ void k(const float* in, float* out, int n)", False),
        ("template <typename T> __global__ void k(const T* in, float* out, int n)", False),
        ("__global__ void k2(const float* in, float* out, int n)", False),
    ],
)
def test_kernel_signature_rules(declaration: str, same: bool) -> None:
    candidate = declaration + " { out[0] = in[0]; }\n"
    assert (check(KERNEL, candidate) == []) is same


def test_signature_reason_shows_both_signatures() -> None:
    candidate = "\n__global__ void k(const float* in, float* out, long n) {}\n"
    assert check(KERNEL, candidate) == [
        "guard_signature: kernel void k(const float*, float*, int) became kernel void "
        "k(const float*, float*, long) at line 2 of the candidate"
    ]


def test_kernels_used_only_inside_the_region_may_go_but_only_when_the_file_says_so() -> None:
    code, region, text = _candidate("honest__fused_pair.cu")
    assert check(region, code, file_text=text) == []
    assert _guards(check(region, code)) == {"signature"}  # no file: kernels count as used
    assert _guards(check(region, code, file_text="a file without the region")) == {"signature"}
    launched_after = text + "\nvoid again() { axpy_kernel<<<1, 1>>>(1.0f, 0, 0, 0, 0); }\n"
    reasons = check(region, code, file_text=launched_after)
    assert len(reasons) == 1 and "kernel void axpy_kernel(" in reasons[0]
    assert reasons[0].endswith("is gone, and code outside the region uses it")


def test_static_state_that_cannot_change_is_allowed() -> None:
    allowed = (
        "constexpr int kN = 4;\nstatic const float kW[2] = {1, 2};\n__constant__ float c_w[9];\n"
        "__device__ const int kOne = 1;\nstatic __device__ float helper(float x) { return x; }\n"
        "__global__ void k(float* out) {\n  __shared__ float tile[32];\n"
        '  extern __shared__ float dyn[];\n  static_assert(kN == 4, "");\n'
        "  static constexpr int kM = 2;\n  out[0] = tile[0] + dyn[0] + kM;\n}\n"
    )
    assert check("__global__ void k(float* out) {}\n", allowed) == []


@pytest.mark.parametrize(
    "declaration",
    [
        "float* g_scratch = nullptr;",
        "__managed__ int g_count;",
        "static __device__ float g_buf[64];",
        "namespace { int g_calls = 0; }",
        "const float* g_table;",  # a const pointee, but the pointer can change
    ],
)
def test_mutable_namespace_scope_variables_are_static_buffers(declaration: str) -> None:
    reasons = check(
        "__global__ void k(float* out) {}\n", declaration + "\n__global__ void k(float* out) {}\n"
    )
    assert _guards(reasons) == {"static_buffer"}


@pytest.mark.parametrize(
    ("added", "guards"),
    [
        ("#define TWICE(x) (2 * (x))\n#undef TWICE\n", set()),
        ('#pragma unroll 4\n_Pragma("unroll")\n', set()),
        ("#include <cmath>\n#include <cuda_fp16.h>\n#include <cooperative_groups.h>\n", set()),
        ('#include "pipeline.cuh"\n', set()),  # the file includes it already
        ('#include "answers.h"\n', {"outside"}),
        ("#include <secret/answers.h>\n", {"outside"}),
        ("#include <thread>\n", {"thread"}),
        ("#pragma omp parallel\n", {"thread"}),
        ('_Pragma("GCC optimize(\\"O0\\")")\n', {"outside"}),
        ("#undef CUDA_CHECK\n", {"outside"}),
        ("#define kBlockSize 64\n#undef kBlockSize\n", {"outside"}),  # shadows a name in use
        ("#if 1\n", {"outside"}),
        ("#line 1\n", {"outside"}),
        ("/* unterminated\n", {"outside", "signature"}),  # the kernel is swallowed
        ("void helper() {\n", {"outside", "signature"}),  # the kernel is now nested
        ("}\n", {"outside"}),
        ("using namespace std;\n", {"outside"}),
        ("__attribute__((constructor)) static void early() {}\n", {"outside"}),
        ("#define SPAWN cudaStreamCreate\n#undef SPAWN\n", {"stream"}),  # macro bodies are code
    ],
)
def test_directives_and_reach_outside_the_region(added: str, guards: set[str]) -> None:
    region, text = _region("smooth_kernel")
    assert _guards(check(region, added + region, file_text=text)) == guards


def test_cub_block_primitives_are_own_work_but_device_algorithms_are_not() -> None:
    block = STENCIL_REGION.replace(
        "float acc", "using Reduce = cub::BlockReduce<float, 256>;\n    float acc"
    )
    assert check(STENCIL_REGION, block) == []
    device = STENCIL_REGION.replace(
        "float acc", "cub::DeviceReduce::Sum(0, n, in, out, n);\nfloat acc"
    )
    assert _guards(check(STENCIL_REGION, device)) == {"library"}


def test_a_guard_reason_rejects_the_candidate() -> None:
    code, region, text = _candidate("guard_timer__events.cu")
    reasons = check(region, code, file_text=text)
    verdict = decide(True, "", CheckResult(True, ()), None, guard_reasons=reasons)
    assert verdict.status == "rejected"
    assert verdict.reasons == tuple(reasons)
