"""The file tools never show the final verification's own inputs ([verify] fresh_inputs and
sanitizer_args), in any layout TOML allows; everything else in the file stays visible."""

from __future__ import annotations

from pathlib import Path

import pytest

from nvcc_opt.toolbox.schema import ToolError
from nvcc_opt.tools.files import ProjectFiles
from nvcc_opt.tools.hidden import shown_text

SECRET = "98765431"

TABLE = f"""[run]
command = ["./app", "--size", "4096"]

[verify]
fresh_inputs = [
["--seed", "{SECRET}"],
  ["--size", "1000003"],
]
sanitizer_args = ["--size", "{SECRET}"]

[check]
kind = "regex"
"""


def _project(tmp_path: Path, name: str, text: str) -> ProjectFiles:
    (tmp_path / name).write_text(text)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.cu").write_text(f"// seed {SECRET} is also in the source\n")
    return ProjectFiles(tmp_path)


def test_the_verify_table_is_blanked_with_line_numbers_kept(tmp_path: Path) -> None:
    files = _project(tmp_path, "nvcc-opt.toml", TABLE)
    shown = files.file_viewer("nvcc-opt.toml")
    assert SECRET not in shown and "1000003" not in shown
    assert "hidden from the model" in shown
    # the tables around it are shown as they are, on their own line numbers
    assert '    2 | command = ["./app", "--size", "4096"]' in shown
    assert '   12 | kind = "regex"' in shown


def test_search_does_not_find_it_in_the_config_but_does_elsewhere(tmp_path: Path) -> None:
    files = _project(tmp_path, "nvcc-opt.toml", TABLE)
    found = files.search(SECRET)
    assert "src/app.cu" in found and "nvcc-opt.toml" not in found
    assert "1 match " in found


def test_pyproject_tool_table_and_quoted_headers(tmp_path: Path) -> None:
    text = (
        '[project]\nname = "app"\n\n[tool."nvcc-opt" . "verify"]\n'
        f'fresh_inputs = [["--seed", "{SECRET}"]]\n\n[tool.nvcc-opt.run]\ncommand = ["./app"]\n'
    )
    files = _project(tmp_path, "pyproject.toml", text)
    shown = files.file_viewer("pyproject.toml")
    assert SECRET not in shown and 'command = ["./app"]' in shown


@pytest.mark.parametrize(
    "text",
    [
        f'verify = {{ fresh_inputs = [["--seed", "{SECRET}"]] }}\n',  # an inline table
        f'verify.fresh_inputs = [["--seed", "{SECRET}"]]\n',  # a dotted key
        f'[tool.nvcc-opt]\nverify.sanitizer_args = ["{SECRET}"]\n',
        f'[[verify]]\nfresh_inputs = [["{SECRET}"]]\n[[verify]]\nsanitizer_args = ["1"]\n',
    ],
)
def test_layouts_the_line_scan_cannot_blank_hide_the_whole_file(tmp_path: Path, text: str) -> None:
    files = _project(tmp_path, "nvcc-opt.toml", text)
    with pytest.raises(ToolError, match="hidden from the model"):
        files.file_viewer("nvcc-opt.toml")
    found = files.search(SECRET)
    assert "nvcc-opt.toml" not in found and "hidden from the model" in found


def test_a_header_inside_a_multiline_string_cannot_end_the_table_early() -> None:
    # the line scan sees "[run]" as a header and would stop blanking: the parse catches it
    text = f'[verify]\nnote = """\n[run]\n"""\nfresh_inputs = [["{SECRET}"]]\n'
    assert shown_text("nvcc-opt.toml", text) is None


def test_other_files_and_configs_without_verify_settings_are_untouched() -> None:
    source = f"// [verify]\n// fresh_inputs = {SECRET}\n"
    assert shown_text("kernel.cu", source) == source
    plain = '[run]\ncommand = ["./app", "--verify"]\n'
    assert shown_text("nvcc-opt.toml", plain) == plain
    broken = "[run\ncommand = 1\n"  # no verify setting to hide: shown as it is, broken or not
    assert shown_text("nvcc-opt.toml", broken) == broken
