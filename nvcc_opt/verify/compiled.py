"""The candidate's code as the compiler sees it: the lines that do not read source text.

A candidate that passed the token guards is compiled on its own, as its tree builds it (the
region's translation unit through the launcher, workspace/unit.py), and so is the original
region, once per benchmark. Then:
- the object line (objects.py): what the compiled host object and PTX define, call and keep,
  against the original's, and against every other object, archive and library of the build (a
  candidate may not define a function the rest of the program defines);
- the allowlist (allowlist.py) on the preprocessed text of both: what the candidate defines,
  keeps, calls and names, on the host side and every device architecture.
A cheat must get past each, and they read different things; the second runs only when the
first has nothing to say (it costs a compile).
Anything these lines cannot read is a refusal (fail closed): a check that did not run vouches
for nothing.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from nvcc_opt.tools.region import Region
from nvcc_opt.verify import objects
from nvcc_opt.verify.allowlist import check_candidate
from nvcc_opt.verify.host_symbols import Elsewhere
from nvcc_opt.verify.preprocess import Preprocessed, PreprocessError, preprocess
from nvcc_opt.workspace.runner import Runner
from nvcc_opt.workspace.unit import (
    Compiled,
    UnitError,
    compile_commands,
    compile_unit,
    objects_of,
)


@dataclass
class CodeChecks:
    """The compiled-code lines for one region; keeps the original's compile and the program's
    other definitions between candidates. `close()` removes its scratch folder."""

    runner: Runner
    region: Region
    launcher: str
    timeout_s: float
    _scratch: Path | None = None
    _original: dict[tuple[str, ...], Compiled] = field(default_factory=dict)  # by entry
    _preprocessed: dict[tuple[str, ...], Preprocessed] = field(default_factory=dict)  # by entry
    _elsewhere: Mapping[str, Elsewhere] | None = None
    _count: int = 0

    def close(self) -> None:
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None

    def reasons(
        self,
        baseline_tree: Path,
        candidate_tree: Path,
        code: str,
        compile_args: list[str],
        baseline_built: Callable[[], bool] = lambda: True,
    ) -> list[str]:
        """Rejection reasons for `code` (`candidate_tree` need only be configured): the
        allowlist's, or when it has none, the object line's. `baseline_built()` waits for the
        baseline's build (the object line reads its objects) and says whether it succeeded."""
        return self._allowlist(candidate_tree, code, compile_args) or self._objects(
            baseline_tree, candidate_tree, code, compile_args, baseline_built
        )

    def _allowlist(self, tree: Path, code: str, compile_args: list[str]) -> list[str]:
        """The allowlist under every distinct compile of the region's file (two targets may
        build it with different flags: a candidate is judged as each of them compiles it)."""
        region = self.region
        reasons: list[str] = []
        first: set[str] = set()
        try:
            entries = compile_commands(tree / "compile_commands.json", region.file)
            for i, (words, folder) in enumerate(entries):
                key = (str(folder), *words)
                if key not in self._preprocessed:
                    self._preprocessed[key] = self._preprocess(words, folder, region.text)
                candidate = self._preprocess([*words, *compile_args], folder, code)
                found = check_candidate(self._preprocessed[key], candidate)
                if i:  # what only another target's flags show says so
                    found = [_under(r, i, len(entries)) for r in found if r not in first]
                else:
                    first = set(found)
                reasons += [r for r in found if r not in reasons]
        except (UnitError, PreprocessError) as exc:
            return [f"allowlist: the candidate cannot be preprocessed and read ({exc})"]
        return reasons

    def _preprocess(self, words: list[str], folder: Path, code: str) -> Preprocessed:
        region = self.region
        return preprocess(words, folder, region.file_text, region.span, code, runner=self.runner)

    def _objects(
        self,
        baseline_tree: Path,
        candidate_tree: Path,
        code: str,
        compile_args: list[str],
        baseline_built: Callable[[], bool],
    ) -> list[str]:
        """The object line under every distinct compile of the region's file, as the
        allowlist is read: a candidate is judged as each target compiles it."""
        try:
            entries = compile_commands(candidate_tree / "compile_commands.json", self.region.file)
        except UnitError as exc:
            return [f"objects: the region's translation unit cannot be compiled alone ({exc})"]
        for entry, (words, folder) in enumerate(entries):  # each a full compile: stop at a refusal
            found = self._objects_of_entry(
                baseline_tree, candidate_tree, code, compile_args, baseline_built, entry,
                (str(folder), *words),
            )  # fmt: skip
            if found:
                return [_under(r, entry, len(entries)) if entry else r for r in found]
        return []

    def _objects_of_entry(
        self,
        baseline_tree: Path,
        candidate_tree: Path,
        code: str,
        compile_args: list[str],
        baseline_built: Callable[[], bool],
        entry: int,
        key: tuple[str, ...],
    ) -> list[str]:
        self._count += 1
        name = f"cand{self._count}"
        self._folder()
        try:
            with ThreadPoolExecutor(max_workers=2, thread_name_prefix="nvcc-opt-unit") as pool:
                # the original's compile (first candidate only) beside the candidate's
                first = pool.submit(self._original_unit, candidate_tree, entry, key)
                candidate = self._compile(candidate_tree, code, compile_args, name, entry)
                original = first.result()
        except UnitError as exc:
            return [f"objects: the region's translation unit cannot be compiled alone ({exc})"]
        if not baseline_built():
            shutil.rmtree(candidate.obj.parent, ignore_errors=True)
            return ["objects: the baseline did not build, so the program's objects are unknown"]
        if not candidate.ok or not original.ok:
            return [
                f"objects: the region's translation unit did not compile alone: "
                f"{_first_error(candidate.output if not candidate.ok else original.output)}"
            ]
        try:
            return objects.object_reasons(
                original.obj,
                candidate.obj,
                objects.ptx_texts(original.keep),
                objects.ptx_texts(candidate.keep),
                self._other_definitions(baseline_tree),
                self.runner,
            )
        except (objects.ObjectsError, UnitError) as exc:
            return [f"objects: the compiled code could not be read ({exc})"]
        finally:
            shutil.rmtree(candidate.obj.parent, ignore_errors=True)

    def _folder(self) -> Path:
        if self._scratch is None:
            self._scratch = Path(tempfile.mkdtemp(prefix="nvcc-opt-code-"))
        return self._scratch

    def _compile(
        self, tree: Path, code: str, compile_args: list[str], name: str, entry: int = 0
    ) -> Compiled:
        return compile_unit(
            self.runner,
            tree,
            self.region.file,
            self.region.text_hash,
            code,
            compile_args,
            launcher=self.launcher,
            work=self._folder() / name,
            timeout_s=self.timeout_s,
            entry=entry,
        )

    def _original_unit(self, tree: Path, entry: int, key: tuple[str, ...]) -> Compiled:
        """The original's compile under one entry, kept by the entry's words (as the allowlist
        keeps its preprocessed text)."""
        if key not in self._original:
            name = f"original{len(self._original) or ''}"
            self._original[key] = self._compile(tree, self.region.text, [], name, entry)
        return self._original[key]

    def _other_definitions(self, baseline_tree: Path) -> Mapping[str, Elsewhere]:
        """Every global definition of the baseline's build but the region's own objects (one
        per target that compiles its file)."""
        if self._elsewhere is None:
            self._elsewhere = objects.defined_elsewhere(
                objects.linkable_files(baseline_tree),
                self.runner,
                exclude=objects_of(baseline_tree, self.region.file),
            )
        return self._elsewhere


def _under(reason: str, entry: int, entries: int) -> str:
    """A reason that only another target's flags show, saying so."""
    return (
        f"{reason} (under the flags of compile {entry + 1} of the {entries} distinct ones "
        "compile_commands.json lists for this file)"
    )


def _first_error(output: str) -> str:
    lines = [x.strip() for x in output.splitlines() if "error" in x.lower()]
    return (lines or [output.strip()[-200:] or "no output"])[0][:200]
