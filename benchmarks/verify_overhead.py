"""What the verification's newer checks cost on the example, as a share of one final verification.

The issue's target: the checks added against reward hacking (the allowlist on the preprocessed
code and the object line, the channel in every timed run, the runtime state check) cost under 25%
of a final verification's wall time on the example. Measured in one run on a GPU machine:

1. one final verification (`verify_code`) of an honest candidate (the example's fused pair),
   with the code checks and the state check timed where they are called;
2. the channel's cost per run: the example's run script with and without the channel,
   interleaved (`--pairs` pairs), the median of the per-pair differences, times the number of
   runs that carried it in (1).

share = (code checks + state check + channel runs x per-run cost) / verification wall time.
Needs a GPU, nvcc and the example's build tools. Run from the repository root:

    python benchmarks/verify_overhead.py [--pairs 10] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nvcc_opt.config import load
from nvcc_opt.runtime import build
from nvcc_opt.tools.region import Region
from nvcc_opt.verify import compiled, final, measure, state
from nvcc_opt.workspace.runner import ProcessRunner

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "saxpy-stencil"
CANDIDATE = ROOT / "tests" / "redteam" / "honest__fused_pair.cu"


def timed(spent: dict[str, float], key: str, function: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            spent[key] = spent.get(key, 0.0) + time.perf_counter() - start

    return wrapper


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=10)
    parser.add_argument("--out", type=Path, default=None)
    options = parser.parse_args()
    launcher = shutil.which("nvcc-opt")
    if launcher is None:
        sys.exit("nvcc-opt is not on PATH")
    root = Path(tempfile.mkdtemp(prefix="nvcc-opt-overhead-"))
    shutil.copytree(EXAMPLE, root, dirs_exist_ok=True, ignore=shutil.ignore_patterns("build"))
    for args in (
        ["cmake", "-S", str(root), "-B", str(root / "build"), "-G", "Ninja",
         f"-DCMAKE_CUDA_COMPILER_LAUNCHER={launcher}"],
        ["cmake", "--build", str(root / "build")],
    ):  # fmt: skip
        subprocess.run(args, check=True, capture_output=True)
    config = load(root)
    region = Region.find(root / "src" / "update.cu", "pair")
    runner = ProcessRunner()
    spent: dict[str, float] = {}
    runs = {"channel": 0}
    compiled.CodeChecks.reasons = timed(spent, "code checks", compiled.CodeChecks.reasons)  # type: ignore[method-assign]
    final.state_check = timed(spent, "state check", state.state_check)
    observed = measure.observed_run

    def counted(*args: Any, **kwargs: Any) -> measure.Run:
        if len(args) > 5 and args[5] is not None or kwargs.get("attach") is not None:
            runs["channel"] += 1
        return observed(*args, **kwargs)

    measure.observed_run = counted  # type: ignore[assignment]
    start = time.perf_counter()
    verdict, notes = final.verify_code(
        config, region, CANDIDATE.read_text(), [], runner=runner, launcher=launcher
    )
    total = time.perf_counter() - start
    measure.observed_run = observed  # type: ignore[assignment]
    library = build.library(runner)
    base = measure.Build(config.build_dir)
    plain, carried = [], []
    for _ in range(options.pairs):
        plain.append(observed(config, runner, base, "0").completed.wall_s)
        carried.append(
            observed(config, runner, base, "0", (), measure.Attach(library)).completed.wall_s
        )
    per_run = statistics.median(c - p for c, p in zip(carried, plain, strict=True))
    channel = max(per_run, 0.0) * runs["channel"]
    new = spent.get("code checks", 0.0) + spent.get("state check", 0.0) + channel
    result = {
        "verdict": verdict.status,
        "reasons": list(verdict.reasons),
        "notes": notes,
        "verification_s": round(total, 2),
        "code_checks_s": round(spent.get("code checks", 0.0), 2),
        "state_check_s": round(spent.get("state check", 0.0), 2),
        "channel_runs": runs["channel"],
        "channel_per_run_s": round(per_run, 4),
        "plain_run_median_s": round(statistics.median(plain), 4),
        "share": round(new / total, 3),
    }
    print(json.dumps(result, indent=1))
    if options.out is not None:
        options.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
