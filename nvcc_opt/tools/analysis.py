"""compiler_analysis: compile the region's translation unit exactly as the build does and read what
the compiler says about its kernels (resources, occupancy, PTX and SASS).

The compile is the private candidate tree's own command for the region's file (from its
compile_commands.json), run through the launcher in candidate mode (the same splice as
benchmark_code, failing closed), with the object and intermediates sent to a scratch folder and
ptxas' resource report turned on. Nothing of the user's trees is touched.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from nvcc_opt import flags
from nvcc_opt.toolbox.schema import ToolError, tool
from nvcc_opt.tools import ptxas
from nvcc_opt.tools.bench import Benchmark
from nvcc_opt.tools.launch_occupancy import Shapes, occupancy_lines, shapes_of
from nvcc_opt.workspace.defines import used
from nvcc_opt.workspace.diagnostics import trim_errors
from nvcc_opt.workspace.tree import TreeError
from nvcc_opt.workspace.unit import Compiled, UnitError, compile_unit

NO_KERNELS = (
    "no kernels in this region: it defines no __global__ or __device__ function, so there is no "
    "device code to analyse. compiler_analysis reports on GPU kernels; use benchmark_code to "
    "measure host code."
)
EXCERPT_LINES = 40  # per kernel: enough to see a loop body, small enough for several kernels
MIX_ENTRIES = 16
TOOL_TIMEOUT_S = 60.0
MAX_MACROS = 16  # command-line macros named in the heading


@dataclass
class Analysis:
    """The compiler_analysis tool for the region of `bench`, compiled in its candidate tree."""

    bench: Benchmark

    @tool
    def compiler_analysis(
        self, code: str | None = None, compile_args: list[str] | None = None
    ) -> str:
        """Compile the region (or `code` in its place) exactly as the build does and report, per
        kernel: registers, spills, shared and local memory, stack, theoretical occupancy and what
        limits it, and the kernel's memory instructions in PTX and SASS.

        Args:
            code: The complete new text of the region to analyse; omit it to analyse the region
                as it is now.
            compile_args: Extra nvcc flags for this file only, code generation only, e.g.
                ["-maxrregcount=64"]: fast math or its parts (-ftz, -prec-div, -prec-sqrt, -fmad
                =true|false), -maxrregcount=N, -Xptxas options (-O3, -v, -dlcm=cg, ...),
                -lineinfo, -restrict, -extra-device-vectorization, -O0..-O3, and
                -gencode=arch=compute_XXa,code=sm_XXa for the build's GPU sm_XX.

        Returns:
            Per kernel and GPU architecture the ptxas resource usage and occupancy at the
            launch's block size (when the source gives it; else what the registers allow), load and
            store widths from the PTX, and an instruction mix, excerpt and digest of the SASS
            where cuobjdump or nvdisasm is installed (equal digests: the same machine code).
        """
        try:
            flags.check(compile_args or [])
        except flags.FlagError as exc:
            raise ToolError(f"{exc}\nNothing was compiled; call again with allowed flags.") from exc
        text = self.bench.region.text if code is None else code
        declared, devices = ptxas.kernels(ptxas.code_only(text))
        if not declared and not devices:
            return NO_KERNELS
        with tempfile.TemporaryDirectory(prefix="nvcc-opt-analysis-") as scratch:
            compiled = self._compile(text, list(compile_args or []), Path(scratch))
            return self._report(text, code, compile_args, declared, devices, compiled)

    def _report(
        self,
        text: str,
        code: str | None,
        compile_args: list[str] | None,
        declared: list[ptxas.Kernel],
        devices: list[str],
        compiled: Compiled,
    ) -> str:
        report = ptxas.parse_ptxas(compiled.output)
        readable = self._readable(sorted({f.name for f in report.functions}), compiled.keep)
        names = {k.name for k in declared}
        found = [f for f in report.functions if f.entry and _wanted(f, names, readable)]
        if not found:
            return _nothing_compiled(declared, report)
        spliced = self._spliced(text)
        # the command line's macros first, as the preprocessor sees them, for launch shapes
        given = used(dict(compiled.defines), spliced)
        launch_text = ptxas.code_only(
            "".join(f"#define {n} {v}\n" for n, v in given.items()) + spliced
        )
        lines = [_heading(self.bench.region.name, code, compile_args, declared, found)]
        if given:
            shown = ", ".join(f"{n}={v}" for n, v in list(given.items())[:MAX_MACROS])
            lines.append(
                f"macros the build's command line defines, used in the region's file: {shown}"
            )
        for kernel in dict.fromkeys(f.name for f in found):
            base = _base(kernel, readable)
            bounds = next((k.launch_bounds for k in declared if k.name == base), None)
            shapes = shapes_of(base, bounds, launch_text)
            lines += _kernel_lines(kernel, readable, [f for f in found if f.name == kernel], shapes)
        lines += _device_lines(report, set(devices), readable)
        lines += [f"ptxas: {w}" for w in report.warnings]
        lines += self._code_lines(compiled, [f.name for f in found], readable)
        return "\n".join(lines)

    def _compile(self, text: str, compile_args: list[str], work: Path) -> Compiled:
        region = self.bench.region
        try:
            _, tree = self.bench.trees()
            compiled = compile_unit(
                self.bench.runner,
                tree.path,
                region.file,
                region.text_hash,
                text,
                compile_args,
                launcher=self.bench.launcher,
                work=work,
                timeout_s=self.bench.config.build.timeout_s,
            )
        except TreeError as exc:
            raise ToolError(f"{exc}\nFix the build settings ([build] in nvcc-opt.toml).") from exc
        except UnitError as exc:
            raise ToolError(f"{exc}; compiler_analysis needs one") from exc
        if compiled.timed_out:
            raise ToolError("the compile timed out; simplify the code (fewer unrolled loops)")
        if not compiled.ok:
            start = region.span.start_line
            lines = (start, start + max(len(text.splitlines()), 1) - 1)
            errors = trim_errors(compiled.output, source=region.file, region_lines=lines)
            raise ToolError(
                f"the code does not compile, so there is nothing to analyse:\n{errors}\n"
                "Fix these errors and call compiler_analysis again."
            )
        return compiled

    def _spliced(self, text: str) -> str:
        """The region's file with `text` in place of the region: where its launches are."""
        source = self.bench.region.file_text.encode("utf-8", "surrogateescape")
        span = self.bench.region.span
        spliced = source[: span.start_offset] + text.encode() + source[span.end_offset :]
        return spliced.decode("utf-8", "replace")

    def _run(self, command: Sequence[str], cwd: Path) -> str | None:
        """A helper tool's stdout, or None when it failed."""
        done = self.bench.runner.run(
            command, cwd=cwd, timeout_s=TOOL_TIMEOUT_S, sandbox=False, output_cap=4_000_000
        )
        return done.stdout if done.ok else None

    def _readable(self, names: list[str], cwd: Path) -> dict[str, str]:
        """Mangled name -> demangled, with cu++filt (CUDA's) or c++filt where installed; ptxas'
        `$1` suffixes of local copies are kept as they are."""
        shown = {n: n for n in names}
        demangler = demangler_path()
        if names and demangler:
            plain = [n.split("$")[0] for n in names]
            out = self._run([demangler, *plain], cwd)
            if out is not None and len(out.splitlines()) == len(names):
                for name, line in zip(names, out.splitlines(), strict=True):
                    suffix = name[len(name.split("$")[0]) :]
                    shown[name] = line.strip() + suffix
        return shown

    def _code_lines(
        self, compiled: Compiled, kernels: list[str], readable: dict[str, str]
    ) -> list[str]:
        sass, where = self._sass(compiled)
        lines = _ptx_lines(compiled.keep, kernels, readable, excerpt=sass is None)
        shown = [(key, code) for key, code in (sass or {}).items() if key[1] in kernels]
        if sass is not None and not shown:
            return [*lines, "", f"SASS: {where} listed none of these kernels"]
        if sass is None:
            return [*lines, "", f"SASS: {where}"]
        for (arch, name), instructions in shown:
            mix = ptxas.sass_mix(instructions)
            count, digest = len(instructions), ptxas.sass_digest(instructions)
            lines += [
                "",
                f"SASS of {_base(name, readable)} ({arch}, {where}): {count} instructions,"
                f" digest {digest}",
            ]
            lines.append(f"  mix: {_counts(mix, MIX_ENTRIES)}")
            local = sum(n for op, n in mix.items() if op.startswith(("LDL", "STL")))
            if local:
                lines.append(f"  local memory: {local} LDL/STL (spills or local arrays)")
            lines += _excerpt(instructions, "SASS")
        return lines

    def _sass(self, compiled: Compiled) -> tuple[dict[tuple[str, str], list[str]] | None, str]:
        """The object's SASS, and which tool gave it (or why there is none)."""
        if shutil.which("cuobjdump"):
            out = self._run(["cuobjdump", "-sass", str(compiled.obj)], compiled.keep)
            if out is not None:
                return ptxas.parse_sass(out), "cuobjdump"
            return None, "cuobjdump failed on the object; the PTX above shows load/store widths"
        cubins = sorted(compiled.keep.glob("*.cubin"), key=lambda p: _arch_number(_arch_of(p)))
        if shutil.which("nvdisasm") and cubins:
            out = self._run(["nvdisasm", "-c", str(cubins[-1])], compiled.keep)
            if out is not None:
                return ptxas.parse_sass(out, _arch_of(cubins[-1])), "nvdisasm"
        return None, "cuobjdump not found; the PTX above shows load/store widths"


def _ptx_lines(
    keep: Path, kernels: list[str], readable: dict[str, str], *, excerpt: bool
) -> list[str]:
    """Loads and stores of each kernel in the PTX of the newest architecture compiled."""
    texts = [p.read_text(encoding="utf-8", errors="replace") for p in keep.glob("*.ptx")]
    if not texts:
        return []
    newest = max(texts, key=lambda t: _arch_number(ptxas.ptx_target(t)))
    ptx = ptxas.parse_ptx(newest)
    lines = ["", f"PTX ({ptxas.ptx_target(newest)}) loads and stores:"]
    for kernel in dict.fromkeys(kernels):
        lines.append(
            f"  {_base(kernel, readable)}: {_counts(ptxas.ptx_memory(ptx.get(kernel, [])))}"
        )
        if excerpt:
            lines += _excerpt(ptx.get(kernel, []), "PTX")
    return lines


def demangler_path() -> str | None:
    """cu++filt (it ships with nvcc, next to it) or binutils' c++filt; None when neither is."""
    found = shutil.which("cu++filt")
    if found is None and (nvcc := shutil.which("nvcc")):
        beside = Path(nvcc).resolve().parent / "cu++filt"
        found = str(beside) if beside.is_file() else None
    return found or shutil.which("c++filt")


def _base(name: str, readable: dict[str, str]) -> str:
    """The source's name of a ptxas function: from the demangler's text where it demangled it,
    else from the mangled name itself."""
    shown = readable.get(name, name)
    if shown != name:
        return ptxas.demangled_base(shown)
    return ptxas.mangled_base(name).split("$")[0]


def _wanted(function: ptxas.Function, names: set[str], readable: dict[str, str]) -> bool:
    """A kernel of the region; every kernel when the region holds only device functions."""
    return not names or _base(function.name, readable) in names


def _nothing_compiled(declared: list[ptxas.Kernel], report: ptxas.PtxasReport) -> str:
    if not report.functions:
        return (
            "ptxas compiled no device code for this file: the build targets no real GPU "
            'architecture (sm_XX). Try compile_args ["-arch=sm_90"].'
        )
    names = ", ".join(k.name for k in declared)
    return (
        f"ptxas compiled none of the region's kernels ({names}): a template kernel is compiled "
        "only where it is instantiated with template arguments; instantiate it in the region."
    )


def _heading(
    region: str,
    code: str | None,
    compile_args: list[str] | None,
    declared: list[ptxas.Kernel],
    found: list[ptxas.Function],
) -> str:
    what = "the code given" if code is not None else "the region as it is"
    args = f" with {' '.join(compile_args)}" if compile_args else ""
    arches = ", ".join(sorted({f.arch for f in found}))
    if not declared:
        return (
            f"region '{region}' ({what}{args}) holds device functions only: every kernel of the "
            f"file is shown ({arches})"
        )
    return f"region '{region}' ({what}{args}), compiled for {arches}"


def _kernel_lines(
    kernel: str, readable: dict[str, str], builds: list[ptxas.Function], shapes: Shapes
) -> list[str]:
    lines = ["", f"kernel {_base(kernel, readable)}: {readable.get(kernel, kernel)}"]
    if shapes.note:
        lines.append(f"  {shapes.note}")
    for f in builds:
        lines.append(f"  {f.arch}: {_resources(f)}")
        lines += [f"    {line}" for line in occupancy_lines(f, shapes.shapes)]
    return lines


def _resources(f: ptxas.Function) -> str:
    text = (
        f"registers {f.registers}, static shared {f.shared_bytes} B, local (stack frame) "
        f"{f.stack_frame} B, spill stores {f.spill_stores} B, spill loads {f.spill_loads} B, "
        f"barriers {f.barriers}"
    )
    if f.cumulative_stack > f.stack_frame:
        text += f", stack with calls {f.cumulative_stack} B"
    return text + (f", cmem[0] {f.constant_bytes} B" if f.constant_bytes else "")


def _device_lines(
    report: ptxas.PtxasReport, devices: set[str], readable: dict[str, str]
) -> list[str]:
    """Device functions ptxas kept as calls (not inlined): their stack and spills."""
    lines = []
    for f in report.functions:
        if not f.entry and _base(f.name, readable) in devices:
            lines.append(
                f"device function {readable.get(f.name, f.name)} ({f.arch}, not inlined): "
                f"local (stack frame) {f.stack_frame} B, spill stores {f.spill_stores} B, "
                f"spill loads {f.spill_loads} B"
            )
    return [""] + lines if lines else []


def _counts(counter: dict[str, int], limit: int | None = None) -> str:
    ordered = sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))
    shown = ", ".join(f"{name} x{n}" for name, n in ordered[:limit])
    cut = len(ordered) - len(ordered[:limit])
    return (shown + (f", and {cut} more kinds" if cut else "")) or "none"


def _excerpt(code: list[str], what: str) -> list[str]:
    lines = ptxas.skeleton(code)
    shown = [f"    {what} memory, barriers and branches:"]
    shown += [f"      {line}" for line in lines[:EXCERPT_LINES]]
    if len(lines) > EXCERPT_LINES:
        shown.append(f"      [{what} excerpt cut: {len(lines) - EXCERPT_LINES} more lines]")
    return shown


def _arch_of(path: Path) -> str:
    """`compute_90` or `sm_90` from nvcc's intermediate names (`work.compute_90.sm_90.cubin`)."""
    parts = path.name.split(".")
    return next((p for p in reversed(parts) if p.startswith(("sm_", "compute_"))), "")


def _arch_number(arch: str) -> int:
    digits = "".join(c for c in arch.split("_")[-1] if c.isdigit())
    return int(digits or 0)
