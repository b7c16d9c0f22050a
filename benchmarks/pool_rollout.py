"""Wall time of K tool calls (one per rollout of a GRPO group) run serially (trl's own way) vs
through the tool pool, interleaved in one run: the ratio serial / pool.

Two kinds of job:

- `--jobs nvcc` (default; runs without a GPU): each call is a real nvcc compile of a small
  kernel file (`-O3 -arch=sm_90 -Xptxas -v -c`), with a comment unique to the call so nothing
  is reused between calls.
- `--jobs toolbox --root DIR --region FILE:NAME [--tool NAME] [--args JSON]`: each rollout gets
  its own nvcc-opt Toolbox for the region (its private build trees, as `optimize` and training
  build them), and each call is a real tool call (default compiler_analysis; benchmark_code on
  a GPU machine), its `code` the region with a comment unique to the call. The project must be
  configured (its [build] dir holds a CMake build). Each Toolbox answers one untimed call first
  (configuring its private trees), then the rounds run.

Rounds alternate which goes first (serial, pool; pool, serial; ...). Each call goes through
`nvcc_opt.pool.timed`, so the report also holds the time calls spent waiting for a GPU lease.

    python benchmarks/pool_rollout.py --calls 12 --rounds 3 [--pool local] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import Executor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from nvcc_opt.pool import Timed, cpu_count, open_pool, timed
from nvcc_opt.toolbox.schema import ERROR
from nvcc_opt.workspace.runner import ProcessRunner

KERNEL = """\
// call {tag}
__global__ void saxpy_{n}(int n, float a, const float* __restrict__ x, float* __restrict__ y) {{
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    y[i] = a * x[i] + y[i] * {n}.0f;
}}
__global__ void stencil_{n}(int n, const float* in, float* out) {{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i > 0 && i < n - 1) out[i] = 0.25f * in[i - 1] + 0.5f * in[i] + 0.25f * in[i + 1];
}}
"""

Job = Callable[[str], str]  # the call's unique tag -> what the tool returned


def nvcc_jobs(calls: int, folder: Path, nvcc: str) -> list[Job]:
    runner = ProcessRunner()

    def compile_one(n: int) -> Job:
        def job(tag: str) -> str:
            where = folder / f"job{n}"
            where.mkdir(parents=True, exist_ok=True)
            (where / "k.cu").write_text(KERNEL.format(tag=tag, n=n), encoding="utf-8")
            argv = [nvcc, "-O3", "-arch=sm_90", "-Xptxas", "-v", "-c", "k.cu", "-o", "k.o"]
            done = runner.run(argv, cwd=where, timeout_s=600, writable=[where])
            if not done.ok:
                raise RuntimeError(f"nvcc failed: {done.stderr.strip()[-500:]}")
            return done.stderr

        return job

    return [compile_one(n) for n in range(calls)]


def toolbox_jobs(options: argparse.Namespace, pool: Executor) -> tuple[list[Job], list[Any]]:
    from nvcc_opt.tools.catalog import open_catalog
    from nvcc_opt.tools.region import Region

    file, _, name = options.region.rpartition(":")
    region = Region.find(Path(file), name)
    catalogs = [
        open_catalog(options.root, region, label=f"pool-rollout-{i}") for i in range(options.calls)
    ]
    extra = json.loads(options.args)

    def call_of(catalog: Any) -> Job:
        def job(tag: str) -> str:
            args = {**extra, "code": f"{region.text}\n// call {tag}\n"}
            text: str = catalog.toolbox.call(options.tool, args)
            return text

        return job

    jobs = [call_of(c) for c in catalogs]
    started = time.monotonic()
    futures = [pool.submit(job, "warm-up") for job in jobs]  # private trees configured
    for done, future in enumerate(futures, 1):
        future.result()
        elapsed = time.monotonic() - started
        print(f"warm-up: {done}/{len(futures)} calls, {elapsed:.1f} s", flush=True)
    return jobs, catalogs


def run_round(pool: Executor, jobs: list[Job], tag: str) -> tuple[float, list[Timed[str]]]:
    start = time.monotonic()
    futures = [pool.submit(timed, job, f"{tag}-{i}") for i, job in enumerate(jobs)]
    results = [f.result() for f in futures]
    return time.monotonic() - start, results


def machine() -> dict[str, Any]:
    gpu = "none"
    smi = shutil.which("nvidia-smi")
    if smi:
        done = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=60)
        gpu = done.stdout.strip() or gpu
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    return {"host": platform.node(), "cpus": cpu_count(), "load_1min": load, "gpus": gpu}


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=12, help="K: tool calls per round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each, interleaved")
    parser.add_argument("--pool", default="local", help="the pool compared with serial")
    parser.add_argument("--jobs", choices=["nvcc", "toolbox"], default="nvcc")
    parser.add_argument("--nvcc", default="nvcc")
    parser.add_argument("--root", type=Path, help="toolbox: the configured project")
    parser.add_argument("--region", help="toolbox: FILE:NAME of the region")
    parser.add_argument("--tool", default="compiler_analysis", help="toolbox: the tool to call")
    parser.add_argument("--args", default="{}", help="toolbox: the call's other arguments")
    parser.add_argument("--out", type=Path, help="write the JSON record here too")
    options = parser.parse_args()
    if options.jobs == "toolbox" and (options.root is None or options.region is None):
        parser.error("--jobs toolbox needs --root and --region")
    serial, pool = open_pool("serial"), open_pool(options.pool)
    catalogs: list[Any] = []
    with tempfile.TemporaryDirectory(prefix="pool-rollout-") as scratch:
        try:
            if options.jobs == "nvcc":
                jobs = nvcc_jobs(options.calls, Path(scratch), options.nvcc)
            else:
                jobs, catalogs = toolbox_jobs(options, pool)
            rounds: dict[str, list[float]] = {"serial": [], "pool": []}
            waits: dict[str, list[float]] = {"serial": [], "pool": []}
            held: dict[str, list[float]] = {"serial": [], "pool": []}
            call_s: list[float] = []
            outputs: list[str] = []
            for r in range(options.rounds):
                order = ("serial", "pool") if r % 2 == 0 else ("pool", "serial")
                for which in order:
                    chosen = serial if which == "serial" else pool
                    wall, results = run_round(chosen, jobs, f"{r}-{which}")
                    rounds[which].append(wall)
                    waits[which].append(sum(t.gpu_wait_s for t in results))
                    held[which].append(sum(t.gpu_held_s for t in results))
                    call_s += [t.wall_s for t in results]
                    outputs += [t.value for t in results]
                    print(f"round {r} {which:>6}: {wall:8.2f} s", flush=True)
        finally:
            for catalog in catalogs:
                catalog.close()
            pool.shutdown()
    median = {k: statistics.median(v) for k, v in rounds.items()}
    record = {
        "benchmark": "pool_rollout",
        "at": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": [sys.executable, *sys.argv],
        "jobs": options.jobs,
        "tool": options.tool if options.jobs == "toolbox" else "nvcc -c",
        "calls": options.calls,
        "rounds": options.rounds,
        "pool": options.pool,
        "machine": machine(),
        "serial_s": rounds["serial"],
        "pool_s": rounds["pool"],
        "gpu_wait_s": waits,
        "gpu_held_s": held,
        # the share of a round's wall time no call held the GPU (leases never overlap on one GPU)
        "gpu_idle_share": {
            k: [max(0.0, 1 - h / w) for h, w in zip(held[k], rounds[k], strict=True) if w > 0]
            for k in rounds
        },
        "median_call_s": statistics.median(call_s),
        "failed_calls": sum(text.startswith(ERROR) for text in outputs),  # tool errors
        "sample_output": outputs[0][:400] if outputs else "",
        "median_serial_s": median["serial"],
        "median_pool_s": median["pool"],
        "ratio": median["serial"] / median["pool"],
    }
    print(
        f"{options.calls} calls ({record['tool']}): serial {median['serial']:.2f} s, "
        f"pool {options.pool} {median['pool']:.2f} s: {record['ratio']:.2f}x"
    )
    text = json.dumps(record, indent=2)
    print(text)
    if options.out is not None:
        options.out.parent.mkdir(parents=True, exist_ok=True)
        options.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
