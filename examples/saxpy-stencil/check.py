#!/usr/bin/env python3
"""Check one run of saxpy-stencil: check.py [BUILD_DIR] [program options...]

Runs the program through run.sh and exits non-zero unless it succeeded, printed exactly one
`time_ms:`, one `checksum:` and one `weighted:` line, and its comparison with the CPU reference
passed.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

RUN_SH = Path(__file__).resolve().parent / "run.sh"
EXPECTED = {
    "time_ms": re.compile(r"time_ms: \d+(\.\d+)?"),
    "checksum": re.compile(r"checksum: \S+"),
    "weighted": re.compile(r"weighted: \S+"),
    "check": re.compile(r"check: PASS max_rel_err=\S+"),
}


def problems(returncode: int, stdout: str) -> list[str]:
    """Everything wrong with one run's exit status and output (empty when it passed)."""
    found = [] if returncode == 0 else [f"program exited with status {returncode}"]
    lines = stdout.splitlines()
    for key, pattern in EXPECTED.items():
        matching = [line for line in lines if line.startswith(f"{key}:")]
        if len(matching) != 1:
            found.append(f"expected one '{key}:' line, got {len(matching)}")
        elif not pattern.fullmatch(matching[0]):
            found.append(f"bad line: {matching[0]!r}")
    return found


def main(argv: list[str]) -> int:
    run = subprocess.run(["sh", str(RUN_SH), *argv], capture_output=True, text=True, check=False)
    sys.stdout.write(run.stdout)
    sys.stderr.write(run.stderr)
    found = problems(run.returncode, run.stdout)
    for problem in found:
        print(f"check.py: FAIL: {problem}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
