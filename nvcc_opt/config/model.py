"""The settings a project file holds, as frozen pydantic models (one per TOML table).

Validation does all the checking a user can get wrong: regexes are compiled here, placeholders
must be known, rules between keys hold. A rule between keys raises `key_error`, so the message can
point at the key concerned. Commands are stored already split (shlex, never a shell).
"""

from __future__ import annotations

import re
import shlex
import string
from collections.abc import Callable, Mapping
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

BUILD_PLACEHOLDERS = ("build", "source")
RUN_PLACEHOLDERS = ("build", "source", "gpu", "work")
KEY_ERROR = "nvcc_opt_key"


class ConfigError(ValueError):
    """A configuration problem; each line of the message names the file, and the line if known."""


def key_error(key: str, why: str) -> PydanticCustomError:
    """A rule between keys, reported at `key` (a key of the table being validated)."""
    return PydanticCustomError(KEY_ERROR, "{key}: {why}", {"key": key, "why": why})


def _fields(template: str) -> list[tuple[str, str | None]]:
    """(literal text, placeholder or None) pieces; ValueError for bad braces or format specs."""
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise ValueError(f"{exc} in {template!r}; write {{{{ or }}}} for a literal brace") from exc
    for _, name, spec, conversion in parsed:
        if name is not None and (spec or conversion):
            raise ValueError(f"{{{name}}} takes no format spec or conversion in {template!r}")
    return [(literal, name) for literal, name, _, _ in parsed]


def _placeholders(allowed: tuple[str, ...]) -> Callable[[str], str]:
    def check(template: str) -> str:
        for _, name in _fields(template):
            if name is not None and name not in allowed:
                known = ", ".join(f"{{{n}}}" for n in allowed)
                raise ValueError(f"unknown placeholder {{{name}}}; allowed: {known}")
        return template

    return check


def render(templates: tuple[str, ...], values: Mapping[str, str]) -> list[str]:
    """Each template with its placeholders replaced; ValueError when a value is not given."""
    out = []
    for template in templates:
        pieces = []
        for literal, name in _fields(template):
            pieces.append(literal)
            if name is not None:
                if name not in values:
                    raise ValueError(f"{template!r} uses {{{name}}}, which was not given")
                pieces.append(values[name])
        out.append("".join(pieces))
    return out


def _split(value: object) -> object:
    if not isinstance(value, str):
        return value
    try:
        words = shlex.split(value)
    except ValueError as exc:
        raise ValueError(f"cannot split {value!r} into arguments: {exc}") from exc
    return tuple(words)


def _words(allowed: tuple[str, ...]) -> Callable[[tuple[str, ...]], tuple[str, ...]]:
    check = _placeholders(allowed)

    def words(value: tuple[str, ...]) -> tuple[str, ...]:
        if not value:
            raise ValueError("must not be empty")
        return tuple(check(word) for word in value)

    return words


def _regex(value: object) -> object:
    if isinstance(value, re.Pattern):
        return value
    if not isinstance(value, str):
        raise ValueError(f"must be a regular expression in a string (got {value!r})")
    try:
        return re.compile(value)
    except re.error as exc:
        raise ValueError(f"invalid regular expression: {exc.msg} at position {exc.pos}") from exc


def _has_group(pattern: re.Pattern[str]) -> re.Pattern[str]:
    if pattern.groups < 1:
        raise ValueError(
            f"'{pattern.pattern}' needs a group around the number, e.g. 'checksum: (\\S+)'"
        )
    return pattern


def _text(value: object) -> object:
    """TOML numbers where a string is meant (OMP_NUM_THREADS = 1, devices = [0]) as text."""
    return str(value) if isinstance(value, int | float) and not isinstance(value, bool) else value


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty")
    return value


Regex = Annotated[re.Pattern[str], BeforeValidator(_regex)]
NumberRegex = Annotated[re.Pattern[str], BeforeValidator(_regex), AfterValidator(_has_group)]
RunTemplate = Annotated[
    str, AfterValidator(_not_blank), AfterValidator(_placeholders(RUN_PLACEHOLDERS))
]
BuildCommand = Annotated[
    tuple[str, ...],
    BeforeValidator(_split),
    AfterValidator(_words(BUILD_PLACEHOLDERS)),
]
RunCommand = Annotated[
    tuple[str, ...],
    BeforeValidator(_split),
    AfterValidator(_words(RUN_PLACEHOLDERS)),
]
Text = Annotated[str, BeforeValidator(_text)]


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class BuildConfig(Section):
    dir: Annotated[str, AfterValidator(_not_blank)] = Field(
        default="build", description="Your CMake build tree, relative to this file."
    )
    command: BuildCommand = Field(
        default=("cmake", "--build", "{build}"),
        description="Builds a tree: a string (split like a shell would, never run by one) or a "
        "list. {build} is the tree being built (yours or a private copy), {source} the source"
        " folder (`source`, else this folder).",
        examples=["cmake --build {build} --target app"],
    )
    timeout_s: float = Field(default=1800.0, gt=0, description="Seconds before a build is stopped.")


class RunConfig(Section):
    command: RunCommand | None = Field(
        default=None,
        description="Runs the application once: your own run script, with {build} (the tree "
        "built), {source} (the source folder), {gpu} (the run's GPU) or {work} (a scratch folder "
        "private to the run). A relative program path is relative to cwd.",
        examples=["./run.sh {build}"],
    )
    cwd: RunTemplate = Field(
        default="{source}",
        description="The folder a run starts in, relative to this file; use {work} when runs "
        "write files, so parallel runs do not share them.",
    )
    env: dict[str, Text] = Field(
        default_factory=dict,
        description="Added to a run's environment; values may use the placeholders.",
        examples=[{"OMP_NUM_THREADS": "1"}],
    )
    timeout_s: float = Field(default=300.0, gt=0, description="Seconds before a run is stopped.")
    repeats: int = Field(
        default=10,
        ge=6,
        description="Runs per version while exploring (baseline and candidate paired; the"
        " signed-rank test needs at least 6 pairs to show any difference).",
    )
    final_repeats: int = Field(
        default=20, ge=6, description="Runs per version in the independent final verification."
    )
    warmup: int = Field(default=1, ge=0, description="Untimed runs before timing a build.")
    stop_early_after: int = Field(
        default=4,
        ge=0,
        description="While exploring, stop timing a candidate after this many pairs when none"
        " of them had it min_speedup faster (it cannot be called faster; a faster one, and the"
        " final verification, are always timed in full); 0 times every pair.",
    )

    @model_validator(mode="after")
    def _env_values(self) -> RunConfig:
        for name, value in self.env.items():
            if name == "CUDA_VISIBLE_DEVICES":
                raise key_error("env", "set [gpu] devices, not CUDA_VISIBLE_DEVICES")
            try:
                _placeholders(RUN_PLACEHOLDERS)(value)
            except ValueError as exc:
                raise key_error("env", f"{name}: {exc}") from exc
        return self


class TimeConfig(Section):
    source: Literal["wall", "regex", "file"] = Field(
        default="wall",
        description='Where a run\'s time comes from: "wall" (the whole run, timed by nvcc-opt), '
        '"regex" (group 1 of `regex` in its output) or "file" (a file it writes).',
    )
    regex: NumberRegex | None = Field(
        default=None,
        description='Group 1 is the time. Needed when source = "regex"; with "file", applied to '
        "the file (else the whole file is the number).",
        examples=["time_ms: ([0-9.eE+-]+)"],
    )
    file: RunTemplate | None = Field(
        default=None,
        description='The file holding the time when source = "file", relative to the run\'s '
        "folder.",
        examples=["timing.txt"],
    )
    unit: Literal["s", "ms", "us"] = Field(
        default="ms",
        description='Unit of the number read ("s", "ms" or "us"); not used with "wall".',
    )

    @model_validator(mode="after")
    def _consistent(self) -> TimeConfig:
        given = self.model_fields_set
        if self.source == "regex" and self.regex is None:
            raise key_error("regex", 'required when source = "regex"')
        if self.source == "file" and self.file is None:
            raise key_error("file", 'required when source = "file"')
        if self.source == "regex" and "file" in given:
            raise key_error("file", 'read only when source = "file"')
        for key in ("regex", "file"):
            if self.source == "wall" and key in given:
                raise key_error(key, 'not used when source = "wall"; set source to read it')
        return self

    def seconds(self, value: float) -> float:
        """A number read from a run, in seconds."""
        return value * {"s": 1.0, "ms": 1e-3, "us": 1e-6}[self.unit]


class CheckConfig(Section):
    exit_status: bool = Field(default=True, description="A run must exit with status 0.")
    require: tuple[Regex, ...] = Field(
        default=(),
        description="Regexes that must each match the run's output (stdout and stderr).",
        examples=[["check: PASS"]],
    )
    forbid: tuple[Regex, ...] = Field(
        default=(),
        description="Regexes that must not match the run's output.",
        examples=[["FAIL", "(?i)\\bnan\\b"]],
    )
    numbers: tuple[NumberRegex, ...] = Field(
        default=(),
        description="Regexes whose group-1 matches in the output are numbers compared with the "
        "baseline run's, in order, under rtol and atol. Print numbers that see each element: a "
        "plain sum misses a shifted, permuted or half-computed result (a smoother that copies "
        "its input keeps the sum); a sum with a different weight per position, or sampled "
        "elements, does not.",
        examples=[["checksum: (\\S+)", "weighted: (\\S+)"]],
    )
    files: tuple[RunTemplate, ...] = Field(
        default=(),
        description="Files the run writes (relative to its folder) whose numbers are compared "
        "with the baseline run's, in order, under rtol and atol: the surest check, since every "
        "element is compared.",
        examples=[["checksums.txt"]],
    )
    rtol: float = Field(
        default=1e-6, ge=0, description="Relative tolerance when comparing numbers."
    )
    atol: float = Field(default=0.0, ge=0, description="Absolute tolerance when comparing numbers.")

    @field_validator("require", "forbid", "numbers", "files", mode="before")
    @classmethod
    def _one_or_many(cls, value: object) -> object:
        """A single string where a list is meant is a list of one."""
        return [value] if isinstance(value, str) else value


class GpuConfig(Section):
    devices: tuple[Text, ...] = Field(
        default=("0",),
        description='CUDA_VISIBLE_DEVICES of each parallel run (one worker each), e.g. ["0", "1"].',
    )

    @model_validator(mode="after")
    def _distinct(self) -> GpuConfig:
        if not self.devices:
            raise key_error("devices", 'list at least one, e.g. ["0"]')
        for device in self.devices:
            if not device.strip():
                raise key_error("devices", "an entry is empty")
        if len(set(self.devices)) != len(self.devices):
            raise key_error("devices", "an entry appears twice (two runs would share a GPU)")
        return self


class VerifyConfig(Section):
    min_speedup: float = Field(
        default=1.02, ge=1.0, description='Speedups below this are reported as "no improvement".'
    )
    ceiling: float = Field(
        default=10.0,
        description="Speedups above this are held for explicit review before proposing.",
    )
    fresh_inputs: tuple[tuple[str, ...], ...] = Field(
        default=(),
        description="Argument lists appended to the run command in the final verification only"
        " (other seeds, a size never shown while exploring); outputs must still match.",
        examples=[[["--seed", "987"], ["--size", "1000003"]]],
    )
    sanitizer: bool = Field(
        default=True,
        description="Run the final candidate under compute-sanitizer memcheck and racecheck"
        " where it is installed and a GPU is present.",
    )
    sanitizer_args: tuple[str, ...] = Field(
        default=(),
        description="Arguments appended to the run command under compute-sanitizer (a small"
        " problem: the sanitizer slows kernels by orders of magnitude).",
        examples=[["--size", "65536", "--reps", "2"]],
    )
    sanitizer_timeout_s: float = Field(
        default=300.0,
        gt=0,
        description="The longest one run under compute-sanitizer may take (at most 20 x [run]"
        " timeout_s). A candidate that takes longer where the original does not is rejected;"
        " where both do, their first `sanitizer_launches` launches are checked (a caveat).",
    )
    sanitizer_launches: int = Field(
        default=8,
        ge=1,
        description="How many kernel launches compute-sanitizer checks (--launch-count) when"
        " whole runs under it, the original's too, take longer than `sanitizer_timeout_s`.",
    )
    state_calls: int = Field(
        default=3,
        ge=2,
        le=16,
        description="The final verification's runtime state check: the region's first calls in"
        " one run whose results are compared with the original's, element by element; before"
        " each but the first, every float, double, half and bfloat16 the region's arguments"
        " reach is changed, so a candidate that kept anything from an earlier call is caught."
        " 2 to 16.",
    )
    state_rtol: float = Field(
        default=1e-4,
        gt=0,
        description="Relative tolerance of that comparison, per element, against the larger of"
        " the element and the buffer's root mean square (reordered float arithmetic passes).",
    )

    @model_validator(mode="after")
    def _ordered(self) -> VerifyConfig:
        if self.ceiling <= self.min_speedup:
            raise key_error("ceiling", f"must be above min_speedup ({self.min_speedup})")
        return self


class Settings(Section):
    """The whole file. Tables are optional; a missing key takes the default shown by init."""

    store: Annotated[str, AfterValidator(_not_blank)] | None = Field(
        default=None,
        description="The store database, relative to this file (read by the build too).",
    )
    source: Annotated[str, AfterValidator(_not_blank)] | None = Field(
        default=None,
        description="The project's source folder, relative to this file (default: this file's"
        " folder): the model's file tools see it, region paths are shown relative to it, and"
        " {source} names it. For settings kept apart from the sources,"
        ' e.g. source = "../..".',
    )
    build: BuildConfig = Field(default=BuildConfig(), description="How the application is built.")
    run: RunConfig = Field(default=RunConfig(), description="How the application is run.")
    time: TimeConfig = Field(default=TimeConfig(), description="How a run's time is read.")
    check: CheckConfig = Field(default=CheckConfig(), description="How a run is judged correct.")
    gpu: GpuConfig = Field(default=GpuConfig(), description="The GPUs runs use.")
    verify: VerifyConfig = Field(
        default=VerifyConfig(), description="What counts as an improvement."
    )
