"""Pragma scanning: the constructs real CUDA code uses, warnings, bytes, and fuzzing."""

from __future__ import annotations

import hashlib
import random
import textwrap

import pytest

from nvcc_opt.records import ScanResult
from nvcc_opt.regions.scan import region_text, scan


def _scan(text: str) -> ScanResult:
    return scan(textwrap.dedent(text).lstrip("\n").encode())


def _found(result: ScanResult) -> list[tuple[str, int, int]]:
    return [(r.name, r.start_line, r.end_line) for r in result.regions]


FUNCTION_CASES = {
    "plain": (
        """
        #include <cuda.h>
        // @optimize
        __global__ void scale(float* x) {
          x[threadIdx.x] *= 2.0f;
        }
        """,
        [("scale", 3, 5)],
    ),
    "template": (
        """
        // @optimize
        template <typename T, int N>
        __global__ void tiled(T* x) { x[N] = T(); }
        """,
        [("tiled", 2, 3)],
    ),
    "template default with greater-than": (
        """
        // @optimize
        template <int N = (3 > 2), typename T = int>
        __device__ T pick() { return N; }
        """,
        [("pick", 2, 3)],
    ),
    "launch bounds": (
        """
        // @optimize
        __global__ void __launch_bounds__(256, 2)
        bounded(float* x)
        {
          x[0] = 1;
        }
        """,
        [("bounded", 2, 6)],
    ),
    "gnu attribute": (
        """
        // @optimize
        __device__ __attribute__((noinline)) int helper(int a) { return a; }
        """,
        [("helper", 2, 2)],
    ),
    "standard attribute": (
        """
        // @optimize
        [[nodiscard]] __device__ int twice(int a) { return 2 * a; }
        """,
        [("twice", 2, 2)],
    ),
    "extern C kernel": (
        """
        // @optimize
        extern "C" __global__ void exported(int* p) { *p = 1; }
        """,
        [("exported", 2, 2)],
    ),
    "macro before the name": (
        """
        #define KERNEL_BOUNDS(n) __launch_bounds__(n)
        // @optimize
        __global__ void KERNEL_BOUNDS(128) bounded_by_macro(int* p) {
          *p = 0;
        }
        """,
        [("bounded_by_macro", 3, 5)],
    ),
    "macro qualifier": (
        """
        #define DEVICE_INLINE __device__ __forceinline__
        // @optimize
        DEVICE_INLINE float lerp(float a, float b, float t) { return a + t * (b - a); }
        """,
        [("lerp", 3, 3)],
    ),
    "all-caps function name": (
        """
        // @optimize
        __global__ void SAXPY(float a) {}
        """,
        [("SAXPY", 2, 2)],
    ),
    "braces in strings, chars, comments and raw strings": (
        r"""
        // @optimize
        __global__ void tricky(char* out) {
          const char* s = "}}} \" }";  // }
          char c = '}', d = '\'', e = '{';
          /* } } */
          const char* r = R"x(})" })x";
          out[0] = s[0] + c + d + e + r[0];
        }
        __global__ void after() {}
        """,
        [("tricky", 2, 8)],
    ),
    "nested braces and lambdas": (
        """
        // @optimize
        __global__ void nested(int* p) {
          auto f = [&](int i) { if (i) { return p[i]; } return 0; };
          for (int i = 0; i < 4; ++i) { { p[i] = f(i); } }
          int init[2] = {1, 2};
        }
        """,
        [("nested", 2, 6)],
    ),
    "directive braces do not count": (
        """
        #define OPEN {
        #define MULTI(x) \\
            { x; }
        // @optimize
        __global__ void with_directives(int* p) {
        #define CLOSE }
        #if 0 /* { */
        #endif
          *p = 1;
        }
        """,
        [("with_directives", 5, 10)],
    ),
    "digit separators": (
        """
        // @optimize
        __global__ void big(long* p) { *p = 1'000'000; }
        """,
        [("big", 2, 2)],
    ),
    "block comment pragma": (
        """
        /* @optimize */
        __global__ void blocky() {}
        """,
        [("blocky", 2, 2)],
    ),
    "pragma on the definition's line": (
        """
        int before;
        /* @optimize */ __global__ void inline_pragma() {
        }
        """,
        [("inline_pragma", 2, 3)],
    ),
    "multi-line block comment pragma": (
        """
        /* @optimize
         * name=documented
         */
        __global__ void k() {}
        """,
        [("documented", 4, 4)],
    ),
    "comment between pragma and definition": (
        """
        // @optimize
        // Computes things.
        __global__ void commented() {}
        """,
        [("commented", 2, 3)],
    ),
    "name key": (
        """
        // @optimize name=fast_path
        __global__ void k() {}
        """,
        [("fast_path", 2, 2)],
    ),
    "const noexcept method": (
        """
        struct Op {
          // @optimize
          __device__ float apply(float x) const noexcept { return x; }
        };
        """,
        [("apply", 3, 3)],
    ),
    "call operator": (
        """
        struct Functor {
          // @optimize
          __device__ float operator()(float x) const { return x * x; }
        };
        """,
        [("operator()", 3, 3)],
    ),
    "compound operator": (
        """
        // @optimize
        __device__ Vec& operator+=(Vec& a, const Vec& b) { return a; }
        """,
        [("operator+=", 2, 2)],
    ),
    "trailing return type": (
        """
        // @optimize
        __device__ auto shifted(int x) -> decltype(x + 1) { return x + 1; }
        """,
        [("shifted", 2, 2)],
    ),
    "constructor with initializers": (
        """
        // @optimize
        Grid::Grid(int n) : size(n), cells{n, 0} {
          build();
        }
        """,
        [("Grid::Grid", 2, 4)],
    ),
    "explicit specialization": (
        """
        // @optimize
        template <>
        __global__ void fill<float>(float* p) { *p = 0; }
        """,
        [("fill<float>", 2, 3)],
    ),
    "not pragmas": (
        """
        // see @optimize below
        const char* s = "// @optimize";
        // @optimized
        __global__ void untouched() {}
        """,
        [],
    ),
    "pragmas in defines and strings are not pragmas": (
        r"""
        #define TAGGED /* @optimize */ __device__
        #define CONTINUED(x) x \
        // @optimize
        __global__ void after_define() {}
        const char* r = R"(
        // @optimize
        )";
        __global__ void after_string() {}
        """,
        [],
    ),
}

CONDITIONAL_CASES = {
    "a signature per branch": (
        """
        // @optimize
        #ifdef USE_X
        __global__ void k(A a) {
        #else
        __global__ void k(B b) {
        #endif
          use(a);
        }
        __global__ void after() {}
        """,
        [("k", 2, 8)],
    ),
    "unbalanced branches inside the body": (
        """
        // @optimize
        __global__ void k(int* p, int a) {
        #if defined(FAST)
          if (a > 0) {
        #elif defined(SAFE)
          if (a > 1) {
        #else
          if (a > 2) {
        #endif
            *p = a;
          }
        }
        __global__ void after() {}
        """,
        [("k", 2, 12)],
    ),
    "else branches that close and reopen": (
        """
        // @optimize
        __global__ void k(int* p, int a) {
          if (a) {
        #ifdef X
          } else if (a > 1) {
        #else
          } else {
        #endif
            *p = a;
          }
        }
        __global__ void after() {}
        """,
        [("k", 2, 11)],
    ),
    "nested conditionals": (
        """
        // @optimize
        #ifdef OUTER
        #  ifdef INNER
        __global__ void k(Inner x) {
        #  else
        __global__ void k(Outer x) {
        #  endif
        #else
        __global__ void k(Plain x) {
        #  if 0
          }
        #  endif
        #endif
          use(x);
        }
        __global__ void after() {}
        """,
        [("k", 2, 15)],
    ),
    "whole definitions in each branch": (
        """
        #ifdef FAST
        // @optimize name=fast
        __global__ void k(int* p) { *p = 1; }
        #else
        // @optimize name=slow
        __global__ void k(int* p) {
          *p = 2;
        }
        #endif
        """,
        [("fast", 3, 3), ("slow", 6, 8)],
    ),
    "if 0 takes the else branch": (
        """
        #if 0
        // @optimize
        __global__ void old(int* p) {
        #else
        // @optimize
        __global__ void current(int* p) {
        #endif
          *p = 1;
        }
        """,
        [("current", 6, 9)],
    ),
    "if 0 block with unbalanced braces in a body": (
        """
        // @optimize
        __global__ void k(int* p) {
        #if 0
          if (*p) {
            // @optimize
        #endif
          *p = 1;
        }
        __global__ void after() {}
        """,
        [("k", 2, 8)],
    ),
    "if 1 switches its else branch off": (
        """
        // @optimize
        __global__ void k(int* p) {
        #if 1
          *p = 1;
        #else
          *p = 2; }
        #endif
        }
        """,
        [("k", 2, 8)],
    ),
}

BLOCK_CASES = {
    "named block": (
        """
        // @optimize begin pair
        __global__ void a() {}
        __device__ int b() { return 1; }
        // @optimize end
        """,
        [("pair", 2, 3)],
    ),
    "name key block": (
        """
        /* @optimize begin name=trio */
        int x;
        /* @optimize end */
        """,
        [("trio", 2, 2)],
    ),
    "unnamed block": (
        """
        int x;
        // @optimize begin
        int y;
        // @optimize end
        """,
        [("block_L2", 3, 3)],
    ),
    "function then block": (
        """
        // @optimize
        __global__ void a() {}
        // @optimize begin rest
        __global__ void b() {}
        // @optimize end rest
        """,
        [("a", 2, 2), ("rest", 4, 4)],
    ),
}


REGION_CASES: dict[str, tuple[str, list[tuple[str, int, int]]]] = {
    **FUNCTION_CASES,
    **BLOCK_CASES,
    **CONDITIONAL_CASES,
}


@pytest.mark.parametrize(
    ("source", "expected"), list(REGION_CASES.values()), ids=list(REGION_CASES)
)
def test_regions(source: str, expected: list[tuple[str, int, int]]) -> None:
    result = _scan(source)
    assert _found(result) == expected
    assert result.warnings == ()


def test_duplicate_names_are_numbered() -> None:
    result = scan(b"// @optimize name=k\nvoid a() {}\n// @optimize\nvoid k() {}\n" * 2)
    assert [r.name for r in result.regions] == ["k", "k#2", "k#3", "k#4"]
    assert [w.line for w in result.warnings] == [3, 5, 7]
    assert "'k#2'" in result.warnings[0].message


WARNING_CASES = {
    "declaration": ("// @optimize\n__global__ void k(int);\n", "directly above", 1),
    "extern block": ('// @optimize\nextern "C" {\nvoid f() {}\n}\n', "directly above", 1),
    "namespace": ("// @optimize\nnamespace x {\nvoid f() {}\n}\n", "directly above", 1),
    "struct": ("// @optimize\nstruct __align__(16) S {\n  int a;\n};\n", "directly above", 1),
    "variable": ("// @optimize\n__device__ int table[] = {1, 2};\n", "directly above", 1),
    "statement": ("void f() {\n  // @optimize\n  for (;;) {}\n}\n", "directly above", 2),
    "end of scope": ("void f() {\n  // @optimize\n}\n", "directly above", 2),
    "end of file": ("int x;\n// @optimize\n", "no function definition", 2),
    "unknown word": ("// @optimize fast\nvoid f() {}\n", "unknown @optimize word fast", 1),
    "begin without end": ("// @optimize begin\nint x;\n", "begin without end", 1),
    "end without begin": ("int x;\n// @optimize end\n", "end without begin", 2),
    "nested begin": (
        "// @optimize begin\n// @optimize begin\nint x;\n// @optimize end\n",
        "nested",
        2,
    ),
    "pragma in block": (
        "// @optimize begin\n// @optimize\nvoid f() {}\n// @optimize end\n",
        "inside a begin/end block",
        2,
    ),
    "pragma in function": ("// @optimize\nvoid f() {\n  // @optimize\n}\n", "inside an", 3),
    "two pragmas": ("// @optimize\n// @optimize name=b\nvoid f() {}\n", "another", 1),
    "empty block": ("// @optimize begin\n// @optimize end\n", "empty", 1),
    "unbalanced": ("// @optimize\nvoid f() {\n  if (x) {\n}\n", "unbalanced", 1),
    "malformed value": ("// @optimize name=\nvoid f() {}\n", "malformed key=value", 1),
    "malformed key": ("// @optimize 9x=1\nvoid f() {}\n", "malformed key=value", 1),
    "unknown key": ("// @optimize speed=fast\nvoid f() {}\n", "unknown @optimize key", 1),
    "mismatched end": ("// @optimize begin a\nint x;\n// @optimize end b\n", "closes", 3),
    "block across #else": (
        "#if A\n// @optimize begin k\nint a;\n#else\nint b;\n// @optimize end\n#endif\n",
        "crosses the #else on line 4",
        2,
    ),
    "block across an inner #endif and the outer #else": (
        "#if A\n#if B\n// @optimize begin k\nint a;\n#endif\n#else\nint b;\n// @optimize end\n"
        "#endif\n",
        "crosses the #else on line 6",
        3,
    ),
    "skipped branch": (
        "#ifdef A\nvoid f(A a) {\n#else\n// @optimize\nvoid f(B b) {\n#endif\n}\n",
        "above the #if",
        4,
    ),
}


@pytest.mark.parametrize(
    ("source", "message", "line"), list(WARNING_CASES.values()), ids=list(WARNING_CASES)
)
def test_warnings(source: str, message: str, line: int) -> None:
    result = scan(source.encode())
    assert [(w.line, message in w.message) for w in result.warnings] == [(line, True)]


def test_whole_conditionals_inside_a_region_are_fine_and_a_crossing_one_is_kept() -> None:
    """A region may hold whole #if ... #endif blocks (nested, with #elif/#else), sit inside one
    branch, or begin in a branch and end after its #endif (both ends kept whenever that branch
    is compiled). One that ends in another branch of the conditional it begins in is still a
    region (the build substitutes text), with a warning: preprocessed, it always loses an end."""
    whole = (
        "#if A\n// @optimize begin k\n#ifdef B\nint b;\n#elif C\nint c;\n#else\n#if D\nint d;"
        "\n#endif\n#endif\n// @optimize end\n#endif\n"
        "// @optimize\nvoid f() {\n#if E\n  g();\n#endif\n}\n"
        "#ifdef F\n// @optimize begin tail\nint t;\n#endif\nint u;\n// @optimize end\n"
    )
    result = scan(whole.encode())
    assert [r.name for r in result.regions] == ["k", "f", "tail"] and result.warnings == ()
    crossing = scan(WARNING_CASES["block across #else"][0].encode())
    assert [r.name for r in crossing.regions] == ["k"]


def test_bad_key_value_keeps_the_region() -> None:
    result = scan(b"// @optimize name= speed=fast\nvoid f() {}\n")
    assert _found(result) == [("f", 2, 2)]
    assert len(result.warnings) == 2


def test_offsets_hash_and_text() -> None:
    source = b"int a;\n// @optimize\n__global__ void k() {\n  a;\n}\nint b;\n"
    (span,) = scan(source).regions
    assert (span.kind, span.pragma_line) == ("function", 2)
    assert source[span.start_offset : span.end_offset] == b"__global__ void k() {\n  a;\n}\n"
    assert span.text_hash == hashlib.sha256(b"__global__ void k() {\n  a;\n}\n").hexdigest()
    assert region_text(source, span) == "__global__ void k() {\n  a;\n}\n"


def test_region_at_end_of_file_without_newline() -> None:
    source = b"// @optimize\nvoid f() {}"
    (span,) = scan(source).regions
    assert (span.start_offset, span.end_offset) == (13, len(source))


def test_crlf_lines_and_hash_match_lf() -> None:
    lf = b"int a;\n// @optimize begin two\nint b;\nint c;\n// @optimize end\n"
    crlf = lf.replace(b"\n", b"\r\n")
    (span_lf,) = scan(lf).regions
    (span_crlf,) = scan(crlf).regions
    assert (span_crlf.start_line, span_crlf.end_line) == (3, 4)
    assert crlf[span_crlf.start_offset : span_crlf.end_offset] == b"int b;\r\nint c;\r\n"
    assert span_crlf.text_hash == span_lf.text_hash
    assert region_text(crlf, span_crlf) == "int b;\nint c;\n"


def test_non_utf8_bytes() -> None:
    source = b'// caf\xe9 \xff\n// @optimize\nvoid f() { const char* s = "\xe9}\xff"; }\n'
    (span,) = scan(source).regions
    assert (span.name, span.start_line, span.end_line) == ("f", 3, 3)
    assert region_text(source, span) == 'void f() { const char* s = "\ufffd}\ufffd"; }\n'


def test_non_utf8_name() -> None:
    (span,) = scan(b"// @optimize begin caf\xe9\nint x;\n// @optimize end\n").regions
    assert span.name == "caf\ufffd"


_FUZZ_PIECES = [
    b"// @optimize\n", b"/* @optimize */", b"// @optimize begin x\n", b"// @optimize end\n",
    b"/*", b"*/", b"//", b"{", b"}", b"(", b")", b"<", b">", b";", b":", b"::", b'"', b"'",
    b'R"x(', b')x"', b"#define A {\n", b"\\\n", b"\r\n", b"\n", b" ", b"\xff", b"\xe9",
    b"#if 0\n", b"#if 1\n", b"#ifdef X\n", b"#elif Y\n", b"#else\n", b"#endif\n",
    b"void f", b"template", b"operator", b"__launch_bounds__(1)", b"name=", b"=", b"[[", b"]]",
]  # fmt: skip


@pytest.mark.parametrize("seed", range(40))
def test_fuzz_never_raises_and_spans_are_consistent(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(50):
        if rng.random() < 0.2:
            source = bytes(rng.randrange(256) for _ in range(rng.randrange(200)))
        else:
            source = b"".join(rng.choice(_FUZZ_PIECES) for _ in range(rng.randrange(60)))
        result = scan(source)
        previous_end = 0
        for span in result.regions:
            assert previous_end <= span.start_offset < span.end_offset <= len(source)
            assert span.start_line <= span.end_line
            assert source.count(b"\n", 0, span.start_offset) == span.start_line - 1
            region = source[span.start_offset : span.end_offset]
            ends_line = region.endswith(b"\n")
            assert ends_line or span.end_offset == len(source)
            assert region.count(b"\n") == span.end_line - span.start_line + ends_line
            previous_end = span.end_offset
