"""`nvcc-opt report` rendered in headless Chromium (Debian's `chromium` package; skipped where it
is not installed): a screenshot that is not blank, and the page's own script, run by the
browser, finding data in every figure (`<body data-report-ok="true">`, the title's " [ok]")."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.html_report_fixtures import full_args, inputs, report

__all__ = ["inputs"]  # the fixture, used below

mpimg = pytest.importorskip("matplotlib.image")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (apt-get install -y chromium)"
)
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium(page: Path, profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    argv = [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args, page.resolve().as_uri()]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)


def body_and_title(dom: str) -> tuple[str, str]:
    body = re.search(r"<body[^>]*>", dom)
    title = re.search(r"<title>([^<]*)</title>", dom)
    assert body and title, dom[:500]
    return body.group(0), title.group(1)


def test_report_renders_with_every_figure_checked(inputs: dict[str, Path], tmp_path: Path) -> None:
    assert report(*full_args(inputs)).exit_code == 0
    page, shot = inputs["out"], tmp_path / "report.png"
    done = chromium(page, tmp_path / "p1", f"--screenshot={shot}", "--window-size=1400,3000")
    assert shot.is_file(), done.stderr[-2000:]
    pixels = mpimg.imread(shot)
    assert pixels.shape[:2] == (3000, 1400)
    colours = {tuple(p) for p in pixels[::7, ::7, :3].reshape(-1, 3).round(2).tolist()}
    assert len(colours) > 20  # figures in several colours, not a blank page
    dom = chromium(page, tmp_path / "p2", "--dump-dom").stdout
    body, title = body_and_title(dom)
    assert 'data-report-ok="true"' in body and 'data-figures="5"' in body
    assert title.endswith(" [ok]")
    assert len(re.findall(r'data-marks="[1-9]\d*"', dom)) == 5


def test_a_report_without_figures_says_so_in_the_browser(tmp_path: Path) -> None:
    out = tmp_path / "empty.html"
    assert report("-o", out).exit_code == 0
    body, title = body_and_title(chromium(out, tmp_path / "p", "--dump-dom").stdout)
    assert 'data-report-ok="false"' in body and title.endswith("[FAILED: no figures]")
