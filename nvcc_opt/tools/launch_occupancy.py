"""The block sizes compiler_analysis shows occupancy at, and its occupancy lines: the launch's
constant block size, or `__launch_bounds__`; a block size the source cannot give (a run-time
value, or no launch in the file) is said to be unknown, with what the registers alone allow,
never shown at guessed sizes (profile_kernel reports the size the program launches).
"""

from __future__ import annotations

from dataclasses import dataclass

from nvcc_opt.tools import ptxas


@dataclass(frozen=True)
class Shape:
    block: int
    dynamic_shared: int | None  # bytes; None when the launch's is not a constant
    label: str  # where the block size comes from; "" for a guess


@dataclass(frozen=True)
class Shapes:
    shapes: list[Shape]
    note: str  # why the block sizes are guesses; "" when they are not


def shapes_of(kernel: str, bounds: str | None, code: str) -> Shapes:
    launches = ptxas.launches(code, kernel)
    known = [Shape(s.block, s.dynamic_shared, s.text) for s in launches if s.block is not None]
    if known:
        return Shapes(known, "")
    limit = ptxas.constant(bounds, code) if bounds else None
    if limit is not None:
        return Shapes([Shape(limit, 0, f"__launch_bounds__({bounds})")], "")
    runtime = [s.text for s in launches]
    where = (
        f"launched as {', '.join(runtime)}: a run-time value"
        if runtime
        else "no launch of it in this file and no __launch_bounds__"
    )
    note = (
        f"block size unknown from source ({where}); occupancy is not shown for guessed sizes. "
        "profile_kernel reports the block size the program launches and the achieved occupancy"
    )
    return Shapes([], note)


def occupancy_lines(f: ptxas.Function, shapes: list[Shape]) -> list[str]:
    limits = ptxas.limits_for(f.arch)
    if limits is None:
        return [f"occupancy: {f.arch} is not in the table ({', '.join(ptxas.ARCHS)})"]
    if not shapes:
        return [register_ceiling(limits, f.registers or 0)]
    lines = []
    for shape in shapes:
        dynamic = shape.dynamic_shared or 0
        o = ptxas.occupancy(limits, f.registers or 0, f.shared_bytes, shape.block, dynamic)
        at = f"{shape.label}: " if shape.label else ""
        at += f"{shape.block} threads/block"
        if dynamic:
            at += f" + {dynamic} B dynamic shared"
        elif shape.dynamic_shared is None:
            at += " (dynamic shared memory not a constant: not counted)"
        if o.blocks == 0:
            lines.append(f"{at}: cannot launch, one block needs more {' and '.join(o.limiters)}")
        else:
            lines.append(
                f"{at}: {o.blocks} blocks/SM, {o.warps} of {o.max_warps} warps "
                f"({o.fraction:.0%} occupancy), limited by {' and '.join(o.limiters)}"
            )
    return lines


def register_ceiling(limits: ptxas.Limits, registers: int) -> str:
    """What the registers alone allow, whatever the block size."""
    warps = ptxas.warps_by_registers(limits, registers)
    max_warps = limits.threads_per_sm // limits.warp_size
    text = f"registers alone allow up to {warps} of {max_warps} warps per SM"
    text += f" ({warps / max_warps:.0%})"
    return text + (", limited by registers at any block size" if warps < max_warps else "")
