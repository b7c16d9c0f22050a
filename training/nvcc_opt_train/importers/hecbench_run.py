"""How a HeCBench benchmark is run and judged, and the nvcc-opt.toml the problem gets.

Default arguments come from the checkout's benchmarks.yaml (`test: args`), else from the
Makefile's `run:` target. The time comes from the yaml's `test: regex` when its unit is plain
(us/ms/s) and its text is printed by the CUDA sources; else from the one printf in the sources
that prints a time with a unit; else from the wall clock, said in the notes. A run must print
PASS and must not print FAIL; numbers are not compared (nothing tells which are reliable).
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nvcc_opt_train.importers.hecbench_build import BuildSkip
from nvcc_opt_train.importers.makefile import Makefile

DEFAULT_TIMEOUT_S = 300
NUMBER = r"([0-9.eE+-]+)"
_UNITS = {
    "us": "us", "usec": "us", "usecs": "us", "microsecond": "us", "microseconds": "us",
    "ms": "ms", "msec": "ms", "msecs": "ms", "millisecond": "ms", "milliseconds": "ms",
    "s": "s", "sec": "s", "secs": "s", "second": "s", "seconds": "s",
}  # fmt: skip
_SHELL = re.compile(r"[;&|<>`]")
_PRINTF_TIME = re.compile(
    r"(?P<prefix>[^%\n]*)%[-+ #0]*\d*(?:\.\d+)?[lL]?[fFeEgG](?P<suffix>\s*\(?(?P<unit>[a-z]+)\)?)"
)


@dataclass
class RunSpec:
    args: list[str]
    timeout_s: int = DEFAULT_TIMEOUT_S
    regex: str | None = None
    unit: str = "ms"
    notes: list[str] = field(default_factory=list)


def yaml_tests(root: Path) -> dict[str, dict[str, Any]]:
    """benchmarks.yaml's `test:` entries by benchmark name ({} when the checkout has none)."""
    import yaml  # type: ignore[import-untyped]  # only this importer needs it

    path = root / "benchmarks.yaml"
    if not path.is_file():
        return {}
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        line = getattr(getattr(exc, "problem_mark", None), "line", None)
        where = f"{path}:{line + 1}" if line is not None else str(path)
        raise ValueError(f"{where}: not readable YAML ({type(exc).__name__})") from exc
    if not isinstance(data, dict):
        return {}
    tests = {}
    for name, entry in data.items():
        test = entry.get("test") if isinstance(entry, dict) else None
        if isinstance(test, dict):
            tests[str(name)] = test
    return tests


def file_like(arg: str) -> bool:
    """Whether a command-line argument names a file (a path, or a name with an extension)."""
    value = arg.split("=", 1)[1] if arg.startswith("-") and "=" in arg else arg
    if "/" in value:
        return True
    if not re.fullmatch(r"[\w+-]*\.[A-Za-z][A-Za-z0-9]{0,5}", value):
        return False
    try:
        float(value)
    except ValueError:
        return True
    return False


def run_spec(test: dict[str, Any] | None, mk: Makefile | None, sources: list[bytes]) -> RunSpec:
    """Arguments, timeout and time rule; BuildSkip when the arguments name files."""
    spec = _arguments(test, mk)
    bad = [a for a in spec.args if file_like(a)]
    if bad:
        raise BuildSkip(f"needs data files (its default arguments name {bad[0]})")
    if test and isinstance(test.get("timeout"), int) and test["timeout"] > 0:
        spec.timeout_s = test["timeout"]
    _time(spec, test, sources)
    return spec


def _arguments(test: dict[str, Any] | None, mk: Makefile | None) -> RunSpec:
    if test and isinstance(test.get("args"), list):
        args = [str(a) for a in test["args"]]
        return RunSpec(args, notes=["run: arguments from benchmarks.yaml"])
    commands = [line for line in (mk.recipe("run") if mk else []) if line]
    if not commands:
        return RunSpec([], notes=["run: no arguments (no benchmarks.yaml entry, no run target)"])
    if _SHELL.search(commands[0]):
        raise BuildSkip("its Makefile's run target is not a plain command")
    words = shlex.split(commands[0])
    while words and not words[0].startswith("./"):
        words.pop(0)  # the launcher (empty unless set)
    if not words:
        raise BuildSkip("its Makefile's run target does not run ./<program>")
    notes = ["run: arguments from the Makefile's run target"]
    if len(commands) > 1:
        notes.append(f"run: its run target has {len(commands)} commands; the first one's used")
    return RunSpec(words[1:], notes=notes)


def _time(spec: RunSpec, test: dict[str, Any] | None, sources: list[bytes]) -> None:
    text = b"\n".join(sources).decode("utf-8", errors="replace")
    why = "benchmarks.yaml gives no time regex"
    if test and isinstance(test.get("regex"), str):
        got = _yaml_time(test["regex"], text)
        if isinstance(got, tuple):
            spec.regex, spec.unit = got
            spec.notes.append(f"time: benchmarks.yaml's regex (first match), unit {spec.unit}")
            return
        why = got
    derived = _printf_time(text)
    if derived is not None:
        spec.regex, spec.unit = derived
        spec.notes.append(f"time: the sources' one timing printf (first match), unit {spec.unit}")
        return
    spec.notes.append(f"time: wall clock of the whole run ({why}; no single timing printf)")


def _yaml_time(regex: str, text: str) -> tuple[str, str] | str:
    """(regex, unit) from a benchmarks.yaml test regex, or why it is not used."""
    match = re.search(r"(?<!\\)\((?!\?)", regex)
    if match is None:
        return "benchmarks.yaml's regex has no group"
    close = regex.find(")", match.end())
    prefix, suffix = regex[: match.start()], regex[close + 1 :]
    cleaned = re.sub(r"\(\?:|\)|\\s\*|\\s|\s", " ", suffix).replace("\\(", " ").replace("\\", "")
    words = cleaned.replace("/", " ").split()
    unit = _UNITS.get(words[0]) if words else None
    if unit is None or "|" in suffix:
        return "benchmarks.yaml's regex has no plain time unit"
    literal = max(re.split(r"\(\?:|\)|\\[sdw]|[\[\]*+?.|^$]", prefix.replace("\\(", "(")), key=len)
    literal = literal.replace("\\", "").strip()
    if len(literal) < 4 or literal not in text:
        return "benchmarks.yaml's regex is not printed by the CUDA sources"
    fixed = regex[: match.start()] + NUMBER + regex[close + 1 :]
    try:
        re.compile(fixed)
    except re.error:
        return "benchmarks.yaml's regex does not compile"
    return fixed, unit


def _printf_time(text: str) -> tuple[str, str] | None:
    """(regex, unit) from the single string literal that prints a time with a unit."""
    found = set()
    for literal in re.findall(r'"((?:[^"\\\n]|\\.)*)"', text):
        for match in _PRINTF_TIME.finditer(literal):
            unit = _UNITS.get(match.group("unit"))
            prefix = match.group("prefix").split("\\n")[-1].lstrip()
            if unit and "time" in prefix.lower() and "\\" not in prefix and len(prefix) >= 4:
                found.add((prefix, match.group("suffix").split("\\")[0], unit))
    if len(found) != 1:
        return None
    prefix, suffix, unit = found.pop()
    pattern = re.escape(prefix) + r"\s*" + NUMBER + re.escape(suffix)
    return pattern.replace("\\ ", " "), unit


def render_toml(spec: RunSpec, forbid: list[str]) -> str:
    """The problem's nvcc-opt.toml."""
    command = ["{build}/main", *(a.replace("{", "{{").replace("}", "}}") for a in spec.args)]
    lines = [
        "# Generated by nvcc-opt train problems --from hecbench.",
        "[build]",
        'dir = "build"',
        "",
        "[run]",
        f"command = {json.dumps(command)}",
        f"timeout_s = {spec.timeout_s}",
        "",
        "[time]",
    ]
    if spec.regex is None:
        lines.append('source = "wall"')
    else:
        lines += ['source = "regex"', f"regex = {json.dumps(spec.regex)}", f'unit = "{spec.unit}"']
    lines += ["", "[check]", 'require = ["PASS"]', f"forbid = {json.dumps(forbid)}", ""]
    return "\n".join(lines)
