"""`nvcc-opt review`, scripted and interactive, with click's runner against real SQLite files."""

from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path

import pytest

from nvcc_opt import paths
from nvcc_opt.records import Rewrite, RewriteState, Verification
from nvcc_opt.store.api import Store
from tests.cli_helpers import context, invoke, propose, record, write_source

OLD = 1_000_000_000  # a stamp mtime (2001) that any touch moves


@pytest.fixture
def source(tmp_path: Path) -> Path:
    return write_source(tmp_path)


@pytest.fixture
def db(tmp_path: Path, source: Path) -> Path:
    """A store in which a build has recorded `source`, and whose stamps exist, untouched."""
    path = tmp_path / "state" / "store.db"
    record(path, source)
    for name in ("scale", "pair"):
        stamp = paths.stamp_path(path, str(source), name)
        paths.ensure_stamp(stamp)
        os.utime(stamp, (OLD, OLD))
    return path


def _stamp_touched(db: Path, source: Path, region: str) -> bool:
    return paths.stamp_path(db, str(source), region).stat().st_mtime != OLD


def _rewrite(db: Path, rewrite_id: int) -> Rewrite:
    with Store.open(db) as store:
        return store.rewrite(rewrite_id)


def test_list_shows_open_rewrites_and_json_keeps_decisions(db: Path, source: Path) -> None:
    assert invoke(db, "review", "--list").output == "no rewrites\n"
    first = propose(db, source, "scale")
    second = propose(db, source, "pair", code="// pair\n")
    assert invoke(db, "review", "--reject", str(second), "--reason", "slower").exit_code == 0

    listed = invoke(db, "review", "--list").output.splitlines()
    assert listed == [f"#{first} proposed {source} scale"]
    assert len(invoke(db, "review", "--list", "--all").output.splitlines()) == 2

    data = json.loads(invoke(db, "review", "--json", "--all").output)
    assert [(r["id"], r["state"]) for r in data] == [(first, "proposed"), (second, "rejected")]
    (decision,) = data[1]["decisions"]
    assert (decision["from"], decision["to"], decision["reason"]) == (
        "proposed",
        "rejected",
        "slower",
    )
    datetime.fromisoformat(decision["at"])


def test_accept_then_revoke_touch_the_stamp(db: Path, source: Path) -> None:
    rewrite_id = propose(db, source, "scale")
    result = invoke(db, "review", "--force", "--accept", str(rewrite_id), "--reason", "2x faster")
    assert result.exit_code == 0, result.output
    assert result.output == f"#{rewrite_id} accepted: {source} scale\n"
    assert _stamp_touched(db, source, "scale")
    assert not _stamp_touched(db, source, "pair")

    os.utime(paths.stamp_path(db, str(source), "scale"), (OLD, OLD))
    assert invoke(db, "review", "--revoke", str(rewrite_id), "--reason", "wrong").exit_code == 0
    assert _stamp_touched(db, source, "scale")
    rewrite = _rewrite(db, rewrite_id)
    assert rewrite.state is RewriteState.REVOKED
    assert [(d.to_state, d.reason) for d in rewrite.decisions] == [
        (RewriteState.ACCEPTED, "2x faster"),
        (RewriteState.REVOKED, "wrong"),
    ]


def test_reject_of_a_proposal_touches_nothing(db: Path, source: Path) -> None:
    rewrite_id = propose(db, source, "scale")
    assert invoke(db, "review", "--reject", str(rewrite_id)).exit_code == 0
    assert not _stamp_touched(db, source, "scale")
    assert _rewrite(db, rewrite_id).state is RewriteState.REJECTED


@pytest.mark.parametrize(
    ("first", "then", "message"),
    [
        ("--accept", "--reject", "cannot go from accepted to rejected"),
        ("--reject", "--accept", "cannot go from rejected to accepted"),
        ("--reject", "--revoke", "cannot go from rejected to revoked"),
        ("--accept", "--accept", "cannot go from accepted to accepted"),
    ],
)
def test_invalid_transition_is_a_clear_error(
    db: Path, source: Path, first: str, then: str, message: str
) -> None:
    rewrite_id = str(propose(db, source, "scale"))
    assert invoke(db, "review", "--force", first, rewrite_id).exit_code == 0
    result = invoke(db, "review", "--force", then, rewrite_id)
    assert result.exit_code == 1
    assert message in result.output and "Traceback" not in result.output


def test_revoke_of_a_proposal_and_unknown_id_are_errors(db: Path, source: Path) -> None:
    rewrite_id = propose(db, source, "scale")
    result = invoke(db, "review", "--revoke", str(rewrite_id))
    assert result.exit_code == 1 and "cannot go from proposed to revoked" in result.output
    result = invoke(db, "review", "--force", "--accept", "99")
    assert result.exit_code == 1 and "no rewrite #99" in result.output
    assert not _stamp_touched(db, source, "scale")


def test_second_accept_for_a_region_names_the_first(db: Path, source: Path) -> None:
    first = propose(db, source, "scale")
    second = propose(db, source, "scale", code="// another\n")
    assert invoke(db, "review", "--force", "--accept", str(first)).exit_code == 0
    result = invoke(db, "review", "--force", "--accept", str(second))
    assert result.exit_code == 1
    assert f"revoke #{first} first" in result.output


def test_interactive_shows_diff_explanation_numbers_and_decides(db: Path, source: Path) -> None:
    scale = propose(
        db, source, "scale", explanation="no aliasing", statistics={"speedup": 1.4}, model="m"
    )
    pair = propose(db, source, "pair", code="// pair\n")
    result = invoke(db, "review", input="a\nfaster\ny\nr\n\n")
    assert result.exit_code == 0, result.output
    out = result.output
    assert f"#{scale} proposed {source} scale" in out and f"#{pair} proposed" in out
    assert "-    if (i < n) x[i] *= a;\n+    if (i < n) x[i] = a * x[i];\n" in out
    assert "explanation: no aliasing" in out and '"speedup": 1.4' in out
    assert f"#{scale} accepted" in out and f"#{pair} rejected" in out
    assert _rewrite(db, scale).decisions[0].reason == "faster"
    assert _stamp_touched(db, source, "scale")
    assert not _stamp_touched(db, source, "pair")


def test_interactive_skip_quit_and_revoke(db: Path, source: Path) -> None:
    scale = propose(db, source, "scale")
    pair = propose(db, source, "pair", code="// pair\n")
    assert invoke(db, "review", input="s\nq\n").exit_code == 0
    assert _rewrite(db, scale).state is _rewrite(db, pair).state is RewriteState.PROPOSED

    assert invoke(db, "review", "--force", "--accept", str(scale)).exit_code == 0
    result = invoke(db, "review", "--reason", "regressed", input="v\n\ns\n")
    assert result.exit_code == 0, result.output
    assert "re[v]oke" in result.output
    revoked = _rewrite(db, scale)
    assert (revoked.state, revoked.decisions[-1].reason) == (RewriteState.REVOKED, "regressed")


def test_interactive_refusal_is_reported_and_review_goes_on(db: Path, source: Path) -> None:
    first = propose(db, source, "scale")
    second = propose(db, source, "scale", code="// another\n")
    pair = propose(db, source, "pair", code="// pair\n")
    assert invoke(db, "review", "--force", "--accept", str(first)).exit_code == 0
    result = invoke(db, "review", input="s\na\n\ny\na\n\ny\n")
    assert result.exit_code == 0, result.output
    assert "error: " in result.output and f"revoke #{first} first" in result.output
    assert _rewrite(db, second).state is RewriteState.PROPOSED
    assert _rewrite(db, pair).state is RewriteState.ACCEPTED


def test_diff_notes_a_region_whose_text_changed(db: Path, source: Path) -> None:
    propose(db, source, "scale")
    source.write_text(source.read_text().replace("x[i] *= a", "x[i] *= 2.0f * a"))
    result = invoke(db, "review", input="q\n")
    assert "the region's text changed since this rewrite was made" in result.output


def test_nothing_to_review(db: Path) -> None:
    result = invoke(db, "review")
    assert (result.exit_code, result.output) == (0, "nothing to review\n")


UNCONTAINED = "uncontained: no bubblewrap (not installed), no namespaces (Operation not permitted)"


def _verify(db: Path, source: Path, rewrite_id: int, *reasons: str) -> None:
    """A passing verification in the build's current context, with `reasons` kept."""
    with Store.open(db) as store:
        store.add_verification(
            Verification(
                rewrite_id, "", True, "improved", reasons, {"speedup": 1.5}, context(source), "h"
            )
        )


def test_accepting_what_was_verified_uncontained_needs_force(db: Path, source: Path) -> None:
    rewrite_id = propose(db, source, "scale")
    _verify(db, source, rewrite_id, "sanitizer: not run", UNCONTAINED)
    refused = invoke(db, "review", "--accept", str(rewrite_id))
    assert refused.exit_code == 1
    assert (
        f"#{rewrite_id}'s last verification" in refused.output and "passed, but" in refused.output
    )
    assert UNCONTAINED in refused.output and "--force" in refused.output
    assert "sanitizer" not in refused.output, "only the caveats, not every note"
    assert _rewrite(db, rewrite_id).state is RewriteState.PROPOSED
    assert not _stamp_touched(db, source, "scale")

    forced = invoke(db, "review", "--accept", str(rewrite_id), "--force")
    assert forced.exit_code == 0, forced.output
    accepted = _rewrite(db, rewrite_id)
    assert accepted.state is RewriteState.ACCEPTED and accepted.decisions[-1].forced


def test_the_latest_verification_decides(db: Path, source: Path) -> None:
    rewrite_id = propose(db, source, "scale")
    _verify(db, source, rewrite_id, UNCONTAINED)
    _verify(db, source, rewrite_id, "sanitizer: not run")  # again, where runs were contained
    result = invoke(db, "review", "--accept", str(rewrite_id))
    assert result.exit_code == 0, result.output
    assert not _rewrite(db, rewrite_id).decisions[-1].forced


def test_review_shows_the_caveats(db: Path, source: Path) -> None:
    rewrite_id = propose(db, source, "scale")
    unmeasured = "unmeasured: no channel (no GPU here)"
    _verify(db, source, rewrite_id, UNCONTAINED, unmeasured)
    listed = invoke(db, "review", "--list").output
    assert listed == f"#{rewrite_id} proposed {source} scale UNCONTAINED UNMEASURED\n"
    (data,) = json.loads(invoke(db, "review", "--json").output)
    assert data["caveats"] == [UNCONTAINED, unmeasured]

    shown = invoke(db, "review", input="a\n\nn\n")  # accept, no reason, do not force
    assert shown.exit_code == 0, shown.output
    assert f"CAVEAT of the last verification: {UNCONTAINED}" in shown.output
    assert "Accept anyway?" in shown.output
    assert _rewrite(db, rewrite_id).state is RewriteState.PROPOSED
