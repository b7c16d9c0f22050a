"""A checkout's commit is its own repository's HEAD, never that of a repository around it."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from integration.gitcommit import own_commit
from integration.lulesh import checkout

FIXTURE = Path(__file__).parent / "fixtures" / "lulesh"
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def _repo(path: Path) -> str:
    subprocess.run([*GIT, "init", "-q", str(path)], check=True)
    subprocess.run([*GIT, "-C", str(path), "add", "-A"], check=True)
    subprocess.run([*GIT, "-C", str(path), "commit", "-q", "--allow-empty", "-m", "x"], check=True)
    return subprocess.run(
        ["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()


def test_a_checkout_at_its_repositorys_top_reports_that_head(tmp_path: Path) -> None:
    lulesh = tmp_path / "LULESH"
    shutil.copytree(FIXTURE, lulesh)
    head = _repo(lulesh)
    assert own_commit(lulesh) == head
    assert checkout.find(lulesh).commit == head


def test_a_copy_inside_another_repository_reports_no_commit(tmp_path: Path) -> None:
    outer = tmp_path / "project"
    outer.mkdir()
    _repo(outer)
    lulesh = outer / "third_party" / "LULESH"
    shutil.copytree(FIXTURE, lulesh)
    assert own_commit(lulesh) == ""
    assert checkout.find(lulesh).commit == ""


def test_a_plain_folder_reports_no_commit(tmp_path: Path) -> None:
    assert own_commit(tmp_path) == ""
