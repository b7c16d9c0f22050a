"""nvcc command lines -> a compile job, or pass-through with a reason (pure: no I/O).

Spellings and value forms were measured against nvcc 13.0 (`nvcc --help`, `nvcc --dryrun`): an
option that takes a value accepts `-s v`, `-s=v`, `--long v` and `--long=v`; only the short
options in `_GLUED` also accept `-sV`; short names never take `--`, long names never take `-`.
Options not in the table are opaque flags that affect the key (nvcc rejects what it does not
know, or forwards it to the host compiler under `-forward-unknown-to-host-compiler`).
nvcc reads `--options-file`/`-optf` but refuses `@file`, so a command with `@file` passes through.
"""

from __future__ import annotations

import posixpath

from nvcc_opt.values import Value

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence


class Role:
    """What an option means to the launcher (string constants: `enum` costs start-up time)."""

    FLAG = "flag"  # affects the key, nothing else to know
    COMPILE = "compile"  # -c, -dw
    DEVICE_COMPILE = "device-compile"  # -dc: compile with relocatable device code
    OTHER_MODE = "other-mode"  # any other phase: pass through, Opt.note is the reason
    OUTPUT = "output"
    OUTPUT_DIR = "output-dir"  # -odir: where an object without -o goes
    DEPFILE = "depfile"
    DEP_MODE = "dep-mode"  # Opt.note is "MD" or "MMD"
    DEP_TARGET = "dep-target"
    DEP_FLAG = "dep-flag"  # -MP: shapes the depfile only
    LANGUAGE = "language"
    RDC = "rdc"
    ARCH = "arch"
    CODE = "code"
    GENCODE = "gencode"
    HOST_COMPILER = "host-compiler"
    OPTIONS_FILE = "options-file"
    NO_KEY = "no-key"  # changes where temporaries go or what is printed, not the code


class Opt:
    """One nvcc option (a plain class: each dataclass adds about 1 ms to the launcher start)."""

    __slots__ = ("long", "short", "value", "role", "note")

    def __init__(self, long: str, short: str, value: bool, role: str, note: str = "") -> None:
        self.long = long
        self.short = short
        self.value = value  # takes a value
        self.role = role
        self.note = note  # the pass-through reason of a mode, "MD"/"MMD" for a depfile mode


def _v(long: str, short: str, role: str) -> Opt:
    return Opt(long, short, True, role)


def _f(long: str, short: str, role: str, note: str = "") -> Opt:
    return Opt(long, short, False, role, note)


def _mode(long: str, short: str, reason: str) -> Opt:
    return Opt(long, short, False, Role.OTHER_MODE, f"{reason} ({short})")


# Options with a role; options without one are listed more compactly below.
TABLE: tuple[Opt, ...] = (
    _f("--compile", "-c", Role.COMPILE),
    _f("--device-c", "-dc", Role.DEVICE_COMPILE),
    _f("--device-w", "-dw", Role.COMPILE),
    _mode("--preprocess", "-E", "preprocess only"),
    _mode("--generate-dependencies", "-M", "dependencies only"),
    _mode("--generate-nonsystem-dependencies", "-MM", "dependencies only"),
    _mode("--cuda", "-cuda", "host code output"),
    _mode("--cubin", "-cubin", "device-only output"),
    _mode("--fatbin", "-fatbin", "device-only output"),
    _mode("--ptx", "-ptx", "device-only output"),
    _mode("--optix-ir", "-optix-ir", "device-only output"),
    _mode("--ltoir", "-ltoir", "device-only output"),
    _mode("--device-link", "-dlink", "device link"),
    _mode("--link", "-link", "link"),
    _mode("--lib", "-lib", "library"),
    _mode("--run", "-run", "compile and run"),
    _mode("--relocatable-link", "-r", "relocatable link"),
    _mode("--fdevice-syntax-only", "-fdevice-syntax-only", "syntax check only"),
    _mode("--clean-targets", "-clean", "clean targets"),
    _mode("--dryrun", "-dryrun", "dry run"),
    _mode("--help", "-h", "help"),
    _mode("--version", "-V", "version"),
    _mode("--list-gpu-code", "-code-ls", "list targets"),
    _mode("--list-gpu-arch", "-arch-ls", "list targets"),
    _f("--generate-dependencies-with-compile", "-MD", Role.DEP_MODE, "MD"),
    _f("--generate-nonsystem-dependencies-with-compile", "-MMD", Role.DEP_MODE, "MMD"),
    _f("--generate-dependency-targets", "-MP", Role.DEP_FLAG),
    _v("--dependency-output", "-MF", Role.DEPFILE),
    _v("--dependency-target-name", "-MT", Role.DEP_TARGET),
    _v("--output-file", "-o", Role.OUTPUT),
    _v("--x", "-x", Role.LANGUAGE),
    _v("--relocatable-device-code", "-rdc", Role.RDC),
    _v("--gpu-architecture", "-arch", Role.ARCH),
    _v("--gpu-code", "-code", Role.CODE),
    _v("--generate-code", "-gencode", Role.GENCODE),
    _v("--compiler-bindir", "-ccbin", Role.HOST_COMPILER),
    _v("--options-file", "-optf", Role.OPTIONS_FILE),
    _f("--keep", "-keep", Role.NO_KEY),
    _f("--save-temps", "-save-temps", Role.NO_KEY),
    _f("--verbose", "-v", Role.NO_KEY),
    _f("--jobserver", "-jobserver", Role.NO_KEY),
    _v("--keep-dir", "-keep-dir", Role.NO_KEY),
    _v("--output-directory", "-odir", Role.OUTPUT_DIR),
    _v("--threads", "-t", Role.NO_KEY),
    _v("--time", "-time", Role.NO_KEY),
    _v("--fdevice-time-trace", "-fdevice-time-trace", Role.NO_KEY),
)

_PLAIN_VALUES = """
--pre-include -include --library -l --define-macro -D --undefine-macro -U --include-path -I
--system-include -isystem --library-path -L --archiver-binary -arbin --cudart -cudart
--cudadevrt -cudadevrt --libdevice-directory -ldir --target-directory -target-dir
--optimization-info -opt-info --optimize -O --Ofast-compile -Ofc --dopt -dopt
--ftemplate-backtrace-limit -ftemplate-backtrace-limit --ftemplate-depth -ftemplate-depth
--std -std --machine -m --compiler-options -Xcompiler --linker-options -Xlinker
--archive-options -Xarchive --ptxas-options -Xptxas --nvlink-options -Xnvlink
--static-global-template-stub -static-global-template-stub
--device-entity-has-hidden-visibility -device-entity-has-hidden-visibility
--split-compile -split-compile --split-compile-extended -split-compile-extended
--run-args -run-args --input-drive-prefix -idp --dependency-drive-prefix -ddp --drive-prefix -dp
--entries -e --maxrregcount -maxrregcount --ftz -ftz --prec-div -prec-div --prec-sqrt -prec-sqrt
--fmad -fmad --default-stream -default-stream --Werror -Werror --diag-error -diag-error
--diag-suppress -diag-suppress --diag-warn -diag-warn --host-linker-script -hls
--brief-diagnostics -brief-diag --jump-table-density -jtd
--device-stack-protector -device-stack-protector --compress-mode -compress-mode
--frandom-seed -frandom-seed --sanitize -sanitize
"""

# Options without a role, as `--long -short` words (from `nvcc --help`). The flags are listed so
# that `-lineinfo` or `-lto` is never read as `-l` plus a glued value.
_PLAIN_FLAGS = """
--objdir-as-tempdir -objtemp --allow-unsupported-compiler -allow-unsupported-compiler
--use-local-env -use-local-env --force-cl-env-setup -force-cl-env-setup --profile -pg --debug -g
--device-debug -G --generate-line-info -lineinfo --dlink-time-opt -dlto --lto -lto
--gen-opt-lto -gen-opt-lto --no-exceptions -noeh --shared -shared
--no-host-device-initializer-list -nohdinitlist --no-host-device-move-forward -nohdmoveforward
--expt-relaxed-constexpr -expt-relaxed-constexpr --extended-lambda -extended-lambda
--expt-extended-lambda -expt-extended-lambda --m64 -m64
--forward-unknown-to-host-compiler -forward-unknown-to-host-compiler
--forward-unknown-to-host-linker -forward-unknown-to-host-linker
--forward-unknown-opts -forward-unknown-opts --dont-use-profile -noprof --no-align-double
--no-device-link -nodlink --use_fast_math -use_fast_math
--extra-device-vectorization -extra-device-vectorization --disable-warnings -w
--keep-device-functions -keep-device-functions --source-in-ptx -src-in-ptx --restrict -restrict
--Wreorder -Wreorder --Wdefault-stream-launch -Wdefault-stream-launch
--Wmissing-launch-bounds -Wmissing-launch-bounds --Wext-lambda-captures-this
-Wext-lambda-captures-this --Wno-deprecated-declarations -Wno-deprecated-declarations
--Wno-deprecated-gpu-targets -Wno-deprecated-gpu-targets --resource-usage -res-usage
--extensible-whole-program -ewp --no-compress -no-compress --qpp-config -qpp-config
--compile-as-tools-patch -astoolspatch --display-error-number -err-no
--no-display-error-number -no-err-no --augment-host-linker-script -aug-hls
--relocatable-ptx -reloc-ptx
"""


def _plain(text: str, value: bool) -> tuple[Opt, ...]:
    pairs: list[list[str]] = []
    for word in text.split():
        if word.startswith("--"):
            pairs.append([word, ""])
        else:
            pairs[-1][1] = word
    return tuple(Opt(long, short, value, Role.FLAG) for long, short in pairs)


ALL_OPTIONS: tuple[Opt, ...] = TABLE + _plain(_PLAIN_VALUES, True) + _plain(_PLAIN_FLAGS, False)
_BY_NAME: dict[str, Opt] = {n: o for o in ALL_OPTIONS for n in (o.long, o.short) if n}
_GLUED = ("-I", "-D", "-U", "-L", "-l", "-O", "-t")  # measured: `-Ifoo`, `-O3`, `-t4` work
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
    opt = _BY_NAME.get(word)
    if opt is not None:
        if not opt.value:
            return opt, None, 1
        if i + 1 >= len(tokens):
            raise _Stop(f"missing option value: {word}")
        return opt, tokens[i + 1][0], 2
    name, eq, value = word.partition("=")
    opt = _BY_NAME.get(name)
    if eq and opt is not None and opt.value:
        return opt, value, 1
    for prefix in _GLUED:
        if word.startswith(prefix) and len(word) > len(prefix):
            return _BY_NAME[prefix], word[len(prefix) :], 1
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


def normalise_targets(
    arch: str | None, codes: Sequence[str], gencodes: Sequence[str]
) -> tuple[str, ...]:
    """What ends up in the object: the -code values, or the -arch shorthand, plus each -gencode."""
    found: set[str] = set()
    if codes:
        found.update(codes)
    elif arch is not None:
        found.update(_arch_shorthand(arch))
    for spec in gencodes:
        found.update(_gencode_codes(spec))
    return tuple(sorted(found))


def _arch_shorthand(arch: str) -> tuple[str, ...]:
    """`-arch=sm_90` means compute_90 plus sm_90; a virtual or special value stands for itself."""
    if arch.startswith("sm_"):
        return ("compute_" + arch[3:], arch)
    return (arch,) if arch else ()


def _gencode_codes(spec: str) -> tuple[str, ...]:
    """Codes of `arch=compute_90,code=[compute_90,sm_90]` (brackets or double quotes)."""
    arch = ""
    codes: list[str] = []
    key = ""
    for item in spec.translate({ord(c): None for c in '"[]'}).split(","):
        name, eq, value = item.partition("=")
        if eq:
            key, item = name.strip(), value
        if key == "code" and item.strip():
            codes.append(item.strip())
        elif key == "arch":
            arch = item.strip()
    return tuple(codes) or _arch_shorthand(arch)
