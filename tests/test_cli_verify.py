"""`nvcc-opt verify` and the review gate, end to end on the host-code CMake project: import,
verify (fresh private builds, checks, paired timing), then accept without or with --force."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from nvcc_opt.records import RewriteState
from nvcc_opt.store.api import Store
from tests.conftest import needs_nvcc
from tests.test_tools_bench import FIXTURE, HALF, WRONG

pytestmark = [needs_nvcc, pytest.mark.slow]


def _cli(exe: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([exe, *args], cwd=cwd, capture_output=True, text=True)


def accept_despite_caveats(exe: str, rewrite: str, cwd: Path) -> bool:
    """Accepts a verified rewrite; where the verification could not be measured or contained
    here (no GPU: `unavailable:`), the plain accept must be refused naming the caveat and --force
    must then accept it. True when --force was needed."""
    plain = _cli(exe, "review", "--accept", rewrite, cwd=cwd)
    if plain.returncode == 0:
        return False
    assert any(c in plain.stderr for c in ("unavailable:", "unmeasured:", "uncontained:")), (
        plain.stderr
    )
    assert "--force" in plain.stderr, plain.stderr
    forced = _cli(exe, "review", "--accept", rewrite, "--force", cwd=cwd)
    assert forced.returncode == 0, forced.stderr
    return True


@pytest.fixture
def project(tmp_path: Path, exe: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "hostapp"
    shutil.copytree(FIXTURE, root)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("NVCC_OPT_STORE", str(tmp_path / "state" / "store.db"))
    build = root / "build"
    launcher = f"-DCMAKE_CUDA_COMPILER_LAUNCHER={exe}"
    subprocess.run(["cmake", "-S", root, "-B", build, "-G", "Ninja", launcher], check=True)
    subprocess.run(["cmake", "--build", build], check=True, capture_output=True)
    entries = [
        {"file": "src/work.cu", "region": "accumulate", "code": code, "explanation": why}
        for code, why in ((HALF, "half the passes"), (WRONG, "drops a factor"))
    ]
    (root / "rewrites.json").write_text(json.dumps({"rewrites": entries}))
    assert _cli(exe, "import", "rewrites.json", cwd=root).returncode == 0
    return root


def test_verify_records_verdicts_and_gates_acceptance(project: Path, exe: str) -> None:
    done = _cli(exe, "verify", cwd=project)
    assert done.returncode == 1, "one of the two fails verification"
    assert "#1: improved" in done.stdout and "#2: rejected" in done.stdout
    assert "numbers_differ" in done.stdout

    forced_good = accept_despite_caveats(exe, "1", cwd=project)
    refused = _cli(exe, "review", "--accept", "2", cwd=project)
    assert refused.returncode == 1 and "rejected" in refused.stderr and "--force" in refused.stderr
    forced = _cli(exe, "review", "--accept", "2", "--force", cwd=project)
    assert forced.returncode == 1 and "revoke #1 first" in forced.stderr

    with Store.open(Path(project.parent / "state" / "store.db")) as store:
        good, bad = store.rewrite(1), store.rewrite(2)
    assert good.state is RewriteState.ACCEPTED and good.decisions[-1].forced is forced_good
    assert good.last_verification is not None and good.last_verification.passed
    assert good.last_verification.statistics["speedup"] > 1.5  # type: ignore[operator]
    assert bad.last_verification is not None and not bad.last_verification.passed
    assert _cli(exe, "verify", cwd=project).stdout.strip() == "nothing to verify"
