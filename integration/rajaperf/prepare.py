"""`prepare`: a user's RAJAPerf checkout made ready for the paper's experiment, every change
recorded in the ledger; `unprepare`: all of it undone.

Order: the version checked; the CUDA 13 fixes (fixes.py); each kernel with a Base_CUDA variant
tagged with its header's macros expanded (tagging.py), a kernel that cannot be tagged reported
and the others tagged; each tagged kernel's nvcc-opt.toml (tomls.py) and the checkout's own (the
store); then, where asked, the CMake configure and build (build.py), where a kernel whose tagged
file does not compile has its tag undone and is reported, and the rest go on.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

from integration.rajaperf.fixes import planned
from integration.rajaperf.kernels import KERNELS, Kernel
from integration.rajaperf.ledger import FOLDER, Ledger
from integration.rajaperf.macros import MacroError, read_defines
from integration.rajaperf.tagging import TagError, tag
from integration.rajaperf.tomls import render, render_root
from integration.rajaperf.tunings import fixed_block_tuning
from integration.rajaperf.version import Version, VersionError, check_known, detect
from nvcc_opt.paths import CONFIG_NAME

STORE = f"{FOLDER}/store.db"


@dataclass
class Prepared:
    version: Version
    warning: str | None = None
    fixes: list[str] = field(default_factory=list)  # "name: file"
    tagged: dict[str, str] = field(default_factory=dict)  # kernel -> "file:region (macros)"
    not_tagged: dict[str, str] = field(default_factory=dict)  # kernel -> why
    no_base_cuda: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        out = [f"checkout: {self.version.describe()}"]
        if self.warning:
            out.append(self.warning)
        out += [f"fix {f}" for f in self.fixes]
        out += [f"tagged {k}: {where}" for k, where in self.tagged.items()]
        out += [f"not tagged {k}: {why}" for k, why in self.not_tagged.items()]
        out += [f"no Base_CUDA variant (reported, not optimized): {k}" for k in self.no_base_cuda]
        return out


def kernel_folder(root: Path, kernel: Kernel) -> Path:
    return root / FOLDER / "kernels" / kernel.full_name


def cuda_file(root: Path, kernel: Kernel) -> Path:
    return root / "src" / kernel.folder / f"{kernel.name}-Cuda.cpp"


def prepare(
    root: Path,
    build: Path,
    *,
    force: bool = False,
    tunings: dict[str, str] | None = None,
    python: str = sys.executable,
) -> Prepared:
    """Fix, tag and write the settings (no configure: build.py does that); VersionError for a
    checkout it must refuse, RuntimeError when it is prepared already."""
    root = root.resolve()
    version = detect(root)
    result = Prepared(version, check_known(version, force))
    ledger = Ledger(root)
    if ledger.changes:
        raise RuntimeError(
            f"{root}: prepared already ({len(ledger.changes)} changes in {FOLDER}/ledger.json);"
            " run unprepare first"
        )
    ledger.info.update(version=version.suite, commit=version.commit, build=str(build.resolve()))
    for fix, path, _, after in planned(root):
        change = ledger.write(path, after, "fix", fix.name)
        result.fixes.append(f"{fix.name}: {change.file}")
    chosen = tunings or {}
    store = root / STORE
    for kernel in KERNELS:
        if not kernel.has_base_cuda:
            result.no_base_cuda.append(kernel.full_name)
            continue
        try:
            where = _tag(root, ledger, kernel)
        except (MacroError, TagError, OSError, UnicodeDecodeError) as exc:
            result.not_tagged[kernel.full_name] = str(exc)
            continue
        if kernel.full_name in chosen or kernel.name in chosen:
            tuning = chosen.get(kernel.full_name) or chosen[kernel.name]
            kernel = Kernel(kernel.group, kernel.name, kernel.tolerance, tuning)
        elif fixed := _fixed_tuning(root, kernel):
            kernel = Kernel(kernel.group, kernel.name, kernel.tolerance, fixed)
        folder = kernel_folder(root, kernel)
        toml = render(kernel, folder, build.resolve(), store, python, root)
        ledger.write(folder / CONFIG_NAME, toml, "file", f"{kernel.full_name} settings")
        result.tagged[kernel.full_name] = where
    record_not_tagged(ledger, result.not_tagged)
    if not (root / CONFIG_NAME).exists():
        ledger.write(root / CONFIG_NAME, render_root(build.resolve(), store, root), "file", "store")
    return result


def record_not_tagged(ledger: Ledger, found: dict[str, str]) -> None:
    """Kept in the ledger, so the protocol counts those kernels' runs as failures (no build)."""
    known = json.loads(ledger.info.get("not_tagged", "{}"))
    known.update(found)
    ledger.info["not_tagged"] = json.dumps(known)
    if ledger.changes:
        ledger.save()


def _fixed_tuning(root: Path, kernel: Kernel) -> str | None:
    """The one tuning a kernel whose header fixes its block size has (tunings.py)."""
    header = cuda_file(root, kernel).with_name(f"{kernel.name}.hpp")
    try:
        text = header.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    return fixed_block_tuning(text, header.relative_to(root).as_posix())


def _tag(root: Path, ledger: Ledger, kernel: Kernel) -> str:
    cuda = cuda_file(root, kernel)
    header = cuda.with_name(f"{kernel.name}.hpp")
    where = cuda.relative_to(root).as_posix()
    if not cuda.is_file() or not header.is_file():
        raise TagError(f"{where}: missing (or its header {header.name})")
    defines = read_defines(header.read_text(encoding="utf-8"), header.relative_to(root).as_posix())
    tagged = tag(cuda.read_text(encoding="utf-8"), defines, kernel.full_name, header.name, where)
    ledger.write(cuda, tagged.text, "tag", kernel.full_name)
    macros = ", ".join(tagged.expanded) or "no header macros used"
    return (
        f"{where}:{kernel.full_name} lines {tagged.first_line}-{tagged.last_line},"
        f" kernels {', '.join(tagged.kernels)} (expanded: {macros})"
    )


def untag(root: Path, kernel_name: str) -> list[str]:
    """Undo one kernel's tag and settings (its file restored if unchanged since); the lines that
    could not be undone."""
    ledger = Ledger(root.resolve())
    return ledger.revert(
        lambda c: (c.kind == "tag" and c.name == kernel_name) or c.name == f"{kernel_name} settings"
    )


def unprepare(root: Path) -> list[str]:
    """Undo everything prepare did; the lines about what could not be undone (kept)."""
    root = root.resolve()
    ledger = Ledger(root)
    if not ledger.changes and not (root / FOLDER).exists():
        raise VersionError(f"{root}: not prepared (no {FOLDER}/ledger.json)")
    return ledger.revert()


def tagged_kernels(root: Path) -> list[Kernel]:
    """The kernels whose tag the ledger holds, in the table's order."""
    names = {c.name for c in Ledger(root.resolve()).touched("tag")}
    return [k for k in KERNELS if k.full_name in names]
