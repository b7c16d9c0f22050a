"""The vectors an element-wise rewrite moves its accesses through (`vector_loads.py`,
`vector_strided.py`): the body copied once per vector field or with another index, the loads,
the stores and the run-time alignment test, from an `element_access.Access`."""

from __future__ import annotations

from dataclasses import dataclass

import tree_sitter

from nvcc_opt.search.cuda import Source, fresh_name, indentation
from nvcc_opt.search.element_access import FIELDS, VECTOR, Access, Replacement


def lane(
    plan: Access, loaded: dict[str, str], stored: dict[str, str], field: str
) -> list[Replacement]:
    """Every access replaced by `field` of its pointer's loaded or stored vector."""
    out = [(r.start_byte, r.end_byte, f"{loaded[n]}.{field}") for n, rs in plan.reads.items()
           for r in rs]  # fmt: skip
    out += [(w.start_byte, w.end_byte, f"{stored[n]}.{field}") for n, w in plan.writes.items()]
    for n, assignment in plan.compound.items():  # `P[i] op= E` -> `out.f = in.f op (E)`
        operator = assignment.child_by_field_name("operator")
        right = assignment.child_by_field_name("right")
        assert operator is not None and right is not None
        op = source_text(operator)[:-1]
        out += [
            (operator.start_byte, operator.end_byte, f"= {loaded[n]}.{field} {op}"),
            (right.start_byte, right.start_byte, "("),
            (right.end_byte, right.end_byte, ")"),
        ]
    return out


def source_text(node: tree_sitter.Node) -> str:
    return (node.text or b"").decode()


def scalar(plan: Access, e: str) -> list[Replacement]:
    """Every access's index replaced by `e` (by `b + e` where it was `b + i`)."""
    nodes = [*(r for rs in plan.reads.values() for r in rs), *plan.writes.values()]
    out = []
    for node in nodes:
        indices = node.child_by_field_name("indices")
        argument = node.child_by_field_name("argument")
        assert indices is not None and argument is not None
        inner = indices.named_children[0]
        base = plan.bases.get(source_text(argument))
        out.append((inner.start_byte, inner.end_byte, e if base is None else f"{base} + {e}"))
    return out


def copy(
    source: Source, rest: list[tree_sitter.Node], replacements: list[Replacement], indent: int
) -> list[str]:
    """The rest's lines with `replacements` (absolute byte ranges) applied, indented."""
    start, end = rest[0].start_byte, rest[-1].end_byte
    data = source.data[start:end]
    for at, stop, text in sorted(replacements, reverse=True):
        data = data[: at - start] + text.encode() + data[stop - start :]
    base = indentation(source, rest[0]).decode()
    lines = data.decode().split("\n")
    lines = [lines[0], *(x[len(base) :] if x.startswith(base) else x.lstrip() for x in lines[1:])]
    return [" " * indent + line for line in lines]


@dataclass(frozen=True)
class Vectors:
    """The 16-byte vectors a rewrite moves the accesses through: per pointer, the name of its
    loaded and of its stored vector, and the run-time test that every pointer is aligned."""

    access: Access
    loaded: dict[str, str]
    stored: dict[str, str]

    @property
    def aligned(self) -> str:
        names = sorted({*self.access.reads, *self.access.writes})
        return " && ".join(
            f"reinterpret_cast<unsigned long long>({self.access.at(n)}) % 16 == 0" for n in names
        )

    def loads(self, at: str) -> list[str]:
        """Each read pointer's vector at vector index `at`, and each output's declared."""
        vector = VECTOR[self.access.element][0]
        out = [
            f"const {vector} {self.loaded[n]} = "
            f"reinterpret_cast<const {vector}*>({self.access.at(n)})[{at}];"
            for n in sorted(self.access.reads)
        ]
        return out + [f"{vector} {self.stored[n]};" for n in sorted(self.access.writes)]

    def lanes(self, source: Source, rest: list[tree_sitter.Node], indent: int) -> list[str]:
        """The body once per field of the vectors, each in its own block."""
        pad = " " * indent
        out = []
        for part in FIELDS[: VECTOR[self.access.element][1]]:
            replaced = lane(self.access, self.loaded, self.stored, part)
            out += [f"{pad}{{", *copy(source, rest, replaced, indent + 2), f"{pad}}}"]
        return out

    def stores(self, at: str) -> list[str]:
        vector = VECTOR[self.access.element][0]
        return [
            f"reinterpret_cast<{vector}*>({self.access.at(n)})[{at}] = {self.stored[n]};"
            for n in sorted(self.access.writes)
        ]


def vectors(plan: Access, used: set[str]) -> Vectors:
    """Fresh names (added to `used`) for the vectors of `plan`'s pointers."""
    loaded = {name: fresh_name(f"nvcc_opt_in_{name}", used) for name in plan.reads}
    used |= set(loaded.values())
    stored = {name: fresh_name(f"nvcc_opt_out_{name}", used) for name in plan.writes}
    used |= set(stored.values())
    return Vectors(plan, loaded, stored)
