"""What a LULESH run prints, read into numbers (pure: text in, values out).

LULESH 2.0.2-dev (cuda/src) ends a structured run with::

    Run completed:
       Problem size        =  45
       MPI tasks           =  1
       Iteration count     =  932
       Final Origin Energy = 1.234567e+05
       Testing Plane 0 of Energy Array on rank 0:
            MaxAbsDiff   = 1.2e-11
            TotalAbsDiff = 3.4e-10
            MaxRelDiff   = 5.6e-16

    Elapsed time         =       0.35 (s)
    Grind time (us/z/c)  = 0.0041 (per dom)  (0.0041 overall)
    FOM                  = 2.4e+05 (z/s)

Elapsed time is printed to 10 ms; the grind time to 8 significant digits. `elapsed_s` is the
grind time times iterations times zones (the same clock, 8 digits), checked against the printed
elapsed time.

Symmetry: the figures compare energy plane 0 with its transpose. MaxAbsDiff and TotalAbsDiff are
absolute, so they grow with the problem's energy (the origin energy is 7e4 at -s 45 and 8.5e7 at
-s 120 -i 100): a fixed tolerance on them passes everything at one size and rejects a bit-level
change at another (at -s 120 the baseline's own TotalAbsDiff is 2e-8). What is checked is scale
free: MaxRelDiff (LULESH's own, per element), MaxAbsDiff over the origin energy, and the mean
pair difference (TotalAbsDiff over the n(n-1)/2 pairs) over the origin energy.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

KERNEL = "CalcKinematicsAndMonotonicQGradient_kernel"

# One regex per figure LULESH prints.
FIGURES = {
    "iterations": r"Iteration count\s*=\s*(\d+)",
    "origin_energy": r"Final Origin Energy\s*=\s*(\S+)",
    "max_abs_diff": r"MaxAbsDiff\s*=\s*(\S+)",
    "total_abs_diff": r"TotalAbsDiff\s*=\s*(\S+)",
    "max_rel_diff": r"MaxRelDiff\s*=\s*(\S+)",
}
# The scale-free symmetry figures, as run_lulesh.py prints them after LULESH's output.
SYMMETRY_LINES = {
    "max_abs_diff_per_energy": r"lulesh_max_abs_diff_per_energy = (\S+)",
    "mean_abs_diff_per_energy": r"lulesh_mean_abs_diff_per_energy = (\S+)",
}
# nvcc-opt.toml's [check] numbers, in this order: the iteration count, the origin energy, then
# the scale-free symmetry figures.
CHECKED = (
    FIGURES["iterations"],
    FIGURES["origin_energy"],
    FIGURES["max_rel_diff"],
    *SYMMETRY_LINES.values(),
)
_SIZE = re.compile(r"^\s*Problem size\s*=\s*(\d+)\s*$", re.MULTILINE)  # not "Running until"
_ELAPSED = re.compile(r"Elapsed time\s*=\s*(\S+)\s*\(s\)")
_GRIND = re.compile(r"Grind time \(us/z/c\)\s*=\s*\S+\s*\(per dom\)\s*\(\s*(\S+)\s*overall\)")


class OutputError(ValueError):
    """A run's output is not that of a finished LULESH run; the message says what is missing."""


@dataclass(frozen=True)
class Figures:
    size: int
    iterations: int
    origin_energy: float
    max_abs_diff: float
    total_abs_diff: float
    max_rel_diff: float
    printed_elapsed_s: float
    elapsed_s: float  # from the grind time: 8 digits where the printed one has 10 ms

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def symmetry(self) -> dict[str, float]:
        """The scale-free symmetry figures (see the module's docstring); over an origin energy
        of 0 the absolute figures themselves."""
        energy = abs(self.origin_energy) or 1.0
        pairs = max(1, self.size * (self.size - 1) // 2)
        return {
            "max_rel_diff": self.max_rel_diff,
            "max_abs_diff_per_energy": self.max_abs_diff / energy,
            "mean_abs_diff_per_energy": self.total_abs_diff / pairs / energy,
        }

    def symmetry_lines(self) -> str:
        """The lines run_lulesh.py adds for nvcc-opt's [check] (SYMMETRY_LINES)."""
        figures = self.symmetry()
        return "".join(f"lulesh_{name} = {figures[name]:.9g}\n" for name in SYMMETRY_LINES)


def _one(pattern: str | re.Pattern[str], text: str, what: str) -> str:
    matches = re.findall(pattern, text)
    if len(matches) != 1:
        found = "no" if not matches else f"{len(matches)}"
        raise OutputError(f"{found} '{what}' line(s) in the output; a finished run prints one")
    return str(matches[0])


def parse(text: str) -> Figures:
    """The figures of one finished run; OutputError when a line is missing or repeated."""
    if "Run completed" not in text:
        last = next((ln.strip() for ln in reversed(text.splitlines()) if ln.strip()), "")
        raise OutputError(f"no 'Run completed' line: the run did not finish (last line: {last!r})")
    try:
        size = int(_one(_SIZE, text, "Problem size"))
        values = {name: float(_one(rx, text, name)) for name, rx in FIGURES.items()}
        printed = float(_one(_ELAPSED, text, "Elapsed time"))
        grind = float(_one(_GRIND, text, "Grind time"))
    except ValueError as exc:
        raise OutputError(str(exc)) from None
    iterations = int(values.pop("iterations"))
    elapsed = grind * iterations * size**3 * 1e-6
    if abs(elapsed - printed) > 0.006 + 1e-3 * printed:
        raise OutputError(
            f"grind time gives {elapsed:.4f} s but the printed elapsed time is {printed} s"
        )
    return Figures(size, iterations, printed_elapsed_s=printed, elapsed_s=elapsed, **values)


def compare(base: Figures, cand: Figures, rtol: float, sym_atol: float) -> list[str]:
    """Why `cand` does not match `base`: the same iteration count, the origin energy within
    `rtol`, the scale-free symmetry figures within `sym_atol` of the baseline's (a symmetric run
    stays so)."""
    reasons = []
    if cand.size != base.size:
        reasons.append(f"problem size {cand.size} vs baseline {base.size}")
    if cand.iterations != base.iterations:
        reasons.append(f"iteration count {cand.iterations} vs baseline {base.iterations}")
    if not abs(cand.origin_energy - base.origin_energy) <= rtol * abs(base.origin_energy):
        reasons.append(
            f"final origin energy {cand.origin_energy:.6e} vs baseline "
            f"{base.origin_energy:.6e} (rtol {rtol:g})"
        )
    base_sym, cand_sym = base.symmetry(), cand.symmetry()
    for name, b in base_sym.items():
        c = cand_sym[name]
        if not abs(c - b) <= sym_atol:
            reasons.append(f"symmetry {name} {c:.6e} vs baseline {b:.6e} (atol {sym_atol:g})")
    return reasons
