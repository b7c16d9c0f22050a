"""nvcc command lines -> a compile job, or pass-through with a reason (pure: no I/O).

Options are looked up in `option_table` (spellings, value forms, roles). Options not in the table
are opaque flags that affect the key (nvcc rejects what it does not know, or forwards it to the
host compiler under `-forward-unknown-to-host-compiler`).
nvcc reads `--options-file`/`-optf` but refuses `@file`, so a command with `@file` passes through.
"""

from __future__ import annotations

import posixpath

from nvcc_opt.launcher.gpu_targets import normalise_targets
from nvcc_opt.launcher.option_table import BY_NAME, GLUED, Opt, Role
from nvcc_opt.values import Value

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

_SOURCE_EXTS = (".cu", ".c", ".cc", ".cpp", ".cxx")
_SOURCE_LANGS = ("cu", "c", "c++")
_NOT_IN_KEY = frozenset(
    {
        Role.OUTPUT,
        Role.OUTPUT_DIR,
        Role.DEPFILE,
        Role.DEP_MODE,
        Role.DEP_TARGET,
        Role.DEP_FLAG,
        Role.NO_KEY,
    }
)
_MAX_DEPTH = 8  # options files that include options files


class CompileJob(Value):
    __slots__ = (
        "args", "source_index", "source", "language_cu", "output", "depfile", "depfile_mode",
        "dep_target", "dep_phony", "rdc", "targets", "host_compiler", "key_flags",
        "options_files", "output_dir",
    )  # fmt: skip
    args: tuple[str, ...]  # the compiler's args, verbatim (options files not inlined)
    source_index: int  # args[source_index] is the single source file, as spelled
    source: str
    language_cu: bool  # -x cu, or no -x and a .cu extension
    output: str | None  # -o value as spelled (None: nvcc's default)
    depfile: str | None  # -MF value (None: no -MF)
    depfile_mode: str | None  # "MD" | "MMD" | None
    dep_target: str | None  # last -MT value
    dep_phony: bool  # -MP: a phony target per dependency
    rdc: bool
    targets: tuple[str, ...]  # normalised and sorted; () means nvcc's default architecture
    host_compiler: str  # -ccbin value or ""
    key_flags: tuple[str, ...]  # flags that shape the code, options files expanded in place
    options_files: tuple[str, ...]  # options files read, joined onto cwd
    output_dir: str | None  # -odir value (None: none given)

    def __init__(
        self,
        args: tuple[str, ...],
        source_index: int,
        source: str,
        language_cu: bool,
        output: str | None,
        depfile: str | None,
        depfile_mode: str | None,
        dep_target: str | None,
        dep_phony: bool,
        rdc: bool,
        targets: tuple[str, ...],
        host_compiler: str,
        key_flags: tuple[str, ...],
        options_files: tuple[str, ...],
        output_dir: str | None = None,
    ) -> None:
        self._set(
            args=args,
            source_index=source_index,
            source=source,
            language_cu=language_cu,
            output=output,
            depfile=depfile,
            depfile_mode=depfile_mode,
            dep_target=dep_target,
            dep_phony=dep_phony,
            rdc=rdc,
            targets=targets,
            host_compiler=host_compiler,
            key_flags=key_flags,
            options_files=options_files,
            output_dir=output_dir,
        )


class PassThrough(Value):
    __slots__ = ("reason",)
    reason: str  # stable text before any ": detail", so it can be a counter

    def __init__(self, reason: str) -> None:
        self._set(reason=reason)


class _Stop(Exception):
    """Raised anywhere in the scan: the command is passed through with this reason."""


class _State:
    """What the scan has seen so far."""

    def __init__(self, read_file: Callable[[str], str], cwd: str) -> None:
        self.read_file = read_file
        self.cwd = cwd
        self.inputs: list[tuple[str, int]] = []  # (spelling, index in args or -1)
        self.compile = False
        self.other_mode = ""
        self.output: str | None = None
        self.output_dir: str | None = None
        self.depfile: str | None = None
        self.dep_mode: str | None = None
        self.dep_target: str | None = None
        self.dep_phony = False
        self.language: str | None = None
        self.rdc = False
        self.arch: str | None = None
        self.codes: list[str] = []
        self.gencodes: list[str] = []
        self.host_compiler = ""
        self.key_flags: list[str] = []
        self.options_files: list[str] = []


def parse(
    args: Sequence[str], read_file: Callable[[str], str], cwd: str
) -> CompileJob | PassThrough:
    """Classify one nvcc argument list (without the compiler itself)."""
    state = _State(read_file, cwd)
    try:
        _scan([(a, i) for i, a in enumerate(args)], state, 0)
        return _job(tuple(args), state)
    except _Stop as stop:
        return PassThrough(str(stop))


def object_file(job: CompileJob) -> str:
    """The object the compile writes, relative to its working directory (measured with nvcc
    13.0): the -o value; without -o, the source's stem plus `.o` in the -odir folder, else in
    the working directory. -odir never moves an -o output."""
    if job.output is not None:
        return job.output
    name = posixpath.splitext(posixpath.basename(job.source))[0] + ".o"
    return posixpath.join(job.output_dir, name) if job.output_dir else name


def with_source(job: CompileJob, new_source: str) -> list[str]:
    """The job's args with the source file replaced."""
    args = list(job.args)
    args[job.source_index] = new_source
    return args


def _scan(tokens: list[tuple[str, int]], state: _State, depth: int) -> None:
    i = 0
    while i < len(tokens):
        word, index = tokens[i]
        if word.startswith("@"):
            raise _Stop(f"response file (nvcc does not read @file): {word}")
        if word == "-" or not word.startswith("-"):
            state.inputs.append((word, index))
            i += 1
            continue
        opt, value, used = _match(tokens, i)
        spelled = [text for text, _ in tokens[i : i + used]]
        i += used
        if opt is None:
            state.key_flags.extend(spelled)
        elif value is None:
            _apply_flag(opt, spelled, state)
        else:
            _apply_value(opt, value, spelled, state, depth)


def _match(tokens: list[tuple[str, int]], i: int) -> tuple[Opt | None, str | None, int]:
    """The option at tokens[i], its value and how many tokens it used."""
    word = tokens[i][0]
    opt = BY_NAME.get(word)
    if opt is not None:
        if not opt.value:
            return opt, None, 1
        if i + 1 >= len(tokens):
            raise _Stop(f"missing option value: {word}")
        return opt, tokens[i + 1][0], 2
    name, eq, value = word.partition("=")
    opt = BY_NAME.get(name)
    if eq and opt is not None and opt.value:
        return opt, value, 1
    for prefix in GLUED:
        if word.startswith(prefix) and len(word) > len(prefix):
            return BY_NAME[prefix], word[len(prefix) :], 1
    return None, None, 1


def _apply_flag(opt: Opt, spelled: list[str], state: _State) -> None:
    if opt.role is Role.DEP_MODE:
        state.dep_mode = opt.note
    state.dep_phony = state.dep_phony or opt.role is Role.DEP_FLAG
    if opt.role in _NOT_IN_KEY:
        return
    state.key_flags.extend(spelled)
    if opt.role is Role.OTHER_MODE:
        state.other_mode = state.other_mode or opt.note
    elif opt.role in (Role.COMPILE, Role.DEVICE_COMPILE):
        state.compile = True
        state.rdc = state.rdc or opt.role is Role.DEVICE_COMPILE


def _apply_value(opt: Opt, value: str, spelled: list[str], state: _State, depth: int) -> None:
    role = opt.role
    if role is Role.OPTIONS_FILE:
        for name in filter(None, value.split(",")):
            _read_options_file(name, state, depth)
        return
    if role is Role.OUTPUT:
        state.output = value
    elif role is Role.OUTPUT_DIR:
        state.output_dir = value
    elif role is Role.DEPFILE:
        state.depfile = value
    elif role is Role.DEP_TARGET:
        state.dep_target = value
    if role in _NOT_IN_KEY:
        return
    state.key_flags.extend(spelled)
    if role is Role.LANGUAGE:
        state.language = value
    elif role is Role.RDC:
        state.rdc = value.lower() == "true"
    elif role is Role.ARCH:
        state.arch = value  # measured: the last -arch wins
    elif role is Role.CODE:
        state.codes.extend(filter(None, value.split(",")))  # measured: -code values add up
    elif role is Role.GENCODE:
        state.gencodes.append(value)
    elif role is Role.HOST_COMPILER:
        state.host_compiler = value


def _read_options_file(name: str, state: _State, depth: int) -> None:
    if depth >= _MAX_DEPTH:
        raise _Stop(f"options files nested too deep: {name}")
    path = posixpath.normpath(posixpath.join(state.cwd, name))
    try:
        text = state.read_file(path)
    except (OSError, UnicodeDecodeError) as error:
        raise _Stop(f"unreadable options file: {name}") from error
    state.options_files.append(path)
    _scan([(word, -1) for word in split_options_text(text)], state, depth + 1)


def split_options_text(text: str) -> list[str]:
    """Words of an nvcc options file, split as nvcc 13 does.

    Whitespace separates words; double quotes group and are dropped; a backslash takes the next
    character literally; single quotes and `#` are ordinary characters (measured). nvcc itself
    loses an escaped `"` or backslash (`a\\"b` gives `ab`); CMake never writes those.
    """
    words: list[str] = []
    word: list[str] = []
    in_word = quoted = False
    chars = iter(text)
    for char in chars:
        if char == "\\":
            word.append(next(chars, ""))
            in_word = True
        elif char == '"':
            quoted = not quoted
            in_word = True
        elif char.isspace() and not quoted:
            if in_word:
                words.append("".join(word))
            word, in_word = [], False
        else:
            word.append(char)
            in_word = True
    if in_word:
        words.append("".join(word))
    return words


def _job(args: tuple[str, ...], state: _State) -> CompileJob:
    if state.other_mode:
        raise _Stop(state.other_mode)
    if not state.compile:
        raise _Stop("link (no -c)")
    source, index = _single_source(state)
    ext = posixpath.splitext(source)[1]
    return CompileJob(
        args=args,
        source_index=index,
        source=source,
        language_cu=state.language == "cu" or (state.language is None and ext == ".cu"),
        output=state.output,
        depfile=state.depfile,
        depfile_mode=state.dep_mode,
        dep_target=state.dep_target,
        dep_phony=state.dep_phony,
        rdc=state.rdc,
        targets=normalise_targets(state.arch, state.codes, state.gencodes),
        host_compiler=state.host_compiler,
        key_flags=tuple(state.key_flags),
        options_files=tuple(state.options_files),
        output_dir=state.output_dir,
    )


def _single_source(state: _State) -> tuple[str, int]:
    if not state.inputs:
        raise _Stop("no source file")
    if len(state.inputs) > 1:
        raise _Stop("several source files")
    source, index = state.inputs[0]
    if source == "-":
        raise _Stop("source from stdin")
    if index < 0:
        raise _Stop(f"source in an options file: {source}")
    if state.language is not None:
        if state.language not in _SOURCE_LANGS:
            raise _Stop(f"not a CUDA/C++ source: -x {state.language}")
    elif posixpath.splitext(source)[1] not in _SOURCE_EXTS:
        raise _Stop(f"not a CUDA/C++ source: {source}")
    return source, index
