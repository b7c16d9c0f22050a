"""Correctness of a run's outputs, decided before any timing. Pure: inputs are texts and bytes.

`check_run` returns every failure as a short reason "code: detail". Codes: timed_out, exit_status,
missing (a required pattern), forbidden, count, bad_pattern, numbers_none, numbers_count,
numbers_differ, nonfinite, zeros, file_missing, file_text_differs, file_differs.

Counted patterns (`counted`): against a baseline, each must match exactly as often in the run as in
the baseline's output. The program writes these lines, and so can a candidate's code in it: a
time line printed before the real one, or a second PASS line, changes a count where a search for
the first match would take the forgery.

The output of a run is its stdout followed by its stderr. Patterns (`require`, `forbid`,
`numbers`) are Python regular expressions searched with `re.MULTILINE`, so `^PASS$` means a line.
Each match of `numbers` gives its groups, or the whole match when it has none.

Numbers: a candidate value c matches the baseline's b when |c - b| <= atol + rtol * |b|. NaN and
infinity match nothing, not even themselves, and a non-finite baseline value fails too: such a check
cannot vouch for anything. All-zero candidate numbers where the baseline has a non-zero one are
their own failure, because zeros are what a kernel that does nothing leaves behind.

Files: each named file must exist. Against the baseline, a text file (UTF-8 without NUL bytes)
compares its numbers as above and the words between them exactly (ignoring whitespace), so that
"1.0" vs "1.0000001" can pass and "PASS" vs "FAIL" cannot. Any other file must be byte-identical:
without its layout (float32, float64, a struct) no tolerance would mean anything.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

Patterns = list[str] | tuple[str, ...]  # not Sequence[str]: a lone str would pass as one

# A decimal or scientific number, or nan/inf standing alone (not the "inf" of "info").
NUMBER = re.compile(
    r"(?<![\w.])[-+]?(?:nan|inf(?:inity)?)(?![\w.])|[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?",
    re.IGNORECASE,
)
MAX_DETAILS = 5  # per failure code: a million differing numbers must not make a million reasons


@dataclass(frozen=True)
class RunOutput:
    exit_status: int  # negative: killed by that signal
    stdout: str
    stderr: str
    files: Mapping[str, bytes]
    timed_out: bool = False
    wall_s: float = 0.0  # how long the run took (0: not known)


@dataclass(frozen=True)
class CheckResult:
    ok: bool
    reasons: tuple[str, ...]


def extract_numbers(text: str, regex: str | re.Pattern[str]) -> list[float]:
    """Every number `regex` matches in `text`; ValueError when a match is not a number."""
    pattern = re.compile(regex, re.MULTILINE) if isinstance(regex, str) else regex
    numbers = []
    for match in pattern.finditer(text):
        for value in match.groups() if pattern.groups else (match.group(0),):
            if value is None:
                continue
            try:
                numbers.append(float(value))
            except ValueError:
                raise ValueError(f"{value!r} matched by {pattern.pattern!r} is no number") from None
    return numbers


def compare_numbers(
    base: Sequence[float], cand: Sequence[float], rtol: float, atol: float, *, label: str = "output"
) -> list[str]:
    """Failure reasons for candidate numbers against the baseline's; empty when they match."""
    reasons = _nonfinite(cand, label) + _nonfinite(base, f"baseline {label}")
    if len(base) != len(cand):
        reasons.append(f"numbers_count: {len(base)} vs {len(cand)} in {label}")
    elif not reasons:
        reasons += _capped(
            "numbers_differ",
            [
                f"{label}[{i}] {b!r} vs {c!r} (rtol {rtol:g}, atol {atol:g})"
                for i, (b, c) in enumerate(zip(base, cand, strict=True))
                if abs(c - b) > atol + rtol * abs(b)
            ],
        )
    if cand and all(c == 0 for c in cand) and any(b != 0 for b in base):
        reasons.append(f"zeros: {label} numbers are all zero, the baseline's are not")
    return reasons


def check_run(
    run: RunOutput,
    *,
    exit_status: bool = True,
    require: Patterns = (),
    forbid: Patterns = (),
    numbers: str | None = None,
    files: Patterns = (),
    rtol: float = 1e-6,
    atol: float = 0.0,
    baseline: RunOutput | None = None,
    counted: Patterns = (),
) -> CheckResult:
    """Decide whether `run` is correct, against `baseline` where given. See the module docstring."""
    if run.timed_out:
        return CheckResult(False, ("timed_out: the run did not finish",))
    reasons = []
    if exit_status and run.exit_status != 0:
        signal = f" (signal {-run.exit_status})" if run.exit_status < 0 else ""
        reasons.append(f"exit_status: {run.exit_status}{signal}")
    reasons += _pattern_reasons(_output(run), require, forbid)
    if baseline is not None:
        reasons += count_reasons(_output(run), _output(baseline), counted)
    if numbers is not None:
        reasons += _number_reasons(run, numbers, baseline, rtol, atol)
    for name in files:
        reasons += _file_reasons(name, run, baseline, rtol, atol)
    return CheckResult(not reasons, tuple(reasons))


def _output(run: RunOutput) -> str:
    return f"{run.stdout}\n{run.stderr}"


def _compile(pattern: str) -> re.Pattern[str] | str:
    """The compiled pattern, or the bad_pattern reason."""
    try:
        return re.compile(pattern, re.MULTILINE)
    except re.error as error:
        return f"bad_pattern: {pattern!r}: {error}"


def _pattern_reasons(text: str, require: Patterns, forbid: Patterns) -> list[str]:
    reasons = []
    for pattern, wanted in [(p, True) for p in require] + [(p, False) for p in forbid]:
        compiled = _compile(pattern)
        if isinstance(compiled, str):
            reasons.append(compiled)
            continue
        match = compiled.search(text)
        if wanted and match is None:
            reasons.append(f"missing: {pattern}")
        elif not wanted and match is not None:
            start = text.rfind("\n", 0, match.start()) + 1
            line = text[start:].split("\n", 1)[0]
            reasons.append(f"forbidden: {pattern} (in {line[:80]!r})")
    return reasons


def count_reasons(text: str, baseline_text: str, patterns: Patterns) -> list[str]:
    """A `count` reason for each pattern matching a different number of times than in the
    baseline's output (bad patterns are reported by the other rules)."""
    reasons = []
    for pattern in dict.fromkeys(patterns):
        compiled = _compile(pattern)
        if isinstance(compiled, str):
            continue
        got, want = len(compiled.findall(text)), len(compiled.findall(baseline_text))
        if got != want:
            reasons.append(f"count: {pattern} matches {got} times, {want} in the baseline's output")
    return reasons


def _number_reasons(
    run: RunOutput, numbers: str, baseline: RunOutput | None, rtol: float, atol: float
) -> list[str]:
    compiled = _compile(numbers)
    if isinstance(compiled, str):
        return [compiled]
    try:
        cand = extract_numbers(_output(run), compiled)
        base = None if baseline is None else extract_numbers(_output(baseline), compiled)
    except ValueError as error:
        return [f"bad_pattern: {error}"]
    if base is None:
        reasons = _nonfinite(cand, "output")
        return reasons if cand else [f"numbers_none: {numbers} matched no number", *reasons]
    if not base:
        return [f"numbers_none: {numbers} matched no number in the baseline"]
    return compare_numbers(base, cand, rtol, atol)


def _file_reasons(
    name: str, run: RunOutput, baseline: RunOutput | None, rtol: float, atol: float
) -> list[str]:
    if name not in run.files:
        return [f"file_missing: {name}"]
    if baseline is None:
        text = _text(run.files[name])
        return [] if text is None else _nonfinite(_file_numbers(text), name)
    if name not in baseline.files:
        return [f"file_missing: {name} in the baseline"]
    return _compare_file(name, baseline.files[name], run.files[name], rtol, atol)


def _compare_file(name: str, base: bytes, cand: bytes, rtol: float, atol: float) -> list[str]:
    base_text, cand_text = _text(base), _text(cand)
    if base_text is not None and cand_text is not None:
        numbers = compare_numbers(
            _file_numbers(base_text), _file_numbers(cand_text), rtol, atol, label=name
        )
        return numbers + _compare_words(name, base_text, cand_text)
    if cand.strip(b"\0") == b"" and base.strip(b"\0") != b"":
        return [f"zeros: {name} is all zero bytes, the baseline's is not"]
    if base == cand:
        return []
    if len(base) != len(cand):
        return [f"file_differs: {name} ({len(base)} vs {len(cand)} bytes)"]
    return [f"file_differs: {name} (first at byte {_first_difference(base, cand)})"]


def _first_difference(base: bytes, cand: bytes, block: int = 4096) -> int:
    """Offset of the first differing byte of two different files of one size."""
    start = next(
        i for i in range(0, len(base), block) if base[i : i + block] != cand[i : i + block]
    )
    pairs = zip(base[start : start + block], cand[start : start + block], strict=True)
    return start + next(i for i, (b, c) in enumerate(pairs) if b != c)


def _compare_words(name: str, base: str, cand: str) -> list[str]:
    base_words, cand_words = NUMBER.sub(" ", base).split(), NUMBER.sub(" ", cand).split()
    for i, (b, c) in enumerate(zip(base_words, cand_words, strict=False)):
        if b != c:
            return [f"file_text_differs: {name} word {i + 1}: {b[:40]!r} vs {c[:40]!r}"]
    if len(base_words) != len(cand_words):
        return [f"file_text_differs: {name} has {len(base_words)} vs {len(cand_words)} words"]
    return []


def _text(data: bytes) -> str | None:
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _file_numbers(text: str) -> list[float]:
    return [float(m) for m in NUMBER.findall(text)]


def _nonfinite(values: Sequence[float], label: str) -> list[str]:
    return _capped(
        "nonfinite", [f"{v} in {label}[{i}]" for i, v in enumerate(values) if not math.isfinite(v)]
    )


def _capped(code: str, details: list[str]) -> list[str]:
    reasons = [f"{code}: {detail}" for detail in details[:MAX_DETAILS]]
    if len(details) > MAX_DETAILS:
        reasons.append(f"{code}: and {len(details) - MAX_DETAILS} more")
    return reasons
