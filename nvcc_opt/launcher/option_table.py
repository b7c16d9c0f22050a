"""The nvcc option table: each option's spellings, whether it takes a value, and its role (what
it means to the launcher). Pure data, read by `argv` to parse a command line.

Spellings and value forms were measured against nvcc 13.0 (`nvcc --help`, `nvcc --dryrun`): an
option that takes a value accepts `-s v`, `-s=v`, `--long v` and `--long=v`; only the short
options in `GLUED` also accept `-sV`; short names never take `--`, long names never take `-`.
"""

from __future__ import annotations


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
BY_NAME: dict[str, Opt] = {n: o for o in ALL_OPTIONS for n in (o.long, o.short) if n}
GLUED = ("-I", "-D", "-U", "-L", "-l", "-O", "-t")  # measured: `-Ifoo`, `-O3`, `-t4` work
