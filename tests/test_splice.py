"""Splicing rewrites into a private copy: exact bytes, `#line` mapping, and real nvcc."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from nvcc_opt.records import RegionSpan
from nvcc_opt.regions.scan import scan
from nvcc_opt.regions.splice import splice

KERNEL = b"""\
int before = 1;
// @optimize
__global__ void k(int* p) {
  *p = 1;
}
int after = 2;
"""


def _spans(source: bytes) -> tuple[RegionSpan, ...]:
    result = scan(source)
    assert result.warnings == ()
    return result.regions


def test_replaces_region_lines_with_line_directives() -> None:
    (span,) = _spans(KERNEL)
    copy = splice(KERNEL, [(span, "__global__ void k(int* p) { *p = 3; }")], "/src/k.cu")
    assert copy == (
        b'#line 1 "/src/k.cu"\n'
        b"int before = 1;\n// @optimize\n"
        b'#line 3 "/src/k.cu"\n'
        b"__global__ void k(int* p) { *p = 3; }\n"
        b'#line 6 "/src/k.cu"\n'
        b"int after = 2;\n"
    )


def test_no_replacements_only_names_the_file() -> None:
    assert splice(KERNEL, [], "k.cu") == b'#line 1 "k.cu"\n' + KERNEL


def test_order_of_replacements_does_not_matter() -> None:
    source = b"// @optimize\nvoid a() {}\nint x;\n// @optimize\nvoid b() {}\n"
    a, b = _spans(source)
    forward = splice(source, [(a, "void a2() {}\n"), (b, "void b2() {}\n")], "f.cu")
    assert splice(source, [(b, "void b2() {}\n"), (a, "void a2() {}\n")], "f.cu") == forward
    assert forward.count(b"#line") == 5
    assert b'#line 3 "f.cu"\nint x;\n' in forward


def test_bytes_outside_regions_are_kept_exactly() -> None:
    source = b"// caf\xe9\r\nchar c = '\xff';\r\n// @optimize\r\nvoid f() {\r\n}\r\n/* \xe9 */\r\n"
    (span,) = _spans(source)
    copy = splice(source, [(span, "void f() { /* é */ }")], "f.cu")
    head, _, rest = copy.partition(b'#line 4 "f.cu"\n')
    assert head == b'#line 1 "f.cu"\n' + source[: span.start_offset]
    assert rest == "void f() { /* é */ }\n".encode() + b'#line 6 "f.cu"\n/* \xe9 */\r\n'


def test_path_is_escaped_for_the_directive() -> None:
    (span,) = _spans(KERNEL)
    copy = splice(KERNEL, [(span, "int k;")], 'C:\\src\\"odd".cu')
    assert copy.startswith(b'#line 1 "C:\\\\src\\\\\\"odd\\".cu"\n')


def test_overlapping_spans_are_refused() -> None:
    (span,) = _spans(KERNEL)
    with pytest.raises(ValueError, match="overlaps"):
        splice(KERNEL, [(span, "int a;"), (span, "int b;")], "k.cu")


def test_span_that_does_not_fit_is_refused() -> None:
    (span,) = _spans(KERNEL)
    with pytest.raises(ValueError, match="fit"):
        splice(KERNEL[:20], [(span, "int a;")], "k.cu")


@pytest.mark.parametrize(
    ("code", "reason"),
    [
        ("int a; /* never closed", "unterminated"),
        ('auto s = R"x(never closed', "unterminated"),
        ('#line 40 "elsewhere.cu"\nint a;', "#line"),
        ('# 40 "elsewhere.cu"\nint a;', "#line"),
        ("#define LONG 1 \\", "continuation"),
        ("int a; // comment \\\n", "continuation"),
    ],
)
def test_code_that_would_break_the_next_line_directive_is_refused(code: str, reason: str) -> None:
    (span,) = _spans(KERNEL)
    with pytest.raises(ValueError, match=reason):
        splice(KERNEL, [(span, code)], "k.cu")


def test_code_with_closed_comments_and_strings_is_accepted() -> None:
    (span,) = _spans(KERNEL)
    code = 'const char* s = "/* not a comment";  /* closed */\n#define X 1\n'
    assert code.encode() in splice(KERNEL, [(span, code)], "k.cu")


def _nvcc(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    command = ["nvcc", "-c", "-arch=sm_90", *map(str, args)]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)


def _write_copy(tmp_path: Path, original: Path, replacements: list[str]) -> Path:
    """The spliced copy of `original`, in a different directory, as the launcher would."""
    source = original.read_bytes()
    spans = _spans(source)
    copy = tmp_path / "private" / "copy.cu"
    copy.parent.mkdir(exist_ok=True)
    copy.write_bytes(splice(source, list(zip(spans, replacements, strict=True)), str(original)))
    return copy


def test_nvcc_error_in_rewrite_points_at_the_original_region(tmp_path: Path) -> None:
    original = tmp_path / "src" / "kern.cu"
    original.parent.mkdir()
    original.write_bytes(KERNEL)
    broken = "__global__ void k(int* p) {\n  *p = undefined_name;\n}\n"
    copy = _write_copy(tmp_path, original, [broken])
    result = _nvcc(copy, "-o", tmp_path / "k.o", cwd=tmp_path)
    assert result.returncode != 0
    located = re.findall(r"^(.*)\((\d+)\): error", result.stdout + result.stderr, re.MULTILINE)
    assert located == [(str(original), "4")]  # the rewrite's line 2, the region is lines 3-5


LINES_AND_FILE = """\
constexpr bool same(const char* a, const char* b) {
  return *a == *b && (*a == 0 || same(a + 1, b + 1));
}
// @optimize
__global__ void first(int* p) {
  *p = 1;
}
static_assert(__LINE__ == 8, "line after the first region");
static_assert(same(__FILE__, "ORIGINAL"), "file after the first region");
// @optimize begin second
__device__ int helper() { return 2; }
// @optimize end
static_assert(__LINE__ == 13, "line after the second region");
__global__ void last(int* p) { *p = __LINE__; }
static_assert(__LINE__ == 15, "line at the end");
"""


def test_nvcc_sees_original_lines_and_file_after_regions(tmp_path: Path) -> None:
    original = tmp_path / "src" / "lines.cu"
    original.parent.mkdir()
    original.write_text(LINES_AND_FILE.replace("ORIGINAL", str(original)))
    as_is = _nvcc(original, "-o", tmp_path / "original.o", cwd=tmp_path)
    assert (as_is.returncode, as_is.stderr) == (0, "")
    shorter = "__global__ void first(int* p) { *p = 3; }\n"
    longer = "__device__ int helper() {\n  int two = 2;\n  // longer\n  return two;\n}\n"
    copy = _write_copy(tmp_path, original, [shorter, longer])
    spliced = _nvcc(copy, "-o", tmp_path / "copy.o", cwd=tmp_path)
    assert (spliced.returncode, spliced.stdout, spliced.stderr) == (0, "", "")


HELPER_USER = """\
#include "helper.cuh"
#ifdef __CUDA_ARCH__
static_assert(HELPER == 1, "device pass included the wrong helper.cuh");
#else
static_assert(HELPER == 1, "host pass included the wrong helper.cuh");
#endif
// @optimize
__global__ void k(int* p) { *p = HELPER; }
"""


def _quote_dir_flags(src_dir: Path) -> dict[str, tuple[list[str], list[str], str, str]]:
    """Ways to give the copy its original's directory: flags before and after the others, and
    the outcome for a plain directory and for one with a space and a comma in its name."""
    return {
        "nothing": ([], [], "wrong", "wrong"),
        # nvcc splits option values at commas (outside double quotes) and runs gcc through sh
        "Xcompiler iquote": ([f"-Xcompiler=-iquote,{src_dir}"], [], "right", "broken"),
        "Xcompiler iquote quoted": ([f'-Xcompiler=-iquote,"{src_dir}"'], [], "right", "right"),
        "I prepended": ([f"-I{src_dir}"], [], "right", "wrong"),
        "I appended": ([], [f"-I{src_dir}"], "wrong", "wrong"),
    }


def _original_and_copy(tmp_path: Path, dir_name: str) -> tuple[Path, Path, Path]:
    """An original including "helper.cuh" from its own directory, while another -I directory
    holds a different helper.cuh; the original compile picks its own. Returns (src dir, other
    include dir, spliced copy in a third directory)."""
    src_dir = tmp_path / dir_name
    other = tmp_path / "other"
    for folder, value in ((src_dir, 1), (other, 2)):
        folder.mkdir()
        (folder / "helper.cuh").write_text(f"constexpr int HELPER = {value};\n")
    original = src_dir / "kern.cu"
    original.write_text(HELPER_USER)
    as_is = _nvcc(f"-I{other}", original, "-o", tmp_path / "original.o", cwd=tmp_path)
    assert as_is.returncode == 0, as_is.stderr
    copy = _write_copy(tmp_path, original, ["__global__ void k(int* p) { *p = 2 * HELPER; }\n"])
    return src_dir, other, copy


@pytest.mark.parametrize("form", list(_quote_dir_flags(Path())))
@pytest.mark.parametrize("dir_name", ["src", "src dir,2"])
def test_quoted_includes_resolve_like_the_original(
    tmp_path: Path, form: str, dir_name: str
) -> None:
    src_dir, other, copy = _original_and_copy(tmp_path, dir_name)
    before, after, plain, odd = _quote_dir_flags(src_dir)[form]
    outcome = plain if dir_name == "src" else odd
    depfile = tmp_path / "copy.d"
    flags = [*before, f"-I{other}", "-MD", "-MF", str(depfile), *after]
    spliced = _nvcc(*flags, copy, "-o", tmp_path / "copy.o", cwd=tmp_path)
    output = spliced.stdout + spliced.stderr
    assert (spliced.returncode == 0) == (outcome == "right"), output
    assert ("wrong helper.cuh" in output) == (outcome == "wrong"), output
    if outcome == "right":
        dependencies = depfile.read_text().replace("\\ ", " ")
        assert str(src_dir / "helper.cuh") in dependencies
        assert str(other / "helper.cuh") not in dependencies


CONDITIONAL_SIGNATURE = """\
struct A { int v; };
struct B { long v; };
// @optimize
#ifdef USE_A
__global__ void k(A* a) {
#else
__global__ void k(B* a) {
#endif
  a->v = 1;
}
static_assert(__LINE__ == 11, "line after the region");
"""


@pytest.mark.parametrize("define", [[], ["-DUSE_A"]])
def test_nvcc_compiles_a_region_with_a_signature_per_branch(
    tmp_path: Path, define: list[str]
) -> None:
    original = tmp_path / "cond.cu"
    original.write_text(CONDITIONAL_SIGNATURE)
    rewrite = "#ifdef USE_A\n__global__ void k(A* a) {\n#else\n__global__ void k(B* a) {\n"
    copy = _write_copy(tmp_path, original, [rewrite + "#endif\n  a->v = 2;\n}\n"])
    spliced = _nvcc(*define, copy, "-o", tmp_path / "copy.o", cwd=tmp_path)
    assert (spliced.returncode, spliced.stdout, spliced.stderr) == (0, "", "")
