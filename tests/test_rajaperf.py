"""integration/rajaperf on a fixture tree that imitates RAJAPerf's layout (tests/fixtures/rajaperf):
macro expansion on tricky forms, tagging, the CUDA 13 fixes, the prepare/unprepare round trip,
version detection, the generated nvcc-opt.toml (loaded by nvcc-opt's own loader)."""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from pathlib import Path

import pytest

from integration.rajaperf.build import object_of
from integration.rajaperf.fixes import cub_sum, cxx17, memadvise_location
from integration.rajaperf.kernels import KERNELS
from integration.rajaperf.ledger import FOLDER
from integration.rajaperf.macros import Expander, MacroError, read_defines
from integration.rajaperf.prepare import prepare, tagged_kernels, unprepare
from integration.rajaperf.tagging import TagError, tag
from integration.rajaperf.tunings import fixed_block_tuning
from integration.rajaperf.version import VersionError, detect
from nvcc_opt.config import load
from nvcc_opt.regions.scan import scan

FIXTURE = Path(__file__).parent / "fixtures" / "rajaperf" / "checkout"


def expand(header: str, code: str) -> str:
    return Expander(read_defines(header)).expand(code)


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    root = tmp_path / "RAJAPerf"
    shutil.copytree(FIXTURE, root)
    return root


def snapshot(root: Path) -> dict[str, tuple[str, int]]:
    found = {}
    for path in sorted(root.rglob("*")):
        if path.is_file():
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            found[path.relative_to(root).as_posix()] = (digest, path.stat().st_mode)
    return found


# --- the 36 kernels ---------------------------------------------------------------------------


def test_the_36_kernels_two_without_base_cuda() -> None:
    groups = {g: sum(k.group == g for k in KERNELS) for g in ("Apps", "Algorithm", "Polybench")}
    assert groups == {"Apps": 15, "Algorithm": 8, "Polybench": 13}
    assert sorted(k.name for k in KERNELS if not k.has_base_cuda) == ["SORT", "SORTPAIRS"]
    assert len({k.full_name for k in KERNELS}) == 36


# --- macro expansion --------------------------------------------------------------------------


def test_multiline_body_keeps_its_lines_indented_like_the_use() -> None:
    header = "#define BODY \\\n  a[i] = b[i]; \\\n  c[i] = a[i] * 2;\n"
    assert expand(header, "  if (i < n) {\n    BODY;\n  }\n") == (
        "  if (i < n) {\n    a[i] = b[i];\n    c[i] = a[i] * 2;\n  }\n"
    )


def test_nested_macros_with_arguments_and_comments_inside() -> None:
    header = (
        "#define K 0.5 /* half */\n"
        "#define SQ(x) ((x) * (x))\n"
        "#define HALF_SQ(x, y) \\\n  (K * SQ(x) /* nested */ + \\\n   SQ(y))\n"
    )
    out = expand(header, "r = HALF_SQ(a[i], b);")
    assert out == "r = (0.5 * ((a[i]) * (a[i]))   +\n((b) * (b)));"


def test_line_comment_on_a_continued_line_eats_the_rest_of_the_definition() -> None:
    header = "#define BODY \\\n  x = 1; // note \\\n  y = 2;\n"
    assert expand(header, "BODY") == "x = 1;"


def test_arguments_with_commas_in_parentheses_and_variadic() -> None:
    header = "#define F(a, b) a + b\n#define V(fmt, ...) call(fmt, __VA_ARGS__)\n"
    assert expand(header, "F(g(1, 2), 3)") == "g(1, 2) + 3"
    assert expand(header, "V(s, 1, 2)") == "call(s, 1, 2)"


def test_a_macro_never_expands_inside_itself_and_a_bare_function_name_stays() -> None:
    header = "#define X X + 1\n#define F(a) a\n"
    assert expand(header, "X; int (*p)(int) = F;") == "X + 1; int (*p)(int) = F;"


def test_words_in_strings_and_comments_are_not_macros() -> None:
    header = "#define BODY x = 1;\n"
    assert expand(header, '"BODY" // BODY\nBODY') == '"BODY" // BODY\nx = 1;'


def test_include_guard_is_not_a_condition_and_undef_removes() -> None:
    header = "#ifndef G_HPP\n#define G_HPP\n#define A 1\n#define B 2\n#undef B\n#endif\n"
    defines = read_defines(header)
    assert set(defines.macros) == {"A"}
    assert defines.macros["A"][0].conditions == ()


def test_define_under_if_is_written_with_its_conditions_as_a_statement() -> None:
    header = (
        "#ifndef G\n#define G\n#if defined(FAST)\n#define BODY y = fast(x);\n#else\n"
        "#define BODY \\\n  y = slow(x);\n#endif\n#endif\n"
    )
    out = expand(header, "{\n    BODY;\n}\n")
    assert out == (
        "{\n#if !(defined(FAST))\n    y = slow(x);\n#elif (defined(FAST))\n    y = fast(x);\n"
        "#else\n    BODY;\n#endif\n}\n"
    )


def test_define_under_if_inside_an_expression_is_refused_with_its_line() -> None:
    header = "#if defined(FAST)\n#define CLAMP(v) fmax(v, 0)\n#else\n#define CLAMP(v) v\n#endif\n"
    with pytest.raises(MacroError, match=r"<region>:2: CLAMP is defined under #if"):
        expand(header, "x = 1;\ny = CLAMP(x) + 1;")


def test_stringify_and_paste_are_refused_not_mangled() -> None:
    with pytest.raises(MacroError, match="NAME uses # or ##"):
        expand("#define NAME(a) #a\n", "NAME(x)")
    with pytest.raises(MacroError, match="GLUE uses # or ##"):
        expand("#define GLUE a ## b\n", "GLUE")


# --- tagging ----------------------------------------------------------------------------------


def test_tagging_expands_only_inside_the_region(checkout: Path) -> None:
    source = (checkout / "src/apps/PRESSURE-Cuda.cpp").read_text()
    defines = read_defines((checkout / "src/apps/PRESSURE.hpp").read_text())
    tagged = tag(source, defines, "Apps_PRESSURE", "PRESSURE.hpp", "PRESSURE-Cuda.cpp")
    assert tagged.kernels == ("pressurecalc1", "pressurecalc2")
    assert tagged.expanded == ("PRESSURE_BODY1", "PRESSURE_BODY2")
    [region] = scan(tagged.text.encode()).regions
    assert region.name == "Apps_PRESSURE"
    inside = tagged.text.splitlines()[region.start_line - 1 : region.end_line]
    assert not any("PRESSURE_BODY" in line for line in inside)
    assert "template < size_t block_size >" in inside[0]
    after = "\n".join(tagged.text.splitlines()[region.end_line :])
    assert after.count("PRESSURE_BODY1;") == 1 and after.count("PRESSURE_BODY2;") == 1


ACROSS_BRANCHES = """\
#include "K.hpp"
#if defined(RAJA_ENABLE_CUDA)
#define USE_CONSTANT
#if defined(USE_CONSTANT)
__constant__ double w[4];
__global__ void k(double* out) {
#ifdef SLOW
  out[0] = 0.0;
#endif
  out[threadIdx.x] = w[threadIdx.x];
}
#else
__global__ void k(double* out, const double* w) { out[threadIdx.x] = w[threadIdx.x]; }
#endif
void run() {}
#endif
"""


def test_kernels_in_two_branches_of_a_conditional_are_tagged_with_the_whole_conditional() -> None:
    """FIR-Cuda.cpp defines its kernel under #if and again under #else: a region from the first
    to the last kernel would begin in one branch and end in the other, and lose its end line
    when preprocessed (the allowlist then refused every candidate of FIR on the H100). The region
    takes the whole #if ... #endif; a complete conditional inside a kernel changes nothing."""
    tagged = tag(ACROSS_BRANCHES, read_defines(""), "K", "K.hpp", "K-Cuda.cpp")
    [region] = scan(tagged.text.encode()).regions
    lines = tagged.text.splitlines()
    inside = lines[region.start_line - 1 : region.end_line]
    assert inside[0] == "#if defined(USE_CONSTANT)" and inside[-1] == "#endif"
    assert lines[region.end_line + 1] == "void run() {}"  # after the region's end line
    assert (tagged.first_line, tagged.last_line) == (4, 14)
    one = "\n".join(ACROSS_BRANCHES.splitlines()[4:11]) + "\n"  # the first kernel alone
    alone = tag(one, read_defines(""), "K", "K.hpp", "K-Cuda.cpp")
    [region] = scan(alone.text.encode()).regions
    assert alone.text.splitlines()[region.start_line - 1].startswith("__global__ void k(")


def test_no_global_kernel_is_no_base_cuda_variant(checkout: Path) -> None:
    with pytest.raises(TagError, match="no __global__ kernel"):
        tag((checkout / "src/algorithm/SORT-Cuda.cpp").read_text(), read_defines(""), "S", "h", "f")


# --- CUDA 13 fixes ----------------------------------------------------------------------------


def test_fixes_rewrite_the_class_of_code_and_leave_others() -> None:
    assert cxx17("set(CMAKE_CXX_STANDARD 14)\nset(BLT_CXX_STD c++11)\n") == (
        "set(CMAKE_CXX_STANDARD 17)\nset(BLT_CXX_STD c++17)\n"
    )
    assert cxx17("set(CMAKE_CXX_STANDARD 20)\n") == "set(CMAKE_CXX_STANDARD 20)\n"
    summed = cub_sum('#include "a.hpp"\n\nint f() { return g(::cub::Sum()); }\n')
    assert "::cuda::std::plus<>()" in summed and "cub::Sum" not in summed
    assert summed.index("<cuda/std/functional>") < summed.index("int f()")
    text = (FIXTURE / "src/common/CudaDataUtils.hpp").read_text()
    fixed = memadvise_location(text)
    assert "nvcc_opt_mem_location(cudaCpuDeviceId)" in fixed
    assert "nvcc_opt_mem_location(device)" in fixed  # an argument on the next line
    helper = fixed.index("#ifndef NVCC_OPT_RAJAPERF_MEM_LOCATION")
    assert fixed.index("#include <cuda_runtime.h>") < helper < fixed.index("#if defined(FAKE_NVTX)")
    assert memadvise_location(fixed) == fixed  # applied once


# --- prepare / unprepare ----------------------------------------------------------------------


def test_prepare_then_unprepare_leaves_the_tree_byte_identical(checkout: Path) -> None:
    before = snapshot(checkout)
    done = prepare(checkout, checkout / "build-nvcc-opt", python=sys.executable)
    assert set(done.tagged) == {
        "Apps_PRESSURE", "Apps_ENERGY", "Apps_VOL3D", "Algorithm_REDUCE_SUM",
        "Polybench_POLYBENCH_JACOBI_1D",
    }  # fmt: skip
    assert done.no_base_cuda == ["Algorithm_SORT", "Algorithm_SORTPAIRS"]
    assert "Algorithm_SORT" not in done.not_tagged  # reported as having no Base_CUDA variant
    assert {f.split(":")[0] for f in done.fixes} == {"cxx17", "memadvise-location", "cub-sum"}
    assert "missing" in done.not_tagged["Apps_LTIMES"]
    assert snapshot(checkout) != before
    assert [k.name for k in tagged_kernels(checkout)] == [
        "ENERGY", "PRESSURE", "VOL3D", "REDUCE_SUM", "POLYBENCH_JACOBI_1D",
    ]  # fmt: skip
    with pytest.raises(RuntimeError, match="prepared already"):
        prepare(checkout, checkout / "build-nvcc-opt")
    assert unprepare(checkout) == []
    assert snapshot(checkout) == before
    assert not (checkout / FOLDER).exists()


def test_a_file_edited_after_prepare_is_kept_and_named(checkout: Path) -> None:
    prepare(checkout, checkout / "build-nvcc-opt")
    edited = checkout / "src/apps/PRESSURE-Cuda.cpp"
    edited.write_text(edited.read_text() + "// my edit\n")
    kept = unprepare(checkout)
    assert len(kept) == 1 and kept[0].startswith("src/apps/PRESSURE-Cuda.cpp: changed since")
    assert edited.read_text().endswith("// my edit\n")
    assert "@optimize" not in (checkout / "src/apps/ENERGY-Cuda.cpp").read_text()


def test_tricky_header_expands_in_the_region_and_the_host_code_keeps_the_macro(
    checkout: Path,
) -> None:
    prepare(checkout, checkout / "build-nvcc-opt")
    text = (checkout / "src/apps/ENERGY-Cuda.cpp").read_text()
    [region] = scan(text.encode()).regions
    inside = "\n".join(text.splitlines()[region.start_line - 1 : region.end_line])
    assert "e_new[i] = e_old[i] - (0.5 * ((delvc[i]) * (delvc[i]))" in inside
    assert "#elif (defined(ENERGY_FAST_MATH))" in inside and "continues" not in inside
    host = "\n".join(text.splitlines()[region.end_line :])
    assert "ENERGY_BODY2;" in host


def test_generated_settings_load_with_nvcc_opts_loader(checkout: Path) -> None:
    build = checkout / "build-nvcc-opt"
    build.mkdir()
    prepare(checkout, build, python=sys.executable)
    folder = checkout / FOLDER / "kernels" / "Algorithm_HISTOGRAM"
    assert not folder.exists()  # not in the fixture: not tagged, no settings
    config = load(checkout / FOLDER / "kernels" / "Algorithm_REDUCE_SUM")
    assert config.build_dir == build.resolve()
    assert config.store_path == (checkout / FOLDER / "store.db").resolve()
    run = config.render_run(config.build_dir, "0", checkout / "work")
    assert run[run.index("--kernel") + 1] == "Algorithm_REDUCE_SUM"
    assert run[run.index("--tuning") + 1] == "blkatm_occgs_256"
    text = (folder.parent / "Algorithm_REDUCE_SUM" / "nvcc-opt.toml").read_text()
    assert "rtol = 1e-08" in text and "atomic" in text
    assert "rtol = 1e-10" in (folder.parent / "Apps_PRESSURE" / "nvcc-opt.toml").read_text()
    assert load(checkout).store_path == config.store_path


FIXED_BLOCK = """
#define Q1D 4
#define D1D (Q1D - 1)
class K {
  static const size_t default_gpu_block_size = D1D * (Q1D + 1u) * 2;
  using gpu_block_sizes_type =
      integer::list_type<default_gpu_block_size>;
};
"""


def test_a_kernel_that_fixes_its_block_size_is_timed_at_that_size() -> None:
    """MASS3DPA-like headers run one tuning, block_<their size>, evaluated from their macros;
    asked for block_256 the driver ran nothing (every run of 4 kernels failed on the H100)."""
    assert fixed_block_tuning(FIXED_BLOCK) == "block_30"
    configured = FIXED_BLOCK.replace(
        "integer::list_type<default_gpu_block_size>",
        "integer::make_gpu_block_size_list_type<default_gpu_block_size>",
    )
    assert fixed_block_tuning(configured) is None  # the build's sizes: block_256
    assert fixed_block_tuning(FIXED_BLOCK.replace("D1D *", "sizeof(double) *")) is None
    assert fixed_block_tuning(FIXED_BLOCK.replace("* 2", "* 0")) is None
    assert fixed_block_tuning(FIXED_BLOCK.replace("Q1D 4", "Q1D __COUNTER__")) is None


def test_prepare_times_a_fixed_size_kernel_at_its_own_tuning(checkout: Path) -> None:
    header = checkout / "src" / "apps" / "VOL3D.hpp"
    header.write_text(header.read_text() + FIXED_BLOCK)
    build = checkout / "build-nvcc-opt"
    build.mkdir()
    prepare(checkout, build, python=sys.executable)
    kernels = checkout / FOLDER / "kernels"
    assert '"--tuning", "block_30"' in (kernels / "Apps_VOL3D" / "nvcc-opt.toml").read_text()
    assert '"--tuning", "block_256"' in (kernels / "Apps_PRESSURE" / "nvcc-opt.toml").read_text()


# --- versions ---------------------------------------------------------------------------------


def test_another_version_is_named_and_refused_unless_forced(checkout: Path) -> None:
    top = checkout / "CMakeLists.txt"
    top.write_text(top.read_text().replace("VERSION_MINOR 07", "VERSION_MINOR 11"))
    assert detect(checkout).suite == "2024.11.0"
    with pytest.raises(VersionError, match=r"RAJAPerf 2024\.11\.0.* is not a version whose"):
        prepare(checkout, checkout / "b")
    assert not (checkout / FOLDER).exists()  # refused before any change
    done = prepare(checkout, checkout / "b", force=True)
    assert done.warning is not None and "2024.11.0" in done.warning


def test_missing_submodules_and_non_checkouts_are_named(checkout: Path, tmp_path: Path) -> None:
    shutil.rmtree(checkout / "tpl" / "RAJA" / "tpl" / "camp")
    with pytest.raises(VersionError, match="submodule.*camp.*git submodule update"):
        detect(checkout)
    with pytest.raises(VersionError, match="not a RAJAPerf checkout"):
        detect(tmp_path)


# --- the command line -------------------------------------------------------------------------


def test_cli_prepare_status_unprepare(checkout: Path) -> None:
    from click.testing import CliRunner

    from integration.rajaperf.cli import main

    runner = CliRunner()
    done = runner.invoke(main, ["prepare", str(checkout), "--no-configure",
                                "--tuning", "PRESSURE=block_128"])  # fmt: skip
    assert done.exit_code == 0, done.output
    assert done.output.splitlines()[0] == "checkout: RAJAPerf 2024.07.0, RAJA 2024.07.0"
    assert "no Base_CUDA variant (reported, not optimized): Algorithm_SORT" in done.output
    toml = checkout / FOLDER / "kernels" / "Apps_PRESSURE" / "nvcc-opt.toml"
    assert '"--tuning", "block_128"' in toml.read_text()
    status = runner.invoke(main, ["status", str(checkout)])
    assert "tag  Apps_PRESSURE: src/apps/PRESSURE-Cuda.cpp" in status.output
    assert "5 of 36 kernels tagged" in status.output
    undone = runner.invoke(main, ["unprepare", str(checkout)])
    assert undone.exit_code == 0 and undone.output.strip().endswith("restored")
    again = runner.invoke(main, ["unprepare", str(checkout)])
    assert again.exit_code == 1 and "not prepared" in again.output


def test_cli_refuses_another_version_in_one_line(checkout: Path) -> None:
    from click.testing import CliRunner

    from integration.rajaperf.cli import main

    top = checkout / "CMakeLists.txt"
    top.write_text(top.read_text().replace("VERSION_MAJOR 2024", "VERSION_MAJOR 2025"))
    done = CliRunner().invoke(main, ["prepare", str(checkout), "--no-configure"])
    assert done.exit_code == 1
    [line] = done.output.strip().splitlines()
    assert line.startswith("Error: RAJAPerf 2025.07.0") and "--force" in line


def test_the_object_of_a_source_is_named_as_ninja_names_it(tmp_path: Path) -> None:
    """compile_commands.json's output is relative in CMake 3.25 and absolute in newer CMake (the
    GPU machine's: every kernel came out "unknown target"); the -o of the command where no output
    is written. Ninja knows only the build tree's relative names."""
    build = tmp_path / "build"
    build.mkdir()
    sources = [tmp_path / f"{n}-Cuda.cpp" for n in ("A", "B", "C")]
    d = str(build)  # compile_commands.json names the folder each compile runs in
    entries = [
        {"directory": d, "file": str(sources[0]), "command": "nvcc -c x",
         "output": "src/a.dir/A-Cuda.cpp.o"},
        {"directory": d, "file": str(sources[1]), "command": "nvcc -c x",
         "output": str(build / "src/b.dir/B-Cuda.cpp.o")},
        {"directory": d, "file": str(sources[2]),
         "arguments": ["nvcc", "-o", str(build / "c/C-Cuda.cpp.o"), "-c"]},
    ]  # fmt: skip
    (build / "compile_commands.json").write_text(json.dumps(entries))
    assert object_of(build, sources[0]) == "src/a.dir/A-Cuda.cpp.o"
    assert object_of(build, sources[1]) == "src/b.dir/B-Cuda.cpp.o"
    assert object_of(build, sources[2]) == "c/C-Cuda.cpp.o"
    assert object_of(build, tmp_path / "D-Cuda.cpp") is None
