"""What a build applies never changes silently: a held lock, a read-only store, a stale index and a
damaged store each make the build compile the original and say so once, or apply what it can
read; `explain` says what the next build does; decisions survive a damaged store (real nvcc,
CMake, Ninja and SQLite)."""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from nvcc_opt import paths, review
from nvcc_opt.records import NewRewrite
from nvcc_opt.regions.scan import scan
from nvcc_opt.store import journal, migrations
from nvcc_opt.store.api import Store
from tests.conftest import needs_nvcc, normalized

pytestmark = needs_nvcc

NOTICE = b"accepted rewrites not applied"
HOLDER = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("PRAGMA locking_mode=EXCLUSIVE")
conn.execute("BEGIN EXCLUSIVE")
conn.execute("UPDATE rewrites SET suspect = suspect")
print("held", flush=True)
sys.stdin.read()
"""
CMAKE = """\
cmake_minimum_required(VERSION 3.18)
project(robust LANGUAGES CUDA)
add_library(kernels STATIC a.cu b.cu)
"""


def source(name: str) -> str:
    return (
        f'// @optimize\nconst char* which_{name}() {{ return "{name}-original"; }}\n'
        f"__global__ void k_{name}(float* x) {{ x[0] = 1.0f; }}\n"
    )


def rewrite(name: str) -> str:
    return f'const char* which_{name}() {{ return "{name}-REWRITTEN"; }}\n'


def accept(db: Path, file: Path) -> int:
    """Propose and accept a rewrite of the file's region as a reviewer would (forced: no GPU)."""
    name = file.stem
    region = scan(file.read_bytes()).regions[0]
    with Store.open(db) as store:
        new = NewRewrite(str(file.resolve()), region.name, region.text_hash, rewrite(name))
        added, _ = store.add_rewrite(new)
        review.decide(store, added.id, "accept", force=True)
    return added.id


def nvcc_opt(exe: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([exe, *args], cwd=cwd, capture_output=True, text=True)


# --- a held lock ---------------------------------------------------------------------------


def _configure(src: Path, build: Path, exe: str) -> None:
    done = subprocess.run(
        ["cmake", "-S", str(src), "-B", str(build), "-G", "Ninja"]
        + ["-DCMAKE_CUDA_ARCHITECTURES=90", f"-DCMAKE_CUDA_COMPILER_LAUNCHER={exe}"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def _build(build: Path, *extra: str) -> tuple[float, bytes]:
    started = time.monotonic()
    done = subprocess.run(["cmake", "--build", str(build), "-j", "2", *extra], capture_output=True)
    assert done.returncode == 0, done.stdout + done.stderr
    return time.monotonic() - started, done.stdout + done.stderr


def _objects(build: Path) -> dict[str, bytes]:
    found = sorted((build / "CMakeFiles" / "kernels.dir").glob("*.o"))
    return {p.name: normalized(p) for p in found}


@pytest.fixture
def held_lock(store_env: Path) -> Iterator[None]:
    with holding_lock(store_env):
        yield


@contextlib.contextmanager
def holding_lock(db: Path) -> Iterator[None]:
    """Another process holds the store's exclusive lock until the block ends."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(db)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    try:
        yield
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=10)


def two_tagged_files(tmp_path: Path) -> tuple[Path, Path]:
    """A CMake project of two tagged files: (source folder, build folder)."""
    src, build = tmp_path / "src", tmp_path / "build"
    src.mkdir()
    (src / "CMakeLists.txt").write_text(CMAKE)
    for name in "ab":
        (src / f"{name}.cu").write_text(source(name))
    return src, build


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("cmake") is None or shutil.which("ninja") is None, reason="cmake")
def test_a_held_lock_costs_a_build_little_compiles_the_originals_and_says_so_once(
    tmp_path: Path, exe: str, store_env: Path, request: pytest.FixtureRequest
) -> None:
    src, build = two_tagged_files(tmp_path)
    _configure(src, build, exe)
    _build(build)
    originals = _objects(build)
    assert len(originals) == 2 and all(b"-original" in o for o in originals.values())
    for name in "ab":
        accept(store_env, src / f"{name}.cu")
    plain, _ = _build(build)
    substituted = _objects(build)
    assert all(b"-REWRITTEN" in o for o in substituted.values())

    request.getfixturevalue("held_lock")
    locked, output = _build(build, "--clean-first")
    # before: about 30 s per compile waiting for the lock; now one short wait per compile
    assert locked < plain + 15, (locked, plain)
    assert _objects(build) == originals
    assert output.count(NOTICE) == 1, output.decode()
    assert b"database is locked" in output
    _, output = _build(build, "--clean-first")  # every build says it once, not only the first
    assert output.count(NOTICE) == 1, output.decode()


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("cmake") is None or shutil.which("ninja") is None, reason="cmake")
def test_after_the_lock_is_released_the_next_build_applies_the_rewrites(
    tmp_path: Path, exe: str, store_env: Path
) -> None:
    src, build = two_tagged_files(tmp_path)
    for name in "ab":
        accept(store_env, src / f"{name}.cu")
    _configure(src, build, exe)
    with holding_lock(store_env):
        _, output = _build(build)
    assert output.count(NOTICE) == 1 and all(b"-original" in o for o in _objects(build).values())
    _, output = _build(build)
    assert NOTICE not in output
    assert all(b"-REWRITTEN" in o for o in _objects(build).values())


# --- one tagged compile through the launcher --------------------------------------------------


def compile_one(
    exe: str,
    folder: Path,
    file: Path,
    env: dict[str, str] | None = None,
    user: tuple[str, ...] = (),
) -> tuple[bytes, str]:
    """Compile `file` to folder/<stem>.o through the launcher (as `user`): (object, stderr)."""
    obj = folder / f"{file.stem}.o"
    obj.unlink(missing_ok=True)
    done = subprocess.run(
        [*user, exe, "nvcc", "-c", str(file), "-arch=sm_90", "-o", str(obj)],
        cwd=folder,
        capture_output=True,
        text=True,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    return obj.read_bytes(), done.stderr


# --- a stale accepted-files index ------------------------------------------------------------


def test_explain_and_the_build_agree_on_a_stale_index(
    tmp_path: Path, exe: str, store_env: Path
) -> None:
    file = tmp_path / "a.cu"
    file.write_text(source("a"))
    rewrite_id = accept(store_env, file)
    index = Path(paths.accepted_index(store_env))
    index.write_text("/some/other/file.cu\n")  # stale: says a.cu has no accepted rewrite

    said = nvcc_opt(exe, "explain", str(file), cwd=tmp_path)
    assert said.returncode == 0, said.stderr
    assert f"rewrite #{rewrite_id} accepted, but the build does not apply it" in said.stdout
    assert "recover --index" in said.stdout
    obj, _ = compile_one(exe, tmp_path, file)
    assert b"a-original" in obj and b"a-REWRITTEN" not in obj
    assert index.read_text() == "/some/other/file.cu\n", "explain only reads"

    fixed = nvcc_opt(exe, "recover", "--index", cwd=tmp_path)
    assert fixed.returncode == 0, fixed.stderr
    said = nvcc_opt(exe, "explain", str(file), cwd=tmp_path)
    assert f"rewrite #{rewrite_id} applied" in said.stdout
    obj, _ = compile_one(exe, tmp_path, file)
    assert b"a-REWRITTEN" in obj


# --- a damaged store -----------------------------------------------------------------------


def _truncate(db: Path) -> None:
    db.write_bytes(b"")


def _cut(db: Path) -> None:
    data = db.read_bytes()
    db.write_bytes(data[: len(data) // 2])


def _garbage(db: Path) -> None:
    data = db.read_bytes()
    db.write_bytes(b"\x00garbage" * 16 + data[128:])


@pytest.mark.parametrize("damage", [_truncate, _cut, _garbage], ids=["empty", "cut", "garbage"])
def test_a_damaged_store_is_moved_aside_and_recover_brings_the_decisions_back(
    tmp_path: Path, exe: str, store_env: Path, damage: object
) -> None:
    file = tmp_path / "a.cu"
    file.write_text(source("a"))
    # Enough rewrites that cutting the file in half loses pages the build reads.
    for n in range(40):
        with Store.open(store_env) as store:
            store.add_rewrite(NewRewrite(f"/elsewhere/{n}.cu", "k", f"{n:064x}", "x" * 4000))
    rewrite_id = accept(store_env, file)
    obj, _ = compile_one(exe, tmp_path, file)
    assert b"a-REWRITTEN" in obj
    before = store_env.read_bytes()
    damage(store_env)  # type: ignore[operator]
    damaged = store_env.read_bytes()

    obj, err = compile_one(exe, tmp_path, file)
    assert b"a-original" in obj
    [aside] = store_env.parent.glob("store.db.damaged-*[0-9]Z")
    assert aside.read_bytes() == damaged and damaged != before
    assert f"store {store_env} is damaged" in err and f"moved it to {aside}" in err
    assert "nvcc-opt recover" in err and err.count("is damaged") == 1

    done = nvcc_opt(exe, "recover", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "recovered 41 rewrites (1 accepted)" in done.stdout
    listed = nvcc_opt(exe, "review", "--list", cwd=tmp_path)
    assert f"#{rewrite_id} accepted" in listed.stdout
    obj, err = compile_one(exe, tmp_path, file)
    assert b"a-REWRITTEN" in obj, err


def test_a_command_on_a_damaged_store_moves_it_aside_and_says_how_to_recover(
    tmp_path: Path, exe: str, store_env: Path
) -> None:
    file = tmp_path / "a.cu"
    file.write_text(source("a"))
    accept(store_env, file)
    _garbage(store_env)
    done = nvcc_opt(exe, "status", cwd=tmp_path)
    assert done.returncode == 1
    assert "is damaged" in done.stderr and "moved it to" in done.stderr
    assert "nvcc-opt recover" in done.stderr
    assert list(store_env.parent.glob("store.db.damaged-*"))


def test_the_journal_keeps_every_decision_and_recover_on_a_healthy_store_changes_nothing(
    tmp_path: Path, exe: str, store_env: Path
) -> None:
    file = tmp_path / "a.cu"
    file.write_text(source("a"))
    rewrite_id = accept(store_env, file)
    with Store.open(store_env) as store:
        review.decide(store, rewrite_id, "revoke", "changed my mind")
        before = store.rewrite(rewrite_id)
    entries, problems = journal.read(journal.path(store_env))
    assert problems == []
    assert [e["op"] for e in entries] == ["rewrite", "decision", "decision"]
    done = nvcc_opt(exe, "recover", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    with Store.open(store_env) as store:
        after = store.rewrite(rewrite_id)
    assert after == before


def test_a_journal_started_late_begins_with_a_snapshot(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    with Store.open(db) as store:
        first, _ = store.add_rewrite(NewRewrite("/x/a.cu", "k", "a" * 64, "one"))
    Path(journal.path(db)).unlink()  # as if written by an nvcc-opt without a journal
    with Store.open(db) as store:
        store.add_rewrite(NewRewrite("/x/b.cu", "k", "b" * 64, "two"))
    entries, _ = journal.read(journal.path(db))
    assert [(e["op"], e["row"]["code"]) for e in entries] == [
        ("rewrite", "one"),
        ("rewrite", "two"),
    ]


def test_recover_refuses_to_drop_rewrites_the_journal_lacks(tmp_path: Path, exe: str) -> None:
    db = tmp_path / "store.db"
    with Store.open(db) as store:
        store.add_rewrite(NewRewrite("/x/a.cu", "k", "a" * 64, "one"))
    Path(journal.path(db)).write_text("")
    done = nvcc_opt(exe, "--store", str(db), "recover", cwd=tmp_path)
    assert done.returncode == 1 and "its journal does not (#1)" in done.stderr
    with Store.open(db) as store:
        assert len(store.rewrites()) == 1


# --- a read-only store -----------------------------------------------------------------------

NOBODY = ("setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups")
needs_root = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None, reason="needs root and setpriv"
)


@pytest.fixture
def shared() -> Iterator[Path]:
    """A folder another user can enter (pytest's own tmp folders are private to root)."""
    folder = Path(tempfile.mkdtemp(prefix="nvcc-opt-ro-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder)


def _as_nobody(shared: Path, db: Path) -> dict[str, str]:
    home = shared / "home"
    home.mkdir(exist_ok=True)
    home.chmod(0o777)
    return {**os.environ, "HOME": str(home), "NVCC_OPT_STORE": str(db), "TMPDIR": str(home)}


def _nobody(exe: str, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*NOBODY, exe, *args], capture_output=True, text=True, env=env)


@needs_root
def test_read_only_commands_work_on_a_read_only_store(exe: str, shared: Path) -> None:
    db = shared / "state" / "store.db"
    file = shared / "a.cu"
    file.write_text(source("a"))
    rewrite_id = accept(db, file)
    env = _as_nobody(shared, db)
    kept = sorted(os.listdir(db.parent))
    for args in (["status"], ["explain", str(file)], ["review", "--list"], ["export"]):
        done = _nobody(exe, env, *args)
        assert done.returncode == 0, (args, done.stderr)
    assert f"rewrite #{rewrite_id} applied" in _nobody(exe, env, "explain", str(file)).stdout
    refused = _nobody(exe, env, "review", "--revoke", str(rewrite_id))
    assert refused.returncode == 1 and "is read-only here" in refused.stderr
    assert sorted(os.listdir(db.parent)) == kept, "nothing written beside the store"


@needs_root
def test_a_build_applies_what_it_can_read_from_a_read_only_store(exe: str, shared: Path) -> None:
    db = shared / "state" / "store.db"
    file = shared / "a.cu"
    file.write_text(source("a"))
    accept(db, file)
    obj, err = compile_one(exe, shared / "home", file, _as_nobody(shared, db), NOBODY)
    assert b"a-REWRITTEN" in obj
    assert err.count("could not record this compile") == 1, err


@needs_root
def test_a_build_that_cannot_read_the_store_compiles_the_original_and_says_why(
    exe: str, shared: Path
) -> None:
    db = shared / "state" / "store.db"
    file = shared / "a.cu"
    file.write_text(source("a"))
    accept(db, file)
    db.chmod(0o600)
    obj, err = compile_one(exe, shared / "home", file, _as_nobody(shared, db), NOBODY)
    assert b"a-original" in obj
    assert err.count("accepted rewrites not applied") == 1, err
    assert str(db) in err


@needs_root
def test_an_old_read_only_store_says_it_cannot_be_upgraded(exe: str, shared: Path) -> None:
    db = shared / "state" / "store.db"
    db.parent.mkdir()
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    migrations.MIGRATIONS[0](conn)
    conn.execute("PRAGMA user_version = 1")
    conn.close()
    done = _nobody(exe, _as_nobody(shared, db), "status")
    assert done.returncode == 1
    assert "schema version 1 is older than this nvcc-opt's" in done.stderr
    assert "cannot be upgraded here" in done.stderr


# --- once per build --------------------------------------------------------------------------

ASK = "from nvcc_opt.launcher import once; print(once.build_driver(), once.first_time('hello'))"


def _ask(command: list[str], tmp_path: Path, stdin: str | None = None) -> list[str]:
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    done = subprocess.run(command, input=stdin, capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_a_notice_is_said_once_per_build_driver_past_wrapper_shells(tmp_path: Path) -> None:
    through_shell = ["sh", "-c", f'env {sys.executable} -c "{ASK}"']
    first = _ask(through_shell, tmp_path)
    second = _ask(through_shell, tmp_path)
    assert first[0].startswith(f"{os.getpid()}:")  # this test's process is the build driver
    assert (first, second) == ([first[0], "True"], [first[0], "False"])
    script = tmp_path / "build.sh"
    script.write_text(f'{sys.executable} -c "{ASK}"\n{sys.executable} -c "{ASK}"\n')
    own = _ask(["sh", str(script)], tmp_path)  # a script is a build of its own
    assert own[0] != first[0] and own[1::2] == ["True", "False"]


def test_a_compile_typed_at_an_interactive_shell_says_its_notices_every_time(
    tmp_path: Path,
) -> None:
    typed = f'{sys.executable} -c "{ASK}"\n'
    assert _ask(["sh"], tmp_path, stdin=typed * 2) == ["None", "True", "None", "True"]


def test_markers_of_builds_long_over_are_removed_when_a_new_one_is_made(tmp_path: Path) -> None:
    """The markers do not pile up: one older than a week goes when a build next says something;
    a recent one (a build that may still run) stays."""
    from nvcc_opt.launcher import once

    folder = tmp_path / f"nvcc-opt-{os.getuid()}" / "said"
    folder.mkdir(parents=True)
    old, recent = folder / "a", folder / "b"
    old.touch()
    recent.touch()
    week_ago = time.time() - once.STALE_S - 60
    os.utime(old, (week_ago, week_ago))
    through_shell = ["sh", "-c", f'env {sys.executable} -c "{ASK}"']
    assert _ask(through_shell, tmp_path)[1] == "True"
    left = {p.name for p in folder.iterdir()}
    assert "a" not in left and "b" in left and len(left) == 2  # the recent one and the new one
