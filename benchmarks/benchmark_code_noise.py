"""How often benchmark_code's verdict is right on a real GPU application.

  python benchmarks/benchmark_code_noise.py PROJECT [--trials 20] [--args ...] [--out FILE]

PROJECT is a configured project (nvcc-opt.toml, a CMake build tree built through nvcc-opt) with
a tagged region. Three measurements, in one run:

1. time per benchmark_code call: the real tool on the region's own text, `--calls` calls (the
   first configures the private trees and builds the baseline);
2. the baseline against itself: `--trials` comparisons, each exactly as benchmark_code times
   (run_once per run, the ABBA schedule after warm-up, `[run] repeats` pairs, stats.compare),
   between the two private trees built from the same code; target: "no difference" in >= 95%;
3. a variant 3% slower: the same comparisons with the candidate side given 3% more elements
   (`--size`); the ratio actually measured is reported beside the detection rate; target:
   "slower" in >= 95%.

Each trial also says whether benchmark_code's early stop (`[run] stop_early_after`: no pair of
the first few `min_speedup` faster) would have ended it: the self and slower comparisons should
mostly stop (time saved), and the slower one with its sides swapped, a real 3% speedup, never.

Results are appended to the output file after every trial, so a run that is stopped keeps what
it measured.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from nvcc_opt.config import load
from nvcc_opt.tools.bench import Benchmark
from nvcc_opt.tools.region import Region
from nvcc_opt.verify.measure import Build, run_once
from nvcc_opt.verify.stats import compare, hopeless, schedule
from nvcc_opt.workspace.runner import ProcessRunner


def trial(
    bench: Benchmark, base: Build, cand: Build, args_a: list[str], args_b: list[str], pairs: int
) -> Any:
    config = bench.config
    times: dict[str, list[float]] = {"A": [], "B": []}
    for step in schedule(pairs, config.run.warmup):
        side = step[-1]
        build, args = (base, args_a) if side == "A" else (cand, args_b)
        _, _, seconds = run_once(config, bench.runner, build, bench.gpu, tuple(args))
        if seconds is None:
            raise SystemExit(f"no time in a run of {build.build_dir}")
        if not step.startswith("warmup"):
            times[side].append(seconds)
    return compare(times["A"], times["B"], min_speedup=config.verify.min_speedup), times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("project", type=Path)
    parser.add_argument("--file", default="src/stencil.cu")
    parser.add_argument("--region", default="smooth_kernel")
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--size", type=int, default=1 << 22, help="elements per run (side A)")
    parser.add_argument("--reps", type=int, default=None, help="the program's --reps, both sides")
    parser.add_argument("--pairs", type=int, default=None, help="pairs per comparison")
    parser.add_argument("--calls", type=int, default=3, help="timed benchmark_code calls")
    parser.add_argument("--out", type=Path, default=Path("benchmark_code_noise.json"))
    options = parser.parse_args()

    config = load(options.project)
    region = Region.find(options.project / options.file, options.region)
    launcher = shutil.which("nvcc-opt") or "nvcc-opt"
    bench = Benchmark(config, region, ProcessRunner(), launcher=launcher, label="noise")
    report: dict[str, Any] = {
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "machine": {"host": platform.node(), "cpus": os.cpu_count(), "python": sys.version},
        "config": {
            "repeats": config.run.repeats,
            "warmup": config.run.warmup,
            "stop_early_after": config.run.stop_early_after,
        },
        "calls_s": [],
        "self": [],
        "slower": [],
    }

    def save() -> None:
        options.out.write_text(json.dumps(report, indent=1))

    for _ in range(options.calls):
        start = time.perf_counter()
        answer = bench.benchmark_code(region.text)
        report["calls_s"].append(round(time.perf_counter() - start, 2))
        report["last_answer"] = answer
        save()
    pairs = options.pairs or config.run.repeats
    report["config"]["pairs_per_trial"] = pairs
    base_tree, cand_tree = bench.trees()
    base, cand = Build(base_tree.path), Build(cand_tree.path)
    extra = ["--reps", str(options.reps)] if options.reps else []
    size_a = ["--size", str(options.size), *extra]
    size_b = ["--size", str(round(options.size * 1.03)), *extra]
    first = config.run.stop_early_after
    min_speedup = config.verify.min_speedup

    def early(a: list[float], b: list[float]) -> bool:
        return bool(first) and hopeless(a[:first], b[:first], min_speedup)

    # The two kinds alternate, trial by trial, so a run stopped early keeps both measurements.
    for _ in range(options.trials):
        for kind, args_b in (("self", size_a), ("slower", size_b)):
            result, times = trial(bench, base, cand, size_a, args_b, pairs)
            report[kind].append(
                {
                    "verdict": result.verdict,
                    "speedup": result.speedup,
                    "p": result.p_value,
                    "ratio_of_medians": statistics.median(times["B"])
                    / statistics.median(times["A"]),
                    # would benchmark_code have stopped after its first pairs ("not faster")?
                    # For the slower kind, also with the sides swapped: a real 3% speedup,
                    # which must never be stopped.
                    "stopped_early": early(times["A"], times["B"]),
                    "swapped_stopped_early": early(times["B"], times["A"]),
                }
            )
            save()
    summary = {
        kind: {
            "trials": len(report[kind]),
            "no difference": sum(t["verdict"] == "no difference" for t in report[kind]),
            "slower": sum(t["verdict"] == "slower" for t in report[kind]),
            "faster": sum(t["verdict"] == "faster" for t in report[kind]),
            "stopped early": sum(t["stopped_early"] for t in report[kind]),
            "swapped, stopped early": sum(t["swapped_stopped_early"] for t in report[kind]),
        }
        for kind in ("self", "slower")
    }
    report["summary"] = summary
    save()
    print(json.dumps({"calls_s": report["calls_s"], **summary}, indent=1))


if __name__ == "__main__":
    main()
