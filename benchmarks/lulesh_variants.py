"""LULESH's kernel rewritten by named search transforms, built and run beside the original: what
each rewrite does to the main loop's time and to the figures LULESH checks itself with.

    python benchmarks/lulesh_variants.py LULESH_CHECKOUT --work DIR [--variants a,b+c,...]
        [--pairs 5] [--size 120 --iters 100] [--figures 45:-1,120:100,123:100] --out FILE.json

A variant is `original` or transforms joined by `+`, applied in order (search/transforms.py
names: drop_undo, min_blocks_half, ...) to the tagged region of the checkout's kernel; each is
built with integration/lulesh's CMake build, without the launcher (nothing of nvcc-opt's store
or guards is involved: this measures the rewrites themselves). Timing: `--pairs` rounds, each
running every variant once in a shuffled order, at `--size`/`--iters`; the elapsed time is
LULESH's own main-loop clock. Figures: one run of every variant at each SIZE:ITERS (-1: to the
stop time), its iteration count, origin energy and the three symmetry figures.
The checkout is only read; the rewritten sources are written under --work.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import statistics
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from integration.lulesh import tagging  # noqa: E402
from integration.lulesh.output import OutputError, parse  # noqa: E402
from nvcc_opt.search.kernel_facts import Facts  # noqa: E402
from nvcc_opt.search.signatures import readonly_params  # noqa: E402
from nvcc_opt.search.transforms import BY_NAME  # noqa: E402

SHOWN = ("iterations", "origin_energy", "max_abs_diff", "total_abs_diff", "max_rel_diff", "error")
MARK = re.compile(r"// @optimize[^\n]*\n")


def rewrite(text: str, names: list[str]) -> str:
    """The file `text` with its tagged kernel rewritten by the transforms `names`, in order."""
    tagged = tagging.tag(text)
    start = MARK.search(tagged)
    if start is None:
        raise SystemExit("no tagged region in lulesh.cu")
    end = tagged.find("// @end", start.end())
    region = tagged[start.end() : end]
    facts = Facts(readonly_params=readonly_params(text))
    for name in names:
        new = BY_NAME[name].apply(region, facts)
        if new is None:
            raise SystemExit(f"{name} does not apply to the kernel (after {names})")
        region = new
    return tagging.untag(tagged[: start.end()] + region + tagged[end:])


def build(src: Path, names: list[str], work: Path) -> Path:
    folder = work / ("+".join(names) or "original")
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(src, folder / "src")
    original = (src / "lulesh.cu").open(newline="").read()
    text = rewrite(original, names) if names else original
    (folder / "src" / "lulesh.cu").open("w", newline="").write(text)
    cmake = ["cmake", "-S", str(REPO / "integration/lulesh"), "-B", str(folder / "build"),
             "-G", "Ninja", f"-DLULESH_SRC={folder / 'src'}"]  # fmt: skip
    subprocess.run(cmake, check=True, capture_output=True)
    subprocess.run(["cmake", "--build", str(folder / "build")], check=True, capture_output=True)
    return folder / "build" / "lulesh"


def run(binary: Path, size: int, iters: int, cwd: Path) -> dict[str, Any]:
    command = [str(binary), "-s", str(size)] + (["-i", str(iters)] if iters > 0 else [])
    done = subprocess.run(command, capture_output=True, text=True, cwd=cwd, check=False)
    try:
        return parse(done.stdout).to_dict()
    except OutputError as exc:
        return {"error": str(exc), "exit": done.returncode, "tail": done.stdout[-400:]}


def main() -> int:
    parser = argparse.ArgumentParser(prog="lulesh_variants")
    parser.add_argument("checkout", type=Path)
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--variants", default="original,drop_undo")
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--size", type=int, default=120)
    parser.add_argument("--iters", type=int, default=100)
    parser.add_argument("--figures", default="45:-1,120:100,123:100")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    src = args.checkout / "cuda" / "src"
    args.work.mkdir(parents=True, exist_ok=True)
    variants = args.variants.split(",")
    with ThreadPoolExecutor(max_workers=len(variants)) as pool:
        built = [
            pool.submit(build, src, [] if v == "original" else v.split("+"), args.work)
            for v in variants
        ]
        binaries = {v: job.result() for v, job in zip(variants, built, strict=True)}
    print(f"built {', '.join(variants)}", flush=True)
    times: dict[str, list[float]] = {v: [] for v in variants}
    for _ in range(args.pairs):
        order = random.sample(variants, len(variants))
        for v in order:
            got = run(binaries[v], args.size, args.iters, args.work)
            times[v].append(got.get("elapsed_s", float("nan")))
    figures = {
        f"{s}:{i}": {v: run(binaries[v], int(s), int(i), args.work) for v in variants}
        for s, i in (item.split(":") for item in args.figures.split(",") if item)
    }
    base = statistics.median(times[variants[0]])
    result = {
        "command": " ".join(sys.argv),
        "timing": {"size": args.size, "iters": args.iters, "pairs": args.pairs},
        "median_s": {v: statistics.median(t) for v, t in times.items()},
        "speedup_vs_first": {v: base / statistics.median(t) for v, t in times.items()},
        "times_s": times,
        "figures": figures,
    }
    args.out.write_text(json.dumps(result, indent=1))
    print(json.dumps({k: result[k] for k in ("median_s", "speedup_vs_first")}, indent=1))
    for key, by in figures.items():
        for v, f in by.items():
            print(key, v, {k: f.get(k) for k in SHOWN})
    return 0


if __name__ == "__main__":
    sys.exit(main())
