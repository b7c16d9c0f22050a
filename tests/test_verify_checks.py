"""Correctness checks on run outputs: every failure named, nothing accepted on NaN or zeros."""

from __future__ import annotations

import math
import struct

import pytest

from nvcc_opt.verify.checks import RunOutput, check_run, compare_numbers, extract_numbers

CHECKSUM = r"checksum (\S+)"


def run(
    stdout: str = "",
    *,
    stderr: str = "",
    exit_status: int = 0,
    files: dict[str, bytes] | None = None,
    timed_out: bool = False,
) -> RunOutput:
    return RunOutput(exit_status, stdout, stderr, files or {}, timed_out)


def test_extract_numbers_takes_groups_or_whole_matches() -> None:
    text = "checksum 1.5e3\nchecksum -2\nchecksum nan\ntime 0.25 ms"
    assert extract_numbers(text, CHECKSUM)[:2] == [1500.0, -2.0]
    assert math.isnan(extract_numbers(text, CHECKSUM)[2])
    assert extract_numbers(text, r"speed (\S+)") == []
    assert extract_numbers("a=1 b=2\na=3 b=4", r"a=(\d) b=(\d)") == [1.0, 2.0, 3.0, 4.0]
    assert extract_numbers("x 7 y", r"\d") == [7.0]
    assert extract_numbers("v: 1 (no second)", r"v: (\d)(?: (\d))?") == [1.0]


def test_extract_numbers_refuses_a_match_that_is_no_number() -> None:
    with pytest.raises(ValueError, match="'PASS' matched by"):
        extract_numbers("result PASS", r"result (\S+)")


def test_compare_numbers_within_tolerance() -> None:
    assert compare_numbers([1.0, 100.0], [1.0 + 1e-7, 100.00001], rtol=1e-6, atol=0.0) == []
    assert compare_numbers([0.0], [1e-9], rtol=1e-6, atol=1e-8) == []
    assert compare_numbers([1.0, 2.0], [1.0, 2.5], rtol=1e-6, atol=0.0, label="checksum") == [
        "numbers_differ: checksum[1] 2.0 vs 2.5 (rtol 1e-06, atol 0)"
    ]


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_compare_numbers_never_accepts_nonfinite_equality(value: float) -> None:
    assert compare_numbers([1.0, value], [1.0, value], rtol=1.0, atol=1.0) == [
        f"nonfinite: {value} in output[1]",
        f"nonfinite: {value} in baseline output[1]",
    ]
    assert compare_numbers([1.0, 2.0], [1.0, value], rtol=1.0, atol=1.0) == [
        f"nonfinite: {value} in output[1]"
    ]


def test_compare_numbers_names_a_count_mismatch() -> None:
    assert compare_numbers([1.0, 2.0, 3.0], [1.0, 2.0, 3.0, 4.0], rtol=0, atol=0) == [
        "numbers_count: 3 vs 4 in output"
    ]


def test_all_zero_numbers_are_their_own_failure() -> None:
    reasons = compare_numbers([0.0, 3.0], [0.0, 0.0], rtol=1e-6, atol=0.0)
    assert reasons[-1] == "zeros: output numbers are all zero, the baseline's are not"
    assert compare_numbers([0.0, 0.0], [0.0, 0.0], rtol=1e-6, atol=0.0) == []


def test_many_differences_are_capped() -> None:
    reasons = compare_numbers([1.0] * 100, [2.0] * 100, rtol=0, atol=0)
    assert len(reasons) == 6 and reasons[-1] == "numbers_differ: and 95 more"


def test_a_clean_run_passes_every_check() -> None:
    base = run("checksum 42.0\ncheck: PASS\n", files={"out.txt": b"x 1.0\n"})
    cand = run("checksum 42.0000001\ncheck: PASS\n", files={"out.txt": b"x 1.00000001\n"})
    result = check_run(
        cand,
        require=["check: PASS"],
        forbid=[r"(?i)\bnan\b"],
        numbers=CHECKSUM,
        files=["out.txt"],
        baseline=base,
    )
    assert result.ok and result.reasons == ()


@pytest.mark.parametrize(
    "status, reason", [(1, "exit_status: 1"), (-11, "exit_status: -11 (signal 11)")]
)
def test_a_failing_exit_status_is_named(status: int, reason: str) -> None:
    assert check_run(run(exit_status=status)).reasons == (reason,)
    assert check_run(run(exit_status=status), exit_status=False).ok


def test_a_timeout_is_the_only_reason_given() -> None:
    result = check_run(run(exit_status=-9, timed_out=True), require=["PASS"])
    assert not result.ok and result.reasons == ("timed_out: the run did not finish",)


def test_required_and_forbidden_patterns_search_stdout_and_stderr() -> None:
    output = run("check: PASS\n", stderr="warning: result nan in row 3\n")
    assert check_run(output, require=["^check: PASS$"]).ok
    assert check_run(output, require=["check: FAIL"]).reasons == ("missing: check: FAIL",)
    assert check_run(output, forbid=[r"\bnan\b"]).reasons == (
        r"forbidden: \bnan\b (in 'warning: result nan in row 3')",
    )
    assert check_run(run("nanoseconds: 4"), forbid=[r"\bnan\b"]).ok


def test_a_bad_pattern_is_a_reason_not_a_crash() -> None:
    (reason,) = check_run(run("x"), require=["("]).reasons
    assert reason.startswith("bad_pattern: '(': ")
    (reason,) = check_run(run("x"), numbers="(", baseline=run("x")).reasons
    assert reason.startswith("bad_pattern: '(': ")
    (reason,) = check_run(run("r PASS"), numbers=r"r (\S+)", baseline=run("r 1")).reasons
    assert reason == "bad_pattern: 'PASS' matched by 'r (\\\\S+)' is no number"


def test_output_numbers_against_the_baseline() -> None:
    base = run("checksum 1.0\nchecksum 2.0\n")
    assert check_run(run("checksum 1.0\nchecksum 2.0\n"), numbers=CHECKSUM, baseline=base).ok
    assert check_run(
        run("checksum 1.0\nchecksum 1.5\n"), numbers=CHECKSUM, baseline=base
    ).reasons == ("numbers_differ: output[1] 2.0 vs 1.5 (rtol 1e-06, atol 0)",)
    assert check_run(run("checksum 1.0\n"), numbers=CHECKSUM, baseline=base).reasons == (
        "numbers_count: 2 vs 1 in output",
    )
    assert (
        check_run(run("checksum 0\nchecksum 0\n"), numbers=CHECKSUM, baseline=base)
        .reasons[-1]
        .startswith("zeros: ")
    )


def test_numbers_without_a_baseline_are_still_checked_for_nan() -> None:
    assert check_run(run("checksum 3.0"), numbers=CHECKSUM).ok
    assert check_run(run("checksum -nan"), numbers=CHECKSUM).reasons == (
        "nonfinite: nan in output[0]",
    )
    assert check_run(run("no numbers"), numbers=CHECKSUM).reasons == (
        rf"numbers_none: {CHECKSUM} matched no number",
    )


def test_a_pattern_that_finds_nothing_in_the_baseline_checks_nothing() -> None:
    result = check_run(run("checksum 1"), numbers=CHECKSUM, baseline=run("other output"))
    assert result.reasons == (rf"numbers_none: {CHECKSUM} matched no number in the baseline",)


def test_named_files_must_exist() -> None:
    assert check_run(run(files={"a.txt": b""}), files=["a.txt", "b.bin"]).reasons == (
        "file_missing: b.bin",
    )
    assert check_run(run(files={"a.txt": b"1"}), files=["a.txt"], baseline=run()).reasons == (
        "file_missing: a.txt in the baseline",
    )


def test_text_files_compare_numbers_with_tolerance_and_words_exactly() -> None:
    base = run(files={"out.txt": b"energy = 1.25e+03\nstatus PASS\n"})

    def reasons(text: bytes) -> tuple[str, ...]:
        return check_run(run(files={"out.txt": text}), files=["out.txt"], baseline=base).reasons

    assert reasons(b"energy   =  1250.0000001\nstatus PASS") == ()
    assert reasons(b"energy = 1.26e+03\nstatus PASS\n") == (
        "numbers_differ: out.txt[0] 1250.0 vs 1260.0 (rtol 1e-06, atol 0)",
    )
    assert reasons(b"energy = 1.25e+03\nstatus FAIL\n") == (
        "file_text_differs: out.txt word 4: 'PASS' vs 'FAIL'",
    )
    assert reasons(b"energy = 1.25e+03\nstatus PASS now\n") == (
        "file_text_differs: out.txt has 4 vs 5 words",
    )
    assert reasons(b"energy = NaN\nstatus PASS\n") == ("nonfinite: nan in out.txt[0]",)
    assert reasons(b"energy = 0\nstatus PASS\n")[-1] == (
        "zeros: out.txt numbers are all zero, the baseline's are not"
    )


def test_words_that_contain_inf_or_nan_are_not_numbers() -> None:
    base = run(files={"log.txt": b"info: nanoseconds 5\n"})
    same = run(files={"log.txt": b"info: nanoseconds 5\n"})
    assert check_run(same, files=["log.txt"], baseline=base).ok


def test_text_file_without_a_baseline_is_checked_for_nan() -> None:
    result = check_run(run(files={"out.txt": b"1.0 inf\n"}), files=["out.txt"])
    assert result.reasons == ("nonfinite: inf in out.txt[1]",)


def test_binary_files_must_be_identical() -> None:
    data = struct.pack("<4f", 1.0, 2.0, 3.0, 4.0)
    base = run(files={"out.bin": data})

    def reasons(content: bytes) -> tuple[str, ...]:
        return check_run(run(files={"out.bin": content}), files=["out.bin"], baseline=base).reasons

    assert reasons(data) == ()
    assert reasons(struct.pack("<4f", 1.0, 2.0, 3.0000002, 4.0)) == (
        "file_differs: out.bin (first at byte 8)",
    )
    assert reasons(data[:8]) == ("file_differs: out.bin (16 vs 8 bytes)",)
    assert reasons(bytes(16)) == ("zeros: out.bin is all zero bytes, the baseline's is not",)


def test_first_difference_is_found_past_the_first_block() -> None:
    data = bytes(range(256)) * 40 + b"\0"
    changed = data[:9000] + b"\xff" + data[9001:]
    base, cand = run(files={"f": data}), run(files={"f": changed})
    assert check_run(cand, files=["f"], baseline=base).reasons == (
        "file_differs: f (first at byte 9000)",
    )


def test_every_failure_is_reported_together() -> None:
    cand = run("checksum nan\n", exit_status=2)
    result = check_run(
        cand,
        require=["PASS"],
        forbid=["nan"],
        numbers=CHECKSUM,
        files=["out.bin"],
        baseline=run("checksum 1\n", files={"out.bin": b"\1"}),
    )
    assert not result.ok
    assert [reason.split(":")[0] for reason in result.reasons] == [
        "exit_status",
        "missing",
        "forbidden",
        "nonfinite",
        "file_missing",
    ]


def test_counted_patterns_match_as_often_as_in_the_baseline() -> None:
    base = run("time_ms: 0.3\ncheck: PASS\n")
    forged = run("time_ms: 0.01\ntime_ms: 0.3\ncheck: PASS\n")
    counted = [r"time_ms: (\S+)", "check: PASS"]
    result = check_run(forged, require=["check: PASS"], baseline=base, counted=counted)
    assert result.reasons == (r"count: time_ms: (\S+) matches 2 times, 1 in the baseline's output",)
    twice = run("time_ms: 0.3\ncheck: PASS\ncheck: PASS\n")
    assert check_run(twice, baseline=base, counted=counted).reasons == (
        "count: check: PASS matches 2 times, 1 in the baseline's output",
    )
    assert check_run(base, baseline=base, counted=counted).ok
    assert check_run(forged, counted=counted).ok  # no baseline: nothing to count against
