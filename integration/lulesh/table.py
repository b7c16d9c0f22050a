"""The paper's Table II for LULESH as JSON and Markdown (pure but for writing the files).

JSON schema "nvcc-opt-lulesh-table/1" (what `nvcc-opt report` reads)::

    {"schema": "nvcc-opt-lulesh-table/1",
     "kernel": "CalcKinematicsAndMonotonicQGradient_kernel",
     "lulesh": {"src": str, "commit": str}, "model": str, "rewrite_id": int | null,
     "problem": {"size": int, "iters": int}, "pairs": int, "gpu": str,
     "correct": bool, "check_reasons": [str],          # optimized vs baseline output
     "baseline_figures": {...} | null,                  # output.Figures of the baseline's run
     "rows": [{"name": "kernel" | "application", "unit": "ms" | "s",
               "baseline": float | null, "optimized": float | null,  # medians
               "speedup": float | null,                 # baseline / optimized
               "baseline_samples": [float], "optimized_samples": [float], "note": str}],
     "failures": [str], "notes": [str],
     "optimize": {...} | null}    # `nvcc-opt optimize --json`'s object for the kernel (absent in
                                  # tables written before it was kept): explanation, trace, ...

A missing value is null with the reason in the row's note: the table always comes.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

from integration.lulesh.output import KERNEL

SCHEMA = "nvcc-opt-lulesh-table/1"
PAPER = "the paper's Table II (H100, -s 120): kernel 17% faster, application 3% faster"


def row(name: str, unit: str, base: list[float], opt: list[float], note: str) -> dict[str, Any]:
    b = statistics.median(base) if base else None
    o = statistics.median(opt) if opt else None
    return {
        "name": name, "unit": unit, "baseline": b, "optimized": o,
        "speedup": b / o if b is not None and o else None,
        "baseline_samples": base, "optimized_samples": opt, "note": note,
    }  # fmt: skip


def markdown(result: dict[str, Any]) -> str:
    problem = result["problem"]
    iters = f" -i {problem['iters']}" if problem["iters"] > 0 else ""
    differs = "; ".join(result["check_reasons"])
    lines = [
        f"LULESH -s {problem['size']}{iters}, {result['pairs']} interleaved pairs on "
        f"{result['gpu'] or 'an unnamed GPU'}, model `{result['model']}`, rewrite "
        f"{result['rewrite_id'] if result['rewrite_id'] is not None else 'none'}"
        f"{'' if result['correct'] else f' (OUTPUT DIFFERS: {differs})'}",
        "",
        "| | baseline | optimized | speedup |",
        "|---|---:|---:|---:|",
    ]
    for r in result["rows"]:
        label = f"{KERNEL} ({r['unit']})" if r["name"] == "kernel" else f"application ({r['unit']})"
        cells = [_num(r["baseline"]), _num(r["optimized"]),
                 f"{r['speedup']:.3f}x" if r["speedup"] is not None else "-"]  # fmt: skip
        lines.append(f"| {label} | {' | '.join(cells)} |")
    notes = [f"{r['name']}: {r['note']}" for r in result["rows"] if r["note"]]
    notes += result["notes"] + [f"failure: {f}" for f in result["failures"]]
    lines += [""] + [f"- {n}" for n in notes] + [f"- for comparison, {PAPER}"]
    summary = result.get("optimize") or {}
    if summary.get("explanation"):
        lines += ["", f"What `{result['model']}` tried ({summary.get('wall_s', 0):.0f} s; trace "
                  f"{summary.get('trace', 'not kept')}):", "", "```",
                  str(summary["explanation"]).rstrip(), "```"]  # fmt: skip
    return "\n".join(lines) + "\n"


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def write(result: dict[str, Any], out: Path) -> tuple[Path, Path]:
    """OUT.json and OUT.md (OUT without suffix)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    js, md = out.with_suffix(".json"), out.with_suffix(".md")
    js.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    md.write_text(markdown(result), encoding="utf-8")
    return js, md
