"""The final verification's lines on the example, candidate by candidate, on a GPU machine.

    python benchmarks/verify_smoke.py CANDIDATE.cu ...

Each candidate file is the new text of the `pair` region (it defines launch_update) or of
`smooth_kernel`; the verdict, its first reasons, the notes and the wall time are printed. The
example is built once through nvcc-opt (on PATH) in /tmp/smoke.
"""

import shutil
import subprocess
import sys
import time
from pathlib import Path

from nvcc_opt.config import load
from nvcc_opt.tools.bench import Benchmark
from nvcc_opt.tools.region import Region
from nvcc_opt.verify.final import FinalChecks
from nvcc_opt.verify.kernels import region_kernels
from nvcc_opt.workspace.runner import ProcessRunner

exe = shutil.which("nvcc-opt")
root = Path("/tmp/smoke")
shutil.rmtree(root, ignore_errors=True)
shutil.copytree("examples/saxpy-stencil", root)
subprocess.run(
    [
        "cmake",
        "-S",
        root,
        "-B",
        root / "build",
        "-G",
        "Ninja",
        f"-DCMAKE_CUDA_COMPILER_LAUNCHER={exe}",
    ],
    check=True,
    capture_output=True,
)
subprocess.run(["cmake", "--build", root / "build"], check=True, capture_output=True)
print(subprocess.run([root / "build" / "saxpy_stencil"], capture_output=True, text=True).stdout)
cases = [(Path(p).name, Path(p).read_text()) for p in sys.argv[1:]]
benches = {}
for name, code in cases:
    region = "pair" if "launch_update" in code else "smooth_kernel"
    if region not in benches:
        src = "update.cu" if region == "pair" else "stencil.cu"
        benches[region] = Benchmark(
            load(root),
            Region.find(root / "src" / src, region),
            ProcessRunner(),
            launcher=exe,
            label=f"smoke-{region}",
        )
    bench = benches[region]
    notes = []
    t = time.time()
    checks = FinalChecks(
        bench.config,
        bench.runner,
        bench.gpu,
        notes,
        bench.channel,
        region_kernels(bench.region.text, code),
    )
    v = bench.evaluate(code, [], 6, checks)
    print(f"== {name}: {v.status} ({time.time() - t:.1f} s)")
    for r in v.reasons[:6]:
        print("   ", r[:400])
    for n in notes + bench.notes:
        print("   note:", n[:300])
