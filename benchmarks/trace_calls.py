"""What benchmark_code's calls cost and decided, read from the traces a suite run packed.

    .venv/bin/python benchmarks/trace_calls.py benchmarks/results/gpu-2026-12-03/*/traces.tar.gz

For every benchmark_code call in the traces (`*.json` inside each tarball): its verdict, how many
pairs it timed (10, or 4 when the early stop found none of the first pairs `min_speedup` faster),
its speedup and its wall time. Prints, per (verdict, pairs), the number of calls and the median
seconds per call, and the range of speedups the early stop cut short: a stop is only right if
none of them was near a real improvement.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import tarfile
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

VERDICT = re.compile(r"^verdict: (.+)$", re.MULTILINE)
SPEEDUP = re.compile(r"^speedup: ([\d.]+)x", re.MULTILINE)
PAIRS = re.compile(r"candidate: median .*?(\d+) runs\)")


def calls(tarball: Path) -> Iterator[tuple[str, int, float, float]]:
    """(verdict, pairs, speedup, seconds) of each timed benchmark_code call in the tarball."""
    with tarfile.open(tarball) as archive:
        for member in archive.getmembers():
            handle = archive.extractfile(member) if member.name.endswith(".json") else None
            if handle is None:
                continue
            trace = json.load(handle)
            for step in trace.get("steps", []):
                for call in step.get("calls", []):
                    result = call.get("result") or ""
                    if call.get("name") != "benchmark_code":
                        continue
                    verdict, speedup = VERDICT.search(result), SPEEDUP.search(result)
                    pairs = PAIRS.search(result)
                    if verdict and speedup and pairs:
                        yield (
                            verdict.group(1),
                            int(pairs.group(1)),
                            float(speedup.group(1)),
                            float(call.get("seconds", 0.0)),
                        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tarballs", nargs="+", type=Path)
    args = parser.parse_args()
    groups: dict[tuple[str, int], list[tuple[float, float]]] = defaultdict(list)
    for tarball in args.tarballs:
        for verdict, pairs, speedup, seconds in calls(tarball):
            groups[(verdict, pairs)].append((speedup, seconds))
    total = sum(len(v) for v in groups.values())
    print(f"{total} timed benchmark_code calls in {len(args.tarballs)} tarballs")
    print("| verdict | pairs | calls | median s per call | speedups |")
    print("|---|---:|---:|---:|---|")
    for (verdict, pairs), found in sorted(groups.items()):
        seconds = statistics.median(s for _, s in found)
        low, high = min(x for x, _ in found), max(x for x, _ in found)
        print(f"| {verdict} | {pairs} | {len(found)} | {seconds:.1f} | {low:.3f}-{high:.3f}x |")


if __name__ == "__main__":
    main()
