"""A `-j64` build through the real launcher while rewrites are imported and reviewed, one store.

The compiler is a fake `nvcc` (64 real nvcc compiles would take minutes on a small machine); the
launchers, the store and the `import` and `review` commands are the real installed ones.
"""

from __future__ import annotations

import fcntl
import json
import re
import shlex
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

from nvcc_opt.records import NewRewrite, RegionRecord, Rewrite, RewriteState
from nvcc_opt.regions.scan import scan
from nvcc_opt.store.api import Store

Done = tuple[int, bytes, bytes]  # exit code, stdout, stderr

pytestmark = pytest.mark.skipif(shutil.which("flock") is None, reason="needs flock(1)")

LAUNCHERS = 64
IMPORTED = range(0, 32)  # files whose rewrites arrive through a concurrent `nvcc-opt import`
ACCEPT = range(32, 48)  # pre-imported rewrites the concurrent reviewer accepts
REJECT = range(48, 56)
REVOKE = range(56, 64)  # accepted, then revoked by a later review command

# Copies its source into the -o object and writes a depfile for -MF, once the test opens the gate
# (a lock the test holds): all 64 launchers are alive at once, and their store writes come while
# review commands are writing too.
FAKE_NVCC = """\
#!/bin/sh
src= out= dep= target=
while [ $# -gt 0 ]; do
  case $1 in
    --version) echo "Cuda compilation tools, release 13.0, fake"; exit 0 ;;
    -o) shift; out=$1 ;;
    -MF) shift; dep=$1 ;;
    -MT) shift; target=$1 ;;
    *.cu) src=$1 ;;
  esac
  shift
done
flock -s @GATE@ true
cat "$src" > "$out"
[ -z "$dep" ] || printf '%s : %s\\n' "${target:-$out}" "$src" > "$dep"
"""


def kernel(i: int) -> str:
    return f"// @optimize\n__global__ void k{i}(float* x) {{ x[0] = {i}; }}\n"


def rewrite_code(i: int) -> str:
    return f"__global__ void k{i}(float* __restrict__ x) {{ x[0] = {i}.0f; }}\n"


def write_project(root: Path, gate: Path) -> Path:
    (root / "src").mkdir()
    (root / "obj").mkdir()
    for i in range(LAUNCHERS):
        (root / "src" / f"k{i}.cu").write_text(kernel(i))
    fake = root / "bin" / "nvcc"
    fake.parent.mkdir()
    fake.write_text(FAKE_NVCC.replace("@GATE@", shlex.quote(str(gate))))
    fake.chmod(0o755)
    return fake


def pre_import(db: Path, root: Path) -> dict[int, int]:
    """Add the rewrites the reviewer will decide on: file index -> rewrite id."""
    ids = {}
    with Store.open(db) as store:
        for i in range(IMPORTED.stop, LAUNCHERS):
            source = root / "src" / f"k{i}.cu"
            region = scan(source.read_bytes()).regions[0]
            new = NewRewrite(str(source), region.name, region.text_hash, rewrite_code(i))
            ids[i] = store.add_rewrite(new)[0].id
    return ids


def write_bundle(root: Path) -> Path:
    entries = [
        {"file": f"k{i}.cu", "region": f"k{i}", "code": rewrite_code(i), "model": "test"}
        for i in IMPORTED
    ]
    bundle = root / "bundle.json"
    bundle.write_text(
        json.dumps({"format": "nvcc-opt/rewrites", "version": 1, "rewrites": entries})
    )
    return bundle


def review_commands(exe: str, ids: dict[int, int]) -> list[list[str]]:
    """Four review commands run one after another, so decisions spread over the build.

    `--force`: these rewrites were never verified, and no GPU is needed to test the store.
    """

    def flags(option: str, files: range) -> list[str]:
        return [word for i in files for word in (option, str(ids[i]))]

    review = [exe, "review", "--force"]
    return [
        [*review, *flags("--accept", ACCEPT[:8]), "--reason", "first batch"],
        [*review, *flags("--reject", REJECT), *flags("--accept", REVOKE)],
        [*review, *flags("--accept", ACCEPT[8:]), "--reason", "second batch"],
        [*review, *flags("--revoke", REVOKE), "--reason", "changed my mind"],
    ]


def start(command: list[str], cwd: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def launch(exe: str, fake: Path, root: Path) -> list[subprocess.Popen[bytes]]:
    processes = []
    for i in range(LAUNCHERS):
        obj = f"obj/k{i}.o"
        command = [exe, str(fake), "-c", f"src/k{i}.cu", "-arch=sm_90", "-o", obj]
        processes.append(start([*command, "-MD", "-MT", obj, "-MF", f"{obj}.d"], root))
    return processes


def finish(processes: list[subprocess.Popen[bytes]]) -> list[Done]:
    outputs = [process.communicate(timeout=60) for process in processes]
    return [(p.returncode, out, err) for p, (out, err) in zip(processes, outputs, strict=True)]


def run_build(
    tmp_path: Path, exe: str, fake: Path, gate: Path, ids: dict[int, int]
) -> tuple[list[Done], list[Done]]:
    """A build, two imports of one file and four review commands at once: (launchers, others).

    The compiles wait at the gate until the first review command is done, so the launchers'
    store writes race the later review commands.
    """
    bundle = write_bundle(tmp_path)
    reviews = review_commands(exe, ids)
    with gate.open("w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        launchers = launch(exe, fake, tmp_path)
        # The same file twice at once: each rewrite must land once.
        imports = [start([exe, "import", str(bundle), "--root", "src"], tmp_path) for _ in "ab"]
        first = finish([start(reviews[0], tmp_path)])
    later = [finish([start(command, tmp_path)])[0] for command in reviews[1:]]
    return finish(launchers), [*first, *later, *finish(imports)]


def expected_moves(i: int) -> list[tuple[RewriteState, RewriteState]]:
    proposed, accepted = RewriteState.PROPOSED, RewriteState.ACCEPTED
    if i in ACCEPT:
        return [(proposed, accepted)]
    if i in REJECT:
        return [(proposed, RewriteState.REJECTED)]
    return [(proposed, accepted), (accepted, RewriteState.REVOKED)]


def moves(rewrite: Rewrite) -> list[tuple[RewriteState, RewriteState]]:
    return [(d.from_state, d.to_state) for d in rewrite.decisions]


# The designed answer to a lock held a whole COMPILE_TIMEOUT_S with no commit in between (seen
# in CI on a loaded 2-core machine, while a review command held it): the compile goes on,
# unrecorded, with this one line naming its file (every such compile says it: a build-wide
# "once" hid the second, seen on a loaded machine). Anything else on a launcher's stderr fails.
UNRECORDED = re.compile(
    rb"nvcc-opt: could not record the compile of \S+ in \S+ \(.*database is locked\); its "
    rb"regions reach the store when it is compiled again\n"
)


def check_processes(root: Path, launchers: list[Done], others: list[Done]) -> set[int]:
    """The launchers whose compile went unrecorded (saying so); every other check holds."""
    unrecorded = set()
    for i, (code, out, err) in enumerate(launchers):
        if err and UNRECORDED.fullmatch(err):
            unrecorded.add(i)
            err = b""
        assert (code, out, err) == (0, b"", b""), f"launcher {i}"
        dep = (root / "obj" / f"k{i}.o.d").read_text()
        assert f"src/k{i}.cu" in dep and ".nvcc-opt" not in dep and dep.count(".stamp") == 1
    assert len(unrecorded) <= len(launchers) // 8, f"{len(unrecorded)} compiles not recorded"
    for code, _out, err in others:
        assert (code, err) == (0, b""), err.decode()
    imported_lines = b"".join(out for _, out, _ in others[-2:]).splitlines()
    assert sum(b" imported " in line for line in imported_lines) == len(IMPORTED)
    assert sum(b" already present " in line for line in imported_lines) == len(IMPORTED)
    return unrecorded


def check_regions(root: Path, regions: list[RegionRecord], unrecorded: set[int]) -> None:
    """Each launcher's file once (but those that said they went unrecorded), with exactly its
    own compile."""
    files = [str(root / "src" / f"k{i}.cu") for i in range(LAUNCHERS) if i not in unrecorded]
    assert sorted(r.file for r in regions) == sorted(files)
    for region in regions:
        wanted = root / "obj" / (Path(region.file).stem + ".o")
        assert [c.output for c in region.compiles] == [str(wanted)]


def check_rewrites(rewrites: list[Rewrite]) -> None:
    """Each rewrite once; the imported ones untouched, the others with exactly their decisions."""
    by_file = {Path(r.file).stem: r for r in rewrites}
    assert len(rewrites) == len(by_file) == LAUNCHERS
    for i in range(LAUNCHERS):
        rewrite = by_file[f"k{i}"]
        assert rewrite.code == rewrite_code(i)
        if i in IMPORTED:
            assert (rewrite.state, rewrite.decisions, rewrite.model) == (
                RewriteState.PROPOSED,
                (),
                "test",
            )
        else:
            assert moves(rewrite) == expected_moves(i), f"rewrite of k{i}"
            assert rewrite.state == expected_moves(i)[-1][1]


def test_parallel_build_with_import_and_review(tmp_path: Path, exe: str, store_env: Path) -> None:
    gate = tmp_path / "gate"
    fake = write_project(tmp_path, gate)
    ids = pre_import(store_env, tmp_path)
    launchers, others = run_build(tmp_path, exe, fake, gate, ids)

    unrecorded = check_processes(tmp_path, launchers, others)
    with Store.open(store_env) as store:
        regions = store.regions()
        rewrites = store.rewrites()
    check_regions(tmp_path, regions, unrecorded)
    check_rewrites(rewrites)
    records = [c.last_seen for r in regions for c in r.compiles]
    decisions = [d.at for r in rewrites for d in r.decisions]
    assert min(decisions) < max(records) and min(records) < max(decisions), "they overlapped"
    with sqlite3.connect(store_env) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
