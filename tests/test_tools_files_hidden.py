"""The file tools never show the final verification's own inputs ([verify] fresh_inputs and
sanitizer_args), in any layout TOML allows; everything else in the file stays visible."""

from __future__ import annotations

from pathlib import Path

import pytest

from nvcc_opt.toolbox.schema import ToolError
from nvcc_opt.tools.catalog import open_catalog
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
require = ["PASS"]
"""


def _project(tmp_path: Path, name: str, text: str) -> ProjectFiles:
    (tmp_path / name).write_text(text)
    (tmp_path / "build").mkdir()
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
    assert '   12 | require = ["PASS"]' in shown


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


def _state(root: Path) -> None:
    (root / ".nvcc-opt" / "traces").mkdir(parents=True)
    (root / ".nvcc-opt" / "traces" / "run.json").write_text(f'{{"why": "fresh_inputs {SECRET}"}}')
    (root / ".nvcc-opt" / "store.db").write_text("not a real database")


def test_the_store_folder_inside_the_project_is_never_shown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NVCC_OPT_STORE", raising=False)
    files = _project(tmp_path, "nvcc-opt.toml", 'store = ".nvcc-opt/store.db"\n' + TABLE)
    _state(tmp_path)
    catalog = open_catalog(tmp_path)
    try:
        tools = catalog.files
        for call in (
            lambda: tools.file_viewer(".nvcc-opt/traces/run.json"),
            lambda: tools.list_dir(".nvcc-opt"),
            lambda: tools.search("fresh", path=".nvcc-opt"),
        ):
            with pytest.raises(ToolError, match="nvcc-opt's own state"):
                call()
        assert ".nvcc-opt" not in tools.list_dir(".")
        assert ".nvcc-opt" not in tools.search(SECRET)
    finally:
        catalog.close()
    assert files.file_viewer(".nvcc-opt/traces/run.json")  # a bare ProjectFiles knows no store


def test_a_store_at_the_root_hides_its_own_files_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NVCC_OPT_STORE", raising=False)
    _project(tmp_path, "nvcc-opt.toml", 'store = "state.db"\n' + TABLE)
    (tmp_path / "state.db").write_text(f"seed {SECRET}")
    (tmp_path / "traces").mkdir()
    (tmp_path / "traces" / "a.json").write_text(f"seed {SECRET}")
    catalog = open_catalog(tmp_path)
    try:
        listing = catalog.files.list_dir(".")
        assert "src/" in listing and "state.db" not in listing and "traces/" not in listing
        with pytest.raises(ToolError, match="nvcc-opt's own state"):
            catalog.files.file_viewer("state.db")
        found = catalog.files.search(SECRET)
        assert "src/app.cu" in found and "state.db" not in found and "traces" not in found
    finally:
        catalog.close()
