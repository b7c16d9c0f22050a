"""Which search transforms fire on a prepared RAJAPerf checkout's tagged regions, with the facts
the policy's tools would find (the pointer and element type names of `src/common/RPTypes.hpp`,
the launches of each kernel's file), without a GPU.

    python benchmarks/rajaperf_fires.py CHECKOUT   # after `python -m integration.rajaperf prepare`
"""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path

from integration.rajaperf.prepare import cuda_file, tagged_kernels
from nvcc_opt.regions.scan import region_text, scan
from nvcc_opt.search.launches import definitions, facts_from, launches, type_aliases
from nvcc_opt.search.pointer_aliases import expand, pointer_aliases
from nvcc_opt.search.transforms import TRANSFORMS


def main(checkout: Path) -> int:
    header = (checkout / "src" / "common" / "RPTypes.hpp").read_text(errors="replace")
    pointers, types = pointer_aliases(header), type_aliases(header)
    total: Counter[str] = Counter()
    print("| kernel | transforms that fire |\n|---|---|")
    for kernel in tagged_kernels(checkout):
        data = cuda_file(checkout, kernel).read_bytes()
        text = data.decode("utf-8", "replace")
        found, names = launches(text), definitions(text)
        for region in scan(data).regions:
            code = region_text(data, region)
            facts = facts_from(expand(code, pointers), found, names, types)
            facts = replace(facts, pointer_aliases=pointers)
            fired = [t.name for t in TRANSFORMS if t.apply(code, facts) not in (None, code)]
            total.update(fired)
            print(f"| {kernel.full_name} | {', '.join(fired) or '-'} |")
    print("\n" + ", ".join(f"{name} {n}" for name, n in total.most_common()))
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
