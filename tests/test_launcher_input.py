"""Odd input on the compile path: a UTF-8 byte order mark, a compile that exits 0 without its
object, a path that is not UTF-8, an internal error. Real nvcc throughout; the only fake is a
compiler wrapper at the process edge (the compile_args allowlist keeps `-dryrun` and `-o` out
of a rewrite, so only a wrapper can make a substituted compile "succeed" without its object)."""

from __future__ import annotations

import os
import random
import shutil
import sys
from pathlib import Path

import pytest

from nvcc_opt import review
from nvcc_opt.launcher import argv, candidate, main
from nvcc_opt.records import NewRewrite
from nvcc_opt.regions.scan import region_text, scan
from nvcc_opt.regions.splice import splice
from nvcc_opt.store.api import Store
from tests.conftest import needs_nvcc, normalized, run

BOM = b"\xef\xbb\xbf"
SOURCE = b"""\
/* @optimize */ const char* first() { return "first-original"; }
// @optimize begin variant
const char* variant() { return "variant-original"; }
// @optimize end
static_assert(__LINE__ == 5, "lines after the regions keep their numbers");
"""
FIRST = 'const char* first() { return "first-REWRITTEN"; }\n'
VARIANT = 'const char* variant() { return "variant-REWRITTEN"; }\n'
COMPILE = ["-c", "k.cu", "-arch=sm_90", "-o", "k.o", "-MD", "-MT", "k.o", "-MF", "k.o.d"]


def _accept(store_db: Path, file: str, source: bytes, name: str, code: str) -> int:
    region = next(r for r in scan(source).regions if r.name == name)
    with Store.open(store_db) as store:
        rewrite, _ = store.add_rewrite(
            NewRewrite(file=file, region_name=name, region_hash=region.text_hash, code=code)
        )
        review.decide(store, rewrite.id, "accept", "test", force=True)
    return rewrite.id


def _suspect(store_db: Path, rewrite_id: int) -> str | None:
    with Store.open(store_db) as store:
        return store.rewrite(rewrite_id).suspect


# -- a UTF-8 byte order mark ------------------------------------------------------------------


def test_bom_is_outside_every_region_and_its_hash() -> None:
    plain, marked = scan(SOURCE).regions, scan(BOM + SOURCE).regions
    assert [r.text_hash for r in marked] == [r.text_hash for r in plain]
    assert [(r.start_line, r.end_line) for r in marked] == [(1, 1), (3, 3)]
    assert [r.start_offset - 3 for r in marked] == [r.start_offset for r in plain]
    assert region_text(BOM + SOURCE, marked[0]) == region_text(SOURCE, plain[0])
    assert not region_text(BOM + SOURCE, marked[0]).startswith("\ufeff")


def test_bom_stays_first_in_the_spliced_copy() -> None:
    first, variant = scan(BOM + SOURCE).regions
    copy = splice(BOM + SOURCE, [(first, FIRST), (variant, VARIANT)], "k.cu")
    line = b'#line 1 "k.cu"\n'
    assert copy.startswith(BOM + line + line + FIRST.encode() + b'#line 2 "k.cu"\n')
    assert copy.count(BOM) == 1
    assert splice(BOM + SOURCE, [], "k.cu") == BOM + b'#line 1 "k.cu"\n' + SOURCE


_PIECES = [
    b"// @optimize\n", b"/* @optimize */ ", b"// @optimize begin x\n", b"// @optimize end\n",
    b"void f() ", b"{", b"}", b"(", b")", b";", b"#if 0\n", b"#endif\n", b"#define A {\n",
    b"/*", b"*/", b'"', b"\r\n", b"\n", b" ", b"\xff",
]  # fmt: skip


@pytest.mark.parametrize("seed", range(10))
def test_bom_changes_nothing_but_offsets(seed: int) -> None:
    """Whatever follows the BOM: the same regions, hashes and warnings, and the same copy."""
    rng = random.Random(seed)
    for _ in range(60):
        source = b"".join(rng.choice(_PIECES) for _ in range(rng.randrange(40)))
        plain, marked = scan(source), scan(BOM + source)
        assert marked.warnings == plain.warnings
        moved = [
            r.replace(start_offset=r.start_offset - 3, end_offset=r.end_offset - 3)
            for r in marked.regions
        ]
        assert moved == list(plain.regions)
        try:
            expected = splice(source, [(r, "int x;\n") for r in plain.regions], "f.cu")
        except ValueError:
            continue
        copy = splice(BOM + source, [(r, "int x;\n") for r in marked.regions], "f.cu")
        assert copy == BOM + expected


def test_span_inside_the_bom_is_refused() -> None:
    (first, _) = scan(SOURCE).regions  # offsets of the file without its BOM
    with pytest.raises(ValueError, match="byte order mark"):
        splice(BOM + SOURCE, [(first, FIRST)], "k.cu")


@needs_nvcc
@pytest.mark.parametrize("names", [("variant",), ("first", "variant")])
def test_bom_file_takes_its_rewrites(
    tmp_path: Path, exe: str, store_env: Path, names: tuple[str, ...]
) -> None:
    source = tmp_path / "k.cu"
    source.write_bytes(BOM + SOURCE)
    done = run(["nvcc", *COMPILE], tmp_path)
    assert done.returncode == 0, done.stderr  # nvcc itself reads a BOM
    code = {"first": FIRST, "variant": VARIANT}
    ids = [_accept(store_env, str(source), BOM + SOURCE, n, code[n]) for n in names]
    done = run([exe, "nvcc", *COMPILE], tmp_path)
    assert done.returncode == 0, done.stderr
    assert b"suspect" not in done.stderr and b"nvcc-opt:" not in done.stderr
    obj = (tmp_path / "k.o").read_bytes()
    for name in ("first", "variant"):
        applied = name in names
        assert (f"{name}-REWRITTEN".encode() in obj) == applied
        assert (f"{name}-original".encode() in obj) != applied
    assert not any(_suspect(store_env, i) for i in ids)
    assert source.read_bytes() == BOM + SOURCE


# -- a substituted compile that exits 0 without its object -----------------------------------


def _wrapper(tmp_path: Path, mode: str) -> str:
    """An `nvcc` that runs the real one, but breaks compiles of the launcher's private copy:
    `dryrun` adds -dryrun (exit 0, nothing written), `elsewhere` moves the -o output."""
    real = shutil.which("nvcc")
    assert real is not None
    folder = tmp_path / "wrapper"
    folder.mkdir()
    script = folder / "nvcc"
    script.write_text(
        f"#!{sys.executable}\n"
        "import os, sys\n"
        "args = sys.argv[1:]\n"
        "if any('/.nvcc-opt/' in a for a in args):\n"
        f"    if {mode!r} == 'dryrun':\n"
        "        args.append('-dryrun')\n"
        "    else:\n"
        "        i = args.index('-o')\n"
        "        args[i + 1] += '.elsewhere'\n"
        f"os.execv({real!r}, [{real!r}, *args])\n"
    )
    script.chmod(0o755)
    return str(script)


@needs_nvcc
@pytest.mark.parametrize("mode", ["dryrun", "elsewhere"])
@pytest.mark.parametrize("stale", [False, True], ids=["fresh", "stale-object"])
def test_substituted_compile_without_its_object_falls_back(
    tmp_path: Path, exe: str, store_env: Path, mode: str, stale: bool
) -> None:
    source = tmp_path / "k.cu"
    source.write_bytes(SOURCE)
    nvcc = _wrapper(tmp_path, mode)
    if stale:  # an object from an earlier build must not pass for this compile's
        assert run([exe, nvcc, *COMPILE], tmp_path).returncode == 0
        os.utime(tmp_path / "k.o", (1e9, 1e9))
    rewrite_id = _accept(store_env, str(source), SOURCE, "variant", VARIANT)
    done = run([exe, nvcc, *COMPILE], tmp_path)
    assert done.returncode == 0, done.stderr
    obj = tmp_path / "k.o"
    assert obj.stat().st_mtime > 1e9 + 1
    assert b"variant-original" in obj.read_bytes()
    assert f"#{rewrite_id}".encode() in done.stderr and b"suspect" in done.stderr
    assert b"k.o" in done.stderr and b"not" in done.stderr
    reason = _suspect(store_env, rewrite_id)
    assert reason is not None and "k.o" in reason
    dep = (tmp_path / "k.o.d").read_text()
    assert ".nvcc-opt" not in dep and " k.cu" in dep
    again = run([exe, nvcc, *COMPILE], tmp_path)  # later builds skip it and say nothing
    assert again.returncode == 0 and b"suspect" not in again.stderr


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("-c src/k.cu -o obj/k.o", "obj/k.o"),
        ("-c src/k.cu", "k.o"),
        ("-dc src/k.cu -odir out", "out/k.o"),
        ("-c src/k.cu --output-directory=out -o k2.o", "k2.o"),  # measured: -odir moves no -o
    ],
)
def test_object_file(command: str, expected: str) -> None:
    job = argv.parse(command.split(), lambda path: "", "/build")
    assert isinstance(job, argv.CompileJob)
    assert argv.object_file(job) == expected


def test_output_that_is_no_regular_file_is_not_judged(tmp_path: Path) -> None:
    """`-o /dev/null` cannot show whether the compile wrote it: never a false suspect."""
    assert main._written(os.devnull, main._file_state(os.devnull))
    obj = tmp_path / "k.o"
    assert not main._written(str(obj), None)
    obj.write_bytes(b"old")
    before = main._file_state(str(obj))
    assert not main._written(str(obj), before)
    obj.write_bytes(b"newer")  # (a compile takes far longer than a timestamp tick)
    assert main._written(str(obj), before)


@needs_nvcc
def test_candidate_without_its_object_fails(
    tmp_path: Path, exe: str, store_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Candidate mode fails closed: no object is an error the tool must see."""
    source = tmp_path / "k.cu"
    source.write_bytes(SOURCE)
    (variant,) = [r for r in scan(SOURCE).regions if r.name == "variant"]
    spec = tmp_path / "candidate.json"
    candidate.write(str(spec), str(source), variant.text_hash, VARIANT, [])
    done = run(
        [exe, _wrapper(tmp_path, "dryrun"), *COMPILE], tmp_path, env={candidate.ENV: str(spec)}
    )
    assert done.returncode != 0
    assert b"k.o" in done.stderr and b"not" in done.stderr
    assert not (tmp_path / "k.o").exists()


# -- paths that are not UTF-8 ----------------------------------------------------------------


def _odd_source(tmp_path: Path, where: str) -> tuple[str, str]:
    """(folder, file name) of a tagged file with byte 0xff in its folder or its own name."""
    folder = os.fsdecode(bytes(tmp_path) + (b"/dir\xff" if where == "folder" else b"/dir"))
    name = "k.cu" if where == "folder" else os.fsdecode(b"k\xff.cu")
    os.mkdir(folder)
    with open(os.path.join(folder, name), "wb") as handle:
        handle.write(SOURCE)
    return folder, name


@needs_nvcc
@pytest.mark.parametrize("where", ["folder", "file"])
def test_non_utf8_path_compiles_as_nvcc_does(
    tmp_path: Path, exe: str, store_env: Path, where: str
) -> None:
    folder, name = _odd_source(tmp_path, where)
    args = ["-c", name, "-arch=sm_90", "-o", "k.o", "-MD", "-MT", "k.o", "-MF", "k.o.d"]
    plain = run(["nvcc", *args[:-5]], Path(folder))
    assert plain.returncode == 0, plain.stderr
    os.rename(os.path.join(folder, "k.o"), os.path.join(folder, "plain.o"))
    done = run([exe, "nvcc", *args], Path(folder))
    assert done.returncode == 0, done.stderr
    assert b"Traceback" not in done.stderr and b"internal error" not in done.stderr
    assert b"not UTF-8" in done.stderr  # the store cannot hold it: said once
    assert normalized(Path(folder, "k.o")) == normalized(Path(folder, "plain.o"))
    with open(os.path.join(folder, "k.o.d"), "rb") as handle:
        dep = handle.read()
    assert os.fsencode(name) in dep and dep.count(b".stamp") == 2
    absolute = [os.path.join(folder, a) if a in (name, "k.o") else a for a in args[:5]]
    done = run([exe, "nvcc", *absolute], tmp_path)  # from another folder, by absolute path
    assert done.returncode == 0, done.stderr
    assert b"nvcc-opt" not in done.stderr
    assert normalized(Path(folder, "k.o")) == normalized(Path(folder, "plain.o"))


@needs_nvcc
def test_warning_names_a_non_utf8_file_by_its_bytes(
    tmp_path: Path, exe: str, store_env: Path
) -> None:
    folder, name = _odd_source(tmp_path, "file")
    with open(os.path.join(folder, name), "ab") as handle:
        handle.write(b"// @optimize bgin\n")
    done = run([exe, "nvcc", "-c", name, "-arch=sm_90"], Path(folder))
    assert done.returncode == 0, done.stderr
    assert b"k\xff.cu:6: warning: nvcc-opt: unknown @optimize word" in done.stderr


@needs_nvcc
@pytest.mark.parametrize("inside", [False, True], ids=["from-outside", "from-inside"])
def test_non_utf8_folder_takes_a_candidate(
    tmp_path: Path, exe: str, store_env: Path, inside: bool
) -> None:
    """The splice path (copy, #line, -iquote, depfile) handles byte paths: a candidate, which
    needs no store, reaches the object, from a working directory with or without byte 0xff."""
    folder, name = _odd_source(tmp_path, "folder")
    (variant,) = [r for r in scan(SOURCE).regions if r.name == "variant"]
    spec = tmp_path / "candidate.json"
    candidate.write(str(spec), os.path.join(folder, name), variant.text_hash, VARIANT, [])
    cwd = folder if inside else str(tmp_path)
    source = name if inside else os.path.join(folder, name)
    args = ["-c", source, "-arch=sm_90", "-o", "k.o", "-MD", "-MF", "k.o.d"]
    done = run([exe, "nvcc", *args], Path(cwd), env={candidate.ENV: str(spec)})
    assert done.returncode == 0, done.stderr
    obj = Path(cwd, "k.o").read_bytes()
    assert b"variant-REWRITTEN" in obj and b"variant-original" not in obj
    dep = Path(cwd, "k.o.d").read_bytes()
    assert os.fsencode(source) in dep and b".nvcc-opt" not in dep


# -- any internal error compiles the original and says why -----------------------------------


@needs_nvcc
@pytest.mark.parametrize(
    ("target", "code"),
    [
        ("nvcc_opt.paths.stamp_file", VARIANT),
        ("nvcc_opt.launcher.copy.write_copy", VARIANT),
        ("nvcc_opt.launcher.main.argv.object_file", VARIANT),
        ("nvcc_opt.store.fast.mark_suspect", "const char* variant() { return nope; }\n"),
    ],
)
def test_internal_error_compiles_the_original(
    tmp_path: Path,
    store_env: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
    target: str,
    code: str,
) -> None:
    source = tmp_path / "k.cu"
    source.write_bytes(SOURCE)
    _accept(store_env, str(source), SOURCE, "variant", code)

    def broken(*args: object, **kwargs: object) -> str:
        raise RuntimeError("injected")

    monkeypatch.setattr(target, broken)
    monkeypatch.chdir(tmp_path)
    assert main.run(["nvcc", *COMPILE]) == 0
    err = capfd.readouterr().err
    assert "nvcc-opt: internal error" in err and "injected" in err
    assert b"variant-original" in (tmp_path / "k.o").read_bytes()
    dep = (tmp_path / "k.o.d").read_text()
    assert " k.cu" in dep and ".nvcc-opt" not in dep
