"""Element types behind aliases (`typedef double Real_t;`): found in the code or through the
policy's `search`, and used by the transforms that depend on the element type."""

from __future__ import annotations

from typing import Any

from nvcc_opt.search.kernel_facts import Facts
from nvcc_opt.search.launches import type_aliases
from nvcc_opt.search.policy import SearchPolicy
from nvcc_opt.search.transforms import BY_NAME
from tests.test_search_policy import ALL_TOOLS, drive, gpu

SCALE = """\
__global__ void scale(int n, real a, const real* x, real* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i];
}
"""


def test_aliases_resolve_through_chains_and_drop_conflicts() -> None:
    code = (
        "typedef double real8;\ntypedef real8 Real_t;\nusing Count = unsigned int;\n"
        "typedef struct { int a; } Pair;\ntypedef float Flip;\ntypedef double Flip;\n"
    )
    assert type_aliases(code) == {"real8": "double", "Real_t": "double", "Count": "unsigned int"}
    assert type_aliases("typedef Real_t R;", {"Real_t": "double"})["R"] == "double"


def test_a_precision_switch_is_decided_by_the_header_itself() -> None:
    header = (
        "#define DOUBLE\n#ifdef DOUBLE\ntypedef double real;\n#else\ntypedef float real;\n#endif\n"
    )
    assert type_aliases(header) == {"real": "double"}


def test_facts_scalar_drops_qualifiers_and_resolves() -> None:
    facts = Facts(types={"real": "float"})
    assert facts.scalar("const real") == "float"
    assert facts.scalar("unsigned   int") == "unsigned int"
    assert facts.scalar("Vec3") == "Vec3"


def test_element_type_transforms_see_through_an_alias() -> None:
    facts = Facts(no_alias=frozenset({"scale"}), types={"real": "float"})
    assert BY_NAME["ldg"].apply(SCALE, Facts(no_alias=frozenset({"scale"}))) is None
    ldg = BY_NAME["ldg"].apply(SCALE, facts)
    assert ldg is not None and "__ldg(&x[i])" in ldg
    vector = BY_NAME["vector_loads"].apply(SCALE, facts)
    assert vector is not None and "float4" in vector
    doubles = BY_NAME["vector_loads"].apply(
        SCALE, Facts(no_alias=frozenset({"scale"}), types={"real": "double"})
    )
    assert doubles is not None and "double2" in doubles and "float4" not in doubles


def test_the_policy_searches_for_an_unknown_element_type() -> None:
    region = SCALE.replace("scale", "rows")
    asked: list[str] = []

    def tools(name: str, args: dict[str, Any]) -> str:
        if name == "search" and "typedef" in args["pattern"]:
            asked.append(args["pattern"])
            return "[1 match]\nsrc/types.h (1)\n    2 | typedef float real;"
        return gpu(name, args)

    calls, _ = drive(SearchPolicy(), tools, offered=[*ALL_TOOLS], region=region)
    assert len(asked) == 1 and r"\breal\s*;" in asked[0]
    timed = [args["code"] for name, args in calls if name == "benchmark_code"]
    assert any("float4" in code for code in timed)  # vector loads, known to be floats


MACROS = "macros the build's command line defines, used in the region's file: "


def _macros_line(line: str) -> Any:
    """Tools whose compiler_analysis also names the command line's macros, as the tool writes."""
    asked: list[str] = []

    def tools(name: str, args: dict[str, Any]) -> str:
        if name == "search" and "typedef" in args["pattern"]:
            asked.append(args["pattern"])
            return "no matches"
        seen = gpu(name, args)
        if name == "compiler_analysis":
            head, _, rest = seen.partition("\n")
            return f"{head}\n{line}\n{rest}"
        return seen

    return tools, asked


def test_a_type_the_command_line_defines_needs_no_search() -> None:
    tools, asked = _macros_line(MACROS + "real=float")
    region = SCALE.replace("scale", "rows")
    calls, _ = drive(SearchPolicy(), tools, offered=[*ALL_TOOLS], region=region)
    assert asked == []
    assert any("float4" in a["code"] for name, a in calls if name == "benchmark_code")


def test_the_command_line_and_the_region_disagreeing_leaves_the_type_unknown() -> None:
    region = "#define real double\n" + SCALE.replace("scale", "rows")
    tools, asked = _macros_line(MACROS + "real=float")
    calls, _ = drive(SearchPolicy(), tools, offered=[*ALL_TOOLS], region=region)
    timed = [a["code"] for name, a in calls if name == "benchmark_code"]
    assert not any("float4" in code or "double2" in code for code in timed)
    assert asked == []  # nor looked up again, where a search would find one of the two


def test_a_default_the_region_guards_with_ifndef_gives_way_to_the_command_line() -> None:
    region = "#ifndef real\n#define real double\n#endif\n" + SCALE.replace("scale", "rows")
    tools, _ = _macros_line(MACROS + "real=float")
    calls, _ = drive(SearchPolicy(), tools, offered=[*ALL_TOOLS], region=region)
    timed = [a["code"] for name, a in calls if name == "benchmark_code"]
    assert any("float4" in code for code in timed)
    assert not any("double2" in code for code in timed)


def test_a_define_found_by_search_or_in_the_region_is_a_type() -> None:
    region = SCALE.replace("scale", "rows")

    def tools(name: str, args: dict[str, Any]) -> str:
        if name == "search" and "typedef" in args["pattern"]:
            assert "define" in args["pattern"]
            return "[1 match]\nsrc/types.h (1)\n    2 | #define real  double  // precision"
        return gpu(name, args)

    calls, _ = drive(SearchPolicy(), tools, offered=[*ALL_TOOLS], region=region)
    assert any("double2" in a["code"] for name, a in calls if name == "benchmark_code")
    own = "#define real float\n" + region
    calls, _ = drive(SearchPolicy(), gpu, offered=[*ALL_TOOLS], region=own)
    assert any("float4" in a["code"] for name, a in calls if name == "benchmark_code")
