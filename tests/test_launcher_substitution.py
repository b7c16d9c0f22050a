"""Substitution: accepted rewrites reach the object; everything else fails open (real nvcc)."""

from __future__ import annotations

from pathlib import Path

from nvcc_opt import review
from nvcc_opt.records import NewRewrite
from nvcc_opt.regions.scan import scan
from nvcc_opt.store.api import Store
from tests.conftest import needs_nvcc, run

pytestmark = needs_nvcc

SOURCE = """\
#include <cstdio>
// @optimize begin variant
const char* variant() { return "variant-original"; }
__global__ void scale(float* x, float a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= a;
}
// @optimize end
// @optimize
const char* other() { return "other-original"; }
static_assert(__LINE__ == 12, "lines after the regions keep their numbers");
"""
REWRITE = """\
const char* variant() { return "variant-REWRITTEN"; }
__global__ void scale(float* __restrict__ x, float a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] * a;
}
"""
FLAGGED = """\
#ifdef __OPTIMIZE__
const char* other() { return "other-FLAGGED"; }
#else
const char* other() { return "other-UNFLAGGED"; }
#endif
"""
COMPILE = ["nvcc", "-c", "k.cu", "-arch=sm_90", "-o", "k.o", "-MD", "-MT", "k.o", "-MF", "k.o.d"]


def _accept(
    store_db: Path,
    source: Path,
    name: str,
    code: str,
    args: tuple[str, ...] = (),
    targets: tuple[str, ...] | None = None,
) -> int:
    region = next(r for r in scan(source.read_bytes()).regions if r.name == name)
    with Store.open(store_db) as store:
        rewrite, _ = store.add_rewrite(
            NewRewrite(
                file=str(source.resolve()),
                region_name=name,
                region_hash=region.text_hash,
                code=code,
                compile_args=args,
                targets=targets,
            )
        )
        review.decide(store, rewrite.id, "accept", "test", force=True)
    return rewrite.id


def _build(tmp_path: Path, exe: str) -> tuple[int, bytes, bytes]:
    done = run([exe, *COMPILE], tmp_path)
    return done.returncode, done.stderr, (tmp_path / "k.o").read_bytes()


def test_accepted_rewrite_is_in_the_object(tmp_path: Path, exe: str, store_env: Path) -> None:
    source = tmp_path / "k.cu"
    source.write_text(SOURCE)
    code, err, obj = _build(tmp_path, exe)
    assert code == 0, err
    assert b"variant-original" in obj
    _accept(store_env, source, "variant", REWRITE)
    code, err, obj = _build(tmp_path, exe)
    assert code == 0, err
    assert b"variant-REWRITTEN" in obj and b"variant-original" not in obj
    assert b"other-original" in obj
    assert source.read_text() == SOURCE, "the source tree is never edited"


def test_depfile_names_the_original_and_the_stamps(
    tmp_path: Path, exe: str, store_env: Path
) -> None:
    source = tmp_path / "k.cu"
    source.write_text(SOURCE)
    _accept(store_env, source, "variant", REWRITE)
    code, err, _ = _build(tmp_path, exe)
    assert code == 0, err
    dep = (tmp_path / "k.o.d").read_text()
    assert dep.startswith("k.o")
    assert " k.cu" in dep
    assert ".nvcc-opt" not in dep
    assert dep.count(".stamp") == 2  # one per region
    stamps = [w for w in dep.split() if w.endswith(".stamp")]
    assert all(Path(s).exists() and Path(s).is_relative_to(store_env.parent) for s in stamps)


def test_compile_args_reach_only_this_compile(tmp_path: Path, exe: str, store_env: Path) -> None:
    source = tmp_path / "k.cu"
    source.write_text(SOURCE)
    _accept(store_env, source, "other", FLAGGED, args=("-O3",))  # gcc defines __OPTIMIZE__
    code, err, obj = _build(tmp_path, exe)
    assert code == 0, err
    assert b"other-FLAGGED" in obj


def test_conflicting_compile_args_apply_neither(tmp_path: Path, exe: str, store_env: Path) -> None:
    source = tmp_path / "k.cu"
    source.write_text(SOURCE)
    _accept(store_env, source, "variant", REWRITE, args=("-maxrregcount=32",))
    _accept(store_env, source, "other", FLAGGED, args=("-maxrregcount=64",))
    code, err, obj = _build(tmp_path, exe)
    assert code == 0, err
    assert b"flags conflict" in err and b"k.cu:" in err
    assert b"variant-original" in obj and b"other-original" in obj


def test_rewrite_for_other_targets_is_not_applied(
    tmp_path: Path, exe: str, store_env: Path
) -> None:
    source = tmp_path / "k.cu"
    source.write_text(SOURCE)
    _accept(store_env, source, "variant", REWRITE, targets=("compute_80", "sm_80"))
    code, err, obj = _build(tmp_path, exe)
    assert code == 0, err
    assert b"variant-original" in obj


def test_broken_rewrite_builds_the_original_and_says_so_once(
    tmp_path: Path, exe: str, store_env: Path
) -> None:
    source = tmp_path / "k.cu"
    source.write_text(SOURCE)
    rewrite_id = _accept(store_env, source, "variant", "const char* variant() { return nope; }\n")
    code, err, obj = _build(tmp_path, exe)
    assert code == 0
    assert f"#{rewrite_id}".encode() in err and b"suspect" in err
    assert b"variant-original" in obj
    code, err, _ = _build(tmp_path, exe)
    assert code == 0 and b"suspect" not in err
    with Store.open(store_env) as store:
        assert "nope" in store.rewrite(rewrite_id).suspect


def test_corrupt_store_fails_open(tmp_path: Path, exe: str, store_env: Path) -> None:
    source = tmp_path / "k.cu"
    source.write_text(SOURCE)
    store_env.parent.mkdir(parents=True)
    store_env.write_bytes(b"this is not a database" * 100)
    code, err, obj = _build(tmp_path, exe)
    assert code == 0
    assert b"nvcc-opt:" in err and b"store" in err
    assert b"variant-original" in obj


def test_disable_switch_passes_everything_through(
    tmp_path: Path, exe: str, store_env: Path
) -> None:
    source = tmp_path / "k.cu"
    source.write_text(SOURCE)
    _accept(store_env, source, "variant", REWRITE)
    done = run([exe, *COMPILE], tmp_path, env={"NVCC_OPT_DISABLE": "1"})
    assert done.returncode == 0
    assert b"variant-original" in (tmp_path / "k.o").read_bytes()


def test_quoted_includes_resolve_as_for_the_original(
    tmp_path: Path, exe: str, store_env: Path
) -> None:
    """The copy lives elsewhere; "conf.h" must still be the one beside the original, even when
    an -I folder holds another conf.h (appending the source folder would pick that one)."""
    (tmp_path / "src").mkdir()
    (tmp_path / "inc").mkdir()
    (tmp_path / "src" / "conf.h").write_text('#define CONF "conf-beside-source"\n')
    (tmp_path / "inc" / "conf.h").write_text('#define CONF "conf-from-include-path"\n')
    source = tmp_path / "src" / "k.cu"
    source.write_text(SOURCE.replace("#include <cstdio>", '#include "conf.h"'))
    _accept(store_env, source, "variant", REWRITE.replace('"variant-REWRITTEN"', "CONF"))
    cmd = [exe, "nvcc", "-Iinc", "-c", "src/k.cu", "-arch=sm_90", "-o", "k.o"]
    done = run(cmd, tmp_path)
    assert done.returncode == 0, done.stderr
    obj = (tmp_path / "k.o").read_bytes()
    assert b"conf-beside-source" in obj and b"conf-from-include-path" not in obj


def test_unreadable_store_fails_open(tmp_path: Path, exe: str, store_env: Path) -> None:
    source = tmp_path / "k.cu"
    source.write_text(SOURCE)
    store_env.mkdir(parents=True)  # a folder where the database should be
    code, err, obj = _build(tmp_path, exe)
    assert code == 0
    assert b"nvcc-opt:" in err
    assert b"variant-original" in obj


def test_locked_store_applies_at_once_and_records_on_the_next_build(
    tmp_path: Path, exe: str, store_env: Path
) -> None:
    """A writer holding the database (a review, an import) neither delays nor fails a compile:
    it reads past the writer, gives up recording after a short wait and says so; the next
    compile records."""
    import sqlite3
    import subprocess
    import time

    source = tmp_path / "k.cu"
    source.write_text(SOURCE)
    _accept(store_env, source, "variant", REWRITE)
    holder = sqlite3.connect(store_env, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    (tmp_path / "k2.cu").write_text(SOURCE)
    second = [w.replace("k.", "k2.") for w in COMPILE]
    started = time.monotonic()
    compiles = [
        subprocess.Popen(argv, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for argv in ([exe, *COMPILE], [exe, *second])
    ]  # one build: a notice said once per build would name only one of them
    said = [c.communicate(timeout=120)[1] for c in compiles]
    waited = time.monotonic() - started
    holder.execute("ROLLBACK")
    holder.close()
    assert [c.returncode for c in compiles] == [0, 0], said
    assert b"variant-REWRITTEN" in (tmp_path / "k.o").read_bytes()
    for name, err in zip(("k.cu", "k2.cu"), said, strict=True):
        assert f"could not record the compile of {name} in".encode() in err, err
        assert b"database is locked" in err
    assert waited < 20, waited  # before: the compile waited for the writer (30 s at most)
    with Store.open(store_env) as store:
        assert store.regions() == []
    done = run([exe, *COMPILE], tmp_path)
    assert done.returncode == 0 and b"nvcc-opt:" not in done.stderr, done.stderr
    with Store.open(store_env) as store:
        assert [r.name for r in store.regions()] == ["variant", "other"]


def test_malformed_pragma_warns_with_file_and_line_and_builds(
    tmp_path: Path, exe: str, store_env: Path
) -> None:
    (tmp_path / "k.cu").write_text(SOURCE.replace("#include <cstdio>", "// @optimize bgin"))
    done = run([exe, *COMPILE], tmp_path)
    assert done.returncode == 0
    assert b"k.cu:1: warning: nvcc-opt:" in done.stderr
