"""What `nvcc-opt nvcc ...` costs over `nvcc ...` for one compile of a small file.

Baseline and launcher are timed interleaved in one run (the order alternates pair by pair), and
the result is the per-pair difference, launcher minus direct: its median and p95. Two compilers:

- a fake `nvcc` (a `/bin/sh` script that copies its source into its `-o` object) costs about a
  millisecond, so the difference isolates nvcc-opt's own cost;
- the real nvcc (about 1.5 s a compile, with more noise than the whole budget) shows the same
  difference in context.

Cases: an untagged file (the exec fast path), a tagged file with no accepted rewrite (scan, store
look-up and record, then the original command), a tagged file with an accepted rewrite (splice into
a private copy and compile that). Two reference rows show the floor any Python launcher pays: an
interpreter that only `os.execv`s the compiler, with and without `-I -S`.

Every timed run is checked: exit 0, no stderr from the launcher (a notice would mean it failed
open), and the substituted object holds the rewrite. Run from the repository root:

    .venv/bin/python benchmarks/launcher_overhead.py [--pairs 40] [--nvcc-pairs N] [--write]
    python3 benchmarks/launcher_overhead.py --fresh-venv [--pip-spec pip==23.2.1] --write

`--fresh-venv` measures the README's install (a new venv, `pip install .`, the pip it comes with)
rather than the development one. The script imports no nvcc-opt module itself: the rewrite is
accepted by the measured install's own interpreter.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import resource
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import date
from pathlib import Path

from fresh_install import install

RESULTS = Path(__file__).resolve().parent / "results"
WARMUP = 3  # pairs run first and not counted: the first tagged compile creates the store
# The targets, in ms of launcher overhead per compile: (median, p95); None: no target.
TARGETS: dict[str, tuple[float, float | None]] = {
    "untagged": (25.0, 50.0),
    "tagged": (25.0, 50.0),
    "substituted": (50.0, None),
}

KERNEL = """\
__global__ void scale(float* x, float a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= a;
}
"""
TAGGED = f"""\
// @optimize begin body
const char* variant() {{ return "variant-original"; }}
{KERNEL}// @optimize end
"""
REWRITE = """\
const char* variant() { return "variant-REWRITTEN"; }
__global__ void scale(float* __restrict__ x, float a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] * a;
}
"""
FAKE_NVCC = """\
#!/bin/sh
# A compiler that costs almost nothing: it copies its source into its -o object.
src= out=
while [ $# -gt 0 ]; do
  case $1 in
    --version) echo "fake nvcc"; echo "Build fake_13.0"; exit 0 ;;
    -o) shift; out=$1 ;;
    *.cu) src=$1 ;;
  esac
  shift
done
cat "$src" > "$out"
"""
EXEC_ONLY = "import os, sys; os.execv(sys.argv[1], sys.argv[1:])"
# Run by the measured install's interpreter: accept REWRITE for the region of a tagged file.
ACCEPT = """\
import sys
from nvcc_opt import review
from nvcc_opt.records import NewRewrite
from nvcc_opt.regions.scan import scan
from nvcc_opt.store.api import Store

db, source, code = sys.argv[1:]
with open(source, "rb") as handle:
    region = scan(handle.read()).regions[0]
with Store.open(db) as store:
    new = NewRewrite(file=source, region_name=region.name, region_hash=region.text_hash, code=code)
    rewrite, _ = store.add_rewrite(new)
    review.decide(store, rewrite.id, "accept", "benchmark", force=True)
"""


@dataclass(frozen=True)
class Case:
    compiler: str  # "fake" or "nvcc"
    name: str
    direct: list[str]
    launcher: list[str]
    check: Callable[[], None]  # raises when the launcher's object is not what it should be


@dataclass(frozen=True)
class Result:
    compiler: str
    case: str
    pairs: int
    direct_median_ms: float
    launcher_median_ms: float
    overhead_median_ms: float
    overhead_p95_ms: float
    # CPU time (user + system) of the command and all its processes: what the launcher itself
    # costs, far less disturbed by other work on the machine than wall time is.
    overhead_cpu_median_ms: float
    overhead_cpu_p95_ms: float
    target_median_ms: float | None
    target_p95_ms: float | None
    met: bool | None


class BenchError(RuntimeError):
    """A timed command did not do what it should: its numbers would mean nothing."""


@dataclass(frozen=True)
class Timing:
    wall_ms: float
    cpu_ms: float


def percentile(values: Sequence[float], fraction: float) -> float:
    """Nearest-rank percentile: the smallest value with at least `fraction` of values <= it."""
    ordered = sorted(values)
    return ordered[max(1, math.ceil(len(ordered) * fraction)) - 1]


def children_cpu_s() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def timed(command: list[str], cwd: Path, env: dict[str, str], quiet: bool) -> Timing:
    cpu = children_cpu_s()
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True)
    elapsed = time.perf_counter() - start
    cpu = children_cpu_s() - cpu
    if done.returncode != 0 or (quiet and done.stderr):
        raise BenchError(
            f"{shlex.join(command)}: exit {done.returncode}\n{done.stderr.decode(errors='replace')}"
        )
    return Timing(elapsed * 1e3, cpu * 1e3)


def time_pairs(
    case: Case, pairs: int, cwd: Path, env: dict[str, str]
) -> list[tuple[Timing, Timing]]:
    """(direct, launcher) of each counted pair."""
    counted = []
    for i in range(WARMUP + pairs):
        if i % 2:  # alternate which runs first, so neither gains from the other's warm caches
            launcher = timed(case.launcher, cwd, env, quiet=True)
            direct = timed(case.direct, cwd, env, quiet=False)
        else:
            direct = timed(case.direct, cwd, env, quiet=False)
            launcher = timed(case.launcher, cwd, env, quiet=True)
        if i == 0:
            case.check()
        if i >= WARMUP:
            counted.append((direct, launcher))
    return counted


def measure(case: Case, pairs: int, cwd: Path, env: dict[str, str]) -> Result:
    counted = time_pairs(case, pairs, cwd, env)
    overheads = [launcher.wall_ms - direct.wall_ms for direct, launcher in counted]
    cpu = [launcher.cpu_ms - direct.cpu_ms for direct, launcher in counted]
    median = percentile(overheads, 0.5)
    p95 = percentile(overheads, 0.95)
    # Judged on the fake compiler only: real nvcc's noise is larger than the targets.
    judged = case.compiler == "fake"
    target_median, target_p95 = TARGETS.get(case.name, (None, None)) if judged else (None, None)
    met = None
    if target_median is not None:
        met = median <= target_median and (target_p95 is None or p95 <= target_p95)
    return Result(
        case.compiler,
        case.name,
        pairs,
        round(percentile([d.wall_ms for d, _ in counted], 0.5), 2),
        round(percentile([x.wall_ms for _, x in counted], 0.5), 2),
        round(median, 2),
        round(p95, 2),
        round(percentile(cpu, 0.5), 2),
        round(percentile(cpu, 0.95), 2),
        target_median,
        target_p95,
        met,
    )


def write_sources(work: Path) -> None:
    (work / "plain.cu").write_text(KERNEL)
    (work / "tagged.cu").write_text(TAGGED)
    (work / "sub.cu").write_text(TAGGED)


def accept_rewrite(python: str, store_db: Path, source: Path) -> None:
    """Accept REWRITE for `source`'s region, with the nvcc-opt that `python` runs."""
    command = [python, "-c", ACCEPT, str(store_db), str(source.resolve()), REWRITE]
    subprocess.run(command, cwd=source.parent, check=True)  # not here: `-c` imports from cwd


def holds(obj: Path, wanted: bytes, unwanted: bytes) -> Callable[[], None]:
    def check() -> None:
        data = obj.read_bytes()
        if wanted not in data or unwanted in data:
            raise BenchError(f"{obj}: expected {wanted!r} and not {unwanted!r}")

    return check


def no_check() -> None:
    return None


def compile_cases(compiler_name: str, compiler: str, exe: str, work: Path) -> list[Case]:
    def compile_args(stem: str, tag: str) -> list[str]:
        return ["-c", f"{stem}.cu", "-arch=sm_90", "-o", f"{stem}-{tag}-{compiler_name}.o"]

    cases = []
    for name, stem in (("untagged", "plain"), ("tagged", "tagged"), ("substituted", "sub")):
        check = no_check
        if name == "substituted":
            obj = work / f"sub-launcher-{compiler_name}.o"
            check = holds(obj, b"variant-REWRITTEN", b"variant-original")
        cases.append(
            Case(
                compiler_name,
                name,
                [compiler, *compile_args(stem, "direct")],
                [exe, compiler, *compile_args(stem, "launcher")],
                check,
            )
        )
    return cases


def floor_cases(fake: str, interpreter: str) -> list[Case]:
    args = ["-c", "plain.cu", "-arch=sm_90", "-o", "plain-floor.o"]
    return [
        Case(
            "fake",
            name,
            [fake, *args],
            [interpreter, *flags, "-c", EXEC_ONLY, fake, *args],
            no_check,
        )
        for name, flags in (
            ("python exec (floor)", []),
            ("python -I -S exec (floor)", ["-I", "-S"]),
        )
    ]


def shebang_interpreter(script: str) -> str:
    with open(script, "rb") as handle:
        first = handle.readline().decode().strip()
    if not first.startswith("#!"):
        raise BenchError(f"{script} has no shebang line")
    return first[2:].split()[0]


def machine_facts(nvcc: str | None) -> dict[str, object]:
    version = ""
    if nvcc:
        out = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout
        version = out.strip().splitlines()[-1] if out.strip() else ""
    return {
        "nproc": os.cpu_count(),
        "usable_cpus": len(os.sched_getaffinity(0)),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "nvcc": version,
        "load_average_1_5_15": [round(x, 2) for x in os.getloadavg()],
    }


def print_table(results: Sequence[Result]) -> None:
    header = f"{'compiler':<8} {'case':<26} {'pairs':>5} {'direct':>9} {'launcher':>9}"
    print(header + f" {'overhead':>9} {'p95':>8} {'cpu':>8}  target")
    for r in results:
        target = "" if r.target_median_ms is None else f"<= {r.target_median_ms:g}"
        if r.target_p95_ms is not None:
            target += f" / {r.target_p95_ms:g}"
        verdict = {None: "", True: "  met", False: "  MISSED"}[r.met]
        print(
            f"{r.compiler:<8} {r.case:<26} {r.pairs:>5} {r.direct_median_ms:>7.1f}ms"
            f" {r.launcher_median_ms:>7.1f}ms {r.overhead_median_ms:>7.1f}ms"
            f" {r.overhead_p95_ms:>6.1f}ms {r.overhead_cpu_median_ms:>6.1f}ms  {target}{verdict}"
        )


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=40, help="timed pairs per case (fake nvcc)")
    parser.add_argument(
        "--nvcc-pairs",
        type=int,
        default=None,
        help="pairs per real-nvcc case (default --pairs; 0 skips)",
    )
    parser.add_argument("--exe", default=str(Path(sys.executable).parent / "nvcc-opt"))
    add_install_options(parser)
    parser.add_argument("--nvcc", default=shutil.which("nvcc"))
    parser.add_argument("--write", action="store_true", help="write benchmarks/results/*.json")
    return parser.parse_args(argv)


def add_install_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--fresh-venv",
        action="store_true",
        help="measure the README's install: a new venv, `pip install .` (replaces --exe)",
    )
    parser.add_argument(
        "--pip-spec", default="", help="with --fresh-venv: this pip, e.g. pip==23.2.1"
    )
    parser.add_argument(
        "--pip-arg", action="append", default=[], help="with --fresh-venv: passed to pip install"
    )


def measured_install(args: argparse.Namespace, work: Path) -> dict[str, object]:
    """Install afresh when asked (then `args.exe` is that install's script); what was measured."""
    if args.fresh_venv:
        done = install(work / "install", sys.executable, args.pip_spec, args.pip_arg)
        args.exe = done.exe
        return {"kind": "fresh venv, pip install . (not editable)", **done.facts()}
    with open(args.exe, encoding="utf-8") as handle:
        head = handle.read().splitlines()[:6]
    return {"kind": "given", "exe": args.exe, "script_head": head}


def write_fake(work: Path) -> Path:
    fake = work / "bin" / "nvcc"
    fake.parent.mkdir()
    fake.write_text(FAKE_NVCC)
    fake.chmod(0o755)
    return fake


def timing_env(store_db: Path) -> dict[str, str]:
    """Bytecode caches on, as a pip install leaves them (without, each start compiles
    nvcc-opt's modules); no nvcc-opt settings but a private store."""
    dropped = ("NVCC_OPT_", "PYTHONDONTWRITEBYTECODE")
    env = {k: v for k, v in os.environ.items() if not k.startswith(dropped)}
    env["NVCC_OPT_STORE"] = str(store_db)
    return env


def run(args: argparse.Namespace, work: Path) -> list[Result]:
    fake = write_fake(work)
    write_sources(work)
    store_db = work / "state" / "store.db"
    accept_rewrite(shebang_interpreter(args.exe), store_db, work / "sub.cu")
    env = timing_env(store_db)
    cases = compile_cases("fake", str(fake), args.exe, work)
    cases += floor_cases(str(fake), shebang_interpreter(args.exe))
    nvcc_pairs = args.pairs if args.nvcc_pairs is None else args.nvcc_pairs
    results = [measure(case, args.pairs, work, env) for case in cases]
    if args.nvcc and nvcc_pairs > 0:
        for case in compile_cases("nvcc", args.nvcc, args.exe, work):
            results.append(measure(case, nvcc_pairs, work, env))
    return results


def main(argv: Sequence[str]) -> int:
    args = parse_args(argv)
    facts = machine_facts(args.nvcc)  # before the run: the load average is others' work
    with tempfile.TemporaryDirectory(prefix="nvcc-opt-bench-") as folder:
        installed = measured_install(args, Path(folder))
        results = run(args, Path(folder))
    print_table(results)
    if args.write:
        RESULTS.mkdir(exist_ok=True)
        path = RESULTS / f"launcher_overhead-{date.today().isoformat()}.json"
        report = {
            "benchmark": "launcher_overhead",
            "command": shlex.join([sys.executable, *sys.argv]),
            "machine": facts,
            "install": installed,
            "warmup_pairs": WARMUP,
            "results": [asdict(r) for r in results],
        }
        path.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {path}")
    return 0 if all(r.met is not False for r in results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
