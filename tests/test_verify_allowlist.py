"""The candidate-code allowlist on the example's two regions, preprocessed by real nvcc with the
compile commands CMake writes: honest candidates pass, every cheat is refused for its reason."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from nvcc_opt.regions.scan import region_text, scan
from nvcc_opt.verify.allowlist import check_candidate
from nvcc_opt.verify.preprocess import REGION_FILE, Preprocessed, PreprocessError, preprocess
from nvcc_opt.workspace.runner import ProcessRunner
from nvcc_opt.workspace.unit import compile_command
from tests.conftest import needs_nvcc

pytestmark = [
    needs_nvcc,
    pytest.mark.skipif(shutil.which("cmake") is None, reason="needs cmake"),
]

HERE = Path(__file__).parent
REDTEAM = HERE / "redteam"
ALLOWLIST = REDTEAM / "allowlist"
EXAMPLE = HERE.parent / "examples" / "saxpy-stencil"
SOURCES = {"smooth_kernel": EXAMPLE / "src" / "stencil.cu", "pair": EXAMPLE / "src" / "update.cu"}
CLASSES = {"honest", "state", "call", "name", "type", "def", "attr", "pragma", "asm", "stream"}
CLASSES |= {"include", "hide"}
# guards.py's cheats of kinds the allowlist does not judge: signatures, edits outside the
# region, L2 policy; and inline asm in device code, which the PTX check reads.
NOT_OURS = ("guard_signature__", "guard_outside__", "guard_l2__", "guard_timer__globaltimer")


class Example:
    """The example configured by CMake; candidates preprocessed with its compile commands."""

    def __init__(self, build: Path) -> None:
        self.build = build
        self.runner = ProcessRunner()
        self._originals: dict[str, Preprocessed] = {}

    def preprocess(self, region: str, code: str, words: list[str] | None = None) -> Preprocessed:
        source = SOURCES[region]
        data = source.read_bytes()
        span = next(r for r in scan(data).regions if r.name == region)
        found, folder = compile_command(self.build / "compile_commands.json", source)
        return preprocess(words or found, folder, data.decode(), span, code, runner=self.runner)

    def original(self, region: str) -> Preprocessed:
        if region not in self._originals:
            self._originals[region] = self.preprocess(region, region_text_of(region))
        return self._originals[region]

    def judge(self, region: str, code: str, *, rdc: bool | None = None) -> list[str]:
        """The allowlist's reasons, as a caller gets them: code that does not preprocess is
        refused with the preprocessor's reason."""
        try:
            candidate = self.preprocess(region, code)
        except PreprocessError as exc:
            return [f"allowlist: {exc}"]
        return check_candidate(self.original(region), candidate, rdc=rdc)

    def words(self, region: str) -> list[str]:
        return compile_command(self.build / "compile_commands.json", SOURCES[region])[0]


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Example:
    build = tmp_path_factory.mktemp("allowlist-build")
    subprocess.run(
        ["cmake", "-S", str(EXAMPLE), "-B", str(build), "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON"],
        check=True,
        capture_output=True,
    )
    return Example(build)


def _region_of(path: Path) -> tuple[str, str]:
    """(region, code) of a red-team file: its first line names the region; the runtime files
    without one replace smooth_kernel unless they hold axpy_kernel (their README says so)."""
    code = path.read_text()
    first = code.splitlines()[0]
    if first.startswith("// region:"):
        return first.removeprefix("// region:").strip(), code
    return ("pair" if "axpy_kernel" in code else "smooth_kernel"), code


def region_text_of(region: str) -> str:
    data = SOURCES[region].read_bytes()
    return region_text(data, next(r for r in scan(data).regions if r.name == region))


def _readme_rows() -> dict[str, str]:
    """File -> the text its reasons must hold ('' for an honest file), from the README."""
    rows = {}
    for line in (ALLOWLIST / "README.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[0].startswith("`") and cells[0].endswith(".cu`"):
            rows[cells[0].strip("`")] = "" if cells[3] == "passes" else cells[3].strip("`")
    return rows


ROWS = _readme_rows()


def test_readme_lists_every_candidate_and_class() -> None:
    assert sorted(ROWS) == sorted(p.name for p in ALLOWLIST.glob("*.cu"))
    assert {name.split("__")[0] for name in ROWS} <= CLASSES
    assert sum(name.startswith("honest__") for name in ROWS) >= 15
    assert sum(not name.startswith("honest__") for name in ROWS) >= 25
    for name, text in ROWS.items():
        assert (text == "") == name.startswith("honest__"), name


@pytest.mark.parametrize("name", sorted(ROWS))
def test_allowlist_candidate(example: Example, name: str) -> None:
    region, code = _region_of(ALLOWLIST / name)
    reasons = example.judge(region, code)
    if name.startswith("honest__"):
        assert reasons == []
    else:
        assert any(ROWS[name] in reason for reason in reasons), reasons
        assert all(reason.startswith("allowlist: ") for reason in reasons)


HONEST = sorted([*REDTEAM.glob("honest__*.cu"), *(REDTEAM / "runtime").glob("honest__*.cu")])
GUARD_CHEATS = sorted(p for p in REDTEAM.glob("guard_*.cu") if not p.name.startswith(NOT_OURS))


@pytest.mark.parametrize("path", HONEST, ids=lambda p: p.name)
def test_guards_honest_candidates_pass(example: Example, path: Path) -> None:
    assert example.judge(*_region_of(path)) == []


@pytest.mark.parametrize("path", GUARD_CHEATS, ids=lambda p: p.name)
def test_guards_cheats_are_refused_too(example: Example, path: Path) -> None:
    """The two lines are independent: what guards.py stops on raw tokens, the allowlist stops
    on the preprocessed code (cuBLAS' headers are not installed here: that one fails to
    preprocess, which refuses it as well)."""
    assert example.judge(*_region_of(path))


@pytest.mark.parametrize("region", sorted(SOURCES))
def test_the_original_passes_against_itself(example: Example, region: str) -> None:
    assert example.judge(region, region_text_of(region)) == []


DEVICE_HELPERS = (ALLOWLIST / "honest__device_helpers.cu").read_text()


def test_relocatable_device_code_needs_internal_linkage(example: Example) -> None:
    """Under -rdc another file could define the same device function: a new one must be
    static. honest__device_helpers.cu's rescale_one is; its axpy_one is not."""
    reasons = example.judge("pair", DEVICE_HELPERS, rdc=True)
    assert len(reasons) == 1 and "new device function axpy_one" in reasons[0], reasons
    fixed = DEVICE_HELPERS.replace("__device__ __forceinline__", "static __device__ inline")
    assert example.judge("pair", fixed, rdc=True) == []


def test_relocatable_device_code_is_read_from_the_command(example: Example) -> None:
    words = [w if w != "-c" else "-dc" for w in example.words("pair")]
    original = example.preprocess("pair", region_text_of("pair"), words)
    candidate = example.preprocess("pair", DEVICE_HELPERS, words)
    assert original.rdc and candidate.rdc
    assert any("axpy_one" in r for r in check_candidate(original, candidate))


ARCH_CHEAT = """__global__ void smooth_kernel(const float* in, const float* w, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    static __device__ int seen;
    if (seen++ > 0) {
        return;
    }
#endif
#ifndef __CUDA_ARCH__
    (void)sizeof(int);
#endif
    if (i < n) {
        out[i] = w[0] * in[i];
    }
}
"""


def test_every_architecture_and_the_host_are_sides(example: Example) -> None:
    """nvcc -E preprocesses for the first target only: each target is a side of its own, so a
    cheat that only an sm_90a build compiles is still read."""
    words = [w for w in example.words("smooth_kernel") if not w.startswith("--generate-code")]
    words += ["-gencode", "arch=compute_80,code=sm_80", "-gencode=arch=compute_90a,code=sm_90a"]
    candidate = example.preprocess("smooth_kernel", ARCH_CHEAT, words)
    names = [side.name for side in candidate.sides]
    assert names == ["host", "device __CUDA_ARCH__=800", "device __CUDA_ARCH__=900"]
    host, sm80, sm90a = candidate.sides
    assert "sizeof" in host.region and "sizeof" not in sm80.region
    assert "seen" in sm90a.region and "seen" not in sm80.region and "seen" not in host.region
    original = example.preprocess("smooth_kernel", region_text_of("smooth_kernel"), words)
    reasons = check_candidate(original, candidate)
    assert reasons == [
        "allowlist: keeps state across calls in static local __device__ variable seen"
        " at line 5 of the candidate"
    ]


LINES = """#include <cuda_fp16.h>
#define TWICE(x) \\
    ((x) + (x))

__global__ void axpy_kernel(float alpha, const float* s, const float* y, float* tmp, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        tmp[i] = alpha * s[i] + TWICE(
            y[i]);
        const char* where = __FILE__;
        (void)where;
    }
}
"""


def test_region_lines_map_back_to_the_code(example: Example) -> None:
    candidate = example.preprocess("pair", LINES)
    for side in candidate.sides:
        header, line = side.includes[0]
        assert header.endswith("/cuda_fp16.h") and line == 1
        rows = side.region.split("\n")
        at = {text.strip(): side.region_lines[row] for row, text in enumerate(rows)}
        assert at["int i = blockIdx.x * blockDim.x + threadIdx.x;"] == 7
        assert at["(void)where;"] == 12
        assert at[f'const char* where = "{REGION_FILE}";'] == 11
        assert not any(side.file_at(row).file == candidate.marker for row in range(side.chunk[0]))


def test_errors_name_the_code_line(example: Example) -> None:
    with pytest.raises(PreprocessError, match=re.escape(f"{REGION_FILE}:2:")):
        example.preprocess("pair", '\n#include "no_such_header.h"\n')


def test_only_nvcc_compiles_are_read(example: Example) -> None:
    with pytest.raises(PreprocessError, match="not an nvcc compile"):
        example.preprocess("pair", "", ["g++", "-c", str(SOURCES["pair"]), "-o", "x.o"])


def test_the_build_folder_is_left_alone(example: Example) -> None:
    """-o, -MD and -MF of the compile go: preprocessing writes only to its scratch folder and
    the launcher's copy folder (verify/check_copy.py), where it leaves at most the build's copy
    name (an empty stand-in the build replaces)."""
    words = [*example.words("pair"), "-MD", "-MF", "update.d"]
    before = sorted(p.name for p in example.build.rglob("*") if ".nvcc-opt" not in p.parts)
    example.preprocess("pair", region_text_of("pair"), words)
    after = sorted(p.name for p in example.build.rglob("*") if ".nvcc-opt" not in p.parts)
    assert after == before
    copies = {p.name for p in example.build.rglob("*") if ".nvcc-opt" in p.parts and p.is_file()}
    assert copies <= {p.name for p in SOURCES.values()}


X_MACRO_CHEAT = """#define X(name) static int name##_calls = 0;
#include "names.def"
#undef X
"""


def test_project_headers_the_region_includes_count_as_its_code(tmp_path: Path) -> None:
    """A project X-macro file the original also includes expands to whatever the region's
    macro says: what it expands to from inside the region is the region's code."""
    src = tmp_path / "src"
    shutil.copytree(EXAMPLE / "src", src)
    (src / "names.def").write_text("X(alpha)\nX(beta)\n")
    update = src / "update.cu"
    text = update.read_text().replace(
        '#include "pipeline.cuh"\n', '#include "pipeline.cuh"\n#define X(n)\n#include "names.def"\n'
    )
    update.write_text(text)
    data = text.encode()
    span = next(r for r in scan(data).regions if r.name == "pair")
    words = ["nvcc", "-DSMOOTH_RADIUS=4", f"-I{src}", "-std=c++17", "-c", "update.cu"]
    runner = ProcessRunner()
    original = preprocess(words, src, text, span, region_text(data, span), runner=runner)
    code = X_MACRO_CHEAT + region_text(data, span)
    candidate = preprocess(words, src, text, span, code, runner=runner)
    assert candidate.sides[0].includes[0][1] == 2
    assert check_candidate(original, candidate) == [
        "allowlist: keeps state across calls in namespace-scope variable alpha_calls at line 2"
        " of the candidate",
        "allowlist: keeps state across calls in namespace-scope variable beta_calls at line 2"
        " of the candidate",
    ]


BOM_SOURCE = """\ufeff#define FACTOR 2.0f
// @optimize begin scale
__global__ void scale(float* x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= FACTOR;
}
// @optimize end scale
"""


def test_a_source_that_starts_with_a_byte_order_mark_preprocesses(tmp_path: Path) -> None:
    """The spliced copy keeps the BOM first: after a #line it is a stray character, and the
    directive on the file's first line is no directive (its macro never defined)."""
    source = tmp_path / "k.cu"
    source.write_text(BOM_SOURCE, encoding="utf-8")
    data = source.read_bytes()
    span = next(r for r in scan(data).regions if r.name == "scale")
    candidate = region_text(data, span).replace("FACTOR", "FACTOR + 0.5f")
    words = ["nvcc", "-c", str(source), "-o", str(tmp_path / "k.o")]
    done = preprocess(words, tmp_path, data.decode(), span, candidate, runner=ProcessRunner())
    assert done.sides
    for side in done.sides:
        assert "2.0f + 0.5f" in side.region, side.region
