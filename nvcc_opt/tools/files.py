"""The read-only file tools: a numbered window of a file, a folder listing and a search.

Every path is relative to the project root, which the model knows only as ".": absolute paths,
`..` that climbs out and symbolic links that lead out are refused, and no message names a host path
outside the root. Line numbers count "\\n" separators, as compilers and editors do.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
from collections.abc import Iterator
from pathlib import Path

from nvcc_opt.toolbox.schema import ToolError, tool
from nvcc_opt.tools.hidden import PRIVATE, REFUSED, shown_text

WINDOW = 100
MAX_WINDOW = 400
VIEW_CHARS = 32_000  # a window stops early rather than be cut by the generic cap
VIEW_LINE_CHARS = 400
MAX_VIEW_BYTES = 16 * 1024 * 1024
LIST_ENTRIES = 300
SEARCH_MAX_BYTES = 2 * 1024 * 1024
SHOW_MATCHES = 50
SHOW_FILES = 20
COUNT_FILES = 100
MAX_SCANNED = 20_000
MATCH_CHARS = 200
VCS_DIRS = frozenset({".git", ".hg", ".svn"})
_SNIFF = 8192  # a NUL byte in the first 8 KiB means binary, as git and grep decide


class ProjectFiles:
    """The file tools over one project root; `resolve` is the confinement other tools share."""

    def __init__(self, root: Path, private: tuple[Path, ...] = ()) -> None:
        """`private`: folders of nvcc-opt's own state (the store beside its traces) that are
        never shown, should they lie inside the root."""
        self.root = root.resolve()
        self.private = tuple(p.resolve() for p in private)

    @tool
    def file_viewer(self, path: str, start: int = 1, end: int | None = None) -> str:
        """Show lines of a text file, numbered, a window at a time.

        Args:
            path: The file, relative to the project root ".".
            start: First line to show; lines are numbered from 1.
            end: Last line to show (default start + 99); at most 400 lines at once.

        Returns:
            "[path: lines A-B of N]", then a "number | text" row per line, then how to see more.
        """
        real, shown = self._existing(path)
        if real.is_dir():
            raise ToolError(f"'{shown}' is a folder; list_dir(path='{shown}') lists it")
        data = self._text_bytes(real, shown, MAX_VIEW_BYTES)
        text = shown_text(real.name, data.decode("utf-8", errors="replace"))
        if text is None:
            raise ToolError(f"'{shown}' {REFUSED}")
        lines = _lines(text)
        if not lines:
            return f"[{shown}: empty file]"
        last = _check_window(shown, start, end, len(lines))
        body, last = _numbered(lines, start, last)
        text = f"[{shown}: lines {start}-{last} of {len(lines)}]\n{body}"
        if last < len(lines):
            text += (
                f"\n[lines {last + 1}-{len(lines)} not shown; "
                f"file_viewer(path='{shown}', start={last + 1}) shows more]"
            )
        return text

    @tool
    def list_dir(self, path: str = ".") -> str:
        """List a folder: subfolders first (with "/" and their number of entries), then files.

        Args:
            path: The folder, relative to the project root "." (default: the root itself).

        Returns:
            A "[path: D folders, F files, L links]" line, then one entry a line:
            "name/ (N entries)", "name SIZE", or "name@ -> target" for a symbolic link.
        """
        real, shown = self._existing(path)
        if not real.is_dir():
            raise ToolError(f"'{shown}' is a file; file_viewer(path='{shown}') shows it")
        entries = sorted(
            (e for e in os.scandir(real) if Path(e.path).resolve() not in self.private),
            key=lambda e: (not _is_dir(e), e.name),
        )
        if not entries:
            return f"[{shown}: empty folder]"
        folders = sum(1 for e in entries if _is_dir(e))
        links = sum(1 for e in entries if e.is_symlink())
        rows = [self._entry(e) for e in entries[:LIST_ENTRIES]]
        width = min(40, max(len(name) for name, _ in rows))
        counts = [
            _n(folders, "folder", "folders"),
            _n(len(entries) - folders - links, "file", "files"),
        ]
        counts += [_n(links, "link", "links")] if links else []
        text = f"[{shown}: {', '.join(counts)}]\n"
        text += "\n".join(f"{name:<{width}}  {info}".rstrip() for name, info in rows)
        if len(entries) > LIST_ENTRIES:
            more = len(entries) - LIST_ENTRIES
            text += f"\n[{more} more entries not shown; list a subfolder or search for a name]"
        return text

    @tool
    def search(self, pattern: str, regex: bool = False, path: str = ".") -> str:
        """Find the lines that contain a text (or match a regular expression) in files under a path.

        Skips binary files, files over 2 MB, symbolic links and hidden folders (.git, .venv, ...)
        unless path names one.

        Args:
            pattern: The text to find, case-sensitive; a Python regular expression if regex is true.
            regex: Whether pattern is a regular expression.
            path: A folder or file to search, relative to the project root "." (default: all).

        Returns:
            Matching files with their number of matches and the matching lines numbered; when more
            than 50 lines or 20 files match, only the counts per file, and a request to narrow.
        """
        if not pattern:
            raise ToolError("pattern is empty; give the text to look for")
        try:
            compiled = re.compile(pattern if regex else re.escape(pattern))
        except re.error as exc:
            raise ToolError(
                f"invalid regular expression {json.dumps(pattern)}: {exc}. "
                "Fix it, or pass regex=false to search for the text as written"
            ) from exc
        real, shown = self._existing(path)
        if not real.is_dir() and not real.is_file():
            raise ToolError(f"'{shown}' is not a regular file or folder")
        found = _Search(compiled)
        for file in [real] if real.is_file() else _walk(real, self.private):
            if found.scanned == MAX_SCANNED:
                found.notes.append(f"stopped after {MAX_SCANNED} files")
                break
            found.scan(file, self.relative(file))
        what = f"{'regex ' if regex else ''}{json.dumps(pattern)}"
        return found.report(what, shown)

    def resolve(self, path: str) -> tuple[Path, str]:
        """The real path inside the root and the path as the model should see it; ToolError if the
        path is absolute or leads outside the root (by `..` or through symbolic links)."""
        text = path.strip() or "."
        if text.startswith("~") or os.path.isabs(text):
            raise ToolError(f"'{text}' is an absolute path; {self._relative_hint(text)}")
        shown = posixpath.normpath(text)
        if shown == ".." or shown.startswith("../"):
            raise ToolError(f"'{text}' leads outside the project root; {_RELATIVE}")
        try:
            real = (
                self.root / text
            ).resolve()  # the OS's meaning of `link/..`, not the lexical one
        except (OSError, RuntimeError, ValueError) as exc:  # RuntimeError: a link loop (3.11)
            raise ToolError(f"'{text}' cannot be resolved (a symbolic link loop?)") from exc
        if not real.is_relative_to(self.root):
            raise ToolError(
                f"'{text}' goes through a symbolic link that leads outside the project root; "
                "only files inside '.' can be read"
            )
        return real, shown

    def relative(self, real: Path) -> str:
        """A real path inside the root as the model sees it ("." for the root)."""
        return real.relative_to(self.root).as_posix() or "."

    def _existing(self, path: str) -> tuple[Path, str]:
        real, shown = self.resolve(path)
        if any(real.is_relative_to(p) for p in self.private):
            raise ToolError(f"'{shown}' {PRIVATE}")
        if real.exists():
            return real, shown
        parent = posixpath.dirname(shown) or "."
        while parent != "." and not (self.root / parent).is_dir():
            parent = posixpath.dirname(parent) or "."
        raise ToolError(f"'{shown}' does not exist; list_dir(path='{parent}') shows what is there")

    def _relative_hint(self, text: str) -> str:
        inside = Path(os.path.expanduser(text)).resolve()
        if inside.is_relative_to(self.root):
            return f"use '{self.relative(inside)}' (paths are relative to the project root '.')"
        return _RELATIVE

    def _text_bytes(self, real: Path, shown: str, limit: int) -> bytes:
        if not real.is_file():
            raise ToolError(f"'{shown}' is not a regular file")
        size = real.stat().st_size
        if size > limit:
            raise ToolError(f"'{shown}' is too large to view ({_size(size)}); search in it instead")
        data = real.read_bytes()
        if b"\0" in data[:_SNIFF]:
            raise ToolError(f"'{shown}' is a binary file ({_size(size)}); only text can be shown")
        return data

    def _entry(self, entry: os.DirEntry[str]) -> tuple[str, str]:
        if entry.is_symlink():
            try:
                target = Path(entry.path).resolve()
            except (OSError, RuntimeError):
                return f"{entry.name}@", "-> (a symbolic link loop)"
            if not target.is_relative_to(self.root):
                return f"{entry.name}@", "-> (outside the project root)"
            return f"{entry.name}@", f"-> {self.relative(target)}{'/' if target.is_dir() else ''}"
        if entry.is_dir():
            return f"{entry.name}/", f"({_folder_note(Path(entry.path))})"
        return entry.name, _size(entry.stat().st_size)


_RELATIVE = "paths are relative to the project root '.', for example 'src/kernel.cu'"


class _Search:
    """Matches gathered file by file, and the report of them."""

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self.pattern = pattern
        self.hits: dict[str, list[str]] = {}
        self.scanned = 0
        self.binary = 0
        self.large = 0
        self.unreadable = 0
        self.hidden = 0
        self.notes: list[str] = []

    def scan(self, file: Path, shown: str) -> None:
        self.scanned += 1
        try:
            if file.stat().st_size > SEARCH_MAX_BYTES:
                self.large += 1
                return
            data = file.read_bytes()
        except OSError:
            self.unreadable += 1
            return
        if b"\0" in data[:_SNIFF]:
            self.binary += 1
            return
        text = shown_text(file.name, data.decode("utf-8", errors="replace"))
        if text is None:
            self.hidden += 1
            return
        for number, line in enumerate(_lines(text), 1):
            match = self.pattern.search(line)
            if match:
                self.hits.setdefault(shown, []).append(f"{number:>5} | {_around(line, match)}")

    def report(self, what: str, where: str) -> str:
        counts = [
            (self.binary, "binary"),
            (self.large, "over 2 MB"),
            (self.unreadable, "unreadable"),
            (self.hidden, "hidden from the model"),
        ]
        notes = [f"{n} {kind}" for n, kind in counts if n] + self.notes
        extra = f"; skipped files: {', '.join(notes)}" if notes else ""
        total = sum(len(lines) for lines in self.hits.values())
        if total == 0:
            searched = _n(self.scanned, "file", "files")
            return f"no matches for {what} under '{where}' ({searched} searched{extra})"
        found = (
            f"{_n(total, 'match', 'matches')} for {what} in {_n(len(self.hits), 'file', 'files')}"
        )
        head = f"[{found} under '{where}'{extra}]"
        if total <= SHOW_MATCHES and len(self.hits) <= SHOW_FILES:
            blocks = [f"{f} ({len(lines)})\n" + "\n".join(lines) for f, lines in self.hits.items()]
            return head + "\n" + "\n".join(blocks)
        ranked = sorted(self.hits.items(), key=lambda item: (-len(item[1]), item[0]))
        rows = [f"{f} ({len(lines)})" for f, lines in ranked[:COUNT_FILES]]
        if len(ranked) > COUNT_FILES:
            rows.append(f"[{len(ranked) - COUNT_FILES} more files]")
        advice = (
            f"[more than {SHOW_MATCHES} matches or {SHOW_FILES} files: matches per file below, "
            "no lines; narrow the search with a more specific pattern or a path]"
        )
        return "\n".join([head, advice, *rows])


def _check_window(shown: str, start: int, end: int | None, total: int) -> int:
    """The last line of the window asked for, after checking it makes sense."""
    if start < 1:
        raise ToolError("start must be 1 or more: lines are numbered from 1")
    if start > total:
        raise ToolError(f"'{shown}' has {total} lines; start must be at most {total}")
    if end is not None and end < start:
        raise ToolError(
            f"end ({end}) is before start ({start}); give end >= start, or leave it out"
        )
    wanted = start + WINDOW - 1 if end is None else end
    return min(wanted, total, start + MAX_WINDOW - 1)


def _numbered(lines: list[str], start: int, last: int) -> tuple[str, int]:
    """Lines start..last numbered, stopping early when the window would pass VIEW_CHARS."""
    width = max(5, len(str(last)))
    out: list[str] = []
    used = 0
    for number in range(start, last + 1):
        text = lines[number - 1]
        if len(text) > VIEW_LINE_CHARS:
            text = f"{text[:VIEW_LINE_CHARS]}... [{len(text) - VIEW_LINE_CHARS} more characters]"
        row = f"{number:>{width}} | {text}"
        if out and used + len(row) > VIEW_CHARS:
            return "\n".join(out), number - 1
        out.append(row)
        used += len(row) + 1
    return "\n".join(out), last


def _lines(text: str) -> list[str]:
    """Lines split at "\\n" only (str.splitlines also splits at form feeds and U+2028)."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def _around(line: str, match: re.Match[str]) -> str:
    """The line, or a piece of it that holds the match when the line is long."""
    line = line.rstrip()
    if len(line) <= MATCH_CHARS:
        return line
    begin = max(0, match.start() - MATCH_CHARS // 3)
    piece = line[begin : begin + MATCH_CHARS]
    return ("..." if begin else "") + piece + ("..." if begin + MATCH_CHARS < len(line) else "")


def _walk(top: Path, private: tuple[Path, ...] = ()) -> Iterator[Path]:
    """Regular files under `top` in name order, without hidden folders (.git, .venv), links or
    the `private` folders and files."""
    for folder, dirs, files in os.walk(top):
        dirs[:] = sorted(
            d for d in dirs if not d.startswith(".") and Path(folder, d).resolve() not in private
        )
        for name in sorted(files):
            file = Path(folder, name)
            if not file.is_symlink() and file.is_file() and file.resolve() not in private:
                yield file


def _is_dir(entry: os.DirEntry[str]) -> bool:
    return entry.is_dir(follow_symlinks=False)


def _folder_note(folder: Path) -> str:
    try:
        count = len(os.listdir(folder))
    except OSError:
        return "unreadable"
    note = _n(count, "entry", "entries")
    if folder.name in VCS_DIRS:
        return note + ", version control data"
    if (folder / "CMakeCache.txt").exists():
        return note + ", a CMake build tree"
    return note


def _size(size: int) -> str:
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KB"
    return f"{size / (1024 * 1024):.1f} MB"


def _n(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"
